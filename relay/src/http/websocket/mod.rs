//! The runner's WebSocket: the HTTP/1.1 upgrade (RFC 6455 §4.2), and the
//! socket a session reads and writes, in tungstenite's types.
//!
//! Two implementations behind one interface ([`Upgrade`], [`WebSocket`]):
//!
//! * [`read_ahead`], the fast path (cargo feature `fast-websocket`, on by
//!   default): the relay answers the upgrade itself and reads a socket in
//!   large pieces while large frames arrive;
//! * [`plain`]: axum's `WebSocketUpgrade` as published.
//!
//! Both refuse the same requests ([`check_request`]) and hand the session
//! the same messages and errors; a test below runs one script of frames
//! through each and compares.

#[cfg(feature = "fast-websocket")]
pub mod read_ahead;

pub mod plain;

#[cfg(not(feature = "fast-websocket"))]
pub use plain::{Upgrade, WebSocket};
#[cfg(feature = "fast-websocket")]
pub use read_ahead::{Upgrade, WebSocket};

use axum::http::{header, request::Parts, HeaderMap, HeaderValue, Method, StatusCode, Version};

use super::error::ApiError;

fn bad_request(message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
}

/// Checks that a request is a WebSocket upgrade the relay answers (an
/// HTTP/1.1 GET, version 13); its `Sec-WebSocket-Key`.
fn check_request(parts: &Parts) -> Result<HeaderValue, ApiError> {
    if parts.method != Method::GET || parts.version != Version::HTTP_11 {
        return Err(bad_request("a WebSocket upgrade is an HTTP/1.1 GET"));
    }
    let headers = &parts.headers;
    if !has_token(headers, header::CONNECTION, "upgrade")
        || !has_token(headers, header::UPGRADE, "websocket")
    {
        return Err(bad_request(
            "not a WebSocket upgrade (Connection: upgrade, Upgrade: websocket)",
        ));
    }
    if headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .map(HeaderValue::as_bytes)
        != Some(b"13")
    {
        return Err(bad_request("Sec-WebSocket-Version must be 13"));
    }
    headers
        .get(header::SEC_WEBSOCKET_KEY)
        .cloned()
        .ok_or_else(|| bad_request("Sec-WebSocket-Key is missing"))
}

/// Whether a comma-separated header holds `token` (case-insensitive).
fn has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|part| part.trim().eq_ignore_ascii_case(token))
}

#[cfg(all(test, feature = "fast-websocket"))]
mod tests;
