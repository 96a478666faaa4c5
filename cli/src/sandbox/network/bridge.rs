//! Inside a sandbox without a network of its own: a TCP listener on the
//! sandbox's loopback, each connection passed on to the host's proxy
//! through the bind-mounted unix socket.

use std::path::PathBuf;

use tokio::net::{TcpListener, UnixStream};

/// Serves until the process ends.
pub async fn serve(listener: TcpListener, socket: PathBuf) {
    loop {
        let Ok((mut inside, _)) = listener.accept().await else {
            continue;
        };
        // Small frames (a WebSocket handshake, a ping) must not wait for
        // Nagle's algorithm and the peer's delayed ACK: 40 ms a round trip.
        let _ = inside.set_nodelay(true);
        let socket = socket.clone();
        tokio::spawn(async move {
            match UnixStream::connect(&socket).await {
                Ok(mut host) => {
                    let _ = tokio::io::copy_bidirectional(&mut inside, &mut host).await;
                }
                Err(error) => tracing::warn!(%error, "the host's proxy is not there"),
            }
        });
    }
}
