//! Serving the relay over TLS itself (`--tls-cert`/`--tls-key`), for
//! deployments without a TLS-terminating load balancer in front.
//!
//! [`TlsListener`] is an `axum::serve::Listener`: a background task accepts
//! TCP connections and runs each TLS handshake in its own task (bounded in
//! number and time), so one slow or hostile client cannot stall accepting
//! the others; finished streams are handed to axum through a channel.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// Time a client gets to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes in progress at once; more wait for a slot.
pub const MAX_HANDSHAKES: usize = 1024;
/// Accepted streams waiting for axum to pick them up.
const QUEUE: usize = 1024;

/// Loads a PEM certificate chain and private key into a server config.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading TLS certificate {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert.display()))?;
    if chain.is_empty() {
        anyhow::bail!(
            "TLS certificate file {} holds no certificate",
            cert.display()
        );
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading TLS private key {}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("the TLS certificate and key do not match or are unsupported")?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A TLS listener for `axum::serve`.
pub struct TlsListener {
    local_addr: SocketAddr,
    accepted: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
}

impl TlsListener {
    /// Starts accepting on `listener`; the task ends when the listener is
    /// dropped with this value.
    pub fn new(listener: TcpListener, config: Arc<rustls::ServerConfig>) -> std::io::Result<Self> {
        let local_addr = listener.local_addr()?;
        let (sender, accepted) = mpsc::channel(QUEUE);
        let acceptor = TlsAcceptor::from(config);
        let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: back off
                        // instead of spinning.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                if sender.is_closed() {
                    return;
                }
                let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    let _slot = slot;
                    let _ = tcp.set_nodelay(true);
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self {
            local_addr,
            accepted,
        })
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            if let Some(accepted) = self.accepted.recv().await {
                return accepted;
            }
            // The accept task only ends when we are being dropped; park
            // rather than spin.
            std::future::pending::<()>().await;
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local_addr)
    }
}

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, TlsListener>>
    for crate::peer::PeerAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, TlsListener>) -> Self {
        crate::peer::PeerAddr(*stream.remote_addr())
    }
}
