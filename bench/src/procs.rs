//! Real `runner-relay` and `runner` processes, their API, and what /proc says
//! about them (RSS, peak RSS, CPU time).
//!
//! Every child is spawned with `kill_on_drop`, so an error anywhere in a
//! section still leaves no process behind.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long a relay may take to print its address.
const RELAY_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a runner may take to come online.
pub const ONLINE_TIMEOUT: Duration = Duration::from_secs(30);
/// Every API request of the harness.
const API_TIMEOUT: Duration = Duration::from_secs(60);
/// Between two status polls.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// The binaries under test.
#[derive(Debug, Clone)]
pub struct Bins {
    pub relay: PathBuf,
    pub runner: PathBuf,
}

impl Bins {
    pub fn find(dir: &Path) -> anyhow::Result<Bins> {
        let bins = Bins {
            relay: dir.join("runner-relay"),
            runner: dir.join("runner"),
        };
        for bin in [&bins.relay, &bins.runner] {
            if !bin.is_file() {
                bail!(
                    "{} does not exist: build with `cargo build --release --workspace --bins` first",
                    bin.display()
                );
            }
        }
        Ok(bins)
    }
}

/// A keep-alive HTTP client, as an agent or CI job would hold.
pub fn http_client(pool: usize) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(pool)
        .tcp_nodelay(true)
        .timeout(API_TIMEOUT)
        .build()
        .context("building the HTTP client")
}

/// A relay process on a SQLite file.
pub struct Relay {
    pub url: String,
    pub addr: std::net::SocketAddr,
    pub admin_key: String,
    pub data_dir: PathBuf,
    pub child: Child,
    pub http: reqwest::Client,
}

impl Relay {
    /// Starts `runner-relay serve` on `listen` (`127.0.0.1:0` for a free
    /// port). `admin_key` is needed on a restart (the key is printed once).
    pub async fn spawn(
        bins: &Bins,
        data_dir: &Path,
        listen: &str,
        admin_key: Option<&str>,
    ) -> anyhow::Result<Relay> {
        Relay::spawn_with(bins, data_dir, listen, admin_key, &[]).await
    }

    /// [`Relay::spawn`] with extra `serve` flags.
    pub async fn spawn_with(
        bins: &Bins,
        data_dir: &Path,
        listen: &str,
        admin_key: Option<&str>,
        flags: &[&str],
    ) -> anyhow::Result<Relay> {
        fs_err::create_dir_all(data_dir)?;
        let log = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data_dir.join("relay.log"))?;
        let mut child = Command::new(&bins.relay)
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(data_dir)
            .args(flags)
            .env_remove("RUNNER_RELAY_DATABASE_URL")
            .env(
                "RUST_LOG",
                std::env::var("BENCH_RELAY_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log.into_parts().0))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bins.relay.display()))?;
        let stdout = child.stdout.take().context("relay stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let mut printed_key = None;
        let url = tokio::time::timeout(RELAY_START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.context("reading relay stdout")? {
                if let Some(key) = line.strip_prefix("admin API key (shown once): ") {
                    printed_key = Some(key.trim().to_owned());
                }
                if let Some(url) = line.strip_prefix("runner-relay listening on ") {
                    return Ok(url.trim().to_owned());
                }
            }
            bail!(
                "runner-relay exited before listening (log: {})",
                data_dir.join("relay.log").display()
            )
        })
        .await
        .context("runner-relay did not listen in time")??;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let admin_key = printed_key
            .or_else(|| admin_key.map(str::to_owned))
            .context("the relay printed no admin key and none was given")?;
        let addr = url
            .trim_start_matches("http://")
            .parse()
            .with_context(|| format!("relay address in {url:?}"))?;
        Ok(Relay {
            url,
            addr,
            admin_key,
            data_dir: data_dir.to_owned(),
            child,
            http: http_client(1024)?,
        })
    }

    pub fn pid(&self) -> anyhow::Result<u32> {
        self.child.id().context("the relay has exited")
    }

    /// An API request with the admin key: status and JSON body.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, Value)> {
        api(&self.http, &self.url, &self.admin_key, method, path, body).await
    }

    /// A development-tier environment (every tool, every path) and a token.
    pub async fn environment_with_token(&self) -> anyhow::Result<(String, String)> {
        let (status, env) = self
            .api(
                reqwest::Method::POST,
                "/execution-environments",
                Some(&json!({"tier": "development"})),
            )
            .await?;
        if !(status == 200 || status == 201) {
            bail!("creating an environment: HTTP {status}: {env}");
        }
        let id = env["id"]
            .as_str()
            .context("environment without id")?
            .to_owned();
        let (status, body) = self
            .api(
                reqwest::Method::POST,
                &format!("/execution-environments/{id}/generate-token"),
                None,
            )
            .await?;
        if status != 200 {
            bail!("generating a token for {id}: HTTP {status}: {body}");
        }
        let token = body["token"]
            .as_str()
            .context("no token in the answer")?
            .to_owned();
        Ok((id, token))
    }

