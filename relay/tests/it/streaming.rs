//! Streamed calls: output reaches a slow API caller complete and in order,
//! a caller that stops reading gets its call cancelled instead of holding up
//! the runner's socket for good, binary output frames reach a binary stream
//! byte for byte and Server-Sent Events as whole characters.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use runner_proto::api::{stream_frame, STREAM_MEDIA_TYPE};
use runner_proto::ws::{Call, Output, OutputFrame, RelayMessage, RunnerMessage, Stream};
use serde_json::{json, Value};

use crate::support::{hello, spawn_relay, spawn_relay_timed, FakeRunner, TestRelay};
use runner_relay::state::StreamTimings;

/// Chunks the fake runner sends: far more than the relay's per-call queue
/// (32), and, at [`CHUNK_BYTES`] each, more bytes than the loopback socket
/// buffers between the relay and the caller can hide (16 MiB).
const CHUNKS: usize = 512;
const CHUNK_BYTES: usize = 32 * 1024;

/// Chunk `index`: its number, then filler, so order and loss both show.
fn chunk(index: usize) -> String {
    let head = format!("{index:06}:");
    let mut data = head.clone();
    data.extend(std::iter::repeat_n('x', CHUNK_BYTES - head.len()));
    data
}

/// Reads Server-Sent Events until the `result` or `error` event; returns
/// the output data in arrival order and the final event.
async fn read_events(mut response: reqwest::Response, pause_every: usize) -> (Vec<String>, Value) {
    let mut buffer = String::new();
    let mut outputs = Vec::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut name = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event:") {
                    name = value.trim();
                } else if let Some(value) = line.strip_prefix("data:") {
                    data.push_str(value.trim_start());
                }
            }
            if data.is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(&data).expect("event data is JSON");
            match name {
                "output" => {
                    outputs.push(value["data"].as_str().expect("output data").to_owned());
                    if pause_every > 0 && outputs.len() % pause_every == 0 {
                        // A slow reader: the runner keeps producing meanwhile.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
                _ => return (outputs, value),
            }
        }
        let next = tokio::time::timeout(Duration::from_secs(30), response.chunk())
            .await
            .expect("the stream moves within 30 s")
            .expect("the stream reads");
        let Some(bytes) = next else {
            panic!("stream ended without a result; {} outputs", outputs.len());
        };
        buffer.push_str(std::str::from_utf8(&bytes).expect("SSE is UTF-8"));
    }
}

#[tokio::test]
async fn a_slow_reader_gets_every_chunk_in_order() {
    let relay = spawn_relay().await;
    let (mut runner, call, response) =
        streamed_to_fake_runner(&relay, "stream", "text/event-stream").await;
    assert!(call.stream);

    // The runner produces as fast as the relay lets it, concurrently.
    let producer = tokio::spawn(async move {
        for index in 0..CHUNKS {
            runner
                .send(&RunnerMessage::Output(Output {
                    call_id: call.call_id.clone(),
                    stream: Stream::Stdout,
                    data: chunk(index),
                }))
                .await;
        }
        runner.answer(&call, 0).await;
        runner
    });
    // The caller reads nothing for a while (the queue and the socket
    // buffers fill up), then reads slowly.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (outputs, result) = read_events(response, 64).await;
    let _runner = producer.await.expect("producer");

    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(outputs.len(), CHUNKS, "every chunk arrives");
    for (index, data) in outputs.iter().enumerate() {
        assert!(
            *data == chunk(index),
            "chunk {index} is out of order or damaged: starts {:?}",
            &data[..data.len().min(16)]
        );
    }
}

