//! Reading a child's output line by line, whatever its bytes.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The next line of `pipe` without its line end, invalid UTF-8 replaced;
/// `None` at the end or on a read error. Reads past any bytes: a reader
/// that stopped at a line that is not UTF-8 would close the pipe early,
/// and the child's next write would fail (EPIPE) or kill it (SIGPIPE).
pub(super) async fn next_line(
    pipe: &mut (impl AsyncBufRead + Unpin),
    buffer: &mut Vec<u8>,
) -> Option<String> {
    buffer.clear();
    match pipe.read_until(b'\n', buffer).await {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(String::from_utf8_lossy(buffer).trim_end().to_owned()),
    }
}
