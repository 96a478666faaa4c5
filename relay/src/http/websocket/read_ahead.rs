//! The runner's WebSocket on the upgraded connection directly, over a
//! stream that reads ahead while large frames arrive: the fast path of
//! [`super`] (cargo feature `fast-websocket`, on by default).
//!
//! Why not axum's `WebSocketUpgrade` ([`super::plain`]): its socket reads
//! at most its read buffer's size per `recv`, and that buffer is allocated
//! for the life of every connection. A relay holds tens of thousands of
//! idle runners, so the buffer is small (4 KiB), and a runner streaming
//! output then costs the relay one `recv` and one wake-up per 4 KiB of a
//! large frame. [`ReadAhead`] keeps the small buffer for idle sockets and
//! reads 256 KiB at a time only while data keeps coming. axum's socket
//! cannot wrap its stream, hence the upgrade done here.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::extract::FromRequestParts;
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tungstenite::handshake::derive_accept_key;
use tungstenite::protocol::{Role, WebSocketConfig};

use super::{bad_request, check_request};
use crate::http::error::ApiError;

/// The runner's socket, server side.
pub type WebSocket = tokio_tungstenite::WebSocketStream<ReadAhead<TokioIo<Upgraded>>>;

/// Size of one read while a socket reads ahead: a runner's output frame.
const READ_AHEAD_BYTES: usize = 256 * 1024;

/// A valid WebSocket upgrade request, not yet answered.
pub struct Upgrade {
    on_upgrade: OnUpgrade,
    key: HeaderValue,
}

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let key = check_request(parts)?;
        let on_upgrade = parts
            .extensions
            .remove::<OnUpgrade>()
            .ok_or_else(|| bad_request("this connection cannot be upgraded"))?;
        Ok(Upgrade { on_upgrade, key })
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
        let accept = derive_accept_key(self.key.as_bytes());
        let on_upgrade = self.on_upgrade;
        tokio::spawn(async move {
            let upgraded = match on_upgrade.await {
                Ok(upgraded) => upgraded,
                Err(error) => {
                    tracing::debug!(%error, "runner WebSocket upgrade failed");
                    return;
                }
            };
            let io = ReadAhead::new(TokioIo::new(upgraded));
            let socket =
                tokio_tungstenite::WebSocketStream::from_raw_socket(io, Role::Server, Some(config))
                    .await;
            session(socket).await;
        });
        let mut response = StatusCode::SWITCHING_PROTOCOLS.into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
        headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        // Base64 text: always a valid header value.
        if let Ok(accept) = HeaderValue::from_str(&accept) {
            headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        response
    }
}

/// A stream that reads ahead in [`READ_AHEAD_BYTES`] pieces while data
/// keeps coming, and straight into its reader's (small) buffer otherwise.
///
/// A direct read that fills the reader's buffer says that more is waiting:
/// the next read goes into a buffer of our own, and the reader is served
/// from it. A read ahead that brings no more than the reader asked for says
/// the burst is over: once what it holds is served, the buffer is freed. So
/// is it when the socket has nothing more to read: an idle socket holds
/// none.
pub struct ReadAhead<S> {
    inner: S,
    ahead: Vec<u8>,
    /// Served up to `start`, filled up to `end`.
    start: usize,
    end: usize,
    streaming: bool,
}

impl<S> ReadAhead<S> {
    pub fn new(inner: S) -> ReadAhead<S> {
        ReadAhead {
            inner,
            ahead: Vec::new(),
            start: 0,
            end: 0,
            streaming: false,
        }
    }