#[tokio::test]
async fn a_reader_that_stops_gets_its_call_cancelled() {
    let stall = Duration::from_secs(1);
    let streams = StreamTimings {
        output_stall: stall,
        ..StreamTimings::default()
    };
    let relay = spawn_relay_timed(streams, |state| state).await;
    let (runner, call, response) =
        streamed_to_fake_runner(&relay, "stuck", "text/event-stream").await;

    // Output until the relay stops reading the socket and cancels the call.
    let call_id = call.call_id.clone();
    let started = Instant::now();
    let (mut sink, mut stream) = futures_util::StreamExt::split(runner.socket);
    let producer = tokio::spawn(async move {
        use futures_util::SinkExt;
        for index in 0.. {
            let frame = RunnerMessage::Output(Output {
                call_id: call.call_id.clone(),
                stream: Stream::Stdout,
                data: chunk(index),
            });
            let text = serde_json::to_string(&frame).expect("encode");
            if sink
                .send(tokio_tungstenite::tungstenite::Message::text(text))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    let cancel = tokio::time::timeout(Duration::from_secs(30), async {
        use futures_util::StreamExt;
        loop {
            let message = stream.next().await.expect("socket open").expect("frame");
            if let Ok(text) = message.to_text() {
                if let Ok(RelayMessage::Cancel { call_id }) = serde_json::from_str(text) {
                    return call_id;
                }
            }
        }
    })
    .await
    .expect("the relay cancels the call");
    producer.abort();
    assert!(started.elapsed() >= stall);

    // The caller, reading at last, gets what was queued, then the reason.
    let (outputs, result) = read_events(response, 0).await;
    assert!(!outputs.is_empty());
    for (index, data) in outputs.iter().enumerate() {
        assert!(*data == chunk(index), "chunk {index} out of order");
    }
    assert!(
        result["error"]
            .as_str()
            .unwrap_or("")
            .contains("read none of its output"),
        "{result}"
    );
    assert_eq!(cancel, call_id);
}

/// Starts a streamed call with the given `Accept`; returns the response
/// once its headers arrived.
async fn streamed_call_accepting(
    relay: &TestRelay,
    env_id: &str,
    accept: &str,
) -> reqwest::Response {
    let response = relay
        .http
        .post(format!(
            "{}/execution-environments/{env_id}/invoke-tool",
            relay.url
        ))
        .bearer_auth(&relay.admin_key)
        .header("accept", accept)
        .json(&json!({"tool_name": "shell", "args": {"command": "yes"}, "timeout_s": 120}))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::OK);
    response
}

/// A fake runner serving a new environment, a streamed call to it (with
/// this `Accept`) that it has received, and the response once its headers
/// arrived.
async fn streamed_to_fake_runner(
    relay: &TestRelay,
    name: &str,
    accept: &str,
) -> (FakeRunner, Call, reqwest::Response) {
    let (id, token) = relay.dev_env(name).await;
    let mut runner = FakeRunner::connect(relay, &token, hello("s", "i1", &["shell"])).await;
    let (response, call) = tokio::join!(
        streamed_call_accepting(relay, &id, accept),
        runner.next_call()
    );
    (runner, call, response)
}

/// Reads a whole binary stream body into `(kind, payload)` frames.
async fn read_frames(response: reqwest::Response) -> Vec<(u8, Vec<u8>)> {
    let body = tokio::time::timeout(Duration::from_secs(30), response.bytes())
        .await
        .expect("the stream ends within 30 s")
        .expect("the body reads");
    crate::support::stream_frames(&body)
}

fn frame(call_id: &str, stream: Stream, data: &[u8]) -> Vec<u8> {
    OutputFrame::encode(call_id, stream, data).expect("framed")
}

#[tokio::test]
async fn binary_output_frames_reach_a_binary_stream_byte_for_byte() {
    let relay = spawn_relay().await;
    let (mut runner, call, response) =
        streamed_to_fake_runner(&relay, "bytes", STREAM_MEDIA_TYPE).await;
    assert!(
        runner.welcome.binary_output,
        "the relay offers binary output"
    );
    assert_eq!(
        response.headers()["content-type"].to_str().ok(),
        Some(STREAM_MEDIA_TYPE)
    );
    // Every byte value, bytes that are not UTF-8, and a JSON chunk from a
    // runner that predates binary frames, interleaved with stderr.
    let all_bytes: Vec<u8> = (0..=255u8).cycle().take(100_000).collect();
    runner
        .send_binary(frame(&call.call_id, Stream::Stdout, &all_bytes))
        .await;
    runner
        .send_binary(frame(&call.call_id, Stream::Stderr, &[0xff, 0xfe, b'\n']))
        .await;
    runner
        .send(&RunnerMessage::Output(Output {
            call_id: call.call_id.clone(),
            stream: Stream::Stdout,
            data: "text €".into(),
        }))
        .await;
    // A kind from a newer runner is skipped, not fatal.
    runner.send_binary(vec![0x7f, 1, 2, 3]).await;
    runner.answer(&call, 3).await;

    let frames = read_frames(response).await;
    let (last_kind, last) = frames.last().expect("frames").clone();
    assert_eq!(last_kind, stream_frame::RESULT);
    let result: Value = serde_json::from_slice(&last).expect("result JSON");
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["call_id"], call.call_id.as_str());
    let of = |kind: u8| -> Vec<u8> {
        frames
            .iter()
            .filter(|(k, _)| *k == kind)
            .flat_map(|(_, payload)| payload.clone())
            .collect()
    };
    let mut expected = all_bytes.clone();
    expected.extend_from_slice("text €".as_bytes());
    assert!(of(stream_frame::STDOUT) == expected, "stdout byte for byte");
    assert_eq!(of(stream_frame::STDERR), vec![0xff, 0xfe, b'\n']);
}

#[tokio::test]
async fn server_sent_events_keep_characters_split_across_binary_frames_whole() {
    let relay = spawn_relay().await;
    let (mut runner, call, response) =
        streamed_to_fake_runner(&relay, "utf8", "text/event-stream").await;
    let euro = "€".as_bytes();
    runner
        .send_binary(frame(&call.call_id, Stream::Stdout, &[b'a', euro[0]]))
        .await;
    runner
        .send_binary(frame(&call.call_id, Stream::Stdout, &euro[1..]))
        .await;
    runner
        .send_binary(frame(&call.call_id, Stream::Stdout, &[b'b', 0xff, b'c']))
        .await;
    // An incomplete character at the very end still arrives (replaced).
    runner
        .send_binary(frame(&call.call_id, Stream::Stderr, &[euro[0]]))
        .await;
    runner.answer(&call, 0).await;
    let (outputs, result) = read_events(response, 0).await;
    assert_eq!(result["exit_code"], 0, "{result}");
    assert_eq!(outputs.concat(), "a€b\u{fffd}c\u{fffd}");
}

#[tokio::test]
async fn a_malformed_output_frame_closes_the_session_and_fails_its_call() {
    let relay = spawn_relay().await;
    let (mut runner, _call, response) =
        streamed_to_fake_runner(&relay, "bad", STREAM_MEDIA_TYPE).await;
    // Stream 9 does not exist.
    runner
        .send_binary(vec![OutputFrame::KIND, 9, 1, b'c', b'x'])
        .await;
    let closed = runner.closed().await;
    assert_eq!(
        crate::support::code(&closed),
        Some(runner_proto::close::BAD_FRAME)
    );
    let frames = read_frames(response).await;
    let (kind, payload) = frames.last().expect("frames");
    assert_eq!(*kind, stream_frame::ERROR);
    let body: Value = serde_json::from_slice(payload).expect("error JSON");
    assert_eq!(body["error"]["code"], "runner_disconnected", "{body}");
}

/// A binary stream that is quiet for longer than the keep-alive interval
/// carries an empty keep-alive frame, so proxies keep the connection.
#[tokio::test]
async fn a_quiet_binary_stream_carries_keep_alive_frames() {
    let streams = StreamTimings {
        keep_alive: Duration::from_secs(1),
        ..StreamTimings::default()
    };
    let relay = spawn_relay_timed(streams, |state| state).await;
    let (mut runner, call, response) =
        streamed_to_fake_runner(&relay, "quiet", STREAM_MEDIA_TYPE).await;
    // Two and a half keep-alive periods of silence.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    runner.answer(&call, 0).await;
    let frames = read_frames(response).await;
    let (last, keep_alives) = frames.split_last().expect("frames");
    assert_eq!(last.0, stream_frame::RESULT, "{frames:?}");
    // One per quiet second: some, and not a stream of them.
    assert!((1..=3).contains(&keep_alives.len()), "{frames:?}");
    for (kind, payload) in keep_alives {
        assert_eq!(*kind, stream_frame::KEEP_ALIVE, "{frames:?}");
        assert!(payload.is_empty());
    }
}
