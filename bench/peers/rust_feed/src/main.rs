// The plan-serving benchmark's Rust peer: the `feed` plan (plans/feed.plan.ts) written by hand as
// a team would without rankd, on tokio, hyper 1 (HTTP/1.1) and the redis crate's multiplexed
// connection (one connection for the process, every request's commands pipelined on it). It
// reads the same Redis data with the same commands and answers POST /rank with the same JSON as
// `rankd serve`, so the benchmark compares equal work (bench/scripts/plan_bench.py checks the
// rankings match before timing). Its Node counterpart is bench/peers/node/feed_server.js.
//
//   rust_feed_server --redis HOST:PORT [--port 0] [--workers N] [--digest HEX]
//
// Prints `LISTENING <port>` once it accepts; SIGTERM or SIGINT stops it. --workers 1 runs
// tokio's current-thread runtime, N > 1 its multi-thread runtime with N worker threads.

mod feed;
mod values;

use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::CONTENT_TYPE;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value as Json;
use tokio::net::TcpListener;
use tokio::signal::unix::{signal, SignalKind};

use feed::{push_rows, push_string, BadRequest, Feed};

// A request body past this is refused (fastify's default limit, as the Node peer has).
const MAX_BODY_BYTES: usize = 1 << 20;

struct Args {
    redis: String,
    port: u16,
    workers: usize,
    digest: String,
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let mut args = Args {
        redis: String::new(),
        port: 0,
        workers: 1,
        digest: String::new(),
    };
    for pair in argv.chunks(2) {
        let flag = &pair[0];
        let value = pair.get(1).ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--redis" => args.redis = value.clone(),
            "--port" => {
                args.port = value
                    .parse()
                    .map_err(|_| format!("--port takes a port number, not {value}"))?
            }
            "--workers" => {
                args.workers = value
                    .parse()
                    .map_err(|_| format!("--workers takes an integer, not {value}"))?
            }
            "--digest" => args.digest = value.clone(),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.redis.is_empty() {
        return Err("--redis HOST:PORT is required".into());
    }
    if args.workers < 1 {
        return Err("--workers must be at least 1".into());
    }
    Ok(args)
}

/// What every connection's handler shares. Thread-safe (Arc'd across runtime threads).
struct Service {
    feed: Feed,
    digest: String,
    requests: AtomicU64,
}

impl Service {
    /// The status and JSON body answering one POST /rank body.
    async fn answer(&self, body: &[u8]) -> (StatusCode, String) {
        let request: Option<Json> = serde_json::from_slice(body).ok();
        let request_id = match request
            .as_ref()
            .and_then(|r| r.get("request_id"))
            .and_then(Json::as_str)
        {
            Some(id) => id.to_owned(),
            None => format!("rust-{}", self.requests.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let Some(request) = request.filter(Json::is_object) else {
            return error(
                StatusCode::BAD_REQUEST,
                &request_id,
                "bad_request",
                "the body is not a JSON object",
            );
        };
        match request.get("plan") {
            Some(Json::String(plan)) if plan == "feed" => {}
            other => {
                let message = format!(
                    "no plan {}",
                    other.map_or("undefined".into(), Json::to_string)
                );
                return error(StatusCode::NOT_FOUND, &request_id, "unknown_plan", &message);
            }
        }
        let Some(viewer_id) = request
            .get("viewer_id")
            .and_then(Json::as_u64)
            .filter(|v| *v <= i64::MAX as u64)
        else {
            return error(
                StatusCode::BAD_REQUEST,
                &request_id,
                "bad_request",
                "viewer_id must be a non-negative integer",
            );
        };
        let params = match self.feed.bind_params(request.get("params")) {
            Ok(params) => params,
            Err(BadRequest(message)) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    &request_id,
                    "bad_request",
                    &message,
                )
            }
        };
        let rows = match self.feed.rank(viewer_id, &params).await {
            Ok(rows) => rows,
            Err(e) => {
                return error(
                    StatusCode::BAD_GATEWAY,
                    &request_id,
                    "upstream_error",
                    &e.to_string(),
                )
            }
        };
        let mut out = String::with_capacity(256 + rows.len() * 160);
        out.push_str("{\"request_id\":");
        push_string(&mut out, &request_id);
        out.push_str(",\"plan\":\"feed\",\"plan_digest\":");
        push_string(&mut out, &self.digest);
        out.push_str(",\"outputs\":{\"top\":");
        push_rows(&mut out, &rows);
        out.push_str("},\"degraded\":[]}");
        (StatusCode::OK, out)
    }
}

fn error(status: StatusCode, request_id: &str, code: &str, message: &str) -> (StatusCode, String) {
    let mut body = String::from("{\"request_id\":");
    push_string(&mut body, request_id);
    body.push_str(",\"error\":{\"code\":");
    push_string(&mut body, code);
    body.push_str(",\"message\":");
    push_string(&mut body, message);
    body.push_str("}}");
    (status, body)
}

async fn handle(
    service: Arc<Service>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = if request.method() != Method::POST || request.uri().path() != "/rank" {
        let message = format!("no route {} {}", request.method(), request.uri().path());
        error(StatusCode::NOT_FOUND, "", "not_found", &message)
    } else {
        match Limited::new(request.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
        {
            Ok(body) => service.answer(&body.to_bytes()).await,
            Err(e) => error(
                StatusCode::BAD_REQUEST,
                "",
                "bad_request",
                &format!("the body could not be read: {e}"),
            ),
        }
    };
    let response = Response::builder()
        .status(status)
        .header(CONTENT_TYPE, "application/json; charset=utf-8")
        .body(Full::new(Bytes::from(body)))
        .expect("a status and a constant header always build a response");
    Ok(response)
}

async fn serve(args: Args) -> Result<(), String> {
    let client = redis::Client::open(format!("redis://{}/", args.redis))
        .map_err(|e| format!("--redis {}: {e}", args.redis))?;
    let redis = client
        .get_multiplexed_async_connection()
        .await
        .map_err(|e| format!("cannot connect to Redis at {}: {e}", args.redis))?;
    let service = Arc::new(Service {
        feed: Feed::new(redis),
        digest: args.digest,
        requests: AtomicU64::new(0),
    });
    let listener = TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let mut stdout = std::io::stdout();
    writeln!(stdout, "LISTENING {port}")
        .and_then(|()| stdout.flush())
        .map_err(|e| e.to_string())?;

    let mut terminate = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
    loop {
        let stream = tokio::select! {
            _ = terminate.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or a connection reset before accept: keep serving.
                    eprintln!("rust_feed_server: accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        tokio::spawn(async move {
            let handler = service_fn(move |request| handle(service.clone(), request));
            // A client that goes away mid-request ends its connection; nothing else to do.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), handler)
                .await;
        });
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_args(&argv).and_then(|args| {
        let runtime = if args.workers == 1 {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(args.workers)
                .enable_all()
                .build()
        };
        runtime
            .map_err(|e| format!("cannot start the runtime: {e}"))?
            .block_on(serve(args))
    });
    if let Err(message) = result {
        eprintln!("rust_feed_server: {message}");
        std::process::exit(2);
    }
}
