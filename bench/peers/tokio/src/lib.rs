//! What the tokio peers of rankd's HTTP benchmark share: flags, the accept loop and runtime,
//! the Date header and the bodies they serve. Each server binary brings its own connection
//! handling: `tokio_http_server` (src/main.rs) is shaped like tokio's tinyhttp example,
//! `tokio_tuned_http_server` (src/bin/) parses with httparse and writes one buffer per read.
pub mod date;
pub mod flags;
pub mod payload;
pub mod server;
