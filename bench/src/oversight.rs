//! Issue 29's figures: how long an approval takes to start its call, and
//! what the audit log and metrics cost the relay per `ping`.
//!
//! * Approve → execution start: an agent asks for a `ping` that needs
//!   approval (202), the admin approves; the approve request answers once
//!   the call is written to the runner's socket, so its round trip bounds
//!   the time from decision to execution start. Approve → result is the
//!   time until the approval shows the call's answer.
//! * Relay CPU per `ping`: four relays side by side (both off, metrics
//!   only, audit only, both on: the default), each with its runner, all
//!   four pinned to one CPU so that none runs on a faster or less busy
//!   core. Calls go in [`ROUNDS`] rounds; in a round, batches of `ping`
//!   alternate between the relays (the order turning each time), then the
//!   relays rest for [`SETTLE`] so that what they write in the background
//!   (the audit log, the journal) is written within the round. Each
//!   relay's CPU time (every thread's `schedstat`, in nanoseconds) is
//!   read at the round's start and end: its deferred work is counted, and
//!   the others' calls cost it nothing. A set's figure is the median of
//!   its rounds' "on" over "off" ratios. Sets of fresh relays repeat it
//!   (`--oversight-sets`), because a relay process runs a few per cent
//!   faster or slower than another of the same build: the section's
//!   figure is the median of the sets' figures, with a distribution-free
//!   95 % interval over sets.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::procs::{self, Bins, Relay, Runner};
use crate::stats::{self, Summary};
use crate::{note, round, RunArgs};

/// Calls per batch before switching relays.
const BATCH: usize = 50;
/// Rounds of the CPU comparison: one ratio each.
const ROUNDS: usize = 7;
/// Rest at the end of a round: longer than the audit writer's and the
/// journal's linger (docs/audit.md), so that a round's entries are
/// written in that round.
const SETTLE: Duration = Duration::from_millis(1500);
/// The CPU the compared relays share.
const RELAY_CPU: usize = 1;

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-oversight-")
        .tempdir()?;
    let approvals = approve_to_start(bins, data.path(), args.approval_calls).await?;
    let overhead =
        audit_and_metrics_cost(bins, data.path(), args.invoke_calls, args.oversight_sets).await?;
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

/// The relays compared, "off" first: every ratio is over it.
const SIDES: [(&str, &[&str]); 4] = [
    ("off", &["--no-audit", "--no-metrics"]),
    ("metrics_only", &["--no-audit"]),
    ("audit_only", &["--no-metrics"]),
    ("on", &[]),
];

/// What one relay of a set measured, and over how many calls a round.
#[derive(Default)]
struct Measured {
    cpu_ns: Vec<u64>,
    /// The part of each round's CPU spent while the relays rested.
    settle_ns: Vec<u64>,
    /// CPU during this relay's own batches only (what an earlier version
    /// of this section counted): leaves out what the relay writes later.
    own_batches_ns: u64,
    samples: Vec<Duration>,
    round_calls: Vec<usize>,
}

/// One relay of a set, with its runner, while the set runs.
struct Side {
    name: &'static str,
    relay: Relay,
    env: String,
    _runner: Vec<Runner>,
    measured: Measured,
}

