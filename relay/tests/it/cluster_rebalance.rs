//! The rebalance figure (BENCHMARKS.md §8): simulated runners spread over
//! three relays, one relay killed with SIGKILL, and the time until every
//! runner it held is online again through the other two, with no
//! environment left with two sessions.
//!
//! The runners are simulated in this process (one socket each, the real
//! protocol of `runner_proto::ws`: hello → welcome → heartbeats, `ping`
//! answered, terminal close codes obeyed) because thousands of real
//! `runner` processes do not fit on a test machine. They reconnect as the
//! real runner does (jittered exponential backoff, same constants) to the
//! next relay in a shared round-robin list, the way a load balancer in
//! front of the relays would spread them.
//!
//! `CLUSTER_REBALANCE_RUNNERS` sets the fleet (default
//! [`DEFAULT_RUNNERS`], small enough for CI; the figure uses 5000). Mind
//! RLIMIT_NOFILE: this process holds one descriptor per runner.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use runner_proto::ws::{CallResult, Heartbeat, Hello, HostFacts, RelayMessage, RunnerMessage};
use runner_proto::{close, MAX_FRAME_BYTES, PROTOCOL_VERSION, RUNNER_CONNECT_PATH};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

use crate::cluster::{random_suffix, Database, RelayProcess};

/// Environment variable with the number of simulated runners.
const RUNNERS_VAR: &str = "CLUSTER_REBALANCE_RUNNERS";
/// Runners when the variable is unset: the whole test well under a minute.
const DEFAULT_RUNNERS: usize = 300;
/// Handshakes in flight while the fleet first connects (a paced ramp, as
/// a real fleet arrives; the rebalance itself is not paced).
const RAMP_CONCURRENCY: usize = 64;
/// Environments created at once while provisioning.
const PROVISION_CONCURRENCY: usize = 16;
/// Bound on the whole ramp, and on the rebalance.
const PHASE_TIMEOUT: Duration = Duration::from_secs(300);

// The real runner's reconnect timing (`cli/src/agent/backoff.rs` and
// `cli/src/agent/session.rs`). The relay's tests cannot depend on the CLI
// crate, so they are repeated here; `backoff_matches_the_runner` fails when
// the runner's change.
/// First delay after a failure.
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Longest delay between attempts.
const BACKOFF_CAP: Duration = Duration::from_secs(60);
/// A session that lasted this long resets the backoff.
const HEALTHY_SESSION: Duration = Duration::from_secs(30);
/// Bound on TCP connect + WebSocket upgrade.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Bound on waiting for `welcome` after `hello`.
const WELCOME_TIMEOUT: Duration = Duration::from_secs(15);

#[test]
fn backoff_matches_the_runner() {
    let backoff = include_str!("../../../cli/src/agent/backoff.rs");
    for line in [
        "pub const BASE: Duration = Duration::from_millis(500);",
        "pub const CAP: Duration = Duration::from_secs(60);",
        "pub const HEALTHY_SESSION: Duration = Duration::from_secs(30);",
        "half + half.mul_f64(random_unit())",
    ] {
        assert!(
            backoff.contains(line),
            "the runner's backoff changed: {line}"
        );
    }
    let session = include_str!("../../../cli/src/agent/session.rs");
    for line in [
        "pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);",
        "pub const WELCOME_TIMEOUT: Duration = Duration::from_secs(15);",
    ] {
        assert!(
            session.contains(line),
            "the runner's timeouts changed: {line}"
        );
    }
}

/// The runner's backoff: the ceiling doubles from [`BACKOFF_BASE`] up to
/// [`BACKOFF_CAP`]; each delay is uniform in [ceiling/2, ceiling].
struct Backoff {
    attempt: u32,
}

