// tokio_http_server: the tokio peer of rankd's HTTP benchmark shaped like tokio's tinyhttp
// example.
//
// Every accepted connection is one task driving a `Framed` transport whose codec parses
// requests with httparse (up to 16 headers) into `http::Request`s and encodes the
// `http::Response` built for each, with the header names, order and values of rankd's and the
// other peers' answers (src/payload.rs). Routes:
//   GET /json       {"message":"Hello, World!"}  (serde_json, application/json)
//   GET /plaintext  Hello, World!                 (text/plain)
//   anything else   404
//
// Flags and process behaviour are the package's (src/flags.rs, src/server.rs): --runtime
// multi|current, --threads N, --host ADDR, --port P; `LISTENING <port>` once listening; SIGTERM
// or SIGINT exits with status 0.
use std::fmt::Write as _;
use std::io;

use bytes::{BufMut, BytesMut};
use futures::{SinkExt, StreamExt};
use http::{header::HeaderValue, Request, Response, StatusCode};
use tokio::net::TcpStream;
use tokio_http_server::payload::{self, Message};
use tokio_http_server::{date, server};
use tokio_util::codec::{Decoder, Encoder, Framed};

fn main() {
    server::run("tokio_http_server", serve);
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
            payload::PLAINTEXT.to_string()
        }
        "/json" => {
            response = response.header("Content-Type", "application/json");
            serde_json::to_string(&Message::HELLO)?
        }
        _ => {
            response = response.status(StatusCode::NOT_FOUND);
            String::new()
        }
    };
    response.body(body).map_err(io::Error::other)
}

// The codec: httparse for requests, a hand-written status line and headers for responses.
struct Http;

impl Encoder<Response<String>> for Http {
    type Error = io::Error;

    fn encode(&mut self, item: Response<String>, dst: &mut BytesMut) -> io::Result<()> {
        date::with_http_date(|date| {
            write!(
                BytesWriter(dst),
                "HTTP/1.1 {}\r\nServer: {}\r\nDate: {}\r\n",
                item.status(),
                payload::SERVER,
                date
            )
        })
        .map_err(io::Error::other)?;
        for (name, value) in item.headers() {
            put_header_name(dst, name.as_str());
            dst.extend_from_slice(b": ");
            dst.extend_from_slice(value.as_bytes());
            dst.extend_from_slice(b"\r\n");
        }
        write!(
            BytesWriter(dst),
            "Content-Length: {}\r\n\r\n",
            item.body().len()
        )
        .map_err(io::Error::other)?;
        dst.extend_from_slice(item.body().as_bytes());
        Ok(())
    }
}

// A header name as rankd and the other peers write it ("Content-Type"): the http crate keeps
// names in lower case.
fn put_header_name(dst: &mut BytesMut, name: &str) {
    let mut word_start = true;
    for byte in name.bytes() {
        dst.put_u8(if word_start {
            byte.to_ascii_uppercase()
        } else {
            byte
        });
        word_start = byte == b'-';
    }
}

impl Decoder for Http {
    type Item = Request<()>;
    type Error = io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> io::Result<Option<Request<()>>> {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Request::new(&mut headers);
        let length = match parsed
            .parse(src)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
        {
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
        let request = request
            .body(())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
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
