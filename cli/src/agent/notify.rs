//! systemd readiness notification (`Type=notify`), without libsystemd.
//!
//! The protocol is one datagram of `KEY=value` lines to the socket named by
//! `$NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace). Outside
//! systemd the variable is unset and this does nothing.

/// Sends `state` (e.g. `READY=1\nSTATUS=connected`) if running under systemd.
pub fn notify(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(error) = send(&socket.to_string_lossy(), state) {
        tracing::debug!(%error, "sd_notify failed");
    }
}

#[cfg(target_os = "linux")]
fn send(socket: &str, state: &str) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let sender = UnixDatagram::unbound()?;
    let address = match socket.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes())?,
        None => SocketAddr::from_pathname(socket)?,
    };
    sender.send_to_addr(state.as_bytes(), &address)?;
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn send(_socket: &str, _state: &str) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn ready_reaches_the_notify_socket() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify.sock");
        let listener = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
        super::send(&path.display().to_string(), "READY=1").expect("send");
        let mut buffer = [0u8; 64];
        let n = listener.recv(&mut buffer).expect("recv");
        assert_eq!(&buffer[..n], b"READY=1");
    }
}
