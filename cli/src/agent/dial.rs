//! Opening the runner's WebSocket: TCP (directly or through an HTTP proxy's
//! CONNECT tunnel), then TLS with the process's trust configuration
//! ([`crate::tls`]), then the upgrade.
//!
//! tokio-tungstenite does not read proxy variables, so the tunnel is made
//! here: `HTTPS_PROXY` for `wss://`, `HTTP_PROXY` for `ws://` (either case),
//! `ALL_PROXY` as a fallback, and `NO_PROXY` (comma-separated host suffixes,
//! or `*`) to bypass. A sandbox's runner is given its proxy with
//! [`set_relay_proxy`] instead, so its tools do not inherit it.

use std::time::Duration;

use base64::Engine as _;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Error};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

/// Time for the proxy to answer CONNECT.
pub const PROXY_TIMEOUT: Duration = Duration::from_secs(15);
/// Largest CONNECT answer header we read.
const PROXY_HEADER_LIMIT: usize = 16 * 1024;

pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A proxy to tunnel through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// `user:password` for Basic auth, when the URL carried it.
    pub credentials: Option<String>,
}

/// The proxy for the relay connection only (`run --relay-proxy`).
static RELAY_PROXY: std::sync::OnceLock<Proxy> = std::sync::OnceLock::new();

/// Tunnels every relay connection of this process through `proxy`,
/// whatever the environment says; the first call wins.
pub fn set_relay_proxy(proxy: Proxy) {
    let _ = RELAY_PROXY.set(proxy);
}

/// The proxy for `scheme://host`: [`set_relay_proxy`]'s, else from the
/// environment.
pub fn proxy_for(scheme: &str, host: &str) -> Option<Proxy> {
    if let Some(proxy) = RELAY_PROXY.get() {
        return Some(proxy.clone());
    }
    let lookup = |name: &str| {
        std::env::var(name)
            .ok()
            .or_else(|| std::env::var(name.to_lowercase()).ok())
            .filter(|v| !v.trim().is_empty())
    };
    if let Some(no_proxy) = lookup("NO_PROXY") {
        if bypassed(&no_proxy, host) {
            return None;
        }
    }
    let value = match scheme {
        "wss" | "https" => lookup("HTTPS_PROXY"),
        _ => lookup("HTTP_PROXY"),
    }
    .or_else(|| lookup("ALL_PROXY"))?;
    parse_proxy(&value)
}

fn bypassed(no_proxy: &str, host: &str) -> bool {
    no_proxy
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .any(|entry| {
            if entry == "*" {
                return true;
            }
            let entry = entry.trim_start_matches('.');
            host == entry || host.ends_with(&format!(".{entry}"))
        })
}

/// `http://user:pass@proxy:3128` → host, port, credentials.
pub fn parse_proxy(value: &str) -> Option<Proxy> {
    // `host:port` alone would parse as a URL with scheme `host`.
    let value = value.trim();
    let url = if value.contains("://") {
        reqwest::Url::parse(value)
    } else {
        reqwest::Url::parse(&format!("http://{value}"))
    }
    .ok()?;
    let host = url.host_str()?.to_owned();
    let port = url.port_or_known_default().unwrap_or(3128);
    let credentials = (!url.username().is_empty())
        .then(|| format!("{}:{}", url.username(), url.password().unwrap_or("")));
    Some(Proxy {
        host,
        port,
        credentials,
    })
}

/// Connects to the relay and performs the WebSocket handshake.
pub async fn dial(request: Request, config: WebSocketConfig) -> Result<Socket, Error> {
    let uri = request.uri().clone();
    let scheme = uri.scheme_str().unwrap_or("ws").to_owned();
    let host = uri
        .host()
        .ok_or(Error::Url(tungstenite::error::UrlError::NoHostName))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "wss" { 443 } else { 80 });
    let stream = match proxy_for(&scheme, &host) {
        Some(proxy) => tunnel(&proxy, &host, port).await?,
        None => TcpStream::connect((host.as_str(), port)).await?,
    };
    stream.set_nodelay(true)?;
    let connector = Connector::Rustls(crate::tls::client_config());
    let (socket, _response) = tokio_tungstenite::client_async_tls_with_config(
        request,
        stream,
        Some(config),
        Some(connector),
    )
    .await?;
    Ok(socket)
}

