//! A Redis Cluster of one test's own (three masters on free ports, started by
//! `scripts/redis-cluster.sh`, stopped when dropped). When `redis-server` is not installed
//! the test is skipped with a message, except under `CI=true`, where that is a failure.

#![allow(dead_code)] // each test uses what it needs

use std::path::PathBuf;
use std::process::Command;

/// A running cluster.
pub struct Cluster {
    /// `redis+cluster://...` with `?prefix=` naming the test's prefix.
    pub url: String,
    /// The nodes' ports.
    pub ports: Vec<u16>,
    dir: PathBuf,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/redis-cluster.sh")
}

impl Cluster {
    /// A new cluster, or `None` when Redis is not installed here (outside CI).
    pub fn start(tag: &str) -> Option<Cluster> {
        let dir = std::env::temp_dir().join(format!(
            "tj-cluster-{tag}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let out = Command::new("bash")
            .arg(script())
            .arg("start")
            .arg(&dir)
            .output()
            .expect("bash runs");
        if out.status.code() == Some(3) {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "no Redis Cluster under CI=true: {why}"
            );
            eprintln!("skipped: no Redis Cluster here: {why}");
            return None;
        }
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let base = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let ports = base
            .trim_start_matches("redis+cluster://")
            .split(',')
            .filter_map(|n| n.rsplit(':').next()?.parse().ok())
            .collect();
        Some(Cluster {
            url: format!("{base}?prefix=tj_{tag}:"),
            ports,
            dir,
        })
    }

    /// Stops node `port` (a crash as far as the others can tell).
    pub fn stop_node(&self, port: u16) {
        let pid =
            std::fs::read_to_string(self.dir.join(format!("{port}.pid"))).expect("the node's pid");
        Command::new("kill")
            .args(["-9", pid.trim()])
            .status()
            .expect("kill runs");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}