    pub async fn status(&self, env: &str) -> anyhow::Result<String> {
        let (_, body) = self
            .api(
                reqwest::Method::GET,
                &format!("/execution-environments/{env}/status"),
                None,
            )
            .await?;
        Ok(body["status"].as_str().unwrap_or("?").to_owned())
    }

    /// Polls until `env` is online; returns how long it took.
    pub async fn wait_online(&self, env: &str) -> anyhow::Result<Duration> {
        let start = Instant::now();
        loop {
            let status = self.status(env).await?;
            if status == "online" {
                return Ok(start.elapsed());
            }
            if start.elapsed() > ONLINE_TIMEOUT {
                bail!("{env} stayed {status} for {} s", ONLINE_TIMEOUT.as_secs());
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    pub fn invoke_path(env: &str) -> String {
        format!("/execution-environments/{env}/invoke-tool")
    }
}

/// A `ping` through `relay` to `env`'s runner, checked to echo `n`.
pub async fn ping(
    http: &reqwest::Client,
    relay: &Relay,
    env: &str,
    n: usize,
) -> anyhow::Result<()> {
    let (status, body) = api(
        http,
        &relay.url,
        &relay.admin_key,
        reqwest::Method::POST,
        &Relay::invoke_path(env),
        Some(&serde_json::json!({"tool_name": "ping", "args": {"n": n}})),
    )
    .await?;
    if status != 200 || body["result"]["n"] != serde_json::json!(n) {
        anyhow::bail!("ping: HTTP {status}: {body}");
    }
    Ok(())
}

pub async fn api(
    http: &reqwest::Client,
    url: &str,
    key: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<(u16, Value)> {
    let mut request = http
        .request(method, format!("{url}{path}"))
        .bearer_auth(key);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request
        .send()
        .await
        .with_context(|| format!("calling {url}{path}"))?;
    let status = response.status().as_u16();
    let bytes = response
        .bytes()
        .await
        .with_context(|| format!("reading the answer of {path}"))?;
    let value = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    Ok((status, value))
}

/// A real runner process with its own directories.
pub struct Runner {
    pub home: tempfile::TempDir,
    pub child: Option<Child>,
}

impl Runner {
    pub fn new() -> anyhow::Result<Runner> {
        let home = tempfile::Builder::new()
            .prefix("runner-bench-runner-")
            .tempdir()
            .context("creating a runner home")?;
        fs_err::create_dir_all(home.path().join("workspace"))?;
        Ok(Runner { home, child: None })
    }

    pub fn workspace(&self) -> PathBuf {
        self.home.path().join("workspace")
    }

    /// A `runner` command with this runner's directories.
    pub fn command(&self, bins: &Bins) -> Command {
        let mut command = Command::new(&bins.runner);
        command
            .env("RUNNER_CONFIG_DIR", self.home.path().join("config"))
            .env("RUNNER_STATE_DIR", self.home.path().join("state"))
            .env("RUNNER_WORKSPACE", self.workspace())
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env_remove("RUNNER_PERMISSION_CONFIG")
            .env_remove("RUNNER_URL")
            .env_remove("RUNNER_API_KEY")
            .env_remove("RUNNER_TOKEN")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// `runner run --url URL` with the token in the environment (no
    /// `register` needed). Logs go to a file in the runner's home.
    pub fn start(&mut self, bins: &Bins, url: &str, token: &str) -> anyhow::Result<()> {
        let log = fs_err::File::create(self.home.path().join("runner.log"))?;
        let child = self
            .command(bins)
            .args(["run", "--url", url])
            .env("RUNNER_TOKEN", token)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log.into_parts().0))
            .spawn()
            .with_context(|| format!("starting {} run", bins.runner.display()))?;
        self.child = Some(child);
        Ok(())
    }

    pub fn pid(&self) -> anyhow::Result<u32> {
        self.child
            .as_ref()
            .and_then(Child::id)
            .context("the runner is not running")
    }
}

/// Starts `count` runners on new environments and waits until all are
/// online. Returns (environment ids, runners).
pub async fn online_runners(
    bins: &Bins,
    relay: &Relay,
    count: usize,
) -> anyhow::Result<(Vec<String>, Vec<Runner>)> {
    let mut envs = Vec::with_capacity(count);
    let mut runners = Vec::with_capacity(count);
    for _ in 0..count {
        let (env, token) = relay.environment_with_token().await?;
        let mut runner = Runner::new()?;
        runner.start(bins, &relay.url, &token)?;
        envs.push(env);
        runners.push(runner);
    }
    for env in &envs {
        relay.wait_online(env).await?;
    }
    Ok((envs, runners))
}

/// Memory of a process from /proc/PID/status, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub rss_kib: u64,
    pub hwm_kib: u64,
}

pub fn memory(pid: u32) -> anyhow::Result<Memory> {
    let path = format!("/proc/{pid}/status");
    let text = fs_err::read_to_string(&path)?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .unwrap_or(0)
    };
    Ok(Memory {
        rss_kib: field("VmRSS:"),
        hwm_kib: field("VmHWM:"),
    })
}

/// Resets VmHWM to the current RSS (`echo 5 > /proc/PID/clear_refs`), so
/// the next reading is the peak of what follows.
pub fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// User + system CPU time of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// CPU time each thread of a process has run, in nanoseconds, by thread
/// id (`/proc/PID/task/TID/schedstat`): nanosecond counts, where
/// [`cpu_ticks`] counts in 10 ms steps, too coarse for a batch of calls.
pub fn thread_cpu_ns(pid: u32) -> std::collections::HashMap<u32, u64> {
    let mut threads = std::collections::HashMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return threads;
    };
    for task in tasks.flatten() {
        let Some(tid) = task.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let ran = std::fs::read_to_string(task.path().join("schedstat"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse().ok());
        if let Some(ran) = ran {
            threads.insert(tid, ran);
        }
    }
    threads
}

/// CPU nanoseconds spent between two [`thread_cpu_ns`] readings: threads
/// present at both count their difference, new ones all they ran. A
/// thread that exited in between loses its last part (rare: the relay's
/// and runner's threads live as long as they do).
pub fn cpu_ns_between(
    before: &std::collections::HashMap<u32, u64>,
    after: &std::collections::HashMap<u32, u64>,
) -> u64 {
    after
        .iter()
        .map(|(tid, ran)| ran.saturating_sub(before.get(tid).copied().unwrap_or(0)))
        .sum()
}

/// Clock ticks per second (USER_HZ), for [`cpu_ticks`].
pub fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| {
            String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse::<f64>()
                .ok()
        })
        .unwrap_or(100.0)
}

