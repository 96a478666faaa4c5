//! Issue 29's figures: how long an approval takes to start its call, and
//! what the audit log and metrics cost the relay per `ping`.
//!
//! * Approve → execution start: an agent asks for a `ping` that needs
//!   approval (202), the admin approves; the approve request answers once
//!   the call is written to the runner's socket, so its round trip bounds
//!   the time from decision to execution start. Approve → result is the
//!   time until the approval shows the call's answer.
//! * Relay CPU per `ping`: four relays side by side (both off, metrics
//!   only, audit only, both on: the default), each with its runner; batches of `ping` alternate between them, and each relay's
//!   CPU time (every thread's `schedstat`, in nanoseconds) is read around
//!   its own batches only.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::procs::{self, Bins, Relay, Runner};
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Calls per batch before switching relays.
const BATCH: usize = 50;

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-oversight-")
        .tempdir()?;
    let approvals = approve_to_start(bins, data.path(), args.approval_calls).await?;
    let overhead = audit_and_metrics_cost(bins, data.path(), args.invoke_calls).await?;
    Ok(json!({ "approvals": approvals, "audit_and_metrics": overhead }))
}

async fn approve_to_start(bins: &Bins, dir: &Path, calls: usize) -> anyhow::Result<Value> {
    let relay = Relay::spawn(bins, &dir.join("approvals"), "127.0.0.1:0", None).await?;
    let (envs, _runners) = procs::online_runners(bins, &relay, 1).await?;
    let env = &envs[0];
    let (status, body) = relay
        .api(
            reqwest::Method::PATCH,
            &format!("/execution-environments/{env}"),
            Some(&json!({"policy": {"tools": {"mode": "all"}, "approval_required": ["ping"]}})),
        )
        .await?;
    if status != 200 {
        bail!("requiring approval for ping: HTTP {status}: {body}");
    }
    let (status, agent) = relay
        .api(
            reqwest::Method::POST,
            "/members",
            Some(&json!({"name": "bench-agent", "kind": "agent"})),
        )
        .await?;
    if status != 201 {
        bail!("creating the agent: HTTP {status}: {agent}");
    }
    let agent_key = agent["api_key"]
        .as_str()
        .context("the agent has no key")?
        .to_owned();
    let http = procs::http_client(4)?;
    let mut to_start = Vec::with_capacity(calls);
    let mut to_result = Vec::with_capacity(calls);
    for n in 0..calls {
        let (status, ticket) = procs::api(
            &http,
            &relay.url,
            &agent_key,
            reqwest::Method::POST,
            &Relay::invoke_path(env),
            Some(&json!({"tool_name": "ping", "args": {"n": n}, "on_approval": "wait"})),
        )
        .await?;
        if status != 202 {
            bail!("asking for an approval: HTTP {status}: {ticket}");
        }
        let id = ticket["approval_id"].as_str().context("no approval id")?;
        let approved = Instant::now();
        let (status, body) = procs::api(
            &http,
            &relay.url,
            &relay.admin_key,
            reqwest::Method::POST,
            &format!("/approvals/{id}/approve"),
            Some(&json!({})),
        )
        .await?;
        to_start.push(approved.elapsed());
        if status != 200 {
            bail!("approving: HTTP {status}: {body}");
        }
        let (status, settled) = procs::api(
            &http,
            &relay.url,
            &agent_key,
            reqwest::Method::GET,
            &format!("/approvals/{id}?wait=10"),
            None,
        )
        .await?;
        to_result.push(approved.elapsed());
        if status != 200 || settled["outcome"]["result"]["n"] != json!(n) {
            bail!("the approved call's answer: HTTP {status}: {settled}");
        }
    }
    let start = Summary::of(&to_start);
    Ok(json!({
        "approve_to_execution_start": start.to_json(),
        "approve_to_result": Summary::of(&to_result).to_json(),
        "target_p50_ms": 50,
        "met": start.p50_us <= 50_000.0,
    }))
}

/// One relay of the comparison, its runner and its CPU time so far.
struct Side {
    name: &'static str,
    relay: Relay,
    env: String,
    _runner: Vec<Runner>,
    cpu_ns: u64,
    samples: Vec<Duration>,
}

async fn audit_and_metrics_cost(bins: &Bins, dir: &Path, calls: usize) -> anyhow::Result<Value> {
    let mut sides = Vec::new();
    for (name, flags) in [
        ("off", &["--no-audit", "--no-metrics"][..]),
        ("metrics_only", &["--no-audit"][..]),
        ("audit_only", &["--no-metrics"][..]),
        ("on", &[][..]),
    ] {
        let relay = Relay::spawn_with(bins, &dir.join(name), "127.0.0.1:0", None, flags).await?;
        let (envs, runners) = procs::online_runners(bins, &relay, 1).await?;
        sides.push(Side {
            name,
            relay,
            env: envs[0].clone(),
            _runner: runners,
            cpu_ns: 0,
            samples: Vec::with_capacity(calls),
        });
    }
    let http = procs::http_client(4)?;
    // Warm both up unmeasured.
    for side in &sides {
        for n in 0..BATCH {
            procs::ping(&http, &side.relay, &side.env, n).await?;
        }
    }
    while sides.iter().any(|side| side.samples.len() < calls) {
        for side in &mut sides {
            let pid = side.relay.pid()?;
            let before = cpu_ns(pid)?;
            for n in 0..BATCH.min(calls - side.samples.len()) {
                let started = Instant::now();
                procs::ping(&http, &side.relay, &side.env, n).await?;
                side.samples.push(started.elapsed());
            }
            side.cpu_ns += cpu_ns(pid)?.saturating_sub(before);
        }
    }
    let mut result = serde_json::Map::new();
    let mut per_call = Vec::new();
    for side in &sides {
        let cpu_us = side.cpu_ns as f64 / 1e3 / side.samples.len().max(1) as f64;
        per_call.push(cpu_us);
        let mut entry = Summary::of(&side.samples).to_json();
        entry["relay_cpu_us_per_ping"] = json!(round(cpu_us, 1));
        note(&format!(
            "audit and metrics {}: {:.1} µs of relay CPU per ping",
            side.name, cpu_us
        ));
        result.insert(side.name.into(), entry);
    }
    let over_off = |index: usize| per_call[index] / per_call[0].max(f64::MIN_POSITIVE);
    result.insert(
        "cpu_metrics_only_over_off".into(),
        json!(round(over_off(1), 3)),
    );
    result.insert(
        "cpu_audit_only_over_off".into(),
        json!(round(over_off(2), 3)),
    );
    let ratio = over_off(3);
    result.insert("cpu_on_over_off".into(), json!(round(ratio, 3)));
    result.insert("target_ratio".into(), json!(1.10));
    result.insert("met".into(), json!(ratio <= 1.10));
    Ok(Value::Object(result))
}

/// CPU time of every thread of `pid` so far, in nanoseconds: the first
/// field of each `/proc/PID/task/TID/schedstat` (`/proc/PID/stat` counts in
/// 10 ms ticks, too coarse for a batch of calls).
fn cpu_ns(pid: u32) -> anyhow::Result<u64> {
    let mut total = 0u64;
    for task in fs_err::read_dir(format!("/proc/{pid}/task"))? {
        let path = task?.path().join("schedstat");
        // A thread that ended between the listing and the read.
        let Ok(text) = fs_err::read_to_string(&path) else {
            continue;
        };
        total += text
            .split_whitespace()
            .next()
            .and_then(|ns| ns.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Ok(total)
}
