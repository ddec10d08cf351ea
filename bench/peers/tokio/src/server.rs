//! The process around a peer's connection handler: reads the flags, builds the tokio runtime
//! they ask for, listens, prints `LISTENING <port>` on stdout, spawns one task per accepted
//! connection and returns on SIGTERM or SIGINT (the process then exits with status 0).
use std::future::Future;
use std::io::{self, Write};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::signal::unix::{signal, SignalKind};

use crate::flags;

/// Serves every accepted connection with `serve` until SIGTERM or SIGINT. `program` names the
/// binary in usage and error messages.
pub fn run<S, F>(program: &'static str, serve: S)
where
    S: Fn(TcpStream) -> F,
    F: Future<Output = io::Result<()>> + Send + 'static,
{
    let flags = flags::parse(program);
    let mut builder = if flags.multi_thread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(flags.threads);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = builder.enable_all().build().expect("tokio runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind((flags.host.as_str(), flags.port))
            .await
            .unwrap_or_else(|e| {
                flags::usage(program, &format!("bind {}:{}: {e}", flags.host, flags.port))
            });
        println!(
            "LISTENING {}",
            listener.local_addr().expect("local address").port()
        );
        io::stdout().flush().ok();
        let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        let connection = serve(stream);
                        tokio::spawn(async move {
                            if let Err(e) = connection.await {
                                if e.kind() != io::ErrorKind::ConnectionReset {
                                    eprintln!("{program}: connection: {e}");
                                }
                            }
                        });
                    }
                }
                _ = terminate.recv() => break,
                _ = tokio::signal::ctrl_c() => break,
            }
        }
    });
    runtime.shutdown_timeout(Duration::from_millis(100));
}
