//! Reading a call's output pipes as the process writes them: every chunk
//! to a [`Spool`] (head and tail inline, all of it in a kept file past the
//! inline limit) and, when the call is streamed, out as an output frame.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use runner_proto::ws::Stream;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::capture::{Spool, Spooled};
use crate::call::CallScope;

/// After the process exits, how long background children may keep our
/// pipes open before we stop reading (and answer) anyway.
pub const PIPE_DRAIN_TIMEOUT: Duration = Duration::from_millis(500);
/// Size of one read from a pipe, and so the largest streamed chunk.
const READ_CHUNK: usize = 256 * 1024;
/// A reader's first buffer: most commands print little or nothing, so a
/// call does not touch fresh pages for two full [`READ_CHUNK`]s. The
/// buffer grows to [`READ_CHUNK`] the first time a read fills it.
const FIRST_READ: usize = 16 * 1024;
/// Capacity asked for an output pipe once its output is bulk ([`Widening`];
/// Linux's default is 64 KiB; 1 MiB is the most an unprivileged process
/// may set by default). A fast writer then fills whole reads, so bulk
/// output costs a quarter of the frames, wakeups and syscalls it would.
const PIPE_CAPACITY: usize = 1024 * 1024;

/// An output pipe that asks for [`PIPE_CAPACITY`] the first time a read
/// fills the buffer it was given, that is once the output is bulk: a
/// command that prints little costs no `fcntl`s, and the kernel no larger
/// ring, for it.
pub(super) struct Widening<P> {
    pub(super) pipe: P,
    pub(super) widened: bool,
}

impl<P: AsyncRead + AsFd + Unpin> AsyncRead for Widening<P> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let wanted = buf.remaining();
        let polled = std::pin::Pin::new(&mut self.pipe).poll_read(cx, buf);
        if !self.widened && wanted > 0 && buf.remaining() == 0 {
            self.widened = true;
            // Best effort: a smaller pipe only means smaller reads.
            let _ = nix::fcntl::fcntl(
                self.pipe.as_fd(),
                nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY as i32),
            );
        }
        polled
    }
}

pub(super) type Reader = (Arc<Mutex<Option<Spool>>>, tokio::task::JoinHandle<()>);

/// Reads a pipe into a shared spool (so what was read is kept even when we
/// stop waiting for EOF), streaming chunks when the caller reads them.
///
/// A task of its own, so that each pipe is read while the other waits
/// for its writer or the socket: a large output streams at the rate of its
/// own pipe.
pub(super) fn spawn_reader<R: AsyncRead + Unpin + Send + 'static>(
    reader: Option<R>,
    spool: Spool,
    scope: &CallScope,
    stream: Stream,
) -> Reader {
    let spool = Arc::new(Mutex::new(Some(spool)));
    let shared = Arc::clone(&spool);
    let mut sink = scope.output_sink(stream);
    let task = tokio::spawn(async move {
        let Some(mut reader) = reader else { return };
        // `read_buf` fills spare capacity: nothing is zeroed, and a pipe
        // that stays empty touches no page of the buffer.
        let mut buffer = Vec::with_capacity(FIRST_READ);
        let mut open = true;
        while open {
            buffer.clear();
            open = read_into(&mut reader, &mut buffer, &shared).await;
            if let Some(sink) = sink.as_mut().filter(|_| !buffer.is_empty()) {
                // Until the queue has room for this frame, read more into
                // it (up to its 256 KiB): the command only waits once the
                // frame and its pipe are full.
                let room = loop {
                    grow(&mut buffer);
                    if !open || buffer.len() == buffer.capacity() {
                        break sink.room().await;
                    }
                    tokio::select! {
                        biased;
                        room = sink.room() => break room,
                        more = read_into(&mut reader, &mut buffer, &shared) => open = more,
                    }
                };
                sink.send_in(room, &buffer).await;
            }
            grow(&mut buffer);
        }
        if let Some(sink) = sink.as_mut() {
            sink.flush().await;
        }
    });
    (spool, task)
}

/// One read into the buffer's spare capacity (cancel-safe: a read that
/// did not complete took nothing); what it read goes to the spool as well.
/// `false` at EOF or on an error.
async fn read_into<R: AsyncRead + Unpin>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    spool: &Mutex<Option<Spool>>,
) -> bool {
    let start = buffer.len();
    match reader.read_buf(buffer).await {
        Ok(0) | Err(_) => false,
        Ok(_) => {
            if let Some(spool) = lock(spool).as_mut() {
                spool.push(&buffer[start..]);
            }
            true
        }
    }
}

/// A full buffer grows once, from [`FIRST_READ`] to [`READ_CHUNK`].
fn grow(buffer: &mut Vec<u8>) {
    if buffer.len() == buffer.capacity() && buffer.capacity() < READ_CHUNK {
        buffer.reserve_exact(READ_CHUNK - buffer.len());
    }
}

fn lock(spool: &Mutex<Option<Spool>>) -> std::sync::MutexGuard<'_, Option<Spool>> {
    // A poisoned lock only means a reader panicked mid-push; the bytes kept
    // so far are still valid.
    spool
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits for a reader to reach EOF; if background processes hold the pipe,
/// gives up after [`PIPE_DRAIN_TIMEOUT`]. Returns what was kept and whether
/// the pipe was still open.
pub(super) async fn finish_reader((spool, task): Reader) -> (Spooled, bool) {
    let abort = task.abort_handle();
    let still_open = tokio::time::timeout(PIPE_DRAIN_TIMEOUT, task)
        .await
        .is_err();
    if still_open {
        abort.abort();
    }
    let taken = lock(&spool).take();
    let spooled = match taken {
        Some(spool) => spool.finish(),
        None => Spool::new(0, PathBuf::new()).finish(),
    };
    (spooled, still_open)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// An output pipe grows to [`PIPE_CAPACITY`] once a read fills the
    /// buffer, not before.
    #[tokio::test]
    async fn an_output_pipe_widens_once_its_output_is_bulk() {
        let (writer, reader) = tokio::net::unix::pipe::pipe().expect("a pipe");
        let capacity = |reader: &Widening<tokio::net::unix::pipe::Receiver>| {
            nix::fcntl::fcntl(reader.pipe.as_fd(), nix::fcntl::FcntlArg::F_GETPIPE_SZ)
                .expect("F_GETPIPE_SZ")
        };
        let mut reader = Widening {
            pipe: reader,
            widened: false,
        };
        let default = capacity(&reader);
        assert!(default < PIPE_CAPACITY as i32, "{default}");
        let mut writer = writer;
        writer.write_all(b"short").await.expect("write");
        let mut buffer = vec![0u8; FIRST_READ];
        let read = reader.read(&mut buffer).await.expect("read");
        assert_eq!(read, 5);
        assert_eq!(capacity(&reader), default, "a short read leaves it");
        writer
            .write_all(&vec![7u8; FIRST_READ])
            .await
            .expect("write");
        let read = reader.read(&mut buffer).await.expect("read");
        assert_eq!(read, FIRST_READ);
        assert!(
            capacity(&reader) >= PIPE_CAPACITY as i32,
            "a full read widens it"
        );
    }
}
