//! Test support: an in-process relay on `127.0.0.1:0` with a fresh SQLite
//! file and a manual clock, an HTTP client, and a fake runner.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use reqwest::StatusCode;
use runner_proto::ws::{
    Call, CallResult, Hello, HostFacts, RelayMessage, RunnerMessage, ToolSpec, Welcome,
};
use runner_relay::clock::ManualClock;
use runner_relay::state::StreamTimings;
use runner_relay::store::{MemberKind, NewMember, Store};
use runner_relay::{members, AppState, RelayConfig};
use serde_json::{json, Value};
use time::OffsetDateTime;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tokio_util::sync::CancellationToken;

/// Upper bound for anything a test waits for.
pub const DEADLINE: Duration = Duration::from_secs(10);

/// A relay running in this process.
pub struct TestRelay {
    pub url: String,
    pub admin_key: String,
    pub clock: Arc<ManualClock>,
    pub store: Arc<dyn Store>,
    pub http: reqwest::Client,
    /// The SQLite database's URL (`sqlite://…`).
    pub database_url: String,
    shutdown: CancellationToken,
    _dir: tempfile::TempDir,
}

impl Drop for TestRelay {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts a relay on `127.0.0.1:0` with a fresh SQLite file.
pub async fn spawn_relay() -> TestRelay {
    spawn_relay_with(|state| state).await
}

/// [`spawn_relay`], with the relay's state adjusted by `configure` first.
pub async fn spawn_relay_with(configure: impl FnOnce(AppState) -> AppState) -> TestRelay {
    spawn_relay_timed(StreamTimings::default(), configure).await
}

/// [`spawn_relay_with`], with streamed calls' keep-alive and stall times.
pub async fn spawn_relay_timed(
    streams: StreamTimings,
    configure: impl FnOnce(AppState) -> AppState,
) -> TestRelay {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("relay.db").display());
    let store = runner_relay::store::open(&url).await.expect("store opens");
    let clock = Arc::new(ManualClock::new(
        OffsetDateTime::from_unix_timestamp(1_767_225_600).expect("valid time"),
    ));
    let admin_key = members::bootstrap_admin(store.as_ref(), clock.as_ref())
        .await
        .expect("bootstrap")
        .expect("empty store gets an admin");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let state = configure(AppState::new(RelayConfig {
        store: store.clone(),
        clock: clock.clone(),
        streams,
    }));
    let shutdown = CancellationToken::new();
    tokio::spawn(runner_relay::serve(listener, state, shutdown.clone()));
    TestRelay {
        url: format!("http://{address}"),
        admin_key: admin_key.expose().to_owned(),
        clock,
        store,
        http: reqwest::Client::new(),
        database_url: url,
        shutdown,
        _dir: dir,
    }
}

impl TestRelay {
    /// Starts the relay's graceful shutdown.
    pub fn shut_down(&self) {
        self.shutdown.cancel();
    }