    fn serve(&mut self, buf: &mut ReadBuf<'_>) {
        let n = buf.remaining().min(self.end - self.start);
        buf.put_slice(&self.ahead[self.start..self.start + n]);
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if !self.streaming {
                self.ahead = Vec::new();
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadAhead<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.start < this.end {
            this.serve(buf);
            return Poll::Ready(Ok(()));
        }
        if !this.streaming {
            let wanted = buf.remaining();
            let before = buf.filled().len();
            let read = Pin::new(&mut this.inner).poll_read(cx, buf);
            if let Poll::Ready(Ok(())) = read {
                this.streaming = wanted > 0 && buf.filled().len() - before == wanted;
            }
            return read;
        }
        if this.ahead.is_empty() {
            this.ahead = vec![0; READ_AHEAD_BYTES];
        }
        let wanted = buf.remaining();
        let mut ahead = ReadBuf::new(&mut this.ahead);
        match Pin::new(&mut this.inner).poll_read(cx, &mut ahead) {
            Poll::Ready(Ok(())) => {
                let n = ahead.filled().len();
                this.end = n;
                // No more than a direct read would have taken: the burst
                // is over.
                this.streaming = n > wanted;
                if n == 0 {
                    // End of stream: nothing to serve, and no buffer to keep.
                    this.ahead = Vec::new();
                    return Poll::Ready(Ok(()));
                }
                this.serve(buf);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(error)) => {
                this.streaming = false;
                this.ahead = Vec::new();
                Poll::Ready(Err(error))
            }
            // The socket is drained: an idle socket holds no buffer, and
            // the next read goes straight into the reader's buffer again.
            Poll::Pending => {
                this.streaming = false;
                this.ahead = Vec::new();
                Poll::Pending
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadAhead<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads like tungstenite on the relay: at most 4 KiB at a time.
    async fn read_in_4k<S: AsyncRead + Unpin>(reader: &mut ReadAhead<S>, want: usize) -> Vec<u8> {
        let mut got = Vec::new();
        let mut piece = [0u8; 4096];
        while got.len() < want {
            let n = reader.read(&mut piece).await.expect("read");
            assert!(n > 0, "end of stream after {} of {want} bytes", got.len());
            got.extend_from_slice(&piece[..n]);
        }
        got
    }

    /// A burst is read ahead in large pieces and arrives whole and in
    /// order; once it is served the buffer is freed, and a small frame
    /// after it is read straight into the reader's buffer.
    #[tokio::test]
    async fn reads_ahead_during_a_burst_and_frees_the_buffer_after() {
        let (mut writer, inner) = tokio::io::duplex(4 * READ_AHEAD_BYTES);
        let mut reader = ReadAhead::new(inner);
        let burst: Vec<u8> = (0..READ_AHEAD_BYTES + 300_000)
            .map(|i| (i % 251) as u8)
            .collect();
        writer.write_all(&burst).await.expect("write the burst");
        let got = read_in_4k(&mut reader, burst.len()).await;
        assert_eq!(got, burst);
        assert!(reader.ahead.capacity() > 0, "the burst was not read ahead");
        let mut piece = [0u8; 4096];
        let quiet = tokio::time::timeout(Duration::from_millis(20), reader.read(&mut piece)).await;
        assert!(quiet.is_err(), "read {quiet:?} from a quiet socket");
        assert_eq!(
            reader.ahead.capacity(),
            0,
            "a quiet socket still holds the burst's buffer"
        );
        assert!(!reader.streaming);

        writer.write_all(b"heartbeat").await.expect("write");
        let got = read_in_4k(&mut reader, 9).await;
        assert_eq!(got, b"heartbeat");
        assert_eq!(
            reader.ahead.capacity(),
            0,
            "a small read allocated a buffer"
        );

        drop(writer);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.expect("end of stream");
        assert!(rest.is_empty());
    }

    /// The buffer was in use: a burst took fewer reads of the inner stream
    /// than 4 KiB reads would.
    #[tokio::test]
    async fn a_burst_takes_few_reads_of_the_socket() {
        struct Counting<S> {
            inner: S,
            reads: usize,
        }
        impl<S: AsyncRead + Unpin> AsyncRead for Counting<S> {
            fn poll_read(
                self: Pin<&mut Self>,
                cx: &mut Context<'_>,
                buf: &mut ReadBuf<'_>,
            ) -> Poll<io::Result<()>> {
                let this = self.get_mut();
                let read = Pin::new(&mut this.inner).poll_read(cx, buf);
                if read.is_ready() {
                    this.reads += 1;
                }
                read
            }
        }
        let (mut writer, inner) = tokio::io::duplex(4 * READ_AHEAD_BYTES);
        let burst = vec![7u8; 3 * READ_AHEAD_BYTES];
        writer.write_all(&burst).await.expect("write the burst");
        let mut reader = ReadAhead::new(Counting { inner, reads: 0 });
        let got = read_in_4k(&mut reader, burst.len()).await;
        assert_eq!(got.len(), burst.len());
        // One direct read, then three full reads ahead (4 KiB reads: 192).
        assert!(
            reader.inner.reads <= 8,
            "{} reads of the socket",
            reader.inner.reads
        );
    }
}
