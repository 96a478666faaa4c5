//! The plain-TCP listener the relay serves HTTP and runner sockets on:
//! every accepted socket gets `TCP_NODELAY` (as the TLS listener's do), so
//! a small frame written right after another (two calls to one runner, a
//! heartbeat ack and a call) leaves at once instead of waiting for the
//! peer's delayed ACK.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// Pause after an accept error (out of descriptors and the like), instead
/// of spinning.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// A [`TcpListener`] whose accepted sockets have `TCP_NODELAY` set.
#[derive(Debug)]
pub struct NoDelayListener(TcpListener);

impl NoDelayListener {
    pub fn new(listener: TcpListener) -> Self {
        Self(listener)
    }
}

impl axum::serve::Listener for NoDelayListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((tcp, peer)) => {
                    if let Err(error) = tcp.set_nodelay(true) {
                        tracing::debug!(%peer, %error, "could not set TCP_NODELAY");
                    }
                    return (tcp, peer);
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.0.local_addr()
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, NoDelayListener>>
    for crate::peer::PeerAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, NoDelayListener>) -> Self {
        crate::peer::PeerAddr(*stream.remote_addr())
    }
}
