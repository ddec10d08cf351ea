//! The command line every tokio peer takes: `--runtime multi|current` (the multi-thread
//! scheduler with `--threads` workers, default 2, or the current_thread scheduler), `--host ADDR`
//! (default 127.0.0.1) and `--port P` (default 0: an ephemeral port), as `--flag value` or
//! `--flag=value`.
pub struct Flags {
    pub multi_thread: bool,
    pub threads: usize,
    pub host: String,
    pub port: u16,
}

/// Prints `message` and the usage line for `program`, then exits with status 2.
pub fn usage(program: &str, message: &str) -> ! {
    eprintln!("{program}: {message}");
    eprintln!("usage: {program} [--runtime multi|current] [--threads N] [--host H] [--port P]");
    std::process::exit(2);
}

/// Reads the process's arguments; exits through [`usage`] on a bad one.
pub fn parse(program: &str) -> Flags {
    let mut flags = Flags {
        multi_thread: true,
        threads: 2,
        host: "127.0.0.1".into(),
        port: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let value = inline
            .or_else(|| args.next())
            .unwrap_or_else(|| usage(program, &format!("{name} needs a value")));
        match name.as_str() {
            "--runtime" => {
                flags.multi_thread = match value.as_str() {
                    "multi" => true,
                    "current" => false,
                    _ => usage(
                        program,
                        &format!("--runtime: expected multi or current, got '{value}'"),
                    ),
                }
            }
            "--threads" => {
                flags.threads = value.parse().ok().filter(|n| *n > 0).unwrap_or_else(|| {
                    usage(
                        program,
                        &format!("--threads: expected a positive integer, got '{value}'"),
                    )
                })
            }
            "--host" => flags.host = value,
            "--port" => {
                flags.port = value.parse().unwrap_or_else(|_| {
                    usage(
                        program,
                        &format!("--port: expected 0..65535, got '{value}'"),
                    )
                })
            }
            _ => usage(program, &format!("unknown flag '{name}'")),
        }
    }
    flags
}
