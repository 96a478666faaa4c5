//! Section 7: the runner's footprint: binary sizes, idle RSS, and the time
//! from process start to online (the runner's own "connected" log line, and
//! the relay's API reporting `online`).

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Value};

use crate::procs::{self, Bins, Relay, Runner};
use crate::round;
use crate::stats::median;

/// Starts measured.
const STARTS: usize = 7;
/// Idle time before reading the idle RSS (a heartbeat or two has passed).
const SETTLE: Duration = Duration::from_secs(3);

pub async fn run(bins: &Bins) -> anyhow::Result<Value> {
    let size = |path: &std::path::Path| fs_err::metadata(path).map(|m| m.len());
    let runner_bytes = size(&bins.runner)?;
    let relay_bytes = size(&bins.relay)?;
    let stripped = |path: &std::path::Path| -> Option<u64> {
        let dir = tempfile::tempdir().ok()?;
        let copy = dir.path().join("stripped");
        std::fs::copy(path, &copy).ok()?;
        let ok = std::process::Command::new("strip")
            .arg(&copy)
            .status()
            .ok()?
            .success();
        if !ok {
            return None;
        }
        std::fs::metadata(&copy).ok().map(|m| m.len())
    };

    let data = tempfile::Builder::new()
        .prefix("runner-bench-footprint-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let relay_idle = procs::memory(relay.pid()?)?;
    let (env, token) = relay.environment_with_token().await?;

    let mut to_api_online = Vec::new();
    let mut to_log_line = Vec::new();
    let mut idle_rss = Vec::new();
    for start_index in 0..STARTS {
        let mut runner = Runner::new()?;
        let started = Instant::now();
        runner.start(bins, &relay.url, &token)?;
        let log = runner.home.path().join("runner.log");
        let mut logged = None;
        loop {
            if logged.is_none()
                && fs_err::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("connected to the relay")
            {
                logged = Some(started.elapsed());
            }
            if relay.status(&env).await? == "online" && logged.is_some() {
                break;
            }
            if started.elapsed() > procs::ONLINE_TIMEOUT {
                anyhow::bail!(
                    "runner did not come online in {} s",
                    procs::ONLINE_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        to_api_online.push(started.elapsed().as_secs_f64() * 1000.0);
        to_log_line.push(logged.context("no log line")?.as_secs_f64() * 1000.0);
        // Idle RSS on the first and last start only (the settle is slow).
        if start_index == 0 || start_index + 1 == STARTS {
            tokio::time::sleep(SETTLE).await;
            idle_rss.push(procs::memory(runner.pid()?)?.rss_kib as f64);
        }
        if let Some(child) = runner.child.as_mut() {
            procs::stop(child, Duration::from_secs(10)).await;
        }
        // The relay sees the socket close before the next start.
        let wait = Instant::now();
        while relay.status(&env).await? == "online" && wait.elapsed() < Duration::from_secs(10) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(json!({
        "runner_binary_bytes": runner_bytes,
        "runner_binary_stripped_bytes": stripped(&bins.runner),
        "relay_binary_bytes": relay_bytes,
        "relay_binary_stripped_bytes": stripped(&bins.relay),
        "runner_idle_rss_kib": median(&mut idle_rss),
        "relay_idle_rss_kib_no_runners": relay_idle.rss_kib,
        "start_to_connected_log_ms_p50": round(median(&mut to_log_line), 1),
        "start_to_api_online_ms_p50": round(median(&mut to_api_online), 1),
        "start_to_api_online_ms_all": to_api_online.iter().map(|v| round(*v, 1)).collect::<Vec<_>>(),
        "starts": STARTS,
    }))
}
