//! Section 5: large output. A command writes `--output-bytes` of stdout;
//! measured, every byte delivered and counted:
//!
//! * locally into a pipe (the floor);
//! * over ssh with a warm ControlMaster (a process per call, stdout into a
//!   pipe we drain);
//! * `runner invoke --stream` (a process per call, the same pipe: like with
//!   like against ssh);
//! * the API's binary stream (`Accept: application/vnd.runner.stream`)
//!   read by a persistent HTTP client;
//!
//! and, for reference, the non-streamed call: the `shell` tool reads the
//! whole stream but answers with a bounded head and tail (1 MiB each), so
//! that row is how fast the runner *consumes* output.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use runner_proto::api::{stream_frame, STREAM_MEDIA_TYPE};

use crate::procs::{self, Bins, Relay};
use crate::ssh::Sshd;
use crate::stats::median;
use crate::{note, round, RunArgs};

/// What writes the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `yes … | head -c N`: two processes and a pipe of their own, whose
    /// 8 KiB writes cap every path near 1 GB/s on two vCPUs (the local pipe
    /// row shows that cap).
    Text,
    /// `cat FILE` of the same text, written beforehand and read from the
    /// page cache: one process whose 128 KiB writes cost almost nothing, so
    /// the rate is the path's own. (Not `/dev/zero`: the result's inline
    /// head and tail would be NUL bytes, six times their size as JSON
    /// escapes, and cost the relay ≈ 40 ms per call to decode and encode.)
    File,
}

/// The text both sources write, a line at a time (what `yes WORD` prints).
const WORD: &str = "abcdefghijklmnopqrstuvwxyz0123456789";

/// Writes `bytes` of `WORD` lines to `path`.
fn write_text(path: &std::path::Path, bytes: u64) -> anyhow::Result<()> {
    use std::io::Write;
    let line = format!("{WORD}\n");
    let mut file = std::io::BufWriter::new(fs_err::File::create(path)?);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(line.len() as u64) as usize;
        file.write_all(&line.as_bytes()[..n])?;
        left -= n as u64;
    }
    file.flush()?;
    Ok(())
}

