//! Section 5: large output. A command writes `--output-bytes` of stdout;
//! measured: through runner and relay to the API caller (one `invoke-tool`),
//! over ssh with a warm ControlMaster, and locally into a pipe (the floor).
//!
//! What the relay path carries today: the `shell` tool reads the whole
//! stream but keeps only a bounded head and tail inline (1 MiB each), and
//! answers with one JSON `result`; no output chunk reaches the caller. So
//! "produced MB/s" is how fast the runner consumes the stream and "delivered
//! bytes" is what the caller got. ssh and the floor deliver every byte.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

use crate::procs::{self, Bins, Relay};
use crate::ssh::Sshd;
use crate::stats::median;
use crate::{note, round, RunArgs};

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let command = format!(
        "yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c {}",
        args.output_bytes
    );
    let data = tempfile::Builder::new()
        .prefix("runner-bench-output-")
        .tempdir()?;
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
    Ok(json!({
        "command": command,
        "bytes": args.output_bytes,
        "repeats": args.output_repeats.max(1),
        "local_pipe_mb_per_s": round(local_mbs, 0),
        "ssh_controlmaster_mb_per_s": ssh_mbs.map(|v| round(v, 0)),
        "relay_produced_mb_per_s": round(relay_mbs, 0),
        "relay_stdout_bytes_seen_by_runner": produced,
        "relay_answer_bytes_delivered": delivered,
        "relay_over_ssh": ssh_mbs.map(|ssh| round(relay_mbs / ssh, 2)),
        "runner_rss_before_kib": runner_before.rss_kib,
        "runner_peak_rss_kib": runner_peak,
        "relay_rss_before_kib": relay_before.rss_kib,
        "relay_peak_rss_kib": relay_peak,
        "peaks_reset_before": peaks_reset,
        "what_flows": "shell keeps 1 MiB head + 1 MiB tail inline and answers one JSON result; no streaming to the caller yet",
    }))
}

/// Runs a command with stdout into a pipe we drain; returns MB/s and checks
/// the byte count.
async fn drain(mut command: tokio::process::Command, expected: u64) -> anyhow::Result<f64> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = command.spawn().context("starting the output command")?;
    let mut stdout = child.stdout.take().context("no stdout")?;
    let mut buffer = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    let read = async {
        loop {
            let n = stdout.read(&mut buffer).await?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        child.wait().await
    };
    tokio::time::timeout(Duration::from_secs(300), read)
        .await
        .context("the output command took over 300 s")?
        .context("reading the output")?;
    let elapsed = start.elapsed();
    if total != expected {
        bail!("read {total} bytes, expected {expected}");
    }
    Ok(total as f64 / elapsed.as_secs_f64() / 1e6)
}
