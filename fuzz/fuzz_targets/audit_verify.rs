//! Audit verification on any file: whatever bytes a JSON Lines log holds, verifying it never
//! panics; and a sealed, anchored log changed in any way that alters one of its records (a
//! byte overwritten, bytes inserted, the file cut or replaced) never verifies as intact.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;
use tooljig::SealKey;
use tooljig::audit::jsonl::JsonlAudit;
use tooljig::audit::options::AuditOptions;
use tooljig::audit::{AuditEntry, AuditRecord, AuditSink};

/// A genuine log written by the JSON Lines sink, and where this process tries changes.
struct Genuine {
    log: Vec<u8>,
    anchor: PathBuf,
    changed: PathBuf,
}

fn key() -> SealKey {
    SealKey::new([7u8; 32]).expect("a 32-byte key")
}

fn genuine() -> &'static Genuine {
    static GENUINE: OnceLock<Genuine> = OnceLock::new();
    GENUINE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tooljig-fuzz-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let (path, anchor) = (dir.join("audit.jsonl"), dir.join("audit.anchor"));
        let options = AuditOptions::default().key(key()).anchor(&anchor);
        let sink = JsonlAudit::open_with(&path, options).expect("opens");
        for i in 0..5u64 {
            let record: AuditRecord = serde_json::from_value(serde_json::json!({
                "seq": 0, "time_ms": 1_700_000_000_000u64 + i, "principal": "ana",
                "tenant": null, "session": null, "tool": "send", "call_id": format!("c{i}"),
                "arguments": {"n": i, "text": "a \"quoted\" é"}, "hidden": [], "outcome": "ok",
                "code": null, "message": null, "detail": null, "output": null, "risk": "low",
                "effect": "write", "duration_us": 5, "attempts": 1, "cached": false,
                "replayed": false, "repaired": false, "approval": null, "prev_hash": "", "hash": ""
            }))
            .expect("a record");
            sink.record(AuditEntry::new(record));
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        rt.block_on(sink.flush()).expect("flushes");
        drop(sink);
        Genuine {
            log: std::fs::read(&path).expect("the log"),
            anchor,
            changed: dir.join("changed.jsonl"),
        }
    })
}

/// The records a reader sees: complete lines, trailing blanks trimmed.
fn lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    complete.lines().map(|l| l.trim_end().to_string()).collect()
}

fuzz_target!(|input: (u8, u16, &[u8])| {
    let (how, at, bytes) = input;
    let g = genuine();
    let at = usize::from(at) % (g.log.len() + 1);
    let mut changed = g.log.clone();
    match how % 4 {
        0 => changed = bytes.to_vec(),
        1 => {
            let end = (at + bytes.len()).min(changed.len());
            changed.splice(at..end, bytes[..end - at].iter().copied());
        }
        2 => {
            changed.splice(at..at, bytes.iter().copied());
        }
        _ => changed.truncate(at),
    }
    std::fs::write(&g.changed, &changed).expect("writes");
    let options = AuditOptions::default().key(key()).anchor(&g.anchor);
    let report = JsonlAudit::verify_file_with(&g.changed, &options);
    // Without the key and anchor it must not panic either.
    let _ = JsonlAudit::verify_file(&g.changed);
    if let Ok(report) = report {
        if report.is_intact() {
            assert_eq!(
                lines(&changed),
                lines(&g.log),
                "a changed log verified as intact"
            );
        }
    }
});
