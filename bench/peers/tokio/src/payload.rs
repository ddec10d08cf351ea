//! The bodies and fixed headers every server of the HTTP benchmark answers with: rankd,
//! Boost.Asio and both tokio peers send the same bytes apart from the Date value and the
//! Server value, which names the implementation.
use serde::Serialize;

/// The /plaintext body.
pub const PLAINTEXT: &str = "Hello, World!";

/// The Server header's value.
pub const SERVER: &str = "tokio";

/// The /json object, serialized with serde_json for every request: `{"message":"Hello, World!"}`.
#[derive(Serialize)]
pub struct Message {
    pub message: &'static str,
}

impl Message {
    pub const HELLO: Message = Message {
        message: "Hello, World!",
    };
}
