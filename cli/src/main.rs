//! The `tooljig` binary: the command line of `tooljig_cli`.

fn main() -> std::process::ExitCode {
    let code = tooljig_cli::run(std::env::args_os());
    std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
}