    pub fn ws_url(&self) -> String {
        format!("{}/runner/connect", self.url.replacen("http", "ws", 1))
    }

    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("request sent");
        let status = response.status();
        let text = response.text().await.expect("body");
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::GET, path, Some(&self.admin_key), None)
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(
            reqwest::Method::POST,
            path,
            Some(&self.admin_key),
            Some(body),
        )
        .await
    }

    /// Creates an environment as the admin; returns its id.
    pub async fn create_env(&self, body: Value) -> String {
        let (status, env) = self.post("/execution-environments", body).await;
        assert_eq!(status, StatusCode::CREATED, "{env}");
        env["id"].as_str().expect("id").to_owned()
    }

    /// Generates a registration token; returns its plaintext.
    pub async fn token(&self, env_id: &str) -> String {
        let (status, body) = self
            .post(
                &format!("/execution-environments/{env_id}/generate-token"),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["token"].as_str().expect("token").to_owned()
    }

    /// A development environment (every tool, every path) and its token.
    pub async fn dev_env(&self, name: &str) -> (String, String) {
        let id = self
            .create_env(json!({ "name": name, "tier": "development" }))
            .await;
        let token = self.token(&id).await;
        (id, token)
    }

    /// Creates a member; teams are created as needed. Returns the API key.
    pub async fn member(&self, is_admin: bool, teams: &[&str]) -> String {
        self.new_member("someone", is_admin, teams, MemberKind::Person)
            .await
            .1
    }

    /// Creates a member of `kind`; teams are created as needed. Returns its
    /// id and API key.
    pub async fn new_member(
        &self,
        name: &str,
        is_admin: bool,
        teams: &[&str],
        kind: MemberKind,
    ) -> (String, String) {
        for team in teams {
            self.store
                .create_team(team, self.clock_now())
                .await
                .expect("team");
        }
        let member = NewMember {
            name: name.into(),
            is_admin,
            teams: teams.iter().map(|t| (*t).to_owned()).collect(),
            kind,
        };
        let (member, key) =
            members::create_with_key(self.store.as_ref(), self.clock.as_ref(), &member)
                .await
                .expect("member");
        (member.id, key.expose().to_owned())
    }

    fn clock_now(&self) -> OffsetDateTime {
        use runner_relay::clock::Clock;
        self.clock.now()
    }

    pub async fn invoke(&self, env_id: &str, body: Value) -> (StatusCode, Value) {
        self.post(
            &format!("/execution-environments/{env_id}/invoke-tool"),
            body,
        )
        .await
    }

    pub async fn register(&self, token: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::POST, "/runner/register", Some(token), None)
            .await
    }

    pub async fn status(&self, env_id: &str) -> Value {
        let (status, body) = self
            .get(&format!("/execution-environments/{env_id}/status"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// Polls until `check` holds on the environment's status (deadline).
    pub async fn wait_status(&self, env_id: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            let status = self.status(env_id).await;
            if check(&status) {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "status never matched: {status}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens the runner WebSocket with a token (no frames sent yet).
pub async fn open_socket(
    relay: &TestRelay,
    token: &str,
) -> Result<Socket, Box<dyn std::error::Error>> {
    let mut request = relay.ws_url().into_client_request()?;
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse()?);
    let (socket, _) = tokio_tungstenite::connect_async(request).await?;
    Ok(socket)
}

pub fn hello(hostname: &str, instance_id: &str, tools: &[&str]) -> Hello {
    Hello {
        protocol_version: runner_proto::PROTOCOL_VERSION,
        runner_version: "0.1.0-test".into(),
        instance_id: instance_id.into(),
        host: HostFacts {
            hostname: hostname.into(),
            os: "linux".into(),
            arch: "x86_64".into(),
            workspace: "/home/tester/workspace".into(),
        },
        tools: tools
            .iter()
            .map(|name| ToolSpec {
                name: (*name).into(),
                description: String::new(),
                input_schema: json!({"type": "object"}),
            })
            .collect(),
        sandbox_capacity: None,
    }
}

/// A runner written for tests: a real WebSocket peer speaking the protocol,
/// driven step by step by the test.
pub struct FakeRunner {
    pub socket: Socket,
    pub welcome: Welcome,
}

/// How a connection ended, as the fake runner saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    Code(u16, String),
    /// The socket ended without a close frame.
    NoFrame,
}

impl FakeRunner {
    /// Connects, sends `hello`, and waits for `welcome`.
    pub async fn connect(relay: &TestRelay, token: &str, hello: Hello) -> FakeRunner {
        let socket = open_socket(relay, token).await.expect("socket opens");
        FakeRunner::greet(socket, hello).await
    }

    /// Sends `hello` on an open socket and waits for `welcome`.
    pub async fn greet(mut socket: Socket, hello: Hello) -> FakeRunner {
        send(&mut socket, &RunnerMessage::Hello(hello)).await;
        let mut runner = FakeRunner {
            socket,
            welcome: placeholder_welcome(),
        };
        match runner.next_frame().await {
            RelayMessage::Welcome(welcome) => runner.welcome = welcome,
            other => panic!("expected welcome, got {other:?}"),
        }
        runner
    }

    /// A socket that has not completed the handshake.
    pub fn raw(socket: Socket) -> FakeRunner {
        FakeRunner {
            socket,
            welcome: placeholder_welcome(),
        }
    }

    pub async fn send(&mut self, frame: &RunnerMessage) {
        send(&mut self.socket, frame).await;
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.socket
            .send(Message::binary(bytes))
            .await
            .expect("send");
    }

    pub async fn send_text(&mut self, text: &str) {
        self.socket
            .send(Message::text(text.to_owned()))
            .await
            .expect("send");
    }

    /// The next relay frame (panics on close or after the deadline).
    pub async fn next_frame(&mut self) -> RelayMessage {
        let message = tokio::time::timeout(DEADLINE, async {
            loop {
                match self.socket.next().await {
                    Some(Ok(Message::Text(text))) => return text.to_string(),
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    other => panic!("expected a frame, got {other:?}"),
                }
            }
        })
        .await
        .expect("frame within the deadline");
        serde_json::from_str(&message).expect("relay frames decode")
    }

    /// The next `call`, skipping acks.
    pub async fn next_call(&mut self) -> Call {
        loop {
            match self.next_frame().await {
                RelayMessage::Call(call) => return call,
                RelayMessage::HeartbeatAck(_) | RelayMessage::Policy { .. } => continue,
                other => panic!("expected a call, got {other:?}"),
            }
        }
    }

    /// Answers a call with `{"echo": args}`.
    pub async fn answer(&mut self, call: &Call, exit_code: i32) {
        self.send(&RunnerMessage::Result(CallResult {
            call_id: call.call_id.clone(),
            result: json!({ "echo": call.args }),
            exit_code: Some(exit_code),
            error: (exit_code != 0).then(|| "tool failed".to_owned()),
            error_code: None,
        }))
        .await;
    }

    /// Reads until the connection ends; returns its close code and reason.
    pub async fn closed(&mut self) -> Closed {
        tokio::time::timeout(DEADLINE, async {
            loop {
                match self.socket.next().await {
                    Some(Ok(Message::Close(Some(frame)))) => {
                        return Closed::Code(u16::from(frame.code), frame.reason.to_string())
                    }
                    Some(Ok(Message::Close(None))) | None | Some(Err(_)) => return Closed::NoFrame,
                    Some(Ok(_)) => continue,
                }
            }
        })
        .await
        .expect("connection ends within the deadline")
    }
}

async fn send(socket: &mut Socket, frame: &RunnerMessage) {
    let text = serde_json::to_string(frame).expect("encode");
    socket.send(Message::text(text)).await.expect("send");
}

fn placeholder_welcome() -> Welcome {
    Welcome {
        protocol_version: 0,
        environment: runner_proto::ws::EnvironmentInfo {
            id: String::new(),
            name: String::new(),
            tags: Vec::new(),
        },
        policy: runner_proto::ws::Policy {
            tools: runner_proto::ws::ToolAccess::All,
            file_paths: Vec::new(),
            approval_required: Vec::new(),
        },
        heartbeat_interval_s: 0,
        session_id: String::new(),
        epoch: 0,
        binary_output: false,
        tier: None,
        install_browser_tools: false,
    }
}

/// Close code helper for readability.
pub fn code(closed: &Closed) -> Option<u16> {
    match closed {
        Closed::Code(code, _) => Some(*code),
        Closed::NoFrame => None,
    }
}

pub fn close_code(code: CloseCode) -> u16 {
    u16::from(code)
}

/// The `(kind, payload)` frames of a whole binary stream body
/// (`application/vnd.runner.stream`), the result or error last; a body
/// cut inside a frame fails the test.
pub fn stream_frames(body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut reader = runner_proto::api::stream_frame::Reader::new(usize::MAX);
    let mut frames = Vec::new();
    let control = reader
        .push(body, |kind, payload| {
            frames.push((kind, payload.to_vec()));
            Ok::<(), std::convert::Infallible>(())
        })
        .expect("no limit, no failing output");
    frames.extend(control);
    assert!(reader.at_boundary(), "a frame was cut");
    frames
}