/// The CPU comparison, [`RunArgs::oversight_sets`] times over fresh sets
/// of relays: one relay process runs its code up to a few per cent faster
/// or slower than another of the same build (where its memory landed), so
/// the figure is the median of the sets' medians, with a confidence
/// interval over sets.
async fn audit_and_metrics_cost(
    bins: &Bins,
    dir: &Path,
    calls: usize,
    sets: usize,
) -> anyhow::Result<Value> {
    let mut measured: Vec<Vec<Measured>> = Vec::with_capacity(sets);
    let mut cpu = 0;
    for set in 0..sets.max(1) {
        let (one, pinned) = measure_set(bins, &dir.join(format!("set-{set}")), calls).await?;
        measured.push(one);
        cpu = pinned;
    }
    let mut result = serde_json::Map::new();
    let mut per_call = Vec::new();
    for (index, (name, _)) in SIDES.iter().enumerate() {
        let of_side = || measured.iter().map(move |set| &set[index]);
        let total: u64 = of_side().flat_map(|side| &side.cpu_ns).sum();
        let at_rest: u64 = of_side().flat_map(|side| &side.settle_ns).sum();
        let samples: Vec<Duration> = of_side()
            .flat_map(|side| side.samples.iter().copied())
            .collect();
        let count = samples.len().max(1) as f64;
        let cpu_us = total as f64 / 1e3 / count;
        per_call.push(cpu_us);
        let mut entry = Summary::of(&samples).to_json();
        entry["relay_cpu_us_per_ping"] = json!(round(cpu_us, 1));
        entry["relay_cpu_us_per_ping_rounds"] = json!(of_side()
            .flat_map(|side| side.cpu_ns.iter().zip(&side.round_calls))
            .map(|(ns, calls)| round(*ns as f64 / 1e3 / (*calls).max(1) as f64, 1))
            .collect::<Vec<_>>());
        entry["relay_cpu_us_per_ping_at_rest"] = json!(round(at_rest as f64 / 1e3 / count, 1));
        note(&format!(
            "audit and metrics {name}: {cpu_us:.1} µs of relay CPU per ping"
        ));
        result.insert((*name).into(), entry);
    }
    for (index, key) in [(1, "metrics_only"), (2, "audit_only"), (3, "on")] {
        // Every round has the same calls on every relay of its set: CPU
        // over CPU is the ratio per call.
        let set_rounds: Vec<Vec<f64>> = measured
            .iter()
            .map(|set| {
                set[index]
                    .cpu_ns
                    .iter()
                    .zip(&set[0].cpu_ns)
                    .map(|(side, off)| *side as f64 / (*off).max(1) as f64)
                    .collect()
            })
            .collect();
        let set_medians: Vec<f64> = set_rounds
            .iter()
            .map(|rounds| stats::median(&mut rounds.clone()))
            .collect();
        let median = stats::median(&mut set_medians.clone());
        let interval = stats::median_interval(&set_medians, 0.95);
        let all: Vec<f64> = set_rounds.iter().flatten().copied().collect();
        let (low, high) = all.iter().fold((f64::MAX, f64::MIN), |(low, high), r| {
            (low.min(*r), high.max(*r))
        });
        result.insert(format!("cpu_{key}_over_off"), json!(round(median, 3)));
        result.insert(
            format!("cpu_{key}_over_off_sets"),
            json!(set_medians.iter().map(|r| round(*r, 3)).collect::<Vec<_>>()),
        );
        result.insert(
            format!("cpu_{key}_over_off_ci95"),
            json!(interval.map(|(low, high)| [round(low, 3), round(high, 3)])),
        );
        result.insert(
            format!("cpu_{key}_over_off_rounds"),
            json!({
                "each": all.iter().map(|r| round(*r, 3)).collect::<Vec<_>>(),
                "min": round(low, 3),
                "max": round(high, 3),
            }),
        );
        if index == 3 {
            let interval_text = interval.map_or_else(
                || "too few sets for a 95 % interval".to_owned(),
                |(low, high)| format!("95 % interval {low:.3} to {high:.3}"),
            );
            note(&format!(
                "relay CPU on over off: median {median:.3} of {} sets ({interval_text}; rounds {low:.3} to {high:.3})",
                set_medians.len()
            ));
            result.insert("target_ratio".into(), json!(1.10));
            result.insert("met".into(), json!(median <= 1.10));
            result.insert(
                "met_within_interval".into(),
                json!(interval.map(|(_, high)| high <= 1.10)),
            );
        }
    }
    result.insert(
        "cpu_on_over_off_total".into(),
        json!(round(per_call[3] / per_call[0].max(f64::MIN_POSITIVE), 3)),
    );
    let own_batches =
        |index: usize| -> u64 { measured.iter().map(|set| set[index].own_batches_ns).sum() };
    result.insert(
        "cpu_on_over_off_own_batches_only".into(),
        json!(round(
            own_batches(3) as f64 / own_batches(0).max(1) as f64,
            3
        )),
    );
    result.insert("sets".into(), json!(measured.len()));
    result.insert("rounds".into(), json!(ROUNDS));
    result.insert("pinned_cpu".into(), json!(cpu));
    Ok(Value::Object(result))
}