impl Backoff {
    fn next_delay(&mut self) -> Duration {
        let factor = 1u32.checked_shl(self.attempt.min(16)).unwrap_or(u32::MAX);
        let ceiling = BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_CAP);
        self.attempt = self.attempt.saturating_add(1);
        let mut bytes = [0u8; 8];
        let unit = match getrandom::fill(&mut bytes) {
            Ok(()) => (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64,
            Err(_) => 0.5,
        };
        let half = ceiling / 2;
        half + half.mul_f64(unit)
    }
}

/// "Not connected" in [`Sim::relay`].
const NOWHERE: usize = usize::MAX;

/// One simulated runner's state, as the harness reads it.
struct Sim {
    /// Index of the relay its socket is on, or [`NOWHERE`].
    relay: AtomicUsize,
    /// Epoch of its current session (from `welcome`).
    epoch: AtomicU64,
    /// Sessions it has had.
    welcomes: AtomicU64,
    /// Microseconds since [`Fleet::start`] of its latest `welcome`.
    welcomed_at_us: AtomicU64,
}

/// The simulated fleet and the "load balancer" it dials through.
struct Fleet {
    start: Instant,
    /// Relays the balancer sends new connections to, by index.
    backends: Mutex<Vec<(usize, SocketAddr)>>,
    next_backend: AtomicUsize,
    sims: Vec<Sim>,
    ramp: Semaphore,
    ramping: std::sync::atomic::AtomicBool,
    failed_attempts: AtomicU64,
    /// Sessions closed with `REPLACED`: a second runner took the
    /// environment (never expected: each environment has one runner).
    replaced: AtomicU64,
    /// Sessions ended by another terminal code.
    stopped: AtomicU64,
    first_error: Mutex<Option<String>>,
    shutdown: watch::Sender<bool>,
}

impl Fleet {
    fn new(backends: Vec<(usize, SocketAddr)>, runners: usize) -> Arc<Fleet> {
        Arc::new(Fleet {
            start: Instant::now(),
            backends: Mutex::new(backends),
            next_backend: AtomicUsize::new(0),
            sims: (0..runners)
                .map(|_| Sim {
                    relay: AtomicUsize::new(NOWHERE),
                    epoch: AtomicU64::new(0),
                    welcomes: AtomicU64::new(0),
                    welcomed_at_us: AtomicU64::new(0),
                })
                .collect(),
            ramp: Semaphore::new(RAMP_CONCURRENCY),
            ramping: std::sync::atomic::AtomicBool::new(true),
            failed_attempts: AtomicU64::new(0),
            replaced: AtomicU64::new(0),
            stopped: AtomicU64::new(0),
            first_error: Mutex::new(None),
            shutdown: watch::channel(false).0,
        })
    }

    fn now_us(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// The relay for a connection: `first` for a runner's first one (an
    /// even spread), then round robin over the balancer's list.
    fn pick(&self, first: Option<usize>) -> Option<(usize, SocketAddr)> {
        let backends = self.backends.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(first) = first {
            if let Some(backend) = backends.iter().find(|(index, _)| *index == first) {
                return Some(*backend);
            }
        }
        if backends.is_empty() {
            return None;
        }
        let next = self.next_backend.fetch_add(1, Ordering::Relaxed);
        Some(backends[next % backends.len()])
    }

    fn remove_backend(&self, relay: usize) {
        self.backends
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(index, _)| *index != relay);
    }

    fn error(&self, message: String) {
        let mut first = self.first_error.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(message);
    }

    fn connected(&self) -> usize {
        self.sims
            .iter()
            .filter(|sim| sim.relay.load(Ordering::Relaxed) != NOWHERE)
            .count()
    }
}

enum Ended {
    /// Terminal close code or refused token: stop for good.
    Stop,
    Retry {
        welcomed: bool,
    },
}

