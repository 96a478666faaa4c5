//! The host's proxy for one sandbox, on a unix socket only that sandbox
//! sees: `CONNECT host:port` and absolute-form plain HTTP
//! (`GET http://host/…`), to the destinations [`Allow`] permits; anything
//! else is answered 403 (or 400/405) and closed. Plain HTTP requests are
//! sent on with `Connection: close`, one request per connection.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::allow::Allow;

/// Largest request head read.
const HEAD_LIMIT: usize = 16 * 1024;
/// Time to read the head, and to connect upstream.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves connections on `listener` until the task is aborted.
pub async fn serve(listener: UnixListener, allow: Arc<Allow>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let allow = Arc::clone(&allow);
        tokio::spawn(async move {
            if let Err(error) = handle(stream, &allow).await {
                tracing::debug!(%error, "sandbox proxy connection ended");
            }
        });
    }
}

/// A parsed request line.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    Connect {
        host: String,
        port: u16,
    },
    Http {
        host: String,
        port: u16,
        origin_form_line: String,
    },
}

async fn handle(mut client: UnixStream, allow: &Allow) -> std::io::Result<()> {
    let Ok(Ok((head, rest))) = tokio::time::timeout(STEP_TIMEOUT, read_head(&mut client)).await
    else {
        return answer(&mut client, 400, "cannot read the request").await;
    };
    let Some((first, headers)) = head.split_once("\r\n") else {
        return answer(&mut client, 400, "no request line").await;
    };
    let target = match parse_request_line(first) {
        Ok(target) => target,
        Err((status, why)) => return answer(&mut client, status, why).await,
    };
    let (host, port) = match &target {
        Target::Connect { host, port } | Target::Http { host, port, .. } => (host.clone(), *port),
    };
    if !allow.permits(&host, port) {
        tracing::info!(%host, port, "sandbox proxy refused a destination");
        return answer(
            &mut client,
            403,
            "destination not allowed by the sandbox's network policy",
        )
        .await;
    }
    let connect = TcpStream::connect((host.trim_start_matches('[').trim_end_matches(']'), port));
    let mut upstream = match tokio::time::timeout(STEP_TIMEOUT, connect).await {
        Ok(Ok(stream)) => stream,
        _ => return answer(&mut client, 502, "cannot connect to the destination").await,
    };
    // As the runner's own socket: no 40 ms stalls on small frames.
    upstream.set_nodelay(true)?;
    match target {
        Target::Connect { .. } => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            upstream.write_all(&rest).await?;
        }
        Target::Http {
            origin_form_line, ..
        } => {
            let mut out = origin_form_line;
            out.push_str("\r\n");
            for line in headers.split("\r\n").filter(|line| !line.is_empty()) {
                let name = line
                    .split(':')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                if matches!(
                    name.as_str(),
                    "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
                ) {
                    continue;
                }
                out.push_str(line);
                out.push_str("\r\n");
            }
            out.push_str("Connection: close\r\n\r\n");
            upstream.write_all(out.as_bytes()).await?;
            upstream.write_all(&rest).await?;
        }
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Reads up to the end of the head: the head (without its blank line) and
/// the bytes read past it.
async fn read_head(stream: &mut UnixStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buffer.split_off(end + 4);
            buffer.truncate(end);
            let head = String::from_utf8(buffer)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
            return Ok((head, rest));
        }
        if buffer.len() > HEAD_LIMIT {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
    }
}

fn parse_request_line(line: &str) -> Result<Target, (u16, &'static str)> {
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err((400, "malformed request line"));
    };
    if method == "CONNECT" {
        let (host, port) = split_host_port(target, None).ok_or((400, "CONNECT needs host:port"))?;
        return Ok(Target::Connect { host, port });
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return Err((
            405,
            "only CONNECT and absolute-form http:// requests are proxied",
        ));
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    if authority.contains('@') {
        return Err((400, "credentials in the URL are not proxied"));
    }
    let (host, port) = split_host_port(authority, Some(80)).ok_or((400, "bad host"))?;
    Ok(Target::Http {
        host,
        port,
        origin_form_line: format!("{method} {path} {version}"),
    })
}

/// `host:port`, `[v6]:port`, or a bare host with a default port.
fn split_host_port(authority: &str, default: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(port) => Some(port.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        (host.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port.parse().ok()?)),
            None => (authority.to_owned(), None),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some((host, port.or(default)?))
}

async fn answer(client: &mut UnixStream, status: u16, why: &str) -> std::io::Result<()> {
    let reason = match status {
        403 => "Forbidden",
        405 => "Method Not Allowed",
        502 => "Bad Gateway",
        _ => "Bad Request",
    };
    let text = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{why}\n",
        why.len() + 1
    );
    client.write_all(text.as_bytes()).await?;
    client.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_name_their_destination() {
        assert_eq!(
            parse_request_line("CONNECT example.test:443 HTTP/1.1"),
            Ok(Target::Connect {
                host: "example.test".into(),
                port: 443
            })
        );
        assert_eq!(
            parse_request_line("GET http://localhost:8080/a?b HTTP/1.1"),
            Ok(Target::Http {
                host: "localhost".into(),
                port: 8080,
                origin_form_line: "GET /a?b HTTP/1.1".into()
            })
        );
        assert_eq!(
            parse_request_line("GET http://[::1]/ HTTP/1.1")
                .map(|t| matches!(t, Target::Http { port: 80, .. })),
            Ok(true)
        );
        assert!(parse_request_line("GET /local HTTP/1.1").is_err());
        assert!(parse_request_line("CONNECT example.test HTTP/1.1").is_err());
        assert!(parse_request_line("GET http://u:p@h/ HTTP/1.1").is_err());
    }
}
