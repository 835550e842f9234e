//! Crashes at every phase, across OS processes: a run starts in one process, which is
//! killed (SIGKILL) at a random moment — planning, running, recording — then other
//! processes resume it, and are killed at random moments too, until one finishes it. After
//! every round: each call has a final result; no effect was lost (a call that succeeded did
//! its effect); an `at_most_once` call did its effect at most once, and one whose outcome a
//! crash left unknown says `outcome_unknown`; an `idempotent` call that ran again did so with
//! the same idempotency key; the audit chain verifies.
//!
//! The processes are this test binary run again with `TOOLJIG_CRASH_ROLE` set, running the
//! ignored `crash_role` helper below; the app is the crash scenario (`tests/crash/`), which
//! `bindings-node/tests/crash.test.mjs` plays across Rust, Python and Node processes.

#[path = "support/crash_app.rs"]
mod crash_app;
#[path = "support/postgres.rs"]
mod postgres;
#[path = "support/redis.rs"]
mod redis_support;

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const ROLE: &str = "TOOLJIG_CRASH_ROLE";
const DIR: &str = "TOOLJIG_CRASH_DIR";
const RUN: &str = "TOOLJIG_CRASH_RUN";

#[test]
#[ignore = "a helper process of `random_kills_at_every_phase_lose_and_double_nothing`"]
fn crash_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let dir = PathBuf::from(std::env::var(DIR).unwrap());
    let run = std::env::var(RUN).ok();
    crash_app::play(&role, &dir, run.as_deref(), || {});
}

/// Runs a role and kills it after `kill_after` (if it is still running): true when it
/// finished on its own.
fn run_role(dir: &Path, role: &str, run: Option<&str>, kill_after: Option<Duration>) -> bool {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "crash_role", "--ignored", "--nocapture"])
        .env(ROLE, role)
        .env(DIR, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(run) = run {
        cmd.env(RUN, run);
    }
    let mut child = cmd.spawn().unwrap();
    if let Some(after) = kill_after {
        let deadline = std::time::Instant::now() + after;
        while std::time::Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            return false;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{role} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// A small deterministic generator: the kills vary, and a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn random_kills_at_every_phase_lose_and_double_nothing() {
    rounds_until(50, 1, |_| None);
}

/// The same on PostgreSQL (state store and audit log), each round in a schema of its own,
/// with the scenario 17 times over: a run of 204 calls, a third of them idempotent and a
/// third at-most-once.
#[test]
fn random_kills_of_a_204_call_run_on_postgresql_lose_and_double_nothing() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    if rt.block_on(postgres::Scratch::new("probe")).is_none() {
        return;
    }
    rounds_until(20, WIDE, |_| {
        rt.block_on(postgres::Scratch::new("crash"))
            .map(Backend::Postgres)
    });
}

/// The same with the state store in Redis (the audit log in SQLite), each round under a key
/// prefix of its own.
#[test]
fn random_kills_of_a_204_call_run_on_redis_lose_and_double_nothing() {
    if redis_support::Prefix::new("probe").is_none() {
        return;
    }
    rounds_until(20, WIDE, |_| {
        redis_support::Prefix::new("crash").map(Backend::Redis)
    });
}

/// How many times the wide runs repeat the scenario's 12 calls.
const WIDE: usize = 17;

/// A round's place on a server, cleaned up when the round ends.
enum Backend {
    Postgres(postgres::Scratch),
    Redis(redis_support::Prefix),
}

impl Backend {
    fn url(&self) -> &str {
        match self {
            Backend::Postgres(s) => &s.url,
            Backend::Redis(p) => &p.url,
        }
    }
}

/// Plays rounds of the scenario `copies` times over until `wanted` processes were killed;
/// `backend` gives a round a place on a server (cleaned up after the round), or none for
/// SQLite files.
fn rounds_until(wanted: u32, copies: usize, backend: impl Fn(u32) -> Option<Backend>) {
    let seed = std::env::var("TOOLJIG_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let mut rng = Lcg(seed);
    let mut kills = 0;
    let mut round = 0;
    let (mut seen_unknown, mut seen_reruns) = (0, 0);
    while kills < wanted {
        round += 1;
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let scratch = backend(round);
        if let Some(s) = &scratch {
            std::fs::write(dir.join("backend.url"), s.url()).unwrap();
        }
        std::fs::write(dir.join("copies"), copies.to_string()).unwrap();
        // The first process, killed somewhere between start-up and the end of its pass.
        let start_kill = Duration::from_millis(rng.below(260));
        if !run_role(dir, "start", None, Some(start_kill)) {
            kills += 1;
        }
        let Some(run) = crash_app::stored_run(dir) else {
            // Killed before the run was written: nothing started, nothing to check.
            assert!(
                !dir.join("effects.txt").exists(),
                "seed {seed}: effects without a run"
            );
            continue;
        };
        // Resumers, each killed with even odds, until one finishes the run.
        let mut finished = dir.join("final.json").exists();
        while !finished {
            let kill = (rng.below(2) == 0).then(|| Duration::from_millis(rng.below(400)));
            finished = run_role(dir, "resume", Some(&run), kill);
            if !finished {
                kills += 1;
            }
        }
        let (unknown, reruns) = check(dir, seed, round, 12 * copies);
        seen_unknown += unknown;
        seen_reruns += reruns;
    }
    eprintln!(
        "seed {seed}: {kills} kills in {round} rounds; {seen_unknown} calls ended outcome_unknown, \
         {seen_reruns} pure or idempotent calls ran again after a crash"
    );
}

/// Checks one finished round; returns how many calls ended unknown and how many ran again.
fn check(dir: &Path, seed: u64, round: u32, calls: usize) -> (usize, usize) {
    let (mut unknown, mut reruns) = (0, 0);
    let ctx = format!("seed {seed}, round {round}");
    let finals: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("final.json")).unwrap()).unwrap();
    assert_eq!(finals.len(), calls, "{ctx}");
    let effects = std::fs::read_to_string(dir.join("effects.txt")).unwrap_or_default();
    let mut done: HashMap<&str, Vec<&str>> = HashMap::new();
    for line in effects.lines() {
        let (call, key) = line.split_once(' ').unwrap_or((line, ""));
        done.entry(call).or_default().push(key);
    }
    for (i, f) in finals.iter().enumerate() {
        let call = f["call"].as_str().unwrap();
        let envelope = &f["envelope"];
        let did = done.get(call).map_or(&[][..], |v| v.as_slice());
        let class = ["pure", "idempotent", "at_most_once"][i % 3];
        if envelope["ok"] == true {
            assert!(
                !did.is_empty(),
                "{ctx}: {call} succeeded without its effect"
            );
        } else {
            let code = envelope["error"]["code"]
                .as_str()
                .unwrap_or_else(|| panic!("{ctx}: {call} ended {envelope}"));
            // Only an at_most_once call may end unknown, and only one whose pass died; a call
            // after it in its chain then does not run.
            assert!(
                code == "outcome_unknown" && class == "at_most_once" || code == "dependency_failed",
                "{ctx}: {call} ended {envelope}"
            );
            unknown += usize::from(code == "outcome_unknown");
        }
        match class {
            "at_most_once" => assert!(did.len() <= 1, "{ctx}: {call} ran {} times", did.len()),
            "idempotent" => assert!(
                did.windows(2).all(|w| w[0] == w[1]),
                "{ctx}: {call} ran again under another key: {did:?}"
            ),
            _ => {}
        }
        reruns += did.len().saturating_sub(1);
    }
    assert!(crash_app::audit_intact(dir), "{ctx}: the audit chain broke");
    (unknown, reruns)
}
