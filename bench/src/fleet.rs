//! Sections 3 and 4: an idle fleet of simulated runners on one relay, then
//! a reconnect storm on the same fleet.
//!
//! Idle fleet: environments and tokens are created through the API (two
//! calls each), then the fleet grows stage by stage (1k, 10k, as far as the
//! open-file limit allows); at each stage, once every runner is welcomed and
//! a few seconds have passed, the relay's RSS is read. Per connection =
//! (RSS at stage − RSS with the environments created and no socket) / N.
//! Sockets come from several 127.0.0.x source addresses (one per 10,000) so
//! the ephemeral port range is never the limit.
//!
//! Storm: the relay is `kill -9`ed and restarted on the same port and data
//! directory; each simulated runner reconnects with the real runner's
//! backoff. Measured: time until every runner is welcomed again, the
//! relay's peak CPU, duplicate sessions (`REPLACED` closes, or a runner
//! welcomed twice), and how the reconnections spread over time.

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures_util::StreamExt;
use serde_json::{json, Map, Value};

use crate::machine::NoFile;
use crate::procs::{self, Bins, Relay};
use crate::simulated::{self, EventKind, Fleet};
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Descriptors kept free below RLIMIT_NOFILE (store, listener, API clients).
const FD_MARGIN: u64 = 400;
/// Simulated runners per source address (the ephemeral range is ~28k ports).
const RUNNERS_PER_SOURCE: usize = 10_000;
/// API calls in flight while provisioning environments.
const PROVISION_CONCURRENCY: usize = 16;
/// Handshakes in flight during the ramp-up.
const RAMP_GATE: usize = 64;
/// Pause at each stage before reading RSS.
const SETTLE: Duration = Duration::from_secs(3);
/// Longest the storm may take to reconnect everyone.
const STORM_TIMEOUT: Duration = Duration::from_secs(180);

pub async fn run(bins: &Bins, args: &RunArgs, nofile: NoFile) -> anyhow::Result<Value> {
    let limit = nofile.soft.saturating_sub(FD_MARGIN) as usize;
    let mut stages: Vec<usize> = Vec::new();
    for stage in &args.fleet {
        let size = if stage == "max" {
            limit
        } else {
            stage
                .parse::<usize>()
                .with_context(|| format!("fleet size {stage:?} is not a number"))?
        };
        let size = size.min(limit);
        if stages.last().is_none_or(|last| size > *last) {
            stages.push(size);
        }
    }
    let largest = *stages.last().context("no fleet size")?;

    let data = tempfile::Builder::new()
        .prefix("runner-bench-fleet-")
        .tempdir()?;
    let relay_dir = data.path().join("relay");
    let mut relay = Relay::spawn(bins, &relay_dir, "127.0.0.1:0", None).await?;
    let relay_empty = procs::memory(relay.pid()?)?;

    note(&format!("provisioning {largest} environments and tokens"));
    let provision_start = Instant::now();
    let tokens = provision(&relay, largest).await?;
    let provision_seconds = provision_start.elapsed().as_secs_f64();
    let baseline = procs::memory(relay.pid()?)?;

    let fleet = Fleet::new(relay.addr, RAMP_GATE);
    let mut tasks = Vec::with_capacity(largest);
    let mut stage_results = Map::new();
    let mut spawned = 0usize;
    let own_pid = std::process::id();
    for &stage in &stages {
        let ramp_start = Instant::now();
        let previous = spawned;
        while spawned < stage {
            let source = Ipv4Addr::new(127, 0, 0, 2 + (spawned / RUNNERS_PER_SOURCE) as u8);
            let token = tokens[spawned].clone();
            tasks.push(tokio::spawn(simulated::run(
                Arc::clone(&fleet),
                spawned as u32,
                token,
                source,
            )));
            spawned += 1;
        }
        let deadline = Duration::from_secs(60).max(Duration::from_millis(stage as u64 * 30));
        wait_connected(&fleet, stage, deadline)
            .await
            .with_context(|| format!("ramping up to {stage}"))?;
        let ramp_seconds = ramp_start.elapsed().as_secs_f64();
        tokio::time::sleep(SETTLE).await;
        let memory = procs::memory(relay.pid()?)?;
        let loadgen = procs::memory(own_pid)?;
        let per_connection = memory.rss_kib.saturating_sub(baseline.rss_kib) as f64 / stage as f64;
        note(&format!(
            "fleet {stage}: relay RSS {} KiB, {:.1} KiB per connection",
            memory.rss_kib, per_connection
        ));
        stage_results.insert(
            stage.to_string(),
            json!({
                "runners": stage,
                "connected": fleet.connected.load(Ordering::Relaxed),
                "relay_rss_kib": memory.rss_kib,
                "relay_rss_per_connection_kib": round(per_connection, 2),
                "ramp_seconds": round(ramp_seconds, 2),
                "new_connections_per_s": round((stage - previous) as f64 / ramp_seconds.max(1e-9), 0),
                "loadgen_rss_kib": loadgen.rss_kib,
            }),
        );
    }

    // Hold the largest fleet: heartbeats flow (every 15 s per runner).
    let acks_before = fleet.heartbeat_acks.load(Ordering::Relaxed);
    let sampler = procs::CpuSampler::start(relay.pid()?, Duration::from_millis(500));
    tokio::time::sleep(Duration::from_secs(args.fleet_hold_seconds)).await;
    let (hold_peak_cpu, hold_average_cpu) = sampler.finish().await;
    let acks = fleet.heartbeat_acks.load(Ordering::Relaxed) - acks_before;
    let still_connected = fleet.connected.load(Ordering::Relaxed);
    let hold_memory = procs::memory(relay.pid()?)?;

    let fleet_result = json!({
        "stages": stage_results,
        "largest": largest,
        "limit_reason": format!("RLIMIT_NOFILE soft {} hard {} (one descriptor per socket in the relay and in the load generator, {FD_MARGIN} kept free)", nofile.soft, nofile.hard),
        "relay_rss_empty_kib": relay_empty.rss_kib,
        "relay_rss_baseline_kib": baseline.rss_kib,
        "provision_environments_per_s": round(largest as f64 / provision_seconds.max(1e-9), 0),
        "hold_seconds": args.fleet_hold_seconds,
        "hold_heartbeat_acks": acks,
        "hold_heartbeat_acks_per_s": round(acks as f64 / (args.fleet_hold_seconds.max(1) as f64), 0),
        "hold_relay_cpu_average_percent": round(hold_average_cpu, 0),
        "hold_relay_cpu_peak_percent": round(hold_peak_cpu, 0),
        "hold_still_connected": still_connected,
        "hold_relay_rss_kib": hold_memory.rss_kib,
        "replaced_closes": fleet.replaced.load(Ordering::Relaxed),
        "failed_attempts": fleet.failed_attempts.load(Ordering::Relaxed),
        "first_error": fleet.first_error.lock().map(|e| e.clone()).unwrap_or(None),
    });

    let storm = if args.no_storm {
        Value::Null
    } else {
        match storm(bins, &mut relay, &fleet, largest).await {
            Ok(value) => value,
            Err(error) => json!({"error": format!("{error:#}")}),
        }
    };
    fleet.shutdown();
    for task in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    }
    procs::kill_hard(&mut relay.child).await;
    Ok(json!({"idle": fleet_result, "storm": storm}))
}