/// Opens a CONNECT tunnel to `host:port` through `proxy`. Public so that
/// `runner doctor` inspects the relay's certificate over the same tunnel.
pub async fn tunnel(proxy: &Proxy, host: &str, port: u16) -> Result<TcpStream, Error> {
    let mut stream = TcpStream::connect((proxy.host.as_str(), proxy.port)).await?;
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(credentials) = &proxy.credentials {
        let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
        request.push_str(&format!("Proxy-Authorization: Basic {encoded}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await?;
    let answer = tokio::time::timeout(PROXY_TIMEOUT, read_header(&mut stream))
        .await
        .map_err(|_| proxy_error(proxy, "did not answer CONNECT in time"))??;
    let status_line = answer.lines().next().unwrap_or_default();
    let ok = status_line
        .split_whitespace()
        .nth(1)
        .is_some_and(|code| code == "200");
    if !ok {
        return Err(proxy_error(
            proxy,
            &format!("refused CONNECT: {status_line}"),
        ));
    }
    Ok(stream)
}

async fn read_header(stream: &mut TcpStream) -> Result<String, Error> {
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: anything after the blank line belongs to the tunnel.
    while !header.ends_with(b"\r\n\r\n") {
        if header.len() >= PROXY_HEADER_LIMIT {
            return Err(Error::Io(std::io::Error::other(
                "proxy answer header too long",
            )));
        }
        if stream.read(&mut byte).await? == 0 {
            return Err(Error::Io(std::io::Error::other(
                "proxy closed the connection",
            )));
        }
        header.push(byte[0]);
    }
    Ok(String::from_utf8_lossy(&header).into_owned())
}

fn proxy_error(proxy: &Proxy, what: &str) -> Error {
    Error::Io(std::io::Error::other(format!(
        "proxy {}:{} {what}",
        proxy.host, proxy.port
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls_parse_with_and_without_scheme_and_credentials() {
        assert_eq!(
            parse_proxy("http://u:p@proxy.local:8080"),
            Some(Proxy {
                host: "proxy.local".into(),
                port: 8080,
                credentials: Some("u:p".into())
            })
        );
        assert_eq!(
            parse_proxy("proxy.local:3128"),
            Some(Proxy {
                host: "proxy.local".into(),
                port: 3128,
                credentials: None
            })
        );
    }

    #[test]
    fn no_proxy_matches_suffixes_and_star() {
        assert!(bypassed("localhost,.corp.example", "relay.corp.example"));
        assert!(bypassed("corp.example", "corp.example"));
        assert!(!bypassed("corp.example", "evilcorp.example"));
        assert!(bypassed("*", "anything"));
    }

    /// A real CONNECT proxy on loopback: the tunnel carries the bytes.
    #[tokio::test]
    async fn tunnels_through_a_connect_proxy() {
        let target = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let target_port = target.local_addr().expect("addr").port();
        let proxy = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let proxy_port = proxy.local_addr().expect("addr").port();
        tokio::spawn(async move {
            let (mut client, _) = proxy.accept().await.expect("accept");
            let mut buffer = vec![0u8; 1024];
            let n = client.read(&mut buffer).await.expect("read");
            let request = String::from_utf8_lossy(&buffer[..n]).into_owned();
            assert!(request.starts_with(&format!("CONNECT 127.0.0.1:{target_port} HTTP/1.1")));
            assert!(
                request.contains("Proxy-Authorization: Basic dTpw"),
                "{request}"
            );
            let mut upstream = TcpStream::connect(("127.0.0.1", target_port))
                .await
                .expect("up");
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .expect("w");
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
        tokio::spawn(async move {
            let (mut socket, _) = target.accept().await.expect("accept");
            socket
                .write_all(b"hello through the tunnel")
                .await
                .expect("write");
        });
        let proxy = Proxy {
            host: "127.0.0.1".into(),
            port: proxy_port,
            credentials: Some("u:p".into()),
        };
        let mut stream = tunnel(&proxy, "127.0.0.1", target_port)
            .await
            .expect("tunnel");
        let mut text = String::new();
        stream.read_to_string(&mut text).await.expect("read");
        assert_eq!(text, "hello through the tunnel");
    }
}
