//! The address a request came from, for limits keyed by source.
//!
//! A local newtype (not `SocketAddr`) so it can be produced for both the
//! plain and the TLS listener, and read optionally: a router served without
//! connect info (some tests) simply has no peer.

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::serve::IncomingStream;
use tokio::net::TcpListener;

/// The peer's socket address (the load balancer's, behind one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

impl Connected<IncomingStream<'_, TcpListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, TcpListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

/// Extractor: the peer address when the server recorded one.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(Peer(
            parts
                .extensions
                .get::<ConnectInfo<PeerAddr>>()
                .map(|ConnectInfo(PeerAddr(addr))| *addr),
        ))
    }
}