/// Creates `count` development environments with a token each.
async fn provision(relay: &Relay, count: usize) -> anyhow::Result<Vec<String>> {
    let results: Vec<anyhow::Result<String>> = futures_util::stream::iter(0..count)
        .map(|_| async { relay.environment_with_token().await.map(|(_, token)| token) })
        .buffered(PROVISION_CONCURRENCY)
        .collect()
        .await;
    results.into_iter().collect()
}

async fn wait_connected(fleet: &Fleet, want: usize, deadline: Duration) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        let connected = fleet.connected.load(Ordering::Relaxed);
        if connected >= want {
            return Ok(());
        }
        if start.elapsed() > deadline {
            let error = fleet.first_error.lock().map(|e| e.clone()).unwrap_or(None);
            bail!(
                "only {connected} of {want} connected after {} s (first error: {})",
                deadline.as_secs(),
                error.unwrap_or_else(|| "none".into())
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn storm(
    bins: &Bins,
    relay: &mut Relay,
    fleet: &Arc<Fleet>,
    count: usize,
) -> anyhow::Result<Value> {
    note(&format!(
        "storm: kill -9 of the relay under {count} runners"
    ));
    fleet.gated.store(false, Ordering::Relaxed);
    let replaced_before = fleet.replaced.load(Ordering::Relaxed);
    let listen = relay.addr.to_string();
    let admin_key = relay.admin_key.clone();
    let data_dir = relay.data_dir.clone();
    let rss_before = procs::memory(relay.pid()?)?.rss_kib;
    let kill_us = fleet.now_us();
    procs::kill_hard(&mut relay.child).await;
    let restart = Instant::now();
    let mut new_relay = None;
    // The port may be in use for a moment (sockets of the dead process).
    for _ in 0..50 {
        match Relay::spawn(bins, &data_dir, &listen, Some(&admin_key)).await {
            Ok(started) => {
                new_relay = Some(started);
                break;
            }
            Err(error) => {
                note(&format!("restart failed, retrying: {error:#}"));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    *relay = new_relay.context("the relay could not be restarted on the same port")?;
    let listen_us = fleet.now_us();
    let restart_ms = restart.elapsed().as_secs_f64() * 1000.0;
    let sampler = procs::CpuSampler::start(relay.pid()?, Duration::from_millis(250));

    // Every runner welcomed again (a welcome after the kill).
    let start = Instant::now();
    let mut all_online_us = None;
    while start.elapsed() < STORM_TIMEOUT {
        let online_again = {
            let events = fleet.events.lock().unwrap_or_else(|p| p.into_inner());
            let mut seen = vec![false; count];
            let mut online = 0usize;
            for event in events.iter().rev() {
                if event.at_us < kill_us {
                    break;
                }
                if event.kind == EventKind::Welcome && !seen[event.runner as usize] {
                    seen[event.runner as usize] = true;
                    online += 1;
                }
            }
            online
        };
        if online_again >= count && fleet.connected.load(Ordering::Relaxed) >= count {
            all_online_us = Some(fleet.now_us());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A little longer, to catch late duplicates or flapping sessions.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (peak_cpu, average_cpu) = sampler.finish().await;
    let rss_after = procs::memory(relay.pid()?)?.rss_kib;
    // The relay gives a burst's freed memory back at its next check once
    // the burst is over (every 10 s, `runner_relay::heap`): what it holds
    // from then on is what a fleet costs after a restart.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let rss_settled = procs::memory(relay.pid()?)?.rss_kib;

    let events: Vec<_> = fleet
        .events()
        .into_iter()
        .filter(|e| e.at_us >= kill_us)
        .collect();
    let mut welcomes_per_runner: HashMap<u32, usize> = HashMap::new();
    let mut attempts_per_runner: HashMap<u32, usize> = HashMap::new();
    let mut first_welcome: HashMap<u32, u64> = HashMap::new();
    let mut last_attempt: HashMap<u32, u64> = HashMap::new();
    let mut lost_at: HashMap<u32, u64> = HashMap::new();
    let mut min_attempt_gap_us = u64::MAX;
    let mut min_lost_to_attempt_us = u64::MAX;
    for event in &events {
        match event.kind {
            EventKind::Welcome => {
                *welcomes_per_runner.entry(event.runner).or_default() += 1;
                first_welcome.entry(event.runner).or_insert(event.at_us);
            }
            EventKind::Attempt => {
                *attempts_per_runner.entry(event.runner).or_default() += 1;
                if let Some(previous) = last_attempt.insert(event.runner, event.at_us) {
                    min_attempt_gap_us = min_attempt_gap_us.min(event.at_us - previous);
                }
                if let Some(lost) = lost_at.remove(&event.runner) {
                    min_lost_to_attempt_us = min_lost_to_attempt_us.min(event.at_us - lost);
                }
            }
            EventKind::Lost => {
                lost_at.insert(event.runner, event.at_us);
            }
        }
    }
    let welcomed_twice = welcomes_per_runner.values().filter(|n| **n > 1).count();
    let mut attempts_histogram: BTreeMap<usize, usize> = BTreeMap::new();
    for attempts in attempts_per_runner.values() {
        *attempts_histogram.entry(*attempts).or_default() += 1;
    }
    // Online times after the restart, and their spread in 250 ms buckets.
    let online: Vec<Duration> = first_welcome
        .values()
        .map(|at| Duration::from_micros(at.saturating_sub(listen_us)))
        .collect();
    let spread = Summary::of(&online);
    let mut buckets: BTreeMap<u64, usize> = BTreeMap::new();
    for at in first_welcome.values() {
        *buckets
            .entry(at.saturating_sub(kill_us) / 250_000)
            .or_default() += 1;
    }
    let histogram: Vec<Value> = buckets
        .iter()
        .take(240)
        .map(|(bucket, n)| json!([bucket * 250, n]))
        .collect();
    let ms = |us: u64| round(us as f64 / 1000.0, 0);
    Ok(json!({
        "runners": count,
        "backoff": "replicates cli/src/agent/backoff.rs: base 500 ms, cap 60 s, equal jitter [d/2, d], reset after a 30 s session",
        "relay_restart_ms": round(restart_ms, 0),
        "all_online": all_online_us.is_some(),
        "online_again": first_welcome.len(),
        "all_online_after_kill_ms": all_online_us.map(|at| ms(at - kill_us)),
        "all_online_after_listen_ms": all_online_us.map(|at| ms(at.saturating_sub(listen_us))),
        "online_after_listen": spread.to_json(),
        "relay_cpu_peak_percent": round(peak_cpu, 0),
        "relay_cpu_average_percent": round(average_cpu, 0),
        "relay_rss_before_kib": rss_before,
        "relay_rss_after_kib": rss_after,
        "relay_rss_settled_kib": rss_settled,
        "duplicate_sessions_replaced_closes": fleet.replaced.load(Ordering::Relaxed) - replaced_before,
        "runners_welcomed_more_than_once": welcomed_twice,
        "attempts_per_runner": attempts_histogram.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<Map<_, _>>(),
        "min_gap_between_attempts_ms": if min_attempt_gap_us == u64::MAX { Value::Null } else { json!(ms(min_attempt_gap_us)) },
        "min_lost_to_retry_ms": if min_lost_to_attempt_us == u64::MAX { Value::Null } else { json!(ms(min_lost_to_attempt_us)) },
        "backoff_floor_ms": simulated::BACKOFF_BASE.as_millis() / 2,
        "welcomes_by_250ms_after_kill": histogram,
    }))
}
