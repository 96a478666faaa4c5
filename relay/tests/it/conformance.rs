//! RFC 6455 on the runner socket: a frame that breaks the protocol gets the
//! close code the RFC names (§7.4.1) before the relay drops the socket.

use tokio::io::AsyncWriteExt;
use tokio_tungstenite::MaybeTlsStream;

use crate::support::{code, hello, spawn_relay, FakeRunner};

/// Protocol error (RFC 6455 §7.4.1).
const PROTOCOL_ERROR: u16 = 1002;
/// A text frame that is not UTF-8 (RFC 6455 §7.4.1, §8.1).
const INVALID_PAYLOAD: u16 = 1007;

/// One frame as a client writes it: FIN set, `opcode`, the payload masked
/// with `mask` when there is one (a client must mask: §5.3).
fn frame(opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    assert!(payload.len() < 126, "short frames only");
    let mut bytes = vec![0x80 | opcode];
    match mask {
        Some(key) => {
            bytes.push(0x80 | payload.len() as u8);
            bytes.extend_from_slice(&key);
            bytes.extend(
                payload
                    .iter()
                    .enumerate()
                    .map(|(index, byte)| byte ^ key[index % 4]),
            );
        }
        None => {
            bytes.push(payload.len() as u8);
            bytes.extend_from_slice(payload);
        }
    }
    bytes
}

const MASK: Option<[u8; 4]> = Some([0x37, 0xfa, 0x21, 0x3d]);
const HEARTBEAT: &[u8] = br#"{"type":"heartbeat"}"#;

#[tokio::test]
async fn frames_that_break_the_protocol_get_1002_or_1007() {
    let mut rsv1 = frame(0x1, HEARTBEAT, MASK);
    rsv1[0] |= 0x40;
    let cases = [
        (
            "an unmasked frame",
            frame(0x1, HEARTBEAT, None),
            PROTOCOL_ERROR,
        ),
        (
            "a reserved data opcode",
            frame(0x3, b"x", MASK),
            PROTOCOL_ERROR,
        ),
        (
            "a reserved control opcode",
            frame(0xB, b"", MASK),
            PROTOCOL_ERROR,
        ),
        ("a reserved bit set", rsv1, PROTOCOL_ERROR),
        (
            "a text frame that is not UTF-8",
            frame(0x1, &[b'{', 0xc3, 0x28, b'}'], MASK),
            INVALID_PAYLOAD,
        ),
    ];
    let relay = spawn_relay().await;
    for (index, (what, bytes, want)) in cases.into_iter().enumerate() {
        let (_, token) = relay.dev_env(&format!("conformance-{index}")).await;
        // A valid upgrade and handshake first: the session is under way.
        let mut runner = FakeRunner::connect(&relay, &token, hello("h", "i", &[])).await;
        let MaybeTlsStream::Plain(tcp) = runner.socket.get_mut() else {
            panic!("the test relay speaks plain TCP");
        };
        tcp.write_all(&bytes).await.expect("write the frame");
        let closed = runner.closed().await;
        assert_eq!(code(&closed), Some(want), "{what}: {closed:?}");
    }
}

/// The same during the handshake: a broken frame instead of `hello`.
#[tokio::test]
async fn a_broken_frame_before_hello_gets_1002() {
    let relay = spawn_relay().await;
    let (_, token) = relay.dev_env("conformance-hello").await;
    let socket = crate::support::open_socket(&relay, &token)
        .await
        .expect("socket opens");
    let mut runner = FakeRunner::raw(socket);
    let MaybeTlsStream::Plain(tcp) = runner.socket.get_mut() else {
        panic!("the test relay speaks plain TCP");
    };
    tcp.write_all(&frame(0x1, HEARTBEAT, None))
        .await
        .expect("write the frame");
    let closed = runner.closed().await;
    assert_eq!(code(&closed), Some(PROTOCOL_ERROR), "{closed:?}");
}