/// One set: four fresh relays (in [`SIDES`] order), each with its runner,
/// measured over [`ROUNDS`] rounds of `calls` calls in all; returns what
/// each measured and the CPU they were pinned to. The relays end with it.
async fn measure_set(
    bins: &Bins,
    dir: &Path,
    calls: usize,
) -> anyhow::Result<(Vec<Measured>, usize)> {
    let mut sides = Vec::new();
    for (name, flags) in SIDES {
        let relay = Relay::spawn_with(bins, &dir.join(name), "127.0.0.1:0", None, flags).await?;
        let (envs, runners) = procs::online_runners(bins, &relay, 1).await?;
        sides.push(Side {
            name,
            relay,
            env: envs[0].clone(),
            _runner: runners,
            measured: Measured {
                cpu_ns: Vec::with_capacity(ROUNDS),
                settle_ns: Vec::with_capacity(ROUNDS),
                samples: Vec::with_capacity(calls),
                ..Measured::default()
            },
        });
    }
    let cpu = pin_all(&sides)?;
    let http = procs::http_client(4)?;
    // Warm every relay up unmeasured, and let it write what that left.
    for side in &sides {
        for n in 0..BATCH {
            procs::ping(&http, &side.relay, &side.env, n).await?;
        }
    }
    tokio::time::sleep(SETTLE).await;
    let per_round = calls.div_ceil(ROUNDS).max(1);
    let round_calls: Vec<usize> = (0..ROUNDS)
        .map(|index| (per_round * (index + 1)).min(calls) - (per_round * index).min(calls))
        .collect();
    let mut turn = 0;
    for round_index in 0..ROUNDS {
        let goal = (per_round * (round_index + 1)).min(calls);
        let pids = sides
            .iter()
            .map(|side| side.relay.pid())
            .collect::<anyhow::Result<Vec<u32>>>()?;
        let before: Vec<_> = pids.iter().map(|pid| procs::thread_cpu_ns(*pid)).collect();
        while sides.iter().any(|side| side.measured.samples.len() < goal) {
            turn += 1;
            for index in 0..sides.len() {
                let count = sides.len();
                let side = &mut sides[(index + turn) % count];
                let pid = side.relay.pid()?;
                let batch_start = procs::thread_cpu_ns(pid);
                let done = side.measured.samples.len().min(goal);
                for n in 0..BATCH.min(goal - done) {
                    let started = Instant::now();
                    procs::ping(&http, &side.relay, &side.env, n).await?;
                    side.measured.samples.push(started.elapsed());
                }
                side.measured.own_batches_ns +=
                    procs::cpu_ns_between(&batch_start, &procs::thread_cpu_ns(pid));
            }
        }
        let busy: Vec<_> = pids.iter().map(|pid| procs::thread_cpu_ns(*pid)).collect();
        tokio::time::sleep(SETTLE).await;
        for (((side, pid), before), busy) in sides.iter_mut().zip(&pids).zip(before).zip(busy) {
            let after = procs::thread_cpu_ns(*pid);
            if after.is_empty() {
                bail!("relay {} exited", side.name);
            }
            side.measured
                .cpu_ns
                .push(procs::cpu_ns_between(&before, &after));
            side.measured
                .settle_ns
                .push(procs::cpu_ns_between(&busy, &after));
        }
    }
    let measured = sides
        .into_iter()
        .map(|side| Measured {
            round_calls: round_calls.clone(),
            ..side.measured
        })
        .collect();
    Ok((measured, cpu))
}

/// Pins every thread of every relay to one CPU ([`RELAY_CPU`], or the
/// only one); threads started later inherit it from the thread that
/// starts them. Returns the CPU.
fn pin_all(sides: &[Side]) -> anyhow::Result<usize> {
    use nix::sched::{sched_setaffinity, CpuSet};
    use nix::unistd::Pid;
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let cpu = if cpus > RELAY_CPU { RELAY_CPU } else { 0 };
    let mut set = CpuSet::new();
    set.set(cpu).context("choosing the relays' CPU")?;
    for side in sides {
        let pid = side.relay.pid()?;
        for task in fs_err::read_dir(format!("/proc/{pid}/task"))? {
            let Some(tid) = task?
                .file_name()
                .to_str()
                .and_then(|name| name.parse::<i32>().ok())
            else {
                continue;
            };
            // A thread that ended since the listing has nothing to pin.
            let _ = sched_setaffinity(Pid::from_raw(tid), &set);
        }
    }
    Ok(cpu)
}
