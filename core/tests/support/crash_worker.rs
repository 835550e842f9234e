//! The Rust worker of the crash scenario (`tests/crash/README.md`):
//! `crash_worker start DIR`, `crash_worker resume DIR RUN_ID`, `crash_worker stored-run DIR`,
//! `crash_worker verify-audit DIR`.

#[path = "crash_app.rs"]
mod crash_app;

use std::io::Write;
use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (role, dir) = match &args[..] {
        [role, dir, ..] => (role.as_str(), PathBuf::from(dir)),
        _ => {
            eprintln!("usage: crash_worker start|resume|stored-run|verify-audit DIR [RUN_ID]");
            std::process::exit(2);
        }
    };
    match role {
        "stored-run" => println!("{}", crash_app::stored_run(&dir).unwrap_or_default()),
        "verify-audit" => println!("{}", crash_app::audit_intact(&dir)),
        _ => crash_app::play(role, &dir, args.get(2).map(String::as_str), || {
            println!("ready");
            std::io::stdout().flush().unwrap();
        }),
    }
}
