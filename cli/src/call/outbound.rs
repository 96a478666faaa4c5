//! The queue of what goes out on the runner's socket, and the sinks that
//! put a call's streamed output in it as frames.

use std::sync::Arc;

use runner_proto::ws::{utf8_boundary, Output, OutputFrame, RunnerMessage, Stream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// Sends one stream's bytes as output frames: binary [`OutputFrame`]s, the
/// bytes as read, to relays that read them; JSON [`Output`] frames to
/// older relays, where a multi-byte character cut by a read boundary is held
/// back until its end arrives so the lossy UTF-8 decoding does not garble
/// it.
#[derive(Debug)]
pub struct OutputSink {
    queue: OutboundQueue,
    call_id: String,
    stream: Stream,
    binary: bool,
    carry: Vec<u8>,
    closed: bool,
}

impl OutputSink {
    /// A sink for `stream` of the call `call_id`; `binary`: the relay reads
    /// binary output frames.
    pub fn new(queue: OutboundQueue, call_id: String, stream: Stream, binary: bool) -> OutputSink {
        OutputSink {
            queue,
            call_id,
            stream,
            binary,
            carry: Vec::new(),
            closed: false,
        }
    }

    /// Sends bytes as soon as the queue has room for them.
    pub async fn send(&mut self, bytes: &[u8]) {
        let room = self.room().await;
        self.send_in(room, bytes).await;
    }

    /// Waits until the queue has room for one more frame of output. A
    /// reader that waits here can keep reading into the frame it holds.
    pub async fn room(&self) -> Room {
        if self.closed {
            return Room { _place: None };
        }
        self.queue.room().await
    }

    /// Sends bytes in the room [`OutputSink::room`] gave.
    pub async fn send_in(&mut self, room: Room, bytes: &[u8]) {
        if self.closed || bytes.is_empty() {
            return;
        }
        if self.binary {
            match OutputFrame::encode(&self.call_id, self.stream, bytes) {
                Ok(frame) => self.emit(room, Outbound::Frame(frame)).await,
                // Call ids come from the relay, at most 128 bytes: cannot
                // happen, and a chunk is not worth failing the call for.
                Err(error) => tracing::warn!(%error, "output chunk not sent"),
            }
            return;
        }
        self.carry.extend_from_slice(bytes);
        let cut = utf8_boundary(&self.carry);
        let text = String::from_utf8_lossy(&self.carry[..cut]).into_owned();
        self.carry.drain(..cut);
        self.emit_text(room, text).await;
    }

    /// Sends what is held back (at the end of the stream).
    pub async fn flush(&mut self) {
        if self.carry.is_empty() {
            return;
        }
        let room = self.room().await;
        let text = String::from_utf8_lossy(&self.carry).into_owned();
        self.carry.clear();
        self.emit_text(room, text).await;
    }

    async fn emit_text(&mut self, room: Room, data: String) {
        if data.is_empty() {
            return;
        }
        let frame = RunnerMessage::Output(Output {
            call_id: self.call_id.clone(),
            stream: self.stream,
            data,
        });
        self.emit(room, Outbound::Message(frame)).await;
    }

    async fn emit(&mut self, room: Room, frame: Outbound) {
        if self.closed {
            return;
        }
        // The session is gone: the result will have nowhere to go either.
        if self.queue.send_output(room, frame).await.is_err() {
            self.closed = true;
        }
    }
}

/// The queue of what goes out on the runner's socket: results and other
/// messages, and the output of streamed calls. It outlives a session (a
/// call's result goes out on the next connection).
///
/// Output may hold only a few places in it ([`OutboundQueue::new`]), each
/// until it is written, so what waits for the socket stays small and warm
/// in the cache however fast a command writes and however slowly the relay
/// reads. A reader that waits for a place keeps reading into the frame it
/// holds, up to its 256 KiB.
#[derive(Debug, Clone)]
pub struct OutboundQueue {
    sender: mpsc::Sender<Queued>,
    output_places: Arc<Semaphore>,
}

/// An [`Outbound`] in the queue, with the [`Room`] it holds until it is
/// dropped, once written.
#[derive(Debug)]
pub struct Queued {
    pub outbound: Outbound,
    pub room: Room,
}

/// One output frame's place in the queue, given back when dropped; none
/// for a message, or for a sink whose session is gone.
#[derive(Debug)]
pub struct Room {
    _place: Option<OwnedSemaphorePermit>,
}

/// The session that read the queue is gone for good.
#[derive(Debug)]
pub struct QueueClosed;

impl OutboundQueue {
    /// A queue of at most `frames` entries, of which at most
    /// `output_frames` are output.
    pub fn new(frames: usize, output_frames: usize) -> (OutboundQueue, mpsc::Receiver<Queued>) {
        let (sender, receiver) = mpsc::channel(frames.max(1));
        let places = output_frames.clamp(1, Semaphore::MAX_PERMITS);
        let queue = OutboundQueue {
            sender,
            output_places: Arc::new(Semaphore::new(places)),
        };
        (queue, receiver)
    }

    /// Queues a message (a result, an answer).
    pub async fn send(&self, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued {
            outbound,
            room: Room { _place: None },
        };
        self.sender.send(queued).await.map_err(|_| QueueClosed)
    }

    /// Queues a message unless the queue is full.
    pub fn try_send(&self, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued {
            outbound,
            room: Room { _place: None },
        };
        self.sender.try_send(queued).map_err(|_| QueueClosed)
    }

    async fn room(&self) -> Room {
        // Nothing closes the semaphore: `ok()` is always `Some`.
        Room {
            _place: Arc::clone(&self.output_places).acquire_owned().await.ok(),
        }
    }

    async fn send_output(&self, room: Room, outbound: Outbound) -> Result<(), QueueClosed> {
        let queued = Queued { outbound, room };
        self.sender.send(queued).await.map_err(|_| QueueClosed)
    }
}

/// What goes out on the runner's socket.
#[derive(Debug, Clone, PartialEq)]
pub enum Outbound {
    /// A JSON frame.
    Message(RunnerMessage),
    /// A binary [`OutputFrame`], encoded.
    Frame(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Output goes as binary frames, bytes as read, to a relay that reads
    /// them; as JSON frames with whole characters to one that does not.
    #[tokio::test]
    async fn output_sinks_frame_bytes_for_the_relay_they_talk_to() {
        let euro = "€".as_bytes();
        for binary in [true, false] {
            let (queue, mut receiver) = OutboundQueue::new(8, 8);
            let mut sink = OutputSink::new(queue, "c1".to_owned(), Stream::Stdout, binary);
            sink.send(&[b'a', euro[0]]).await;
            sink.send(&[euro[1], euro[2], 0xff]).await;
            sink.flush().await;
            drop(sink);
            let mut frames = Vec::new();
            while let Some(queued) = receiver.recv().await {
                frames.push(queued.outbound);
            }
            if binary {
                let bytes: Vec<u8> = frames
                    .iter()
                    .flat_map(|frame| match frame {
                        Outbound::Frame(frame) => {
                            let header = OutputFrame::decode(frame).expect("an output frame");
                            assert_eq!((header.call_id, header.stream), ("c1", Stream::Stdout));
                            frame[header.data_offset..].to_vec()
                        }
                        Outbound::Message(message) => panic!("JSON frame {message:?}"),
                    })
                    .collect();
                assert_eq!(bytes, [b'a', euro[0], euro[1], euro[2], 0xff]);
            } else {
                let text: String = frames
                    .iter()
                    .map(|frame| match frame {
                        Outbound::Message(RunnerMessage::Output(output)) => output.data.clone(),
                        other => panic!("not a JSON output frame: {other:?}"),
                    })
                    .collect();
                assert_eq!(text, "a€\u{fffd}");
            }
        }
    }

    /// Output holds at most its places in the queue until written; a
    /// message still gets in.
    #[tokio::test]
    async fn output_waits_for_a_place_until_earlier_output_is_written() {
        let (queue, mut receiver) = OutboundQueue::new(8, 2);
        let mut sink = OutputSink::new(queue.clone(), "c1".to_owned(), Stream::Stdout, true);
        sink.send(b"one").await;
        sink.send(b"two").await;
        let third = tokio::time::timeout(Duration::from_millis(100), sink.send(b"three")).await;
        assert!(
            third.is_err(),
            "a third frame went in while two were unwritten"
        );
        queue
            .send(Outbound::Message(RunnerMessage::Unknown))
            .await
            .expect("a message is not held back by output");
        let first = receiver.recv().await.expect("the first frame");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), sink.send(b"three"))
            .await
            .expect("a place once the first frame was written");
        let mut payloads = Vec::new();
        drop((sink, queue));
        while let Some(Queued { outbound, .. }) = receiver.recv().await {
            if let Outbound::Frame(frame) = outbound {
                let header = OutputFrame::decode(&frame).expect("an output frame");
                payloads.push(frame[header.data_offset..].to_vec());
            }
        }
        assert_eq!(payloads, [b"two".to_vec(), b"three".to_vec()]);
    }
}
