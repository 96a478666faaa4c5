//! The runner's WebSocket through axum's `WebSocketUpgrade`, as published:
//! the plain counterpart of [`super::read_ahead`], used when the relay is
//! built without the `fast-websocket` feature.
//!
//! axum's socket speaks its own message and error types; [`WebSocket`]
//! turns them into tungstenite's, which the session is written against.
//! axum's `ws` and the relay use the same tungstenite, so its errors come
//! back as they were raised.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::extract::ws::{self as axum_ws, WebSocketUpgrade};
use axum::extract::FromRequestParts;
use axum::http::{request::Parts, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{Sink, Stream};
use tungstenite::protocol::{CloseFrame, Message, WebSocketConfig};
use tungstenite::Utf8Bytes;

use super::check_request;
use crate::http::error::ApiError;

/// A valid WebSocket upgrade request, not yet answered.
pub struct Upgrade(WebSocketUpgrade);

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        // The relay's own checks first: both implementations refuse the
        // same requests with the same reasons.
        check_request(parts)?;
        WebSocketUpgrade::from_request_parts(parts, state)
            .await
            .map(Upgrade)
            .map_err(|rejection| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "bad_request",
                    rejection.body_text(),
                )
            })
    }
}

impl Upgrade {
    /// Answers `101 Switching Protocols` and runs `session` on the socket
    /// once the client has it.
    pub fn on_upgrade<F, Fut>(self, config: WebSocketConfig, session: F) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.0
            .read_buffer_size(config.read_buffer_size)
            .write_buffer_size(config.write_buffer_size)
            .max_write_buffer_size(config.max_write_buffer_size)
            .max_message_size(config.max_message_size.unwrap_or(usize::MAX))
            .max_frame_size(config.max_frame_size.unwrap_or(usize::MAX))
            .accept_unmasked_frames(config.accept_unmasked_frames)
            .on_failed_upgrade(|error| {
                tracing::debug!(%error, "runner WebSocket upgrade failed");
            })
            .on_upgrade(|socket| session(WebSocket(socket)))
            .into_response()
    }
}

/// The runner's socket, server side: axum's, in tungstenite's types.
pub struct WebSocket(axum_ws::WebSocket);

/// tungstenite's error inside axum's, or the error as I/O failure when
/// it is something else.
fn unwrap_error(error: axum::Error) -> tungstenite::Error {
    match error.into_inner().downcast::<tungstenite::Error>() {
        Ok(error) => *error,
        Err(other) => tungstenite::Error::Io(std::io::Error::other(other)),
    }
}

/// axum keeps text as validated UTF-8; the bytes are checked again on the
/// way across (axum does not hand out its inner value).
fn text_from_axum(text: axum_ws::Utf8Bytes) -> Result<Utf8Bytes, tungstenite::Error> {
    Utf8Bytes::try_from(Bytes::from(text)).map_err(tungstenite::Error::from)
}

fn text_to_axum(text: Utf8Bytes) -> Result<axum_ws::Utf8Bytes, tungstenite::Error> {
    axum_ws::Utf8Bytes::try_from(Bytes::from(text)).map_err(tungstenite::Error::from)
}

fn from_axum(message: axum_ws::Message) -> Result<Message, tungstenite::Error> {
    Ok(match message {
        axum_ws::Message::Text(text) => Message::Text(text_from_axum(text)?),
        axum_ws::Message::Binary(data) => Message::Binary(data),
        axum_ws::Message::Ping(data) => Message::Ping(data),
        axum_ws::Message::Pong(data) => Message::Pong(data),
        axum_ws::Message::Close(frame) => Message::Close(match frame {
            Some(frame) => Some(CloseFrame {
                code: frame.code.into(),
                reason: text_from_axum(frame.reason)?,
            }),
            None => None,
        }),
    })
}

fn to_axum(message: Message) -> Result<axum_ws::Message, tungstenite::Error> {
    Ok(match message {
        Message::Text(text) => axum_ws::Message::Text(text_to_axum(text)?),
        Message::Binary(data) => axum_ws::Message::Binary(data),
        Message::Ping(data) => axum_ws::Message::Ping(data),
        Message::Pong(data) => axum_ws::Message::Pong(data),
        Message::Close(frame) => axum_ws::Message::Close(match frame {
            Some(frame) => Some(axum_ws::CloseFrame {
                code: frame.code.into(),
                reason: text_to_axum(frame.reason)?,
            }),
            None => None,
        }),
        // Raw frames are never sent by the session; a ping with nothing in
        // it stands in rather than a panic.
        Message::Frame(_) => axum_ws::Message::Ping(Bytes::new()),
    })
}

impl Stream for WebSocket {
    type Item = Result<Message, tungstenite::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = ready!(Pin::new(&mut self.get_mut().0).poll_next(cx));
        Poll::Ready(item.map(|read| read.map_err(unwrap_error).and_then(from_axum)))
    }
}

impl Sink<Message> for WebSocket {
    type Error = tungstenite::Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0)
            .poll_ready(cx)
            .map_err(unwrap_error)
    }

    fn start_send(self: Pin<&mut Self>, message: Message) -> Result<(), Self::Error> {
        Pin::new(&mut self.get_mut().0)
            .start_send(to_axum(message)?)
            .map_err(unwrap_error)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0)
            .poll_flush(cx)
            .map_err(unwrap_error)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Pin::new(&mut self.get_mut().0)
            .poll_close(cx)
            .map_err(unwrap_error)
    }
}