/// One simulated runner, until the fleet shuts down or a terminal close.
async fn simulate(fleet: Arc<Fleet>, index: usize, token: String) {
    let mut shutdown = fleet.shutdown.subscribe();
    let hello = Hello {
        protocol_version: PROTOCOL_VERSION,
        runner_version: "0.1.0-sim".into(),
        // One process for its whole life: reconnects supersede quietly.
        instance_id: uuid::Uuid::new_v4().to_string(),
        host: HostFacts {
            hostname: format!("sim-{index}"),
            os: "linux".into(),
            arch: "x86_64".into(),
            workspace: format!("/srv/sim-{index}"),
        },
        tools: crate::support::hello("", "", &["ping"]).tools,
        sandbox_capacity: None,
    };
    let Ok(hello) = serde_json::to_string(&RunnerMessage::Hello(hello)) else {
        return fleet.error("encoding hello".into());
    };
    let mut backoff = Backoff { attempt: 0 };
    let mut first = Some(index % 3);
    loop {
        let started = Instant::now();
        let ended = tokio::select! {
            ended = session(&fleet, index, first.take(), &token, &hello) => ended,
            _ = shutdown.changed() => return,
        };
        match ended {
            Ended::Stop => return,
            Ended::Retry { welcomed } => {
                if welcomed && started.elapsed() >= HEALTHY_SESSION {
                    backoff.attempt = 0;
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff.next_delay()) => {}
                    _ = shutdown.changed() => return,
                }
            }
        }
    }
}

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

async fn session(
    fleet: &Fleet,
    index: usize,
    first: Option<usize>,
    token: &str,
    hello: &str,
) -> Ended {
    let permit = if fleet.ramping.load(Ordering::Relaxed) {
        fleet.ramp.acquire().await.ok()
    } else {
        None
    };
    let Some((relay, address)) = fleet.pick(first) else {
        return Ended::Retry { welcomed: false };
    };
    let handshake = async {
        let socket = tokio::time::timeout(CONNECT_TIMEOUT, connect(address, token))
            .await
            .map_err(|_| "connect timed out".to_owned())??;
        tokio::time::timeout(WELCOME_TIMEOUT, welcome(fleet, socket, hello))
            .await
            .map_err(|_| "welcome timed out".to_owned())?
    };
    let (socket, epoch, interval) = match handshake.await {
        Ok(done) => done,
        Err(Handshake::Stop) => return Ended::Stop,
        Err(Handshake::Retry(message)) => {
            fleet.failed_attempts.fetch_add(1, Ordering::Relaxed);
            fleet.error(format!("relay {relay}: {message}"));
            return Ended::Retry { welcomed: false };
        }
    };
    drop(permit);
    let sim = &fleet.sims[index];
    sim.epoch.store(epoch, Ordering::Relaxed);
    sim.welcomed_at_us.store(fleet.now_us(), Ordering::Relaxed);
    sim.welcomes.fetch_add(1, Ordering::Relaxed);
    sim.relay.store(relay, Ordering::Release);
    let ended = welcomed(fleet, socket, interval).await;
    sim.relay.store(NOWHERE, Ordering::Release);
    ended
}

enum Handshake {
    Stop,
    Retry(String),
}

impl From<String> for Handshake {
    fn from(message: String) -> Self {
        Handshake::Retry(message)
    }
}

async fn connect(address: SocketAddr, token: &str) -> Result<Socket, Handshake> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(|error| format!("connecting to {address}: {error}"))?;
    let _ = stream.set_nodelay(true);
    let mut request = format!("ws://{address}{RUNNER_CONNECT_PATH}")
        .into_client_request()
        .map_err(|error| format!("request: {error}"))?;
    let bearer = format!("Bearer {token}")
        .parse()
        .map_err(|_| Handshake::Stop)?;
    request.headers_mut().insert("authorization", bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_FRAME_BYTES))
        .max_frame_size(Some(MAX_FRAME_BYTES));
    match tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await {
        Ok((socket, _)) => Ok(socket),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) if response.status() == 401 => {
            Err(Handshake::Stop)
        }
        Err(error) => Err(format!("upgrade: {error}").into()),
    }
}

