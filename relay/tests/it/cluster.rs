//! Shared mode: three real `runner-relay` processes on one fresh PostgreSQL
//! database and NATS, a TCP round-robin "load balancer" in front of them
//! for runners, and the real `runner` binary (or a fake runner where the
//! test needs to hold two sockets at once).
//!
//! Needs PostgreSQL on 127.0.0.1:5432 (trust auth, user postgres) and NATS
//! on 127.0.0.1:4222; `cargo build --workspace --bins` first (the runner
//! binary is taken from the same target directory). `RUNNER_TEST_RELAY_BIN`
//! runs another `runner-relay` build instead of the one cargo built for
//! these tests (e.g. a release build, for the figures).

mod change_feed;
mod versions;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use runner_proto::close;
use runner_proto::ws::{RelayMessage, RunnerMessage};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::support::{hello, Closed, FakeRunner, DEADLINE};

const IGNORE: &str = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)";
const ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const NATS_URL: &str = "nats://127.0.0.1:4222";
/// Time for a relay process to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on one HTTP request of a test.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Path of another `runner-relay` binary to test.
const RELAY_BIN_VAR: &str = "RUNNER_TEST_RELAY_BIN";

pub(crate) fn random_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_owned()
}

/// A fresh database, dropped (with its connections) when this is.
pub(crate) struct Database {
    name: String,
}

impl Database {
    pub(crate) async fn create() -> Database {
        use sqlx::Connection;
        let name = format!("relay_test_{}", random_suffix());
        let mut admin = sqlx::PgConnection::connect(ADMIN_URL)
            .await
            .expect("PostgreSQL on 127.0.0.1:5432");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .expect("create database");
        Database { name }
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:5432/{}", self.name)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        // Drop cannot await; psql is installed with the server.
        let _ = std::process::Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                "postgres",
                "-q",
                "-c",
            ])
            .arg(format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The real binaries, next to this test binary's target directory.
fn binary(name: &str) -> PathBuf {
    if name == "runner-relay" {
        return match std::env::var_os(RELAY_BIN_VAR) {
            Some(path) => PathBuf::from(path),
            None => PathBuf::from(env!("CARGO_BIN_EXE_runner-relay")),
        };
    }
    let exe = std::env::current_exe().expect("test binary path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(
        path.exists(),
        "{} missing: run `cargo build --workspace --bins` first",
        path.display()
    );
    path
}

/// One `runner-relay serve` process.
pub(crate) struct RelayProcess {
    pub(crate) name: String,
    pub(crate) url: String,
    pub(crate) address: SocketAddr,
    child: Child,
}

impl RelayProcess {
    async fn start(
        name: &str,
        database: &Database,
        prefix: &str,
    ) -> (RelayProcess, Option<String>) {
        Self::start_logging(name, database, prefix, "runner_relay=info").await
    }

    /// [`RelayProcess::start`] with these extra `serve` flags.
    async fn start_with(
        name: &str,
        database: &Database,
        prefix: &str,
        flags: &[&str],
    ) -> (RelayProcess, Option<String>) {
        Self::spawn(name, database, prefix, "runner_relay=info", flags).await
    }

    /// [`RelayProcess::start`] with this `RUST_LOG` (a big fleet's
    /// per-connection lines at `info` would flood the test's output).
    pub(crate) async fn start_logging(
        name: &str,
        database: &Database,
        prefix: &str,
        log: &str,
    ) -> (RelayProcess, Option<String>) {
        Self::spawn(name, database, prefix, log, &[]).await
    }

    async fn spawn(
        name: &str,
        database: &Database,
        prefix: &str,
        log: &str,
        flags: &[&str],
    ) -> (RelayProcess, Option<String>) {
        let mut child = Command::new(binary("runner-relay"))
            .args(["serve", "--listen", "127.0.0.1:0", "--drain-grace", "5"])
            .args(flags)
            .args(["--database-url", &database.url()])
            .args(["--nats-url", NATS_URL, "--nats-subject-prefix", prefix])
            .args(["--instance-id", name])
            .env("RUST_LOG", log)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("runner-relay starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut admin_key = None;
        let address = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.expect("relay stdout") {
                if let Some(key) = line.strip_prefix("admin API key (shown once): ") {
                    admin_key = Some(key.to_owned());
                }
                if let Some(url) = line.strip_prefix("runner-relay listening on http://") {
                    return url.parse::<SocketAddr>().expect("address");
                }
            }
            panic!("relay {name} exited before listening");
        })
        .await
        .expect("relay listens in time");
        // Keep reading stdout so the pipe never fills.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let relay = RelayProcess {
            name: name.to_owned(),
            url: format!("http://{address}"),
            address,
            child,
        };
        (relay, admin_key)
    }

    pub(crate) fn kill_9(&mut self) {
        self.child.start_kill().expect("SIGKILL");
    }

    fn terminate(&self) {
        let pid = self.child.id().expect("running");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
    }

    async fn exited(&mut self) {
        tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("relay exits in time")
            .expect("wait");
    }
}

/// Round-robin TCP proxy: each new connection goes to the next backend
/// that accepts it (a load balancer with connect-failure failover).
#[derive(Clone)]
struct Balancer {
    url: String,
    backends: Arc<Mutex<Vec<SocketAddr>>>,
}

