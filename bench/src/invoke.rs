//! Section 1: invoke round trip of a trivial call, against the local spawn
//! floor and ssh.
//!
//! Methods are measured interleaved in batches (a batch of each in turn,
//! until every method has its count), so drift in the shared machine's load
//! hits them all alike. Two families, compared like with like:
//!
//! * persistent: the HTTP API from a keep-alive client (`shell` `true`,
//!   `file_read` of 1 KiB, `ping`) against `ssh` over a warm ControlMaster;
//! * one process per call: `runner invoke` against `ssh` (warm and cold).
//!
//! The floor (a) is `bash -c true` spawned locally; every method is also
//! reported as a ratio of its p50/p99 to the floor's. Beside it, the same
//! spawn with its output captured (piped and read to EOF, as
//! `Command::output()` does): what a local program that wants the output,
//! as every caller of `shell` does, pays. The difference between the two
//! splits a `shell` call's time over the floor into capturing output and
//! the rest (the relay path, the runner's own work). `true` is a bash
//! builtin, so `shell` `true` starts bash as the floor does; `shell`
//! `uname` (a program, which the runner `exec`s without bash, as bash
//! would) is reported beside `bash -c uname` spawned locally.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Map, Value};

use crate::procs::{self, Bins, Relay};
use crate::ssh::Sshd;
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Calls per batch before moving to the next method.
const BATCH: usize = 50;
/// Unmeasured calls per method before measuring.
const WARMUP: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    LocalSpawn,
    LocalSpawnCaptured,
    LocalSpawnProgram,
    ApiShellTrue,
    ApiShellProgram,
    ApiFileRead,
    ApiPing,
    ApiSessionPing,
    SshWarm,
    SshCold,
    RunnerInvokeProcess,
}

impl Method {
    fn key(self) -> &'static str {
        match self {
            Method::LocalSpawn => "local_spawn_bash_true",
            Method::LocalSpawnCaptured => "local_spawn_bash_true_captured",
            Method::LocalSpawnProgram => "local_spawn_bash_uname",
            Method::ApiShellTrue => "api_shell_true",
            Method::ApiShellProgram => "api_shell_uname",
            Method::ApiFileRead => "api_file_read_1k",
            Method::ApiPing => "api_ping",
            Method::ApiSessionPing => "api_session_ping",
            Method::SshWarm => "ssh_controlmaster_true",
            Method::SshCold => "ssh_cold_true",
            Method::RunnerInvokeProcess => "runner_invoke_process_shell_true",
        }
    }

    fn family(self) -> &'static str {
        match self {
            Method::LocalSpawn | Method::LocalSpawnCaptured | Method::LocalSpawnProgram => "floor",
            Method::ApiShellTrue
            | Method::ApiShellProgram
            | Method::ApiFileRead
            | Method::ApiPing
            | Method::ApiSessionPing => "persistent client",
            Method::SshWarm => "process per call over a warm connection",
            Method::SshCold | Method::RunnerInvokeProcess => "process per call",
        }
    }
}