/// Sends `hello`, waits for `welcome`: (socket, epoch, heartbeat interval).
async fn welcome(
    fleet: &Fleet,
    mut socket: Socket,
    hello: &str,
) -> Result<(Socket, u64, Duration), Handshake> {
    socket
        .send(Message::text(hello.to_owned()))
        .await
        .map_err(|error| format!("sending hello: {error}"))?;
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(text))) => {
                if let Ok(RelayMessage::Welcome(welcome)) = serde_json::from_str(&text) {
                    let interval = Duration::from_secs(welcome.heartbeat_interval_s.clamp(1, 300));
                    return Ok((socket, welcome.epoch, interval));
                }
            }
            Some(Ok(Message::Close(frame))) => {
                let code = frame.as_ref().map_or(1005, |frame| u16::from(frame.code));
                return Err(closed(fleet, code).map_or(Handshake::Stop, |()| {
                    Handshake::Retry(format!("closed during handshake ({code})"))
                }));
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => return Err(format!("reading welcome: {error}").into()),
            None => return Err("closed before welcome".to_owned().into()),
        }
    }
}

/// Counts a close code; `Err(())` when it is terminal.
fn closed(fleet: &Fleet, code: u16) -> Result<(), ()> {
    if !close::is_terminal(code) {
        return Ok(());
    }
    if code == close::REPLACED {
        fleet.replaced.fetch_add(1, Ordering::Relaxed);
    } else {
        fleet.stopped.fetch_add(1, Ordering::Relaxed);
    }
    Err(())
}

