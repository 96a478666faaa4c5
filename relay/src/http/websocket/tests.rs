//! The fast path and the plain one side by side, over real sockets: given
//! the same frames, a session sees the same messages and errors, and the
//! client gets the same bytes back; the same requests are refused alike.

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use futures_util::{Sink, SinkExt, Stream, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tungstenite::protocol::{Message, WebSocketConfig};

use super::{plain, read_ahead};

/// Largest frame the sockets here take: small, so one above it is cheap.
const MAX_FRAME: usize = 512 * 1024;
/// Longest a script's answer may take.
const DEADLINE: std::time::Duration = std::time::Duration::from_secs(10);

type Transcripts = mpsc::UnboundedSender<Vec<String>>;

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME))
        .max_frame_size(Some(MAX_FRAME))
        .read_buffer_size(4 * 1024)
}

/// Records what a session sees, one line per item, until its socket ends;
/// text and binary messages are echoed back.
async fn record<S>(mut socket: S, transcripts: Transcripts)
where
    S: Stream<Item = Result<Message, tungstenite::Error>>
        + Sink<Message, Error = tungstenite::Error>
        + Unpin,
{
    let mut seen = Vec::new();
    while let Some(item) = socket.next().await {
        match item {
            Ok(message) => {
                seen.push(describe(&message));
                if matches!(message, Message::Text(_) | Message::Binary(_)) {
                    if let Err(error) = socket.send(message).await {
                        seen.push(format!("send failed: {error}"));
                        break;
                    }
                }
            }
            Err(error) => {
                seen.push(format!("error: {error}"));
                break;
            }
        }
    }
    // The test may have stopped listening already; nothing to record then.
    let _ = transcripts.send(seen);
}

fn describe(message: &Message) -> String {
    match message {
        Message::Binary(data) => format!(
            "binary of {} bytes, sum {}",
            data.len(),
            data.iter().map(|&byte| u64::from(byte)).sum::<u64>()
        ),
        other => format!("{other:?}"),
    }
}

async fn fast(State(transcripts): State<Transcripts>, upgrade: read_ahead::Upgrade) -> Response {
    upgrade.on_upgrade(config(), move |socket| record(socket, transcripts))
}

async fn plain(State(transcripts): State<Transcripts>, upgrade: plain::Upgrade) -> Response {
    upgrade.on_upgrade(config(), move |socket| record(socket, transcripts))
}

/// A server with both paths (`/fast`, `/plain`); its address and the
/// sessions' transcripts.
async fn serve() -> (String, mpsc::UnboundedReceiver<Vec<String>>) {
    let (sender, transcripts) = mpsc::unbounded_channel();
    let router = Router::new()
        .route("/fast", get(fast))
        .route("/plain", get(plain))
        .with_state(sender);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (address, transcripts)
}

/// One frame as a client writes it: `first` is FIN, the reserved bits and
/// the opcode; the payload is masked unless `masked` is false.
fn frame(first: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mask_bit = if masked { 0x80 } else { 0 };
    let mut bytes = vec![first];
    match payload.len() {
        short @ 0..=125 => bytes.push(mask_bit | u8::try_from(short).expect("short")),
        medium @ 126..=0xffff => {
            bytes.push(mask_bit | 126);
            bytes.extend(u16::try_from(medium).expect("medium").to_be_bytes());
        }
        long => {
            bytes.push(mask_bit | 127);
            bytes.extend(u64::try_from(long).expect("long").to_be_bytes());
        }
    }
    if masked {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        bytes.extend(key);
        bytes.extend(
            payload
                .iter()
                .enumerate()
                .map(|(index, byte)| byte ^ key[index % 4]),
        );
    } else {
        bytes.extend_from_slice(payload);
    }
    bytes
}

/// Upgrades at `path`, writes `bytes`, and reads what comes back until the
/// server ends the connection; that, and what the session saw.
async fn run(
    address: &str,
    path: &str,
    bytes: &[u8],
    transcripts: &mut mpsc::UnboundedReceiver<Vec<String>>,
) -> (Vec<u8>, Vec<String>) {
    let tcp = TcpStream::connect(address).await.expect("connect");
    let url = format!("ws://{address}{path}");
    let (mut socket, response) = tokio_tungstenite::client_async(url, tcp)
        .await
        .expect("upgraded");
    assert_eq!(response.status(), 101);
    let tcp = socket.get_mut();
    // The server may stop reading at a frame it refuses; the rest of the
    // write then fails, which is what the script tests.
    let _ = tcp.write_all(bytes).await;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(DEADLINE, tcp.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "{path}: the server never ended the connection"
    );
    let seen = tokio::time::timeout(DEADLINE, transcripts.recv())
        .await
        .expect("the session ended")
        .expect("the server runs");
    (answer, seen)
}

#[tokio::test]
async fn both_paths_give_a_session_the_same_messages_and_errors() {
    let big: Vec<u8> = (0..300_000).map(|index| (index % 251) as u8).collect();
    let mut close = 1000u16.to_be_bytes().to_vec();
    close.extend_from_slice(b"bye");
    let messages = [
        frame(0x81, b"hello", true),
        frame(0x82, &big, true),
        frame(0x89, b"ping", true),
        frame(0x01, b"hel", true),
        frame(0x80, b"lo", true),
        frame(0x88, &close, true),
    ]
    .concat();
    let mut too_large = frame(0x82, &[], true);
    too_large[1] = 0x80 | 127;
    too_large.splice(
        2..2,
        u64::try_from(MAX_FRAME + 1).expect("fits").to_be_bytes(),
    );
    let scripts = [
        ("messages", messages),
        ("unmasked", frame(0x81, b"{}", false)),
        ("reserved data opcode", frame(0x83, b"x", true)),
        ("reserved control opcode", frame(0x8b, b"", true)),
        ("reserved bit", frame(0xc1, b"{}", true)),
        ("not UTF-8", frame(0x81, &[b'{', 0xc3, 0x28, b'}'], true)),
        ("too large", too_large),
    ];
    let (address, mut transcripts) = serve().await;
    for (script, bytes) in scripts {
        let fast = run(&address, "/fast", &bytes, &mut transcripts).await;
        let plain = run(&address, "/plain", &bytes, &mut transcripts).await;
        assert!(!fast.1.is_empty(), "{script}: the session saw nothing");
        assert_eq!(fast.1, plain.1, "{script}: what the session saw");
        assert_eq!(fast.0, plain.0, "{script}: what the client got back");
    }
}

#[tokio::test]
async fn both_paths_refuse_the_same_requests() {
    let (address, _transcripts) = serve().await;
    let upgrade = [
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
    ];
    let http = reqwest::Client::new();
    // Each case drops or changes one header of an upgrade without a key.
    for (case, changed) in [
        ("no key", None),
        ("no upgrade headers", Some(("connection", ""))),
        ("an old version", Some(("sec-websocket-version", "8"))),
    ] {
        let mut answers = Vec::new();
        for path in ["/fast", "/plain"] {
            let mut request = http.get(format!("http://{address}{path}"));
            for (name, value) in upgrade {
                match changed {
                    Some((header, "")) if header == name => {}
                    Some((header, other)) if header == name => {
                        request = request.header(name, other)
                    }
                    _ => request = request.header(name, value),
                }
            }
            let response = request.send().await.expect("answered");
            let status = response.status();
            answers.push((status, response.text().await.expect("a body")));
        }
        assert_eq!(answers[0].0, 400, "{case}: {answers:?}");
        assert_eq!(answers[0], answers[1], "{case}");
    }
}