struct Setup<'a> {
    bins: &'a Bins,
    relay: &'a Relay,
    env: String,
    /// A session locked to `env`, for [`Method::ApiSessionPing`].
    session: Option<String>,
    runner_home: &'a std::path::Path,
    http: reqwest::Client,
    sshd: Option<&'a Sshd>,
}

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-invoke-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let (envs, runners) = procs::online_runners(bins, &relay, 1).await?;
    let runner = runners.first().context("no runner")?;
    fs_err::write(runner.workspace().join("one-kib.txt"), "x".repeat(1024))?;

    let mut sshd_error = None;
    let sshd = match Sshd::start().await {
        Ok(mut sshd) => match sshd.open_master().await {
            Ok(()) => Some(sshd),
            Err(error) => {
                sshd_error = Some(format!("{error:#}"));
                None
            }
        },
        Err(error) => {
            sshd_error = Some(format!("{error:#}"));
            None
        }
    };
    if let Some(error) = &sshd_error {
        note(&format!("ssh comparisons skipped: {error}"));
    }
    let setup = Setup {
        bins,
        relay: &relay,
        env: envs[0].clone(),
        session: Some(start_session(&relay, &envs[0]).await?),
        runner_home: runner.home.path(),
        http: procs::http_client(4)?,
        sshd: sshd.as_ref(),
    };

    let mut plan = vec![
        (Method::LocalSpawn, args.invoke_calls),
        (Method::LocalSpawnCaptured, args.invoke_calls),
        (Method::ApiShellTrue, args.invoke_calls),
        (Method::LocalSpawnProgram, args.invoke_calls),
        (Method::ApiShellProgram, args.invoke_calls),
        (Method::ApiFileRead, args.invoke_calls),
        (Method::ApiPing, args.invoke_calls),
        (Method::ApiSessionPing, args.invoke_calls),
        (Method::RunnerInvokeProcess, args.process_calls),
    ];
    if sshd.is_some() {
        plan.push((Method::SshWarm, args.invoke_calls));
        plan.push((Method::SshCold, args.process_calls));
    }
    for &(method, _) in &plan {
        for _ in 0..WARMUP.min(args.process_calls) {
            once(&setup, method)
                .await
                .with_context(|| format!("warming up {}", method.key()))?;
        }
    }
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); plan.len()];
    let mut errors = vec![0usize; plan.len()];
    let mut first_error: Vec<Option<String>> = vec![None; plan.len()];
    loop {
        let mut progressed = false;
        for (index, &(method, count)) in plan.iter().enumerate() {
            let batch = BATCH.min(count.saturating_sub(samples[index].len() + errors[index]));
            for _ in 0..batch {
                progressed = true;
                match once(&setup, method).await {
                    Ok(elapsed) => samples[index].push(elapsed),
                    Err(error) => {
                        errors[index] += 1;
                        first_error[index].get_or_insert_with(|| format!("{error:#}"));
                    }
                }
            }
        }
        if !progressed {
            break;
        }
    }

    let floor = Summary::of(&samples[0]);
    let mut methods = Map::new();
    for (index, &(method, _)) in plan.iter().enumerate() {
        let summary = Summary::of(&samples[index]);
        let mut entry = summary.to_json();
        entry["family"] = json!(method.family());
        entry["errors"] = json!(errors[index]);
        if let Some(error) = &first_error[index] {
            entry["first_error"] = json!(error);
        }
        if floor.p50_us > 0.0 {
            entry["ratio_p50_to_floor"] = json!(round(summary.p50_us / floor.p50_us, 2));
            entry["ratio_p99_to_floor"] = json!(round(summary.p99_us / floor.p99_us, 2));
            entry["p50_minus_floor_us"] = json!(round(summary.p50_us - floor.p50_us, 1));
        }
        methods.insert(method.key().into(), entry);
    }
    let p50 = |key: &str| methods.get(key).and_then(|m| m["p50_us"].as_f64());
    let mut derived = Map::new();
    if let (Some(local), Some(api)) = (p50("local_spawn_bash_uname"), p50("api_shell_uname")) {
        derived.insert(
            "api_shell_uname_minus_local_bash_uname_p50_us".into(),
            json!(round(api - local, 1)),
        );
    }
    if let (Some(captured), Some(shell)) =
        (p50("local_spawn_bash_true_captured"), p50("api_shell_true"))
    {
        derived.insert(
            "api_shell_true_minus_captured_floor_p50_us".into(),
            json!(round(shell - captured, 1)),
        );
    }
    if let (Some(ping), Some(session)) = (p50("api_ping"), p50("api_session_ping")) {
        derived.insert(
            "api_session_ping_over_api_ping_p50".into(),
            json!(round(session / ping, 3)),
        );
    }
    if let (Some(ssh), Some(shell)) = (p50("ssh_controlmaster_true"), p50("api_shell_true")) {
        derived.insert(
            "ssh_controlmaster_over_api_shell_p50".into(),
            json!(round(ssh / shell, 1)),
        );
    }
    if let (Some(ssh), Some(shell)) = (p50("ssh_cold_true"), p50("api_shell_true")) {
        derived.insert(
            "ssh_cold_over_api_shell_p50".into(),
            json!(round(ssh / shell, 1)),
        );
    }
    if let (Some(ssh), Some(invoke)) = (
        p50("ssh_cold_true"),
        p50("runner_invoke_process_shell_true"),
    ) {
        derived.insert(
            "ssh_cold_over_runner_invoke_process_p50".into(),
            json!(round(ssh / invoke, 2)),
        );
    }
    if let (Some(ssh), Some(invoke)) = (
        p50("ssh_controlmaster_true"),
        p50("runner_invoke_process_shell_true"),
    ) {
        derived.insert(
            "ssh_controlmaster_over_runner_invoke_process_p50".into(),
            json!(round(ssh / invoke, 2)),
        );
    }
    drop(sshd);
    Ok(json!({
        "methods": methods,
        "derived": derived,
        "ssh_available": sshd_error.is_none(),
        "ssh_error": sshd_error,
        "batch": BATCH,
        "warmup_per_method": WARMUP,
    }))
}