pub async fn run(bins: &Bins, args: &RunArgs, source: Source) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-output-")
        .tempdir()?;
    let command = match source {
        Source::Text => format!("yes {WORD} | head -c {}", args.output_bytes),
        Source::File => {
            let path = data.path().join("output.txt");
            write_text(&path, args.output_bytes)?;
            format!("cat '{}'", path.display())
        }
    };
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let (envs, runners) = procs::online_runners(bins, &relay, 1).await?;
    let runner_pid = runners.first().context("no runner")?.pid()?;
    let relay_pid = relay.pid()?;
    let http = procs::http_client(2)?;

    let mut sshd = match Sshd::start().await {
        Ok(mut sshd) => match sshd.open_master().await {
            Ok(()) => Some(sshd),
            Err(error) => {
                note(&format!("ssh skipped: {error:#}"));
                None
            }
        },
        Err(error) => {
            note(&format!("ssh skipped: {error:#}"));
            None
        }
    };

    let mut local = Vec::new();
    let mut ssh = Vec::new();
    let mut relay_rates = Vec::new();
    let mut invoke_rates = Vec::new();
    let mut stream_rates = Vec::new();
    // CPU of the relay's and the runner's own threads (not the command's)
    // per GB of the API stream.
    let mut relay_ms_per_gb = Vec::new();
    let mut runner_ms_per_gb = Vec::new();
    let mut delivered = 0usize;
    let mut produced = 0u64;
    let mut runner_peak = 0u64;
    let mut relay_peak = 0u64;
    let runner_before = procs::memory(runner_pid)?;
    let relay_before = procs::memory(relay_pid)?;
    let peaks_reset = procs::reset_peak(runner_pid) && procs::reset_peak(relay_pid);
    for _ in 0..args.output_repeats.max(1) {
        let mut floor = tokio::process::Command::new("bash");
        floor.args(["-c", &command]);
        local.push(drain(floor, args.output_bytes).await?);
        if let Some(sshd) = sshd.as_mut() {
            ssh.push(drain(sshd.command(true, &command), args.output_bytes).await?);
        }
        let mut invoke = tokio::process::Command::new(&bins.runner);
        invoke
            .args([
                "invoke",
                &envs[0],
                "shell",
                "--stream",
                "--timeout",
                "600",
                "--arg",
            ])
            .arg(format!("command={command}"))
            .env("RUNNER_URL", &relay.url)
            .env("RUNNER_API_KEY", &relay.admin_key)
            .env("RUNNER_CONFIG_DIR", data.path().join("invoke-config"))
            .env("RUNNER_STATE_DIR", data.path().join("invoke-state"))
            .env("RUNNER_CREDENTIAL_STORE", "file");
        invoke_rates.push(drain(invoke, args.output_bytes).await?);
        let relay_cpu = procs::thread_cpu_ns(relay_pid);
        let runner_cpu = procs::thread_cpu_ns(runner_pid);
        let (rate, bytes) = api_stream(&http, &relay, &envs[0], &command).await?;
        let gb = bytes as f64 / 1e9;
        relay_ms_per_gb.push(
            procs::cpu_ns_between(&relay_cpu, &procs::thread_cpu_ns(relay_pid)) as f64 / 1e6 / gb,
        );
        runner_ms_per_gb.push(
            procs::cpu_ns_between(&runner_cpu, &procs::thread_cpu_ns(runner_pid)) as f64 / 1e6 / gb,
        );
        if bytes != args.output_bytes {
            bail!(
                "the binary stream delivered {bytes} bytes, expected {}",
                args.output_bytes
            );
        }
        stream_rates.push(rate);
        runner_peak = runner_peak.max(procs::memory(runner_pid)?.hwm_kib);
        relay_peak = relay_peak.max(procs::memory(relay_pid)?.hwm_kib);

        let body = json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 600});
        let start = Instant::now();
        let response = http
            .post(format!("{}{}", relay.url, Relay::invoke_path(&envs[0])))
            .bearer_auth(&relay.admin_key)
            .json(&body)
            .send()
            .await
            .context("invoking the large-output command")?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.context("reading the large answer")?;
        let elapsed = start.elapsed();
        if status != 200 {
            bail!(
                "HTTP {status}: {}",
                crate::compact_str(&String::from_utf8_lossy(&bytes))
            );
        }
        let answer: Value = serde_json::from_slice(&bytes).context("decoding the large answer")?;
        produced = answer["result"]["stdout_bytes"].as_u64().unwrap_or(0);
        delivered = bytes.len();
        relay_rates.push(produced as f64 / elapsed.as_secs_f64() / 1e6);
        runner_peak = runner_peak.max(procs::memory(runner_pid)?.hwm_kib);
        relay_peak = relay_peak.max(procs::memory(relay_pid)?.hwm_kib);
    }
    let local_mbs = median(&mut local);
    let ssh_mbs = if ssh.is_empty() {
        None
    } else {
        Some(median(&mut ssh))
    };
    let relay_mbs = median(&mut relay_rates);
    let invoke_mbs = median(&mut invoke_rates);
    let stream_mbs = median(&mut stream_rates);
    Ok(json!({
        "command": command,
        "bytes": args.output_bytes,
        "repeats": args.output_repeats.max(1),
        "local_pipe_mb_per_s": round(local_mbs, 0),
        "ssh_controlmaster_mb_per_s": ssh_mbs.map(|v| round(v, 0)),
        "api_stream_mb_per_s": round(stream_mbs, 0),
        "api_stream_relay_cpu_ms_per_gb": round(median(&mut relay_ms_per_gb), 0),
        "api_stream_runner_cpu_ms_per_gb": round(median(&mut runner_ms_per_gb), 0),
        "runner_invoke_stream_mb_per_s": round(invoke_mbs, 0),
        "relay_produced_mb_per_s": round(relay_mbs, 0),
        "relay_stdout_bytes_seen_by_runner": produced,
        "relay_answer_bytes_delivered": delivered,
        "api_stream_over_ssh": ssh_mbs.map(|ssh| round(stream_mbs / ssh, 2)),
        "runner_invoke_stream_over_ssh": ssh_mbs.map(|ssh| round(invoke_mbs / ssh, 2)),
        "api_stream_over_local_pipe": round(stream_mbs / local_mbs, 2),
        "runner_rss_before_kib": runner_before.rss_kib,
        "runner_peak_rss_kib": runner_peak,
        "relay_rss_before_kib": relay_before.rss_kib,
        "relay_peak_rss_kib": relay_peak,
        "peaks_reset_before": peaks_reset,
        "what_flows": "streamed rows: every byte, binary frames runner->relay and relay->caller; relay_produced: shell keeps 1 MiB head + 1 MiB tail inline, one JSON result",
    }))
}

