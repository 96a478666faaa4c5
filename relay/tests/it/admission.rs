//! Handshake slots under a flood: upgrades that never send `hello` hold a
//! slot each until the hello timeout, and must not keep other
//! environments' runners out meanwhile.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use runner_relay::admission::{Admission, PER_ENVIRONMENT};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::MaybeTlsStream;

use crate::support::{hello, spawn_relay_with, FakeRunner, Socket, TestRelay, DEADLINE};

/// Slots of the relays here: small, so a flood many times as large is
/// quick to make.
const SLOTS: usize = 16;
/// Upgrades one token holder opens at once and leaves silent.
const FLOOD: usize = 400;

/// A relay with [`SLOTS`] handshake slots, and its admission to watch.
async fn relay_with_slots() -> (TestRelay, Arc<Admission>) {
    let mut admission = None;
    let relay = spawn_relay_with(|state| {
        let state = state.with_max_handshakes(SLOTS);
        admission = Some(Arc::clone(&state.admission));
        state
    })
    .await;
    (relay, admission.expect("configured"))
}

/// Where a connect goes (a [`TestRelay`] cannot be shared with tasks).
#[derive(Clone)]
struct Target {
    address: SocketAddr,
    ws_url: String,
}

impl Target {
    fn of(relay: &TestRelay) -> Target {
        Target {
            address: relay
                .url
                .trim_start_matches("http://")
                .parse()
                .expect("the relay's address"),
            ws_url: relay.ws_url(),
        }
    }

    /// Opens the runner socket from `source` (any 127.x.y.z address).
    async fn connect(&self, token: &str, source: IpAddr) -> Result<Socket, WsError> {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        let tcp = socket.connect(self.address).await?;
        let mut request = self.ws_url.as_str().into_client_request()?;
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header text"),
        );
        tokio_tungstenite::client_async(request, MaybeTlsStream::Plain(tcp))
            .await
            .map(|(socket, _)| socket)
    }
}

/// Upgrades that never say `hello`, all at once; each task ends with the
/// socket (upgraded) or the refusal.
fn flood(
    target: &Target,
    connects: &[(String, IpAddr)],
) -> Vec<JoinHandle<Result<Socket, WsError>>> {
    connects
        .iter()
        .map(|(token, source)| {
            let (target, token, source) = (target.clone(), token.clone(), *source);
            tokio::spawn(async move { target.connect(&token, source).await })
        })
        .collect()
}

/// Waits until every connect of the flood was answered or waits for a
/// slot: the flood has taken what it can.
async fn settled(admission: &Admission, flood: &[JoinHandle<Result<Socket, WsError>>]) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let answered = flood.iter().filter(|task| task.is_finished()).count();
        if answered + admission.waiting() == flood.len() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the flood never settled: {answered} answered, {} waiting",
            admission.waiting()
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// The flood's upgraded sockets, all still open: none was let go by the
/// hello timeout, so nobody got in by waiting for one.
async fn still_open(flood: Vec<JoinHandle<Result<Socket, WsError>>>) -> usize {
    let mut open = 0;
    for task in flood {
        if !task.is_finished() {
            task.abort();
            continue;
        }
        let Ok(Ok(mut socket)) = task.await else {
            continue;
        };
        let MaybeTlsStream::Plain(tcp) = socket.get_mut() else {
            panic!("plain TCP");
        };
        let mut byte = [0u8; 1];
        match tcp.try_read(&mut byte) {
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => open += 1,
            other => panic!("a silent upgrade was closed already: {other:?}"),
        }
    }
    open
}

/// One token holder floods [`FLOOD`] upgrades that never send `hello`: it
/// keeps a few slots, the rest of its connects are turned away at once,
/// and another environment's runner is welcomed while the flood's sockets
/// are all still waiting for their hello timeout.
#[tokio::test]
async fn other_runners_connect_on_time_while_one_token_holder_floods() {
    // Both ends of every upgrade are in this process: room for them under
    // a soft limit of 1024 open files.
    runner_relay::open_files::raise();
    let (relay, admission) = relay_with_slots().await;
    let (_, flooder) = relay.dev_env("flooder").await;
    let (_, other) = relay.dev_env("other").await;
    let here = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let connects: Vec<_> = (0..FLOOD).map(|_| (flooder.clone(), here)).collect();
    let target = Target::of(&relay);
    let flood = flood(&target, &connects);
    settled(&admission, &flood).await;

    let socket = target
        .connect(&other, here)
        .await
        .expect("the other environment's runner is admitted at once");
    FakeRunner::greet(socket, hello("other", "other", &[])).await;
    let held = still_open(flood).await;
    assert!(
        held <= PER_ENVIRONMENT,
        "one environment held {held} handshakes"
    );
}

/// Many tokens from one address: that address keeps at most its share of
/// the slots, and a runner from another address gets in at once.
#[tokio::test]
async fn other_addresses_connect_on_time_while_one_address_floods() {
    let (relay, admission) = relay_with_slots().await;
    let flooding = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    let mut connects = Vec::new();
    for index in 0..2 * SLOTS {
        let (_, token) = relay.dev_env(&format!("flooder-{index}")).await;
        connects.push((token, flooding));
    }
    let (_, other) = relay.dev_env("other").await;
    let target = Target::of(&relay);
    let flood = flood(&target, &connects);
    settled(&admission, &flood).await;

    let socket = target
        .connect(&other, IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3)))
        .await
        .expect("a runner from another address is admitted at once");
    FakeRunner::greet(socket, hello("other", "other", &[])).await;
    let held = still_open(flood).await;
    assert!(held < SLOTS, "one address held every slot ({held})");
}
