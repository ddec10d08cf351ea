// tokio_tuned_http_server: the tokio peer of rankd's HTTP benchmark written the way tokio
// serves HTTP/1.1 fastest, without the per-request `http` types and codec of the tinyhttp-style
// peer.
//
// Every accepted connection is one task that owns its read buffer and its output buffer
// (both reused for the connection's life). After each read it parses every complete request in
// the read buffer with httparse (pipelining), appends each response to the output buffer and
// sends the buffer with one write. Routes, with the bytes of rankd's and the other peers'
// answers apart from the Date and Server values (src/payload.rs):
//   GET /json       {"message":"Hello, World!"}  (serde_json per request, application/json)
//   GET /plaintext  Hello, World!                 (text/plain)
//   anything else   404
// A request body is skipped by its Content-Length; a malformed request, Transfer-Encoding or an
// oversized head or body closes the connection.
//
// Flags and process behaviour are the package's (src/flags.rs, src/server.rs): --runtime
// multi|current, --threads N, --host ADDR, --port P; `LISTENING <port>` once listening; SIGTERM
// or SIGINT exits with status 0.
use std::io;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_http_server::payload::{self, Message};
use tokio_http_server::{date, server};

const READ_BUFFER: usize = 16 * 1024;
const OUTPUT_BUFFER: usize = 16 * 1024;
const MAX_HEADERS: usize = 32;
const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 1 << 20;

fn main() {
    server::run("tokio_tuned_http_server", serve);
}

async fn serve(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut input = BytesMut::with_capacity(READ_BUFFER);
    let mut output = Vec::with_capacity(OUTPUT_BUFFER);
    let mut json = Vec::with_capacity(64);
    loop {
        // Room for a full read; `reserve` first reclaims what earlier requests consumed.
        input.reserve(READ_BUFFER);
        if stream.read_buf(&mut input).await? == 0 {
            return Ok(());
        }
        let consumed =
            date::with_http_date(|date| answer_all(&input, date, &mut output, &mut json))?;
        input.advance(consumed);
        if !output.is_empty() {
            stream.write_all(&output).await?;
            output.clear();
        }
    }
}

/// Answers every complete request at the start of `input` into `output`; returns the bytes
/// they took (an incomplete request stays for the next read).
fn answer_all(
    input: &[u8],
    date: &str,
    output: &mut Vec<u8>,
    json: &mut Vec<u8>,
) -> io::Result<usize> {
    let mut consumed = 0;
    loop {
        let pending = &input[consumed..];
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut request = httparse::Request::new(&mut headers);
        let head = match request.parse(pending).map_err(invalid)? {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial if pending.len() > MAX_HEAD => {
                return Err(invalid("request head too large"))
            }
            httparse::Status::Partial => return Ok(consumed),
        };
        let length = head + body_length(request.headers)?;
        if pending.len() < length {
            return Ok(consumed);
        }
        respond(request.path.unwrap_or(""), date, output, json)?;
        consumed += length;
    }
}

/// The Content-Length of a request (0 without one).
fn body_length(headers: &[httparse::Header]) -> io::Result<usize> {
    let mut length = 0;
    for header in headers {
        if header.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(invalid("Transfer-Encoding is not supported"));
        }
        if header.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(header.value)
                .ok()
                .and_then(|value| value.trim().parse().ok())
                .filter(|n| *n <= MAX_BODY)
                .ok_or_else(|| invalid("bad Content-Length"))?;
        }
    }
    Ok(length)
}

fn respond(path: &str, date: &str, output: &mut Vec<u8>, json: &mut Vec<u8>) -> io::Result<()> {
    match path {
        "/plaintext" => write_response(
            output,
            "200 OK",
            date,
            Some("text/plain"),
            payload::PLAINTEXT.as_bytes(),
        ),
        "/json" => {
            json.clear();
            serde_json::to_writer(&mut *json, &Message::HELLO)?;
            write_response(output, "200 OK", date, Some("application/json"), json);
        }
        _ => write_response(output, "404 Not Found", date, None, b""),
    }
    Ok(())
}

fn write_response(
    output: &mut Vec<u8>,
    status: &str,
    date: &str,
    content_type: Option<&str>,
    body: &[u8],
) {
    output.extend_from_slice(b"HTTP/1.1 ");
    output.extend_from_slice(status.as_bytes());
    output.extend_from_slice(b"\r\nServer: ");
    output.extend_from_slice(payload::SERVER.as_bytes());
    output.extend_from_slice(b"\r\nDate: ");
    output.extend_from_slice(date.as_bytes());
    if let Some(content_type) = content_type {
        output.extend_from_slice(b"\r\nContent-Type: ");
        output.extend_from_slice(content_type.as_bytes());
    }
    output.extend_from_slice(b"\r\nContent-Length: ");
    output.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
    output.extend_from_slice(b"\r\n\r\n");
    output.extend_from_slice(body);
}

fn invalid(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error)
}