/// One streamed `shell` call read as the binary stream by a persistent
/// client: returns MB/s and the stdout bytes counted (frames parsed as they
/// arrive, payloads not copied). Fails without a result frame.
async fn api_stream(
    http: &reqwest::Client,
    relay: &Relay,
    env: &str,
    command: &str,
) -> anyhow::Result<(f64, u64)> {
    let body = json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 600});
    let start = Instant::now();
    let mut response = http
        .post(format!("{}{}", relay.url, Relay::invoke_path(env)))
        .bearer_auth(&relay.admin_key)
        .header("accept", STREAM_MEDIA_TYPE)
        .json(&body)
        .send()
        .await
        .context("starting the streamed call")?;
    if response.status() != 200 {
        bail!("HTTP {}", response.status());
    }
    let mut frames = stream_frame::Reader::new(usize::MAX);
    let mut stdout = 0u64;
    let mut result = Vec::new();
    let read = async {
        while let Some(chunk) = response.chunk().await? {
            let control = frames.push(&chunk, |kind, piece| {
                if kind == stream_frame::STDOUT {
                    stdout += piece.len() as u64;
                }
                Ok::<(), std::convert::Infallible>(())
            });
            if let Ok(Some((_, payload))) = control {
                result = payload;
            }
        }
        anyhow::Ok(())
    };
    tokio::time::timeout(Duration::from_secs(300), read)
        .await
        .context("the streamed call took over 300 s")??;
    let elapsed = start.elapsed();
    let answer: Value = serde_json::from_slice(&result).context("no result frame")?;
    if answer["exit_code"] != 0 {
        bail!("streamed call failed: {answer}");
    }
    Ok((stdout as f64 / elapsed.as_secs_f64() / 1e6, stdout))
}

/// Runs a command with stdout into a pipe we drain; returns MB/s and checks
/// the byte count.
///
/// The reader is as cheap as a reader can be, so that it bounds no row: a
/// 1 MiB pipe (what the runner asks for its own pipes) read with blocking
/// 1 MiB reads on a thread of its own. Through tokio (a 64 KiB pipe,
/// `epoll` between reads) the local pipe topped out near 950 MB/s here
/// while `head -c N /dev/zero | cat` moved 2–6 GB/s.
async fn drain(mut command: tokio::process::Command, expected: u64) -> anyhow::Result<f64> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = command.spawn().context("starting the output command")?;
    let stdout = child
        .stdout
        .take()
        .context("no stdout")?
        .into_owned_fd()
        .context("taking the stdout pipe")?;
    let read = tokio::task::spawn_blocking(move || count_blocking(stdout));
    let total = tokio::time::timeout(Duration::from_secs(300), async {
        let total = read.await.context("the reader thread")??;
        child
            .wait()
            .await
            .context("waiting for the output command")?;
        anyhow::Ok(total)
    })
    .await
    .context("the output command took over 300 s")??;
    let elapsed = start.elapsed();
    if total != expected {
        bail!("read {total} bytes, expected {expected}");
    }
    Ok(total as f64 / elapsed.as_secs_f64() / 1e6)
}

/// Reads a pipe to EOF with blocking reads; returns the bytes read.
fn count_blocking(pipe: std::os::fd::OwnedFd) -> anyhow::Result<u64> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    use std::io::Read;
    const PIPE: usize = 1024 * 1024;
    let flags = OFlag::from_bits_truncate(fcntl(&pipe, FcntlArg::F_GETFL)?);
    fcntl(&pipe, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK))?;
    // Best effort: a lower /proc/sys/fs/pipe-max-size only makes it slower.
    let _ = fcntl(&pipe, FcntlArg::F_SETPIPE_SZ(PIPE as i32));
    let mut pipe = std::fs::File::from(pipe);
    let mut buffer = vec![0u8; PIPE];
    let mut total = 0u64;
    loop {
        match pipe.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => total += n as u64,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error.into()),
        }
    }
}