/// Samples a process's CPU use every `every` until stopped; keeps the peak
/// and the total.
pub struct CpuSampler {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<(f64, f64)>,
}

impl CpuSampler {
    pub fn start(pid: u32, every: Duration) -> CpuSampler {
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let hz = ticks_per_second();
        let task = tokio::spawn(async move {
            let first = cpu_ticks(pid).unwrap_or(0);
            let mut previous = (Instant::now(), first);
            let mut peak = 0.0f64;
            let started = Instant::now();
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    _ = stopped.changed() => break,
                }
                let Some(ticks) = cpu_ticks(pid) else { break };
                let now = Instant::now();
                let seconds = now.duration_since(previous.0).as_secs_f64();
                if seconds > 0.0 {
                    peak = peak.max(ticks.saturating_sub(previous.1) as f64 / hz / seconds * 100.0);
                }
                previous = (now, ticks);
            }
            let total = previous.1.saturating_sub(first) as f64 / hz;
            let average = total / started.elapsed().as_secs_f64().max(1e-9) * 100.0;
            (peak, average)
        });
        CpuSampler { stop, task }
    }

    /// (peak %, average %) of one core over the sampled time.
    pub async fn finish(self) -> (f64, f64) {
        let _ = self.stop.send(true);
        self.task.await.unwrap_or((0.0, 0.0))
    }
}

/// SIGKILL, then reap (bounded).
pub async fn kill_hard(child: &mut Child) {
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}

/// SIGTERM, then SIGKILL if it has not exited within `grace`.
pub async fn stop(child: &mut Child, grace: Duration) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
    }
    kill_hard(child).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_between_counts_each_thread_once_and_new_threads_whole() {
        let before = std::collections::HashMap::from([(1, 1_000), (2, 5_000), (3, 700)]);
        // Thread 3 exited; thread 4 started; thread 2's counter cannot go
        // back, but a reused id could: it counts as nothing, not as a
        // negative.
        let after = std::collections::HashMap::from([(1, 1_600), (2, 4_000), (4, 250)]);
        assert_eq!(cpu_ns_between(&before, &after), 600 + 250);
    }

    #[test]
    fn this_process_has_threads_that_ran() {
        let threads = thread_cpu_ns(std::process::id());
        assert!(!threads.is_empty(), "no thread of our own found");
        // Spin until the readings show 5 ms more (on a loaded machine that
        // takes longer than 5 ms of wall time); a reader that does not
        // move fails at the deadline.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut sum = 0u64;
        loop {
            for _ in 0..100_000 {
                sum = sum.wrapping_add(std::hint::black_box(1));
            }
            let ran = cpu_ns_between(&threads, &thread_cpu_ns(std::process::id()));
            if ran >= 5_000_000 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "10 s of spinning showed only {ran} ns ({sum})"
            );
        }
    }
}