/// A welcomed session: heartbeats, `ping` answered, until it ends.
async fn welcomed(fleet: &Fleet, socket: Socket, interval: Duration) -> Ended {
    let (mut sink, mut stream) = socket.split();
    let mut heartbeat = tokio::time::interval(interval);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let Ok(beat) = serde_json::to_string(&RunnerMessage::Heartbeat(Heartbeat {
        in_flight: 0,
        backlog: 0,
        executor_healthy: Some(true),
        sandbox_capacity: None,
    })) else {
        return Ended::Stop;
    };
    loop {
        tokio::select! {
            frame = stream.next() => match frame {
                Some(Ok(Message::Text(text))) => {
                    if let Ok(RelayMessage::Call(call)) = serde_json::from_str(&text) {
                        let result = CallResult {
                            call_id: call.call_id,
                            result: call.args,
                            exit_code: None,
                            error: None,
                            error_code: None,
                        };
                        let Ok(text) = serde_json::to_string(&RunnerMessage::Result(result)) else {
                            continue;
                        };
                        if sink.send(Message::text(text)).await.is_err() {
                            return Ended::Retry { welcomed: true };
                        }
                    }
                }
                Some(Ok(Message::Close(frame))) => {
                    let code = frame.as_ref().map_or(1005, |frame| u16::from(frame.code));
                    return match closed(fleet, code) {
                        Ok(()) => Ended::Retry { welcomed: true },
                        Err(()) => Ended::Stop,
                    };
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => return Ended::Retry { welcomed: true },
            },
            _ = heartbeat.tick() => {
                if sink.send(Message::text(beat.clone())).await.is_err() {
                    return Ended::Retry { welcomed: true };
                }
            }
        }
    }
}

/// Polls `check` every 10 ms until it holds; panics after `limit`.
async fn wait_until(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() - 1) as f64 * fraction).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Creates `count` development environments and a token for each.
async fn provision(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    count: usize,
) -> Vec<(String, String)> {
    let work = futures_util::stream::iter(0..count).map(|n| {
        let http = http.clone();
        let base = base.to_owned();
        let key = key.to_owned();
        async move {
            let post = |path: String, body: Value| {
                http.post(format!("{base}{path}"))
                    .bearer_auth(&key)
                    .json(&body)
                    .send()
            };
            let env: Value = post(
                "/execution-environments".into(),
                json!({"name": format!("sim-{n}"), "tier": "development"}),
            )
            .await
            .expect("create environment")
            .json()
            .await
            .expect("environment json");
            let id = env["id"].as_str().expect("environment id").to_owned();
            let token: Value = post(
                format!("/execution-environments/{id}/generate-token"),
                json!({}),
            )
            .await
            .expect("generate token")
            .json()
            .await
            .expect("token json");
            (id, token["token"].as_str().expect("token").to_owned())
        }
    });
    work.buffered(PROVISION_CONCURRENCY).collect().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL and NATS (run by .ci/run with --include-ignored)"]
async fn runners_of_a_killed_relay_rebalance_onto_the_others() {
    let runners: usize = match std::env::var(RUNNERS_VAR) {
        Ok(value) => value
            .parse()
            .expect("CLUSTER_REBALANCE_RUNNERS is a number"),
        Err(_) => DEFAULT_RUNNERS,
    };
    let database = Database::create().await;
    let prefix = format!("test_{}", random_suffix());
    let log = "runner_relay=warn";
    let (a, key) = RelayProcess::start_logging("relay-a", &database, &prefix, log).await;
    let key = key.expect("the first relay prints the admin key");
    let (b, _) = RelayProcess::start_logging("relay-b", &database, &prefix, log).await;
    let (mut c, _) = RelayProcess::start_logging("relay-c", &database, &prefix, log).await;
    let names = [a.name.clone(), b.name.clone(), c.name.clone()];
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client");

    let provisioned = Instant::now();
    let environments = provision(&http, &a.url, &key, runners).await;
    let provisioned = provisioned.elapsed();

    let fleet = Fleet::new(
        vec![(0, a.address), (1, b.address), (2, c.address)],
        runners,
    );
    let ramp = Instant::now();
    let tasks: Vec<_> = environments
        .iter()
        .enumerate()
        .map(|(index, (_, token))| tokio::spawn(simulate(fleet.clone(), index, token.clone())))
        .collect();
    wait_until("the fleet connects", PHASE_TIMEOUT, || {
        fleet.connected() == runners
    })
    .await;
    let ramp = ramp.elapsed();
    fleet.ramping.store(false, Ordering::Relaxed);
    // Every runner is where it was first sent (no churn during the ramp).
    let victims: Vec<usize> = (0..runners)
        .filter(|&index| fleet.sims[index].relay.load(Ordering::Acquire) == 2)
        .collect();
    let before: Vec<(u64, u64)> = fleet
        .sims
        .iter()
        .map(|sim| {
            (
                sim.welcomes.load(Ordering::Relaxed),
                sim.epoch.load(Ordering::Relaxed),
            )
        })
        .collect();

    // Kill C; the balancer stops sending connections to it at once (a
    // health check is slower, but connections to C are refused anyway).
    let failed_before = fleet.failed_attempts.load(Ordering::Relaxed);
    let killed_at_us = fleet.now_us();
    let killed = Instant::now();
    c.kill_9();
    fleet.remove_backend(2);
    wait_until(
        "the killed relay's runners come back",
        PHASE_TIMEOUT,
        || {
            victims.iter().all(|&index| {
                let sim = &fleet.sims[index];
                sim.relay.load(Ordering::Acquire) != NOWHERE
                    && sim.relay.load(Ordering::Acquire) != 2
            })
        },
    )
    .await;
    let observed = killed.elapsed();

    // Per-runner time from the kill to its new `welcome`.
    let mut moved: Vec<f64> = victims
        .iter()
        .map(|&index| {
            let at = fleet.sims[index].welcomed_at_us.load(Ordering::Relaxed);
            at.saturating_sub(killed_at_us) as f64 / 1e3
        })
        .collect();
    moved.sort_by(f64::total_cmp);
    let all_back_ms = moved.last().copied().unwrap_or(0.0);

    // No duplicates: each runner of C has exactly one new session (epoch
    // one higher), the others none; nobody was replaced or stopped.
    for (index, sim) in fleet.sims.iter().enumerate() {
        let (welcomes, epoch) = before[index];
        let was_victim = victims.binary_search(&index).is_ok();
        let extra = sim.welcomes.load(Ordering::Relaxed) - welcomes;
        let epoch_now = sim.epoch.load(Ordering::Relaxed);
        if was_victim {
            assert_eq!(extra, 1, "runner {index} had {extra} new sessions");
            assert_eq!(
                epoch_now,
                epoch + 1,
                "runner {index}: epoch {epoch} → {epoch_now}"
            );
        } else {
            assert_eq!(extra, 0, "runner {index} on a live relay reconnected");
        }
    }
    assert_eq!(fleet.replaced.load(Ordering::Relaxed), 0, "REPLACED closes");
    assert_eq!(fleet.stopped.load(Ordering::Relaxed), 0, "terminal closes");

    // The store agrees: one session per environment, held by the relay
    // the runner is connected to, at the epoch it was welcomed with.
    let store = {
        use sqlx::Connection;
        let mut connection = sqlx::PgConnection::connect(&database.url())
            .await
            .expect("PostgreSQL");
        let rows: Vec<(String, i64, Option<String>)> =
            sqlx::query_as("SELECT environment_id, epoch, holder FROM runner_sessions")
                .fetch_all(&mut connection)
                .await
                .expect("sessions");
        rows
    };
    assert_eq!(store.len(), runners, "one session row per environment");
    let by_environment: std::collections::HashMap<&str, (i64, Option<&str>)> = store
        .iter()
        .map(|(id, epoch, holder)| (id.as_str(), (*epoch, holder.as_deref())))
        .collect();
    for (index, (environment_id, _)) in environments.iter().enumerate() {
        let sim = &fleet.sims[index];
        let relay = sim.relay.load(Ordering::Acquire);
        let expected = (
            i64::try_from(sim.epoch.load(Ordering::Relaxed)).expect("epoch fits"),
            Some(names[relay].as_str()),
        );
        assert_eq!(
            by_environment.get(environment_id.as_str()),
            Some(&expected),
            "runner {index}'s session in the store"
        );
    }

    // And calls reach moved runners through either survivor.
    for (n, &index) in victims.iter().take(10).enumerate() {
        let base = if n % 2 == 0 { &a.url } else { &b.url };
        let response = http
            .post(format!(
                "{base}/execution-environments/{}/invoke-tool",
                environments[index].0
            ))
            .bearer_auth(&key)
            .json(&json!({"tool_name": "ping", "args": {"n": n}, "timeout_s": 10}))
            .send()
            .await
            .expect("invoke");
        assert_eq!(response.status(), reqwest::StatusCode::OK);
    }

    let _ = fleet.shutdown.send(true);
    for task in tasks {
        let _ = task.await;
    }
    eprintln!(
        "cluster: rebalance of {runners} runners over 3 relays ({} on the killed one): \
         all back {all_back_ms:.0} ms after kill -9 (p50 {:.0} ms, p99 {:.0} ms; \
         observed by polling {:.0} ms); {} failed attempts meanwhile; 0 duplicate sessions; \
         ramp {:.1} s, provisioning {:.1} s; relay binary {}",
        victims.len(),
        percentile(&moved, 0.5),
        percentile(&moved, 0.99),
        observed.as_secs_f64() * 1e3,
        fleet.failed_attempts.load(Ordering::Relaxed) - failed_before,
        ramp.as_secs_f64(),
        provisioned.as_secs_f64(),
        std::env::var("RUNNER_TEST_RELAY_BIN").unwrap_or_else(|_| "debug (cargo's)".into()),
    );
    if let Some(error) = fleet
        .first_error
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        eprintln!("cluster: first failed attempt: {error}");
    }
    drop((a, b, c));
}
