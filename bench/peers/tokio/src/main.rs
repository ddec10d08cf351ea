// tokio_http_server: the tokio peer of rankd's HTTP benchmark.
//
// Shaped like tokio's tinyhttp example: every accepted connection is one task driving a
// `Framed` transport whose codec parses requests with httparse (up to 16 headers) and encodes
// responses with a `Date` header formatted once per second per thread. Routes:
//   GET /json       {"message":"Hello, World!"}  (serde_json, application/json)
//   GET /plaintext  Hello, World!                 (text/plain)
//   anything else   404
//
// Flags: --runtime multi|current (multi-thread scheduler with --threads workers, default 2, or
// the current_thread scheduler), --host ADDR (default 127.0.0.1), --port P (default 0). Once
// listening it prints `LISTENING <port>` on stdout; SIGTERM or SIGINT exits with status 0.
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io;
use std::time::{Duration, SystemTime};

use bytes::{BufMut, BytesMut};
use futures::{SinkExt, StreamExt};
use http::{header::HeaderValue, Request, Response, StatusCode};
use serde::Serialize;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Decoder, Encoder, Framed};

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

struct Flags {
    multi_thread: bool,
    threads: usize,
    host: String,
    port: u16,
}

fn usage(message: &str) -> ! {
    eprintln!("tokio_http_server: {message}");
    eprintln!("usage: tokio_http_server [--runtime multi|current] [--threads N] [--host H] [--port P]");
    std::process::exit(2);
}

fn parse_flags() -> Flags {
    let mut flags = Flags { multi_thread: true, threads: 2, host: "127.0.0.1".into(), port: 0 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        let value = inline.or_else(|| args.next()).unwrap_or_else(|| usage(&format!("{name} needs a value")));
        match name.as_str() {
            "--runtime" => {
                flags.multi_thread = match value.as_str() {
                    "multi" => true,
                    "current" => false,
                    _ => usage(&format!("--runtime: expected multi or current, got '{value}'")),
                }
            }
            "--threads" => {
                flags.threads = value.parse().ok().filter(|n| *n > 0).unwrap_or_else(|| {
                    usage(&format!("--threads: expected a positive integer, got '{value}'"))
                })
            }
            "--host" => flags.host = value,
            "--port" => {
                flags.port = value
                    .parse()
                    .unwrap_or_else(|_| usage(&format!("--port: expected 0..65535, got '{value}'")))
            }
            _ => usage(&format!("unknown flag '{name}'")),
        }
    }
    flags
}

fn main() {
    let flags = parse_flags();
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
            .unwrap_or_else(|e| usage(&format!("bind {}:{}: {e}", flags.host, flags.port)));
        println!("LISTENING {}", listener.local_addr().expect("local address").port());
        use std::io::Write;
        io::stdout().flush().ok();
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        tokio::spawn(async move {
                            if let Err(e) = serve(stream).await {
                                if e.kind() != io::ErrorKind::ConnectionReset {
                                    eprintln!("tokio_http_server: connection: {e}");
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

async fn serve(stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut transport = Framed::new(stream, Http);
    while let Some(request) = transport.next().await {
        let response = respond(request?).await?;
        transport.send(response).await?;
    }
    Ok(())
}

async fn respond(request: Request<()>) -> io::Result<Response<String>> {
    let mut response = Response::builder();
    let body = match request.uri().path() {
        "/plaintext" => {
            response = response.header("Content-Type", "text/plain");
            "Hello, World!".to_string()
        }
        "/json" => {
            response = response.header("Content-Type", "application/json");
            serde_json::to_string(&Message { message: "Hello, World!" })?
        }
        _ => {
            response = response.status(StatusCode::NOT_FOUND);
            String::new()
        }
    };
    response.body(body).map_err(|e| io::Error::new(io::ErrorKind::Other, e))
}

// The codec: httparse for requests, a hand-written status line and headers for responses.
struct Http;

impl Encoder<Response<String>> for Http {
    type Error = io::Error;

    fn encode(&mut self, item: Response<String>, dst: &mut BytesMut) -> io::Result<()> {
        write!(
            BytesWriter(dst),
            "HTTP/1.1 {}\r\nServer: tokio_http_server\r\nContent-Length: {}\r\nDate: {}\r\n",
            item.status(),
            item.body().len(),
            http_date()
        )
        .map_err(|e| io::Error::new(io::ErrorKind::Other, e))?;
        for (name, value) in item.headers() {
            dst.extend_from_slice(name.as_str().as_bytes());
            dst.extend_from_slice(b": ");
            dst.extend_from_slice(value.as_bytes());
            dst.extend_from_slice(b"\r\n");
        }
        dst.extend_from_slice(b"\r\n");
        dst.extend_from_slice(item.body().as_bytes());
        Ok(())
    }
}

impl Decoder for Http {
    type Item = Request<()>;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Request<()>>> {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Request::new(&mut headers);
        let length = match parsed.parse(src).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))? {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => return Ok(None),
        };
        let mut request = Request::builder()
            .method(parsed.method.unwrap_or("GET"))
            .uri(parsed.path.unwrap_or("/"));
        for header in parsed.headers.iter() {
            let value = HeaderValue::from_bytes(header.value)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            request = request.header(header.name, value);
        }
        let request = request.body(()).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let _ = src.split_to(length);
        Ok(Some(request))
    }
}

struct BytesWriter<'a>(&'a mut BytesMut);

impl std::fmt::Write for BytesWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.put_slice(s.as_bytes());
        Ok(())
    }
}

// The IMF-fixdate of the current second, formatted at most once per second per thread.
fn http_date() -> String {
    thread_local!(static CACHE: RefCell<(u64, String)> = RefCell::new((u64::MAX, String::new())));
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs();
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != now {
            cache.0 = now;
            cache.1 = format_imf_fixdate(now);
        }
        cache.1.clone()
    })
}

fn format_imf_fixdate(unix_seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = unix_seconds / 86_400;
    let seconds_of_day = unix_seconds % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    let mut out = String::with_capacity(29);
    let _ = write!(
        out,
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        day,
        MONTHS[(month - 1) as usize],
        year,
        seconds_of_day / 3600,
        seconds_of_day / 60 % 60,
        seconds_of_day % 60
    );
    out
}
