//! Section 2: `ping` invokes per second through the relay at concurrency 1,
//! 16, 64 and 256, across 1 and 16 real runner processes.
//!
//! Each cell runs for a fixed time; worker `w` sends its `i`-th call to
//! runner `(w + i) % runners`. The load generator shares the machine's cores
//! with the relay and the runners, so the figures are a floor of what the
//! relay does on its own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{json, Map, Value};

use crate::procs::{self, Bins, Relay};
use crate::stats::Summary;
use crate::{round, RunArgs};

/// 64 sits between "latency-bound" (16) and "queue-bound" (256): the
/// 10,000/s at p99 < 10 ms target is judged on the best cell.
const CONCURRENCIES: [usize; 4] = [1, 16, 64, 256];
const RUNNER_COUNTS: [usize; 2] = [1, 16];
/// Unmeasured time at the start of each cell (connections open, caches warm).
const WARMUP: Duration = Duration::from_millis(300);

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-throughput-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let max_runners = RUNNER_COUNTS.iter().copied().max().unwrap_or(1);
    let (envs, runners) = procs::online_runners(bins, &relay, max_runners).await?;
    let http = procs::http_client(CONCURRENCIES.iter().copied().max().unwrap_or(1))?;
    let seconds = Duration::from_secs_f64(args.throughput_seconds.max(0.2));
    let relay_pid = relay.pid()?;

    let mut cells = Map::new();
    for runner_count in RUNNER_COUNTS {
        for concurrency in CONCURRENCIES {
            let envs = Arc::new(envs[..runner_count].to_vec());
            let sampler = procs::CpuSampler::start(relay_pid, Duration::from_millis(250));
            let cell = cell(&http, &[&relay], envs, concurrency, seconds).await?;
            let (peak_cpu, average_cpu) = sampler.finish().await;
            let mut value = cell;
            value["relay_cpu_average_percent"] = json!(round(average_cpu, 0));
            value["relay_cpu_peak_percent"] = json!(round(peak_cpu, 0));
            cells.insert(
                format!("runners_{runner_count}_concurrency_{concurrency}"),
                value,
            );
        }
    }
    drop(runners);
    Ok(json!({
        "cells": cells,
        "seconds_per_cell": seconds.as_secs_f64(),
        "tool": "ping",
        "runner_max_concurrent_calls": "default (32)",
    }))
}

/// One cell: `concurrency` workers for `seconds`, worker `w` calling
/// through `relays[w % relays.len()]` (as a load balancer spreads clients).
pub async fn cell(
    http: &reqwest::Client,
    relays: &[&Relay],
    envs: Arc<Vec<String>>,
    concurrency: usize,
    seconds: Duration,
) -> anyhow::Result<Value> {
    anyhow::ensure!(!relays.is_empty(), "a throughput cell needs a relay");
    let start = Instant::now();
    let measure_from = start + WARMUP;
    let end = measure_from + seconds;
    let mut workers = Vec::with_capacity(concurrency);
    for worker in 0..concurrency {
        let http = http.clone();
        let relay = relays[worker % relays.len().max(1)];
        let url = relay.url.clone();
        let key = relay.admin_key.clone();
        let envs = Arc::clone(&envs);
        workers.push(tokio::spawn(async move {
            let mut tally = Tally::default();
            let body = json!({"tool_name": "ping", "args": {"worker": worker}});
            let mut i = 0usize;
            loop {
                let now = Instant::now();
                if now >= end {
                    break;
                }
                let env = &envs[(worker + i) % envs.len()];
                i += 1;
                let call = procs::api(&http, &url, &key, reqwest::Method::POST, &Relay::invoke_path(env), Some(&body)).await;
                let done = Instant::now();
                let ok = matches!(&call, Ok((200, answer)) if answer["result"]["worker"] == json!(worker));
                tally.in_call += overlap((now, done), (measure_from, end));
                if done <= measure_from || done > end {
                    // Finished in the warm-up or after the window: its
                    // time in the window counts as busy, the call does not.
                    if done > end {
                        tally.late = tally.late.max(done - end);
                    }
                    continue;
                }
                if ok {
                    tally.samples.push(done - now);
                } else {
                    tally.errors += 1;
                    if tally.first_error.is_none() {
                        tally.first_error = Some(match call {
                            Ok((status, answer)) => format!("HTTP {status}: {}", crate::compact_str(&answer.to_string())),
                            Err(error) => format!("{error:#}"),
                        });
                    }
                }
            }
            tally
        }));
    }
    let mut all = Tally::default();
    for worker in workers {
        let tally = worker.await.context("a load worker failed")?;
        all.samples.extend(tally.samples);
        all.errors += tally.errors;
        all.in_call += tally.in_call;
        all.late = all.late.max(tally.late);
        if all.first_error.is_none() {
            all.first_error = tally.first_error;
        }
    }
    let window = seconds.as_secs_f64();
    let summary = Summary::of(&all.samples);
    let mut value = summary.to_json();
    // Calls that completed inside the fixed window, over the window: a
    // straggler that ends after it cannot stretch the denominator.
    value["invokes_per_s"] = json!(round(all.samples.len() as f64 / window, 0));
    value["errors"] = json!(all.errors);
    // Below 100 the load generator itself was idle between calls (it
    // shares the cores), so the rate understates what the relay does.
    value["workers_in_call_percent"] = json!(round(
        100.0 * all.in_call.as_secs_f64() / (window * concurrency as f64),
        1
    ));
    value["slowest_past_window_ms"] = json!(round(all.late.as_secs_f64() * 1e3, 1));
    if let Some(error) = all.first_error {
        value["first_error"] = json!(error);
    }
    Ok(value)
}

/// One worker's (or all workers') record of a cell.
#[derive(Default)]
struct Tally {
    samples: Vec<Duration>,
    errors: usize,
    first_error: Option<String>,
    /// Time spent inside calls within the measured window.
    in_call: Duration,
    /// How far past the window the last call ran.
    late: Duration,
}

/// The length of the intersection of two time intervals.
fn overlap((a0, a1): (Instant, Instant), (b0, b1): (Instant, Instant)) -> Duration {
    let from = a0.max(b0);
    let to = a1.min(b1);
    to.saturating_duration_since(from)
}