async fn once(setup: &Setup<'_>, method: Method) -> anyhow::Result<Duration> {
    match method {
        Method::LocalSpawn | Method::LocalSpawnCaptured | Method::LocalSpawnProgram => {
            tokio::task::spawn_blocking(move || {
                let script = if method == Method::LocalSpawnProgram {
                    "uname"
                } else {
                    "true"
                };
                let start = Instant::now();
                let mut command = std::process::Command::new("bash");
                command.args(["-c", script]).stdin(Stdio::null());
                // Captured: stdout and stderr piped and read to EOF.
                let status = if method == Method::LocalSpawnCaptured {
                    command.output().map(|output| output.status)
                } else {
                    command.stdout(Stdio::null()).stderr(Stdio::null()).status()
                }
                .context("spawning bash")?;
                let elapsed = start.elapsed();
                if !status.success() {
                    bail!("bash -c {script}: {status}");
                }
                Ok(elapsed)
            })
            .await
            .context("joining the spawn task")?
        }
        Method::ApiShellTrue => {
            api_call(
                setup,
                json!({"tool_name": "shell", "args": {"command": "true"}}),
                |body| body["exit_code"] == json!(0),
            )
            .await
        }
        Method::ApiShellProgram => {
            // A plain command: the runner `exec`s uname without bash, as
            // bash itself would have.
            api_call(
                setup,
                json!({"tool_name": "shell", "args": {"command": "uname"}}),
                |body| body["exit_code"] == json!(0),
            )
            .await
        }
        Method::ApiFileRead => {
            api_call(
                setup,
                json!({"tool_name": "file_read", "args": {"path": "one-kib.txt"}}),
                |body| {
                    body["result"]["content"]
                        .as_str()
                        .is_some_and(|c| c.len() == 1024)
                },
            )
            .await
        }
        Method::ApiPing => {
            api_call(
                setup,
                json!({"tool_name": "ping", "args": {"n": 1}}),
                |body| body["result"]["n"] == json!(1),
            )
            .await
        }
        Method::ApiSessionPing => {
            let session = setup.session.as_deref().context("no session")?;
            api_call_at(
                setup,
                &format!("/sessions/{session}/invoke-tool"),
                json!({"tool_name": "ping", "args": {"n": 1}}),
                |body| body["result"]["n"] == json!(1),
            )
            .await
        }
        Method::SshWarm | Method::SshCold => {
            let sshd = setup.sshd.context("no sshd")?;
            let mut command = sshd.command(method == Method::SshWarm, "true");
            command.stdout(Stdio::null()).stderr(Stdio::piped());
            let start = Instant::now();
            let output = tokio::time::timeout(Duration::from_secs(30), command.output())
                .await
                .context("ssh took over 30 s")?
                .context("running ssh")?;
            let elapsed = start.elapsed();
            if !output.status.success() {
                bail!(
                    "ssh: {} {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            Ok(elapsed)
        }
        Method::RunnerInvokeProcess => {
            let mut command = tokio::process::Command::new(&setup.bins.runner);
            command
                .args(["invoke", &setup.env, "shell", "--arg", "command=true"])
                .env("RUNNER_URL", &setup.relay.url)
                .env("RUNNER_API_KEY", &setup.relay.admin_key)
                .env("RUNNER_CONFIG_DIR", setup.runner_home.join("invoke-config"))
                .env("RUNNER_STATE_DIR", setup.runner_home.join("invoke-state"))
                .env("RUNNER_CREDENTIAL_STORE", "file")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            let start = Instant::now();
            let output = tokio::time::timeout(Duration::from_secs(30), command.output())
                .await
                .context("runner invoke took over 30 s")?
                .context("running runner invoke")?;
            let elapsed = start.elapsed();
            if !output.status.success() {
                bail!(
                    "runner invoke: {} {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                );
            }
            Ok(elapsed)
        }
    }
}

/// A session pinned to `env` (its first call locks it there).
async fn start_session(relay: &Relay, env: &str) -> anyhow::Result<String> {
    let (status, session) = relay
        .api(
            reqwest::Method::POST,
            "/sessions",
            Some(&json!({ "environment": env })),
        )
        .await?;
    if status != 201 {
        bail!("starting a session: HTTP {status}: {session}");
    }
    session["id"]
        .as_str()
        .map(str::to_owned)
        .context("the session has no id")
}

async fn api_call(
    setup: &Setup<'_>,
    body: Value,
    ok: impl Fn(&Value) -> bool,
) -> anyhow::Result<Duration> {
    api_call_at(setup, &Relay::invoke_path(&setup.env), body, ok).await
}

async fn api_call_at(
    setup: &Setup<'_>,
    path: &str,
    body: Value,
    ok: impl Fn(&Value) -> bool,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let (status, answer) = procs::api(
        &setup.http,
        &setup.relay.url,
        &setup.relay.admin_key,
        reqwest::Method::POST,
        path,
        Some(&body),
    )
    .await?;
    let elapsed = start.elapsed();
    if status != 200 || !ok(&answer) {
        bail!("HTTP {status}: {}", crate::compact_str(&answer.to_string()));
    }
    Ok(elapsed)
}

/// `runner-bench ab`: `ping`, `shell true`, `shell uname` and `runner
/// invoke` (or those of `methods`) of each build in `builds` (a relay and a runner of its own
/// each), measured alternately: a batch of [`BATCH`] calls per build, build
/// after build, method after method. A machine that is noisy or drifts
/// (±15 % between runs on some) then moves every build alike, and a change
/// of a few per cent shows.
/// What `runner-bench ab --methods` can pick (default: all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AbMethod {
    /// Local `bash -c true`.
    Floor,
    /// Local `bash -c true`, its output piped and read.
    FloorCaptured,
    /// API `ping`.
    Ping,
    /// API `shell` `true`.
    ShellTrue,
    /// API `shell` `uname`.
    ShellUname,
    /// `runner invoke … shell true`, a process per call.
    InvokeProcess,
}

impl AbMethod {
    fn method(self) -> Method {
        match self {
            AbMethod::Floor => Method::LocalSpawn,
            AbMethod::FloorCaptured => Method::LocalSpawnCaptured,
            AbMethod::Ping => Method::ApiPing,
            AbMethod::ShellTrue => Method::ApiShellTrue,
            AbMethod::ShellUname => Method::ApiShellProgram,
            AbMethod::InvokeProcess => Method::RunnerInvokeProcess,
        }
    }
}

pub async fn alternate(
    builds: &[(String, Bins)],
    methods: &[AbMethod],
    calls: usize,
    process_calls: usize,
    gap: Duration,
) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-ab-")
        .tempdir()?;
    let mut started = Vec::with_capacity(builds.len());
    for (index, (name, bins)) in builds.iter().enumerate() {
        let relay = Relay::spawn(
            bins,
            &data.path().join(format!("relay-{index}")),
            "127.0.0.1:0",
            None,
        )
        .await
        .with_context(|| format!("starting the relay of {name}"))?;
        let (envs, runners) = procs::online_runners(bins, &relay, 1)
            .await
            .with_context(|| format!("starting the runner of {name}"))?;
        let env = envs.into_iter().next().context("no environment")?;
        started.push((relay, env, runners));
    }
    let mut setups = Vec::with_capacity(builds.len());
    for ((_, bins), (relay, env, runners)) in builds.iter().zip(&started) {
        setups.push(Setup {
            bins,
            relay,
            env: env.clone(),
            session: None,
            runner_home: runners.first().context("no runner")?.home.path(),
            http: procs::http_client(4)?,
            sshd: None,
        });
    }
    // The floor is the same for every build: measured beside each, it
    // shows how the machine drifted over the run.
    let every = [
        AbMethod::Floor,
        AbMethod::FloorCaptured,
        AbMethod::Ping,
        AbMethod::ShellTrue,
        AbMethod::ShellUname,
        AbMethod::InvokeProcess,
    ];
    let chosen = if methods.is_empty() {
        &every[..]
    } else {
        methods
    };
    let plan: Vec<(Method, usize)> = chosen
        .iter()
        .map(|&picked| {
            let count = if picked == AbMethod::InvokeProcess {
                process_calls
            } else {
                calls
            };
            (picked.method(), count)
        })
        .collect();
    let failed = |name: &str, method: Method| format!("{name}: {}", method.key());
    for (setup, (name, _)) in setups.iter().zip(builds) {
        for &(method, count) in &plan {
            for _ in 0..WARMUP.min(count) {
                once(setup, method)
                    .await
                    .with_context(|| failed(name, method))?;
            }
        }
    }
    let mut samples = vec![vec![Vec::new(); plan.len()]; setups.len()];
    // CPU nanoseconds of each build's relay and runner during each
    // method's batches: what a call costs them, steadier than its latency
    // on a shared machine.
    let mut cpu = vec![vec![(0u64, 0u64); plan.len()]; setups.len()];
    let pids: Vec<(u32, Option<u32>)> = started
        .iter()
        .map(|(relay, _, runners)| {
            let runner = runners
                .first()
                .and_then(|runner| runner.child.as_ref())
                .and_then(|child| child.id());
            (relay.child.id().unwrap_or(0), runner)
        })
        .collect();
    loop {
        let mut progressed = false;
        for (m, &(method, count)) in plan.iter().enumerate() {
            for (b, (setup, (name, _))) in setups.iter().zip(builds).enumerate() {
                let (relay_pid, runner_pid) = pids[b];
                let relay_before = procs::thread_cpu_ns(relay_pid);
                let runner_before = runner_pid.map(procs::thread_cpu_ns);
                for _ in 0..BATCH.min(count.saturating_sub(samples[b][m].len())) {
                    progressed = true;
                    let elapsed = once(setup, method)
                        .await
                        .with_context(|| failed(name, method))?;
                    samples[b][m].push(elapsed);
                    if !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                }
                cpu[b][m].0 +=
                    procs::cpu_ns_between(&relay_before, &procs::thread_cpu_ns(relay_pid));
                if let (Some(pid), Some(before)) = (runner_pid, runner_before) {
                    cpu[b][m].1 += procs::cpu_ns_between(&before, &procs::thread_cpu_ns(pid));
                }
            }
        }
        if !progressed {
            break;
        }
    }
    let baseline: Vec<f64> = samples[0].iter().map(|s| Summary::of(s).p50_us).collect();
    let mut results = Vec::with_capacity(builds.len());
    for (((name, _), per_method), cpu) in builds.iter().zip(&samples).zip(&cpu) {
        let mut methods = Map::new();
        for (((method, _), (times, base)), &(relay_ns, runner_ns)) in
            plan.iter().zip(per_method.iter().zip(&baseline)).zip(cpu)
        {
            let summary = Summary::of(times);
            let mut entry = summary.to_json();
            if *base > 0.0 {
                entry["p50_over_first_build"] = json!(round(summary.p50_us / base, 3));
            }
            let per_call = |ns: u64| round(ns as f64 / 1000.0 / times.len().max(1) as f64, 1);
            entry["relay_cpu_us_per_call"] = json!(per_call(relay_ns));
            entry["runner_cpu_us_per_call"] = json!(per_call(runner_ns));
            methods.insert(method.key().into(), entry);
        }
        results.push(json!({"build": name, "methods": methods}));
    }
    Ok(json!({"batch": BATCH, "gap_ms": gap.as_millis(), "builds": results}))
}