impl Balancer {
    async fn start(backends: Vec<SocketAddr>) -> Balancer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let backends = Arc::new(Mutex::new(backends));
        let shared = backends.clone();
        tokio::spawn(async move {
            let mut next = 0usize;
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let candidates = shared.lock().expect("backends").clone();
                next = next.wrapping_add(1);
                tokio::spawn(async move {
                    for offset in 0..candidates.len() {
                        let backend = candidates[(next + offset) % candidates.len()];
                        if let Ok(mut outbound) = TcpStream::connect(backend).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Balancer { url, backends }
    }

    fn set(&self, backends: Vec<SocketAddr>) {
        *self.backends.lock().expect("backends") = backends;
    }
}

/// Three relays on one database and one NATS subject prefix.
struct Cluster {
    relays: Vec<RelayProcess>,
    admin_key: String,
    database: Database,
    prefix: String,
    http: reqwest::Client,
}

impl Cluster {
    async fn start() -> Cluster {
        Cluster::start_with(&[]).await
    }

    /// Three relays started with these extra `serve` flags.
    async fn start_with(flags: &[&str]) -> Cluster {
        Cluster::start_each([flags, flags, flags]).await
    }

    /// Three relays, each started with its own extra `serve` flags.
    async fn start_each(flags: [&[&str]; 3]) -> Cluster {
        let database = Database::create().await;
        let prefix = format!("test_{}", random_suffix());
        let (a, key) = RelayProcess::start_with("relay-a", &database, &prefix, flags[0]).await;
        let admin_key = key.expect("the first relay on an empty database prints the admin key");
        let (b, _) = RelayProcess::start_with("relay-b", &database, &prefix, flags[1]).await;
        let (c, _) = RelayProcess::start_with("relay-c", &database, &prefix, flags[2]).await;
        Cluster {
            relays: vec![a, b, c],
            admin_key,
            database,
            prefix,
            http: reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .timeout(REQUEST_TIMEOUT)
                .build()
                .expect("client"),
        }
    }

    fn url(&self, index: usize) -> &str {
        &self.relays[index].url
    }

    /// A new environment whose real runner connects to relay B (through a
    /// balancer the test can repoint), online as relay A sees it.
    async fn runner_on_b(&self, name: &str) -> (String, Balancer, RealRunner) {
        let (env, token) = self.dev_env(name).await;
        let balancer = Balancer::start(vec![self.relays[1].address]).await;
        let runner = RealRunner::start(&balancer.url, &token);
        self.wait_status(self.url(0), &env, connected).await;
        (env, balancer, runner)
    }

    async fn request(
        &self,
        method: reqwest::Method,
        url: &str,
        body: Option<Value>,
    ) -> Result<(StatusCode, Value), reqwest::Error> {
        let mut request = self.http.request(method, url).bearer_auth(&self.admin_key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await?;
        let status = response.status();
        let text = response.text().await?;
        Ok((
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    }

    async fn get(&self, base: &str, path: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::GET, &format!("{base}{path}"), None)
            .await
            .expect("request")
    }

    async fn post(&self, base: &str, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(reqwest::Method::POST, &format!("{base}{path}"), Some(body))
            .await
            .expect("request")
    }

    async fn dev_env(&self, name: &str) -> (String, String) {
        let base = self.url(0).to_owned();
        let (status, env) = self
            .post(
                &base,
                "/execution-environments",
                json!({"name": name, "tier": "development"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{env}");
        let id = env["id"].as_str().expect("id").to_owned();
        let (status, token) = self
            .post(
                &base,
                &format!("/execution-environments/{id}/generate-token"),
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{token}");
        (id, token["token"].as_str().expect("token").to_owned())
    }

    async fn invoke(&self, base: &str, env: &str, body: Value) -> (StatusCode, Value) {
        self.post(
            base,
            &format!("/execution-environments/{env}/invoke-tool"),
            body,
        )
        .await
    }

    /// [`Cluster::invoke`] in a task of its own (for a caller that waits
    /// while the test does something else), with the moment it answered.
    fn spawn_invoke(
        &self,
        base: &str,
        env: &str,
        body: Value,
    ) -> tokio::task::JoinHandle<(StatusCode, Value, Instant)> {
        let http = self.http.clone();
        let key = self.admin_key.clone();
        let url = format!("{base}/execution-environments/{env}/invoke-tool");
        tokio::spawn(async move {
            let response = http
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .expect("sent");
            let status = response.status();
            let body = response.json::<Value>().await.expect("json");
            (status, body, Instant::now())
        })
    }

    /// Polls `relay`'s view of the environment until `check` holds.
    async fn wait_status(&self, base: &str, env: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, status) = self
                .get(base, &format!("/execution-environments/{env}/status"))
                .await;
            if check(&status) {
                return status;
            }
            assert!(Instant::now() < deadline, "status never matched: {status}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn wait_invocation(&self, base: &str, call_id: &str, state: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, entry) = self.get(base, &format!("/invocations/{call_id}")).await;
            if status == StatusCode::OK && entry["state"] == state {
                return entry;
            }
            assert!(
                Instant::now() < deadline,
                "call {call_id} never {state}: {status} {entry}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The real runner, started with `RUNNER_TOKEN` (no `register` step).
struct RealRunner {
    child: Child,
    dir: tempfile::TempDir,
}

impl RealRunner {
    fn start(url: &str, token: &str) -> RealRunner {
        let dir = tempfile::tempdir().expect("tempdir");
        for sub in ["config", "state", "workspace"] {
            std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
        }
        let child = Command::new(binary("runner"))
            .args(["run", "--url", url])
            .env("RUNNER_TOKEN", token)
            .env("RUNNER_CONFIG_DIR", dir.path().join("config"))
            .env("RUNNER_STATE_DIR", dir.path().join("state"))
            .env("RUNNER_WORKSPACE", dir.path().join("workspace"))
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env_remove("RUNNER_PERMISSION_CONFIG")
            .env_remove("RUNNER_URL")
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("runner starts");
        RealRunner { child, dir }
    }

    /// A file in the runner's workspace that shell calls append to.
    fn ledger(&self) -> PathBuf {
        self.dir.path().join("workspace").join("ledger.txt")
    }

    fn ledger_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.ledger())
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for RealRunner {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn append(runner: &RealRunner, line: &str, sleep_s: u32) -> Value {
    json!({
        "tool_name": "shell",
        "args": { "command": format!("sleep {sleep_s}; echo {line} >> '{}'", runner.ledger().display()) },
        "timeout_s": 60
    })
}

fn connected(status: &Value) -> bool {
    status["connected"] == true
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn invoke_through_one_relay_reaches_a_runner_on_another() {
    let _ = IGNORE;
    let cluster = Cluster::start().await;
    let (env, _balancer, _runner) = cluster.runner_on_b("cross").await;

    let (status, body) = cluster
        .invoke(
            cluster.url(0),
            &env,
            json!({"tool_name": "ping", "args": {"n": 1}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["n"], 1, "{body}");
    let call_id = body["call_id"].as_str().expect("call id");
    let entry = cluster
        .wait_invocation(cluster.url(2), call_id, "done")
        .await;
    assert!(
        entry["epoch"].as_u64().is_some_and(|epoch| epoch >= 1),
        "{entry}"
    );

    // Tools and status are visible from every relay.
    let (status, tools) = cluster
        .get(
            cluster.url(2),
            &format!("/execution-environments/{env}/tools"),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(tools["runner_connected"], true, "{tools}");
    let _ = &cluster.prefix;
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn killing_the_holder_mid_call_fails_fast_and_the_late_result_is_kept() {
    let mut cluster = Cluster::start().await;
    let (env, balancer, runner) = cluster.runner_on_b("killed").await;

    let call_id = format!("kill-{}", random_suffix());
    let mut body = append(&runner, "late", 3);
    body["call_id"] = json!(call_id);
    let a = cluster.url(0).to_owned();
    let caller = cluster.spawn_invoke(&a, &env, body);
    cluster.wait_invocation(&a, &call_id, "dispatched").await;

    balancer.set(vec![cluster.relays[0].address, cluster.relays[2].address]);
    let killed_at = Instant::now();
    cluster.relays[1].kill_9();
    let (status, answer, answered_at) = caller.await.expect("caller");
    let waited = answered_at.duration_since(killed_at);
    assert!(
        status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::GATEWAY_TIMEOUT,
        "{status} {answer}"
    );
    assert_eq!(answer["error"]["call_id"], call_id.as_str(), "{answer}");
    assert!(waited < Duration::from_secs(5), "caller waited {waited:?}");
    eprintln!("cluster: caller answered {status} {waited:?} after kill -9 of the holder");

    // The runner comes back through A or C, finishes the call there, and
    // its result is journalled.
    cluster.wait_status(&a, &env, connected).await;
    let entry = cluster
        .wait_invocation(cluster.url(2), &call_id, "done")
        .await;
    assert_eq!(entry["exit_code"], 0, "{entry}");
    assert_eq!(runner.ledger_lines(), vec!["late"]);
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn the_same_call_id_runs_once() {
    let cluster = Cluster::start().await;
    let (env, _balancer, runner) = cluster.runner_on_b("once").await;

    // Sequentially, through different relays.
    let mut body = append(&runner, "first", 0);
    body["call_id"] = json!("same-1");
    let (status, one) = cluster.invoke(cluster.url(0), &env, body.clone()).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    for relay in [1, 2] {
        let (status, again) = cluster.invoke(cluster.url(relay), &env, body.clone()).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!(again["exit_code"], one["exit_code"]);
        assert_eq!(again["call_id"], "same-1");
    }

    // Concurrently, while the first is still running.
    let mut body = append(&runner, "second", 1);
    body["call_id"] = json!("same-2");
    let (x, y) = tokio::join!(
        cluster.invoke(cluster.url(0), &env, body.clone()),
        cluster.invoke(cluster.url(2), &env, body.clone())
    );
    assert_eq!(x.0, StatusCode::OK, "{}", x.1);
    assert_eq!(y.0, StatusCode::OK, "{}", y.1);
    assert_eq!(runner.ledger_lines(), vec!["first", "second"]);

    // The same id for another environment is refused.
    let (other, _) = cluster.dev_env("other").await;
    let (status, refused) = cluster.invoke(cluster.url(0), &other, body).await;
    assert!(
        status.is_client_error() || status == StatusCode::SERVICE_UNAVAILABLE,
        "{status} {refused}"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_runner_dropping_on_one_relay_fails_its_call_for_every_relay() {
    let cluster = Cluster::start().await;
    let (env, token) = cluster.dev_env("dropped").await;
    let mut runner = fake_runner(cluster.url(1), &token, "dropping-process").await;
    cluster.wait_status(cluster.url(0), &env, connected).await;

    // Sent through A to the runner's socket on B.
    let call_id = format!("dropped-{}", random_suffix());
    let body = json!({"tool_name": "echo", "call_id": call_id, "timeout_s": 300});
    let caller = cluster.spawn_invoke(cluster.url(0), &env, body.clone());
    runner.next_call().await;
    cluster
        .wait_invocation(cluster.url(2), &call_id, "dispatched")
        .await;

    // The runner goes away: B, which held its socket, journals the call
    // failed; A's caller is told so.
    drop(runner);
    let dropped_at = Instant::now();
    let (status, answer, _) = caller.await.expect("caller");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{answer}");
    assert_eq!(answer["error"]["code"], "runner_disconnected", "{answer}");
    let entry = cluster
        .wait_invocation(cluster.url(2), &call_id, "failed")
        .await;
    let waited = dropped_at.elapsed();
    assert_eq!(entry["error_code"], "runner_disconnected", "{entry}");
    assert!(entry["finished_at"].is_string(), "{entry}");
    assert!(waited < Duration::from_secs(5), "failed after {waited:?}");

    // Repeated through C (no runner anywhere now): the same answer, not
    // the call's 300 s timeout later. (C first waits up to
    // NO_RESPONDERS_RETRY for a runner that just left to come back, as for
    // any call then.)
    let asked = Instant::now();
    let (status, again) = cluster.invoke(cluster.url(2), &env, body).await;
    let took = asked.elapsed();
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{again}");
    assert_eq!(again, answer);
    assert!(took < Duration::from_secs(5), "the repeat took {took:?}");
    eprintln!(
        "cluster: failed in the journal {waited:?} after the drop; repeat answered in {took:?}"
    );
}

async fn fake_socket(url: &str, token: &str) -> crate::support::Socket {
    let ws = format!("{}/runner/connect", url.replacen("http", "ws", 1));
    let mut request = ws.into_client_request().expect("request");
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    tokio_tungstenite::connect_async(request)
        .await
        .expect("socket")
        .0
}

async fn fake_runner(url: &str, token: &str, instance: &str) -> FakeRunner {
    use futures_util::SinkExt;
    let mut socket = fake_socket(url, token).await;
    let hello = RunnerMessage::Hello(hello("fake-host", instance, &["echo"]));
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            serde_json::to_string(&hello).expect("encode"),
        ))
        .await
        .expect("hello");
    let mut runner = FakeRunner::raw(socket);
    match runner.next_frame().await {
        RelayMessage::Welcome(welcome) => runner.welcome = welcome,
        other => panic!("expected welcome, got {other:?}"),
    }
    runner
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_runner_reconnecting_elsewhere_never_gets_a_call_twice() {
    let cluster = Cluster::start().await;
    let (env, token) = cluster.dev_env("linger").await;
    let mut old = fake_runner(cluster.url(1), &token, "same-process").await;
    let mut new = fake_runner(cluster.url(2), &token, "same-process").await;
    assert!(
        new.welcome.epoch > old.welcome.epoch,
        "{} {}",
        new.welcome.epoch,
        old.welcome.epoch
    );

    // The old socket is closed by its relay (superseded, same process:
    // quietly), and never sees a call.
    let closed = old.closed().await;
    assert!(
        matches!(closed, Closed::NoFrame | Closed::Code(..)),
        "{closed:?}"
    );

    for (round, relay) in [0, 1, 2, 0, 1, 2].into_iter().enumerate() {
        let base = cluster.url(relay).to_owned();
        let body = json!({"tool_name": "echo", "args": {"sequence": round}, "timeout_s": 10});
        let caller = cluster.spawn_invoke(&base, &env, body);
        let call = new.next_call().await;
        assert_eq!(call.args["sequence"], round);
        assert_eq!(call.epoch, new.welcome.epoch);
        new.answer(&call, 0).await;
        let (status, body, _) = caller.await.expect("caller");
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // Nothing else arrives on the new socket (no duplicate).
    let extra = tokio::time::timeout(Duration::from_millis(500), new.next_call()).await;
    assert!(extra.is_err(), "a call arrived twice: {extra:?}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn revoking_through_one_relay_disconnects_the_runner_on_another_at_once() {
    let cluster = Cluster::start().await;
    let (env, token) = cluster.dev_env("revoked").await;
    let mut runner = fake_runner(cluster.url(2), &token, "fake").await;
    cluster.wait_status(cluster.url(0), &env, connected).await;

    let started = Instant::now();
    let (status, body) = cluster
        .post(
            cluster.url(0),
            &format!("/execution-environments/{env}/revoke-token"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["runner_disconnected"], true, "{body}");
    let closed = runner.closed().await;
    let took = started.elapsed();
    assert_eq!(
        crate::support::code(&closed),
        Some(close::REVOKED),
        "{closed:?}"
    );
    assert!(took < Duration::from_secs(2), "revocation took {took:?}");
    eprintln!("cluster: revoke through A closed the socket on C in {took:?}");

    // Policy pushes reach a runner on another relay too.
    let (env, token) = cluster.dev_env("policy").await;
    let mut runner = fake_runner(cluster.url(1), &token, "fake-2").await;
    let policy = json!({"tools": {"mode": "list", "tools": ["echo"]}, "file_paths": []});
    let (status, body) = cluster
        .request(
            reqwest::Method::PATCH,
            &format!("{}/execution-environments/{env}", cluster.url(0)),
            Some(json!({"policy": policy})),
        )
        .await
        .expect("patch");
    assert_eq!(status, StatusCode::OK, "{body}");
    let pushed = tokio::time::timeout(DEADLINE, async {
        loop {
            if let RelayMessage::Policy { policy, .. } = runner.next_frame().await {
                return policy;
            }
        }
    })
    .await
    .expect("policy pushed");
    assert_eq!(
        serde_json::to_value(&pushed.tools).expect("json"),
        json!({"mode": "list", "tools": ["echo"]})
    );
    // So does the browser tools setting, through another relay again.
    let (status, body) = cluster
        .request(
            reqwest::Method::PATCH,
            &format!("{}/execution-environments/{env}", cluster.url(2)),
            Some(json!({"install_browser_tools": true})),
        )
        .await
        .expect("patch");
    assert_eq!(status, StatusCode::OK, "{body}");
    let install = tokio::time::timeout(DEADLINE, async {
        loop {
            if let RelayMessage::Policy {
                install_browser_tools,
                ..
            } = runner.next_frame().await
            {
                return install_browser_tools;
            }
        }
    })
    .await
    .expect("setting pushed");
    assert_eq!(install, Some(true));

    // Deleting through C closes the runner on B with DELETED.
    let (status, _) = cluster
        .request(
            reqwest::Method::DELETE,
            &format!("{}/execution-environments/{env}", cluster.url(2)),
            None,
        )
        .await
        .expect("delete");
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        crate::support::code(&runner.closed().await),
        Some(close::DELETED)
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_rolling_restart_under_load_loses_no_call_silently() {
    let mut cluster = Cluster::start().await;
    let (env, token) = cluster.dev_env("rolling").await;
    let addresses: Vec<SocketAddr> = cluster.relays.iter().map(|r| r.address).collect();
    let balancer = Balancer::start(addresses).await;
    let runner = RealRunner::start(&balancer.url, &token);
    cluster.wait_status(cluster.url(0), &env, connected).await;

    // A steady stream of calls through the balancer, each with its own id.
    let stop = tokio_util::sync::CancellationToken::new();
    let outcomes = Arc::new(Mutex::new(
        Vec::<(String, Result<(u16, Value), String>)>::new(),
    ));
    let load = {
        let http = cluster.http.clone();
        let key = cluster.admin_key.clone();
        let url = format!("{}/execution-environments/{env}/invoke-tool", balancer.url);
        let ledger = runner.ledger();
        let stop = stop.clone();
        let outcomes = outcomes.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.is_cancelled() {
                n += 1;
                let call_id = format!("roll-{n}");
                let body = json!({
                    "tool_name": "shell",
                    "args": {"command": format!("echo {call_id} >> '{}'", ledger.display())},
                    "timeout_s": 20,
                    "call_id": call_id,
                });
                let sent = http.post(&url).bearer_auth(&key).json(&body).send().await;
                let outcome = match sent {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        match response.json::<Value>().await {
                            Ok(body) => Ok((status, body)),
                            Err(error) => Err(error.to_string()),
                        }
                    }
                    Err(error) => Err(error.to_string()),
                };
                outcomes.lock().expect("outcomes").push((call_id, outcome));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    let prefix = cluster.prefix.clone();
    for index in 0..3 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let name = cluster.relays[index].name.clone();
        cluster.relays[index].terminate();
        cluster.relays[index].exited().await;
        let (restarted, _) = RelayProcess::start(&name, &cluster.database, &prefix).await;
        let mut backends: Vec<SocketAddr> = cluster.relays.iter().map(|r| r.address).collect();
        backends[index] = restarted.address;
        balancer.set(backends);
        cluster.relays[index] = restarted;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.cancel();
    load.await.expect("load");

    let outcomes = outcomes.lock().expect("outcomes").clone();
    let ledger = runner.ledger_lines();
    let mut succeeded = 0;
    let mut failed = 0;
    for (call_id, outcome) in &outcomes {
        let ran = ledger.iter().filter(|line| *line == call_id).count();
        assert!(ran <= 1, "{call_id} ran {ran} times");
        match outcome {
            Ok((200, body)) => {
                succeeded += 1;
                assert_eq!(ran, 1, "{call_id} answered 200 but did not run: {body}");
            }
            Ok((status, body)) => {
                failed += 1;
                // A clear error: JSON with a code; if it ran, its result is
                // in the journal.
                assert!(
                    body["error"]["code"].is_string(),
                    "{call_id}: {status} {body}"
                );
                eprintln!("cluster: {call_id}: {status} {}", body["error"]["code"]);
                if ran == 1 {
                    cluster
                        .wait_invocation(cluster.url(0), call_id, "done")
                        .await;
                }
            }
            Err(error) => {
                failed += 1;
                eprintln!("cluster: {call_id}: transport error {error}");
                // The connection to a stopping relay broke: the caller knows,
                // and the journal tells whether it ran.
                if ran == 1 {
                    cluster
                        .wait_invocation(cluster.url(0), call_id, "done")
                        .await;
                }
                eprintln!("cluster: {call_id}: transport error {error}");
            }
        }
    }
    eprintln!(
        "cluster: rolling restart: {succeeded} calls answered, {failed} clear errors, {} sent",
        outcomes.len()
    );
    assert!(succeeded > 0);
    assert!(
        ledger
            .iter()
            .all(|line| outcomes.iter().any(|(id, _)| id == line)),
        "unknown line in the ledger"
    );
}

/// Cross-relay vs same-relay `ping` round trips (printed; see the report).
#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn ping_round_trips_across_and_within_relays() {
    let cluster = Cluster::start().await;
    let (env, _balancer, _runner) = cluster.runner_on_b("ping").await;
    const CALLS: usize = 300;
    for (label, relay) in [("same relay (B)", 1), ("cross relay (A→B)", 0)] {
        let mut times = Vec::with_capacity(CALLS);
        for n in 0..CALLS + 20 {
            let started = Instant::now();
            let (status, body) = cluster
                .invoke(
                    cluster.url(relay),
                    &env,
                    json!({"tool_name": "ping", "args": {"n": n}}),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            if n >= 20 {
                times.push(started.elapsed());
            }
        }
        times.sort();
        let p50 = times[times.len() / 2];
        let p99 = times[times.len() * 99 / 100];
        eprintln!(
            "cluster: ping {label}: p50 {:.2} ms, p99 {:.2} ms over {CALLS} calls",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );
    }
}

/// Calls and results larger than one NATS message (1 MiB by default) cross
/// relays intact, both ways, whole and streamed (as events and as binary
/// frames).
#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn calls_and_results_over_a_mebibyte_cross_relays_intact() {
    use base64::Engine;
    let cluster = Cluster::start().await;
    let (env, _balancer, runner) = cluster.runner_on_b("large").await;
    let a = cluster.url(0).to_owned();
    let workspace = runner.dir.path().join("workspace");

    // 3 MiB of bytes that are not UTF-8: 4 MiB of base64 in the call
    // through A to the runner on B, and again in the result of reading it.
    let binary: Vec<u8> = (0..3 * 1024 * 1024 + 17)
        .map(|n: usize| (n.wrapping_mul(7) % 256) as u8)
        .collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(&binary);
    let (status, body) = cluster
        .invoke(
            &a,
            &env,
            json!({"tool_name": "file_write", "timeout_s": 60, "args": {
                "path": "big.bin", "content": encoded, "encoding": "base64"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["error"].is_null(), "{body}");
    assert!(
        std::fs::read(workspace.join("big.bin")).expect("written") == binary,
        "the file on the runner's disk differs from what was sent"
    );
    let (status, body) = cluster
        .invoke(
            &a,
            &env,
            json!({"tool_name": "file_read", "timeout_s": 60, "args": {"path": "big.bin"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{}", short(&body));
    assert_eq!(body["result"]["encoding"], "base64", "{}", short(&body));
    let read = base64::engine::general_purpose::STANDARD
        .decode(body["result"]["content"].as_str().expect("content"))
        .expect("base64");
    assert!(
        read == binary,
        "read back {} bytes, not the ones written",
        read.len()
    );

    // Text whose JSON is several times its size (quotes, backslashes,
    // control characters escape to 2–6 bytes), so no part may be cut by
    // the length of the text.
    let text: String = "\"\\\u{1}\té😀 plain ".repeat(100_000);
    assert!(text.len() > 1_500_000);
    let (status, body) = cluster
        .invoke(
            &a,
            &env,
            json!({"tool_name": "file_write", "timeout_s": 60, "args": {
                "path": "escaped.txt", "content": text}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["error"].is_null(), "{body}");
    let (status, body) = cluster
        .invoke(
            &a,
            &env,
            json!({"tool_name": "file_read", "timeout_s": 60, "args": {"path": "escaped.txt"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{}", short(&body));
    assert!(
        body["result"]["content"].as_str() == Some(text.as_str()),
        "escaped text changed on the way: {}",
        short(&body)
    );

    // A `shell` result with 2 MB of output inline (each stream just under
    // the runner's 1 MiB inline limit), 4 MB of JSON: through A it is the
    // result the runner sent, exactly as B answers it itself.
    const EACH: usize = 1_000_000;
    let command = format!(
        "head -c {EACH} /dev/zero | tr '\\0' '\"'; head -c {EACH} /dev/zero | tr '\\0' '\\\\' >&2"
    );
    let call = json!({"tool_name": "shell", "timeout_s": 60, "args": {"command": command}});
    let (status, across) = cluster.invoke(&a, &env, call.clone()).await;
    assert_eq!(status, StatusCode::OK, "{}", short(&across));
    assert!(
        across["result"]["stdout"].as_str() == Some("\"".repeat(EACH).as_str())
            && across["result"]["stderr"].as_str() == Some("\\".repeat(EACH).as_str()),
        "output changed on the way: {}",
        short(&across)
    );
    assert_eq!(across["exit_code"], 0);
    let (status, within) = cluster.invoke(cluster.url(1), &env, call.clone()).await;
    assert_eq!(status, StatusCode::OK, "{}", short(&within));
    assert_eq!(across["result"], within["result"]);

    // Streamed through A: output events, then the same result.
    let response = cluster
        .http
        .post(format!("{a}/execution-environments/{env}/invoke-tool"))
        .bearer_auth(&cluster.admin_key)
        .header("accept", "text/event-stream")
        .json(&call)
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    let events = response.text().await.expect("event stream");
    let (mut streamed, mut result) = (0usize, None);
    for event in events
        .split("\n\n")
        .filter(|event| !event.trim().is_empty())
    {
        let kind = event.lines().find_map(|line| line.strip_prefix("event: "));
        let data: String = event
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect();
        match kind {
            Some("output") => {
                let output: Value = serde_json::from_str(&data).expect("output event");
                let chunk = output["data"].as_str().expect("data");
                let only = if output["stream"] == "stdout" {
                    '"'
                } else {
                    '\\'
                };
                assert!(chunk.chars().all(|c| c == only), "mixed chunk");
                streamed += chunk.len();
            }
            Some("result") => result = Some(serde_json::from_str::<Value>(&data).expect("result")),
            other => panic!(
                "unexpected event {other:?}: {}",
                &data[..data.len().min(200)]
            ),
        }
    }
    let result = result.expect("a result event");
    assert_eq!(result["result"], within["result"]);
    // A reader that keeps reading gets every byte across relays too
    // (before the caller relay waited for its reader, chunks were dropped:
    // 1.57 of 2 MB in one run), never cut or mixed (checked above).
    assert_eq!(streamed, 2 * EACH, "{streamed} bytes streamed");

    // The binary stream through A: the 3 MiB that are not UTF-8, byte for
    // byte (output frames cross NATS as raw bytes, not JSON).
    let response = cluster
        .http
        .post(format!("{a}/execution-environments/{env}/invoke-tool"))
        .bearer_auth(&cluster.admin_key)
        .header("accept", runner_proto::api::STREAM_MEDIA_TYPE)
        .json(&json!({"tool_name": "shell", "timeout_s": 60, "args": {"command": "cat big.bin"}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.bytes().await.expect("binary stream");
    let frames = crate::support::stream_frames(&body);
    let stdout: Vec<u8> = frames
        .iter()
        .filter(|(kind, _)| *kind == runner_proto::api::stream_frame::STDOUT)
        .flat_map(|(_, payload)| payload.iter().copied())
        .collect();
    let (kind, payload) = frames.last().expect("frames");
    assert_eq!(
        *kind,
        runner_proto::api::stream_frame::RESULT,
        "{}",
        String::from_utf8_lossy(payload)
    );
    assert!(
        stdout == binary,
        "{} bytes streamed, not the file's {}",
        stdout.len(),
        binary.len()
    );
    eprintln!("cluster: 4 MiB call, 4 MiB result and 4 MB shell result crossed relays; {streamed} of {} bytes streamed as events, {} bytes byte for byte as frames", 2 * EACH, stdout.len());
}

/// A caller that reads slowly still gets a large streamed output through
/// another relay whole, and that relay does not hold the output meanwhile:
/// the relay with the runner's socket sends no further ahead than the
/// caller's relay has handed to its reader (output credit), so the runner
/// waits instead. Before, all of it piled up in relay A's NATS client.
#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_slow_reader_across_relays_gets_every_byte_and_the_relays_hold_little() {
    const TOTAL: usize = 192 * 1024 * 1024;
    let cluster = Cluster::start().await;
    let (env, _balancer, _runner) = cluster.runner_on_b("slow-reader").await;
    let a = cluster.url(0).to_owned();
    let pids: Vec<u32> = cluster.relays[..2]
        .iter()
        .map(|relay| relay.child.id().expect("running"))
        .collect();
    let before: Vec<u64> = pids.iter().map(|pid| status_kib(*pid, "VmRSS:")).collect();
    let command = format!("head -c {TOTAL} /dev/zero | tr '\\0' x");
    let client = reqwest::Client::new();
    let mut response = client
        .post(format!("{a}/execution-environments/{env}/invoke-tool"))
        .bearer_auth(&cluster.admin_key)
        .header("accept", runner_proto::api::STREAM_MEDIA_TYPE)
        .json(&json!({"tool_name": "shell", "timeout_s": 120, "args": {"command": command}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    // Read nothing for 3 s (under the 5 s stall limit): the runner writes
    // far faster than that. `CLUSTER_STREAM_PAUSE_MS=0` measures the rate
    // to a reader that keeps up instead (printed below; BENCHMARKS.md).
    let pause = std::env::var("CLUSTER_STREAM_PAUSE_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .unwrap_or(3_000);
    tokio::time::sleep(Duration::from_millis(pause)).await;
    let reading = Instant::now();
    let mut frames = runner_proto::api::stream_frame::Reader::new(usize::MAX);
    let (mut stdout, mut result) = (0usize, None);
    while let Some(chunk) = tokio::time::timeout(REQUEST_TIMEOUT, response.chunk())
        .await
        .expect("the stream keeps coming")
        .expect("stream")
    {
        let control = frames
            .push(&chunk, |kind, piece| {
                if kind == runner_proto::api::stream_frame::STDOUT {
                    assert!(piece.iter().all(|b| *b == b'x'), "foreign bytes");
                    stdout += piece.len();
                }
                Ok::<(), std::convert::Infallible>(())
            })
            .expect("no limit");
        if let Some((kind, payload)) = control {
            assert_eq!(kind, runner_proto::api::stream_frame::RESULT);
            result = Some(serde_json::from_slice::<Value>(&payload).expect("result"));
        }
    }
    let result = result.expect("a result frame");
    assert_eq!(result["exit_code"], 0, "{}", short(&result));
    assert_eq!(stdout, TOTAL, "every byte, in order");
    eprintln!(
        "cluster: {} MiB read across relays at {:.0} MB/s after a {pause} ms pause",
        TOTAL >> 20,
        TOTAL as f64 / reading.elapsed().as_secs_f64() / 1e6
    );
    for (index, pid) in pids.iter().enumerate() {
        let grew = status_kib(*pid, "VmHWM:").saturating_sub(before[index]);
        assert!(
            // The credit window (16 MiB) and the reader's queue, with
            // room; without credit relay A grew by 306 MiB here.
            grew < 96 * 1024,
            "relay {} grew by {grew} KiB while {} MiB streamed through it to a slow reader",
            cluster.relays[index].name,
            TOTAL >> 20
        );
        eprintln!(
            "cluster: relay {} peak RSS grew {grew} KiB while {} MiB streamed to a slow reader",
            cluster.relays[index].name,
            TOTAL >> 20
        );
    }
}

/// A caller that stops reading a stream through another relay stops the
/// credit, so the holder's own stall rule cancels the call (as on one
/// relay) and the runner stops writing: the reader that comes back later
/// finds the cancellation, not a gigabyte.
#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_reader_that_stops_across_relays_gets_the_call_cancelled() {
    let cluster = Cluster::start_with(&["--output-stall-timeout", "1"]).await;
    let (env, _balancer, _runner) = cluster.runner_on_b("stopped-reader").await;
    let a = cluster.url(0).to_owned();
    let response = reqwest::Client::new()
        .post(format!("{a}/execution-environments/{env}/invoke-tool"))
        .bearer_auth(&cluster.admin_key)
        .header("accept", runner_proto::api::STREAM_MEDIA_TYPE)
        .json(&json!({"tool_name": "shell", "timeout_s": 120,
            "args": {"command": "head -c 100000000000 /dev/zero"}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    // Two stall periods of 1 s (the caller's relay, then the holder's) and
    // margin.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let body = tokio::time::timeout(REQUEST_TIMEOUT, response.bytes())
        .await
        .expect("the stream ends")
        .expect("stream");
    let frames = crate::support::stream_frames(&body);
    let (mut stdout, mut result) = (0usize, None);
    for (kind, payload) in &frames {
        match *kind {
            runner_proto::api::stream_frame::STDOUT => stdout += payload.len(),
            runner_proto::api::stream_frame::RESULT | runner_proto::api::stream_frame::ERROR => {
                result = Some(serde_json::from_slice::<Value>(payload).expect("result"));
            }
            _ => {}
        }
    }
    let result = result.unwrap_or_else(|| panic!("a result frame after {stdout} bytes of output"));
    let error = result["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("cancelled") && error.contains("read none of its output"),
        "{}",
        short(&result)
    );
    assert!(stdout < 1 << 30, "{stdout} bytes: the runner did not wait");
    eprintln!("cluster: a stopped reader across relays got {stdout} bytes, then: {error}");
}

/// A `/proc/PID/status` figure in KiB (`VmRSS:`, `VmHWM:`).
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("field in /proc/PID/status")
}

/// The first 300 characters of a JSON value, for assertion messages.
fn short(value: &Value) -> String {
    value.to_string().chars().take(300).collect()
}

/// SPEC §6 fallback: three consecutive slow timeouts mark a runner
/// degraded, wherever the callers' requests landed; any success ends it.
#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn timeouts_through_different_relays_make_one_streak() {
    use futures_util::StreamExt;
    let cluster = Cluster::start().await;
    let (env, token) = cluster.dev_env("slow").await;
    // No heartbeat health probe: the fallback rule applies.
    let mut runner = fake_runner(cluster.url(1), &token, "silent").await;
    for relay in 0..3 {
        cluster
            .wait_status(cluster.url(relay), &env, connected)
            .await;
    }

    // One call through each relay; the runner answers none of them. The
    // three time out together, just over the 20 s that counts as slow.
    let timeout_s = runner_relay::status::SLOW_TIMEOUT_SECONDS + 1;
    let callers: Vec<_> = (0..3)
        .map(|relay| {
            let body =
                json!({"tool_name": "echo", "args": {"relay": relay}, "timeout_s": timeout_s});
            cluster.spawn_invoke(cluster.url(relay), &env, body)
        })
        .collect();
    for caller in callers {
        let (status, body, _) = caller.await.expect("caller");
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT, "{body}");
    }
    for relay in 0..3 {
        let status = cluster
            .wait_status(cluster.url(relay), &env, |status| {
                status["status"] == "degraded"
            })
            .await;
        assert_eq!(
            status["reason"], "3 consecutive calls timed out",
            "relay {relay}: {status}"
        );
    }

    // One answered call, through C, ends the streak on every relay.
    let caller = cluster.spawn_invoke(
        cluster.url(2),
        &env,
        json!({"tool_name": "echo", "args": {"answer": true}, "timeout_s": 30}),
    );
    let call = tokio::time::timeout(DEADLINE, async {
        loop {
            let Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) =
                runner.socket.next().await
            else {
                panic!("the runner's socket ended");
            };
            // Skips the cancels of the calls that timed out, and acks.
            if let Ok(RelayMessage::Call(call)) = serde_json::from_str(&text) {
                if call.args["answer"] == true {
                    return call;
                }
            }
        }
    })
    .await
    .expect("the answered call arrives");
    runner.answer(&call, 0).await;
    let (status, body, _) = caller.await.expect("caller");
    assert_eq!(status, StatusCode::OK, "{body}");
    for relay in 0..3 {
        cluster
            .wait_status(cluster.url(relay), &env, |status| {
                status["status"] == "online"
            })
            .await;
    }
    eprintln!("cluster: one timeout streak across three relays: degraded, then online everywhere");
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn a_session_started_on_one_relay_is_used_and_ended_through_others() {
    let cluster = Cluster::start().await;
    let (env, _balancer, _runner) = cluster.runner_on_b("session-box").await;
    let (status, session) = cluster
        .post(cluster.url(0), "/sessions", json!({"environment": "auto"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{session}");
    let id = session["id"].as_str().expect("id").to_owned();
    let call = format!("/sessions/{id}/invoke-tool");

    // The first call, through relay C, locks the environment (runner on B).
    let (status, body) = cluster
        .post(
            cluster.url(2),
            &call,
            json!({"tool_name": "ping", "args": {"n": 7}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["n"], 7);
    // Every relay sees the lock.
    for index in 0..3 {
        let (status, seen) = cluster
            .get(cluster.url(index), &format!("/sessions/{id}"))
            .await;
        assert_eq!(status, StatusCode::OK, "{seen}");
        assert_eq!(
            seen["environment"]["id"],
            env.as_str(),
            "relay {index}: {seen}"
        );
    }
    // A later call through A goes to the same machine.
    let (status, body) = cluster
        .post(
            cluster.url(0),
            &call,
            json!({"tool_name": "ping", "args": {"n": 8}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["n"], 8);

    // Ended through B: refused through A and C at once.
    let (status, _) = cluster
        .request(
            reqwest::Method::DELETE,
            &format!("{}/sessions/{id}", cluster.url(1)),
            None,
        )
        .await
        .expect("request");
    assert_eq!(status, StatusCode::NO_CONTENT);
    for index in [0, 2] {
        let (status, error) = cluster
            .post(cluster.url(index), &call, json!({"tool_name": "ping"}))
            .await;
        assert_eq!(status, StatusCode::GONE, "relay {index}: {error}");
        assert_eq!(error["error"]["code"], "session_ended");
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn an_approval_decided_through_one_relay_releases_a_caller_waiting_on_another() {
    let cluster = Cluster::start().await;
    let (env, _balancer, runner) = cluster.runner_on_b("gated-box").await;
    let (status, body) = cluster
        .request(
            reqwest::Method::PATCH,
            &format!("{}/execution-environments/{env}", cluster.url(0)),
            Some(json!({"policy": {"tools": {"mode": "all"}, "approval_required": ["shell"]}})),
        )
        .await
        .expect("patch");
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, agent) = cluster
        .post(
            cluster.url(0),
            "/members",
            json!({"name": "ci", "kind": "agent"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let agent_key = agent["api_key"].as_str().expect("key").to_owned();

    // The agent waits on relay A; the runner is on relay B.
    let mut call = append(&runner, "approved", 0);
    call["on_approval"] = json!("wait");
    call["approval_wait_s"] = json!(60);
    let waiting = {
        let http = cluster.http.clone();
        let url = format!(
            "{}/execution-environments/{env}/invoke-tool",
            cluster.url(0)
        );
        tokio::spawn(async move {
            let response = http
                .post(url)
                .bearer_auth(agent_key)
                .json(&call)
                .send()
                .await
                .expect("sent");
            let status = response.status();
            (status, response.json::<Value>().await.expect("json"))
        })
    };
    let id = {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, list) = cluster
                .get(cluster.url(2), "/approvals?status=pending")
                .await;
            if let Some(id) = list["approvals"][0]["id"].as_str() {
                break id.to_owned();
            }
            assert!(Instant::now() < deadline, "no approval: {list}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    // Approved through B and, at the same time, through C: one wins.
    let path = format!("/approvals/{id}/approve");
    let approve = |index: usize| cluster.post(cluster.url(index), &path, json!({"comment": "ok"}));
    let ((status_b, body_b), (status_c, body_c)) = tokio::join!(approve(1), approve(2));
    assert_eq!(status_b, StatusCode::OK, "{body_b}");
    assert_eq!(status_c, StatusCode::OK, "{body_c}");
    let (status, answer) = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting caller was released")
        .expect("task");
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["exit_code"], 0, "{answer}");
    let call_id = answer["call_id"].as_str().expect("call id");
    let entry = cluster
        .wait_invocation(cluster.url(1), call_id, "done")
        .await;
    assert_eq!(entry["tool_name"], "shell", "{entry}");
    assert_eq!(runner.ledger_lines(), vec!["approved"], "exactly once");
}

/// A real `runner sandbox-host` connected to `url` with a new host
/// environment's token. Needs root and bubblewrap: `None` (the test says it
/// is skipped) without them.
async fn sandbox_host(cluster: &Cluster, name: &str, url: &str) -> Option<(String, RealRunner)> {
    // /proc/self belongs to the process's effective user.
    let root =
        std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").expect("/proc/self"))
            == 0;
    let bwrap = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join("bwrap").is_file()));
    if !(root && bwrap) {
        eprintln!("SKIPPED sandboxes across relays: needs root and bubblewrap (root: {root}, bwrap: {bwrap})");
        return None;
    }
    let (status, env) = cluster
        .post(
            cluster.url(0),
            "/execution-environments",
            json!({ "name": name, "type": "sandbox-host" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{env}");
    let id = env["id"].as_str().expect("id").to_owned();
    let (status, token) = cluster
        .post(
            cluster.url(0),
            &format!("/execution-environments/{id}/generate-token"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{token}");
    let token = token["token"].as_str().expect("token");
    let dir = tempfile::tempdir().expect("tempdir");
    let child = Command::new(binary("runner"))
        .args(["sandbox-host", "--url", url])
        .env("RUNNER_TOKEN", token)
        .env("RUNNER_CONFIG_DIR", dir.path().join("config"))
        .env("RUNNER_STATE_DIR", dir.path().join("state"))
        .env("RUNNER_CREDENTIAL_STORE", "file")
        .env_remove("RUNNER_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("runner sandbox-host starts");
    cluster.wait_status(cluster.url(1), &id, connected).await;
    Some((id, RealRunner { child, dir }))
}

#[tokio::test]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn sandboxes_spread_over_hosts_and_serve_sessions_through_any_relay() {
    let _ = IGNORE;
    let cluster = Cluster::start().await;
    let Some((host_a, _host_on_a)) = sandbox_host(&cluster, "host-on-a", cluster.url(0)).await
    else {
        return;
    };
    let Some((host_b, _host_on_b)) = sandbox_host(&cluster, "host-on-b", cluster.url(1)).await
    else {
        return;
    };
    // Four sessions, each created and called through another relay than
    // its neighbour's, all holding their sandbox.
    let mut placed = Vec::new();
    for n in 0..4 {
        let relay = cluster.url(n % 3);
        let (status, session) = cluster
            .post(relay, "/sessions", json!({ "environment": "sandbox" }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{session}");
        let id = session["id"].as_str().expect("id").to_owned();
        let (status, answer) = cluster
            .post(
                relay,
                &format!("/sessions/{id}/invoke-tool"),
                json!({ "tool_name": "shell", "args": { "command": "id -u; echo $RUNNER_CALL_ID >/dev/null" } }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert_eq!(answer["result"]["stdout"], "0\n", "{answer}");
        // The next call through yet another relay reaches the same sandbox.
        let other = cluster.url((n + 1) % 3);
        let (status, again) = cluster
            .post(
                other,
                &format!("/sessions/{id}/invoke-tool"),
                json!({ "tool_name": "shell", "args": { "command": "touch /workspace/mark && ls /workspace" } }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{again}");
        let (_, view) = cluster.get(other, &format!("/sessions/{id}")).await;
        placed.push(
            view["sandbox"]["host_id"]
                .as_str()
                .expect("host")
                .to_owned(),
        );
    }
    let on_a = placed.iter().filter(|host| **host == host_a).count();
    let on_b = placed.iter().filter(|host| **host == host_b).count();
    assert_eq!(
        (on_a, on_b),
        (2, 2),
        "the least loaded host takes each: {placed:?}"
    );
}
