//! `runner sandbox-host`'s sandboxes: start one on the relay's request
//! ([`Host::start`]), destroy it ([`Host::destroy`]) on request, when its
//! runner exits (idle or lifetime over), or when the relay has been gone
//! longer than its idle timeout; and what the host can take
//! ([`Host::capacity`]). The relay reaches these through [`tools`].

pub mod capacity;
pub mod leftovers;
pub mod tools;

use std::collections::HashMap;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use runner_proto::sandbox::{
    Capacity, Destroyed, Network, SandboxState, SetupReport, StartSandbox, Started,
    SETUP_LOG_TAIL_BYTES,
};
use tokio::task::JoinHandle;

use super::isolation::enter::{Overlay, Plan};
use super::isolation::limits::{Group, Limits, Tree};
use super::isolation::rootfs::Base;
use super::layout::{
    self, InitConfig, Layout, SandboxDirs, SetupExit, CA_FILE, INIT_CONFIG, PROXY_SOCKET,
    RUNNER_STARTED, SETUP_EXIT, SETUP_LOG, SETUP_SCRIPT, TOKEN,
};
use super::network::allow::Allow;
use crate::agent::health::Health;

/// How often a starting sandbox is looked at.
const START_POLL: Duration = Duration::from_millis(2);
/// Longest a start (setup included) may take when the lifetime is longer.
const START_LIMIT: Duration = Duration::from_secs(30 * 60);
/// How often the host checks whether the relay has been gone too long.
const RELAY_WATCH: Duration = Duration::from_secs(1);

/// How a host runs its sandboxes.
#[derive(Debug, Clone)]
pub struct HostConfig {
    pub state_dir: PathBuf,
    pub slots: u32,
    /// Limits of a sandbox whose request names none.
    pub defaults: Limits,
    pub base: Base,
    /// This binary (bind-mounted into each sandbox).
    pub exe: PathBuf,
    /// The relay URL the host dials: a sandbox's when its request names
    /// none.
    pub relay_url: String,
}

/// One sandbox of this host.
struct Sandbox {
    group: Group,
    dirs: SandboxDirs,
    proxy: Option<JoinHandle<()>>,
    /// `sandbox-enter`, then bwrap: its death ends the sandbox.
    pid: Option<u32>,
    /// `None` (0 on the wire): no idle limit, also none for the relay's
    /// absence (a deployment's runner waits for its relay to come back).
    idle_timeout: Option<Duration>,
}

/// The sandbox host.
pub struct Host {
    config: HostConfig,
    layout: Layout,
    tree: Tree,
    health: Arc<Health>,
    sandboxes: Mutex<HashMap<String, Option<Sandbox>>>,
}

impl Host {
    /// Removes what a previous host left, builds the base if need be, and
    /// starts watching the relay connection.
    pub async fn start(config: HostConfig, health: Arc<Health>) -> Result<Arc<Host>> {
        let layout = Layout::new(&config.state_dir);
        let tree = Tree::detect(&layout.host_key()).map_err(anyhow::Error::msg)?;
        leftovers::remove(&layout, &tree).await;
        fs_err::create_dir_all(layout.sandboxes())?;
        let base = config.base.clone();
        tokio::task::spawn_blocking(move || base.prepare())
            .await
            .context("building the sandbox base")?
            .context("building the sandbox base")?;
        let host = Arc::new(Host {
            config,
            layout,
            tree,
            health,
            sandboxes: Mutex::default(),
        });
        tokio::spawn(watch_relay(Arc::downgrade(&host)));
        Ok(host)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Option<Sandbox>>> {
        // Only single inserts and removals happen under this lock.
        self.sandboxes.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn capacity(&self) -> Capacity {
        capacity::now(self.config.slots, self.lock().len() as u32)
    }

    /// Starts a sandbox and answers once its runner was started (ready) or
    /// it failed; a failed sandbox is already destroyed.
    pub async fn start_sandbox(self: &Arc<Self>, request: StartSandbox) -> Started {
        let started = Instant::now();
        let id = request.sandbox_id.clone();
        let failed = |reason: String, setup: Option<SetupReport>| Started {
            sandbox_id: request.sandbox_id.clone(),
            state: SandboxState::Failed,
            reason: Some(reason),
            setup,
            elapsed_ms: started.elapsed().as_millis() as u64,
        };
        if !layout::valid_id(&id) {
            return failed("sandbox_id must match [a-z0-9_-]{1,64}".to_owned(), None);
        }
        {
            let mut sandboxes = self.lock();
            if sandboxes.contains_key(&id) {
                return failed(format!("sandbox {id} already exists on this host"), None);
            }
            if sandboxes.len() as u32 >= self.config.slots {
                return failed(
                    format!("this host is full ({} sandboxes)", self.config.slots),
                    None,
                );
            }
            // Reserved: the slot is taken while it starts.
            sandboxes.insert(id.clone(), None);
        }
        let outcome = self.launch(&request).await;
        let (sandbox, child) = match outcome {
            Ok(launched) => launched,
            Err(error) => {
                self.destroy(&id).await;
                return failed(format!("{error:#}"), None);
            }
        };
        let dirs = sandbox.dirs.clone();
        let has_setup = request.setup_script.is_some();
        let reserved = self.lock().insert(id.clone(), Some(sandbox)).is_some();
        let life = Arc::new(Life::default());
        tokio::spawn(reap(
            Arc::downgrade(self),
            id.clone(),
            child,
            Arc::clone(&life),
        ));
        if !reserved {
            // Destroyed while it was being made: what was made goes too.
            self.destroy(&id).await;
            return failed("destroyed while starting".to_owned(), None);
        }
        let limit = match request.max_lifetime_s {
            0 => START_LIMIT,
            seconds => Duration::from_secs(seconds).min(START_LIMIT),
        };
        let verdict = wait_started(&dirs, has_setup, &life, limit).await;
        match verdict {
            Ok(setup) => {
                life.handed_over.store(true, Ordering::SeqCst);
                // Ended between the check and the hand-over: reap did not
                // destroy it, so this does.
                if life.ended.load(Ordering::SeqCst) {
                    self.destroy(&id).await;
                    return failed("the sandbox ended as it started".to_owned(), setup);
                }
                Started {
                    sandbox_id: id,
                    state: SandboxState::Ready,
                    reason: None,
                    setup,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                }
            }
            Err((reason, setup)) => {
                self.destroy(&id).await;
                failed(reason, setup)
            }
        }
    }

    /// Makes the directories, cgroup and proxy, and spawns the sandbox.
    async fn launch(&self, request: &StartSandbox) -> Result<(Sandbox, tokio::process::Child)> {
        let id = &request.sandbox_id;
        let dirs = self.layout.sandbox(id);
        let relay_url = match request.relay_url.as_str() {
            "" => self.config.relay_url.as_str(),
            url => url,
        };
        let (relay_url, relay_host, relay_port) = relay_address(relay_url)?;
        for dir in [dirs.upper(), dirs.work(), dirs.merged(), dirs.io()] {
            fs_err::create_dir_all(&dir)?;
        }
        fs_err::set_permissions(dirs.io(), std::fs::Permissions::from_mode(0o700))?;
        let io = dirs.io();
        // The relay's TLS trust is the host's: a relay behind a private CA
        // is trusted by its sandboxes too.
        let tls = crate::tls::options();
        if let Some(ca) = &tls.ca_file {
            fs_err::copy(ca, io.join(CA_FILE))?;
        }
        let init = InitConfig {
            relay_url,
            network: request.network,
            env: request.env.clone(),
            idle_timeout_s: request.idle_timeout_s,
            max_lifetime_s: request.max_lifetime_s,
            ca_file: tls.ca_file.is_some(),
            insecure_skip_tls_verify: tls.insecure_skip_verify,
        };
        fs_err::write(io.join(INIT_CONFIG), serde_json::to_vec(&init)?)?;
        if let Some(script) = &request.setup_script {
            fs_err::write(io.join(SETUP_SCRIPT), script)?;
        }
        write_secret(&io.join(TOKEN), &request.token.0)?;

        let limits = Limits {
            memory_mb: request
                .limits
                .memory_mb
                .unwrap_or(self.config.defaults.memory_mb),
            pids: request.limits.pids.unwrap_or(self.config.defaults.pids),
            cpus: request.limits.cpus.or(self.config.defaults.cpus),
        };
        let group = self
            .tree
            .create(id, limits)
            .context("making the sandbox's cgroup")?;

        let (root, usr) = match &self.config.base {
            Base::HostDerived(base) => {
                fs_err::create_dir_all(dirs.usr_upper())?;
                fs_err::create_dir_all(dirs.usr_work())?;
                (
                    Overlay {
                        lower: vec![base.clone()],
                        upper: dirs.upper(),
                        work: dirs.work(),
                    },
                    Some(Overlay {
                        lower: vec![PathBuf::from("/usr")],
                        upper: dirs.usr_upper(),
                        work: dirs.usr_work(),
                    }),
                )
            }
            Base::Image(image) => (
                Overlay {
                    lower: vec![image.clone()],
                    upper: dirs.upper(),
                    work: dirs.work(),
                },
                None,
            ),
        };
        let plan = Plan {
            root,
            usr,
            merged: dirs.merged(),
            io: io.clone(),
            exe: self.config.exe.clone(),
            share_net: request.network == Network::AllowAll,
            cgroup_procs: group.procs_files(),
            hostname: "sandbox".to_owned(),
        };
        fs_err::write(dirs.plan(), serde_json::to_vec(&plan)?)?;
        let log = fs_err::File::create(dirs.log())?.into_parts().0;
        let log_out = log.try_clone()?;
        // Last before the spawn: nothing after it can fail but the spawn.
        let proxy = if request.network == Network::AllowAll {
            None
        } else {
            let listener = tokio::net::UnixListener::bind(io.join(PROXY_SOCKET))
                .context("opening the sandbox's proxy socket")?;
            let allow = match request.network {
                Network::Allowlist => Allow::new(&relay_host, relay_port, &request.allowed_domains),
                _ => Allow::new(&relay_host, relay_port, &[]),
            };
            Some(tokio::spawn(super::network::proxy::serve(
                listener,
                Arc::new(allow),
            )))
        };
        // Spawned on the runtime's own thread (never a blocking-pool thread,
        // which ends when idle): bwrap's --die-with-parent follows the
        // thread that forked it.
        let spawned = tokio::process::Command::new(&self.config.exe)
            .arg("sandbox-enter")
            .arg("--plan")
            .arg(dirs.plan())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .stdin(std::process::Stdio::null())
            .stdout(log_out)
            .stderr(log)
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(error) => {
                if let Some(proxy) = &proxy {
                    proxy.abort();
                }
                return Err(anyhow::Error::from(error).context("starting sandbox-enter"));
            }
        };
        let sandbox = Sandbox {
            group,
            dirs,
            proxy,
            pid: child.id(),
            idle_timeout: (request.idle_timeout_s > 0)
                .then(|| Duration::from_secs(request.idle_timeout_s)),
        };
        Ok((sandbox, child))
    }

    /// Kills everything of sandbox `id` and removes its files. Idempotent:
    /// `existed` says whether there was anything.
    pub async fn destroy(&self, id: &str) -> Destroyed {
        if !layout::valid_id(id) {
            return Destroyed {
                sandbox_id: id.to_owned(),
                existed: false,
            };
        }
        let entry = self.lock().remove(id);
        let dirs = self.layout.sandbox(id);
        let existed = entry.is_some() || dirs.dir.exists();
        let group = match entry.flatten() {
            Some(sandbox) => {
                if let Some(pid) = sandbox.pid.and_then(|pid| i32::try_from(pid).ok()) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                if let Some(proxy) = &sandbox.proxy {
                    proxy.abort();
                }
                sandbox.group
            }
            // Reserved and still starting, or a previous host's.
            None => self.tree.group(id),
        };
        group.destroy().await;
        remove_dir(&dirs.dir).await;
        if existed {
            tracing::info!(sandbox = %id, "sandbox destroyed");
        }
        Destroyed {
            sandbox_id: id.to_owned(),
            existed,
        }
    }

    /// Destroys every sandbox and removes the host's cgroup directories
    /// (the host stops).
    pub async fn destroy_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            self.destroy(&id).await;
        }
        self.tree.remove();
    }
}

/// Removes a sandbox's directory (its overlay is mounted only in the
/// sandbox's own mount namespace, gone with its processes).
async fn remove_dir(dir: &std::path::Path) {
    for _ in 0..50 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    tracing::warn!(dir = %dir.display(), "could not remove a sandbox directory");
}

/// Between a sandbox's start and its reaper.
#[derive(Debug, Default)]
struct Life {
    /// Its process ended.
    ended: AtomicBool,
    /// It started: from now on its end is the reaper's to clean up (while
    /// it starts, the start does, after reading what setup left).
    handed_over: AtomicBool,
}

/// Waits for the sandbox's process to end, then destroys the sandbox
/// (once it was handed over).
async fn reap(
    host: std::sync::Weak<Host>,
    id: String,
    mut child: tokio::process::Child,
    life: Arc<Life>,
) {
    let status = child.wait().await;
    tracing::info!(sandbox = %id, ?status, "sandbox ended");
    life.ended.store(true, Ordering::SeqCst);
    if !life.handed_over.load(Ordering::SeqCst) {
        return;
    }
    if let Some(host) = host.upgrade() {
        host.destroy(&id).await;
    }
}

/// Until the runner was started (`Ok`, with the setup's report when there
/// was a script), setup failed, the sandbox ended, or `limit` passed.
async fn wait_started(
    dirs: &SandboxDirs,
    has_setup: bool,
    life: &Life,
    limit: Duration,
) -> Result<Option<SetupReport>, (String, Option<SetupReport>)> {
    let io = dirs.io();
    let deadline = Instant::now() + limit;
    loop {
        if io.join(RUNNER_STARTED).exists() {
            return Ok(if has_setup { setup_report(dirs) } else { None });
        }
        if let Some(report) = setup_report(dirs) {
            if report.exit_code != Some(0) {
                let why = match report.exit_code {
                    Some(code) => format!("the setup script failed (exit code {code})"),
                    None => "the setup script was killed by a signal".to_owned(),
                };
                return Err((why, Some(report)));
            }
        }
        if life.ended.load(Ordering::SeqCst) {
            // What setup wrote before the end is the better answer.
            if let Some(report) = setup_report(dirs) {
                if report.exit_code != Some(0) {
                    continue;
                }
            }
            if io.join(RUNNER_STARTED).exists() {
                continue;
            }
            let log = tail(&std::fs::read(dirs.log()).unwrap_or_default());
            return Err((
                format!("the sandbox ended while starting: {}", log.trim()),
                setup_report(dirs),
            ));
        }
        if Instant::now() >= deadline {
            return Err((
                format!("the sandbox did not start within {} s", limit.as_secs()),
                setup_report(dirs),
            ));
        }
        tokio::time::sleep(START_POLL).await;
    }
}

/// The setup's outcome, once init wrote it.
fn setup_report(dirs: &SandboxDirs) -> Option<SetupReport> {
    let io = dirs.io();
    let exit: SetupExit = serde_json::from_slice(&std::fs::read(io.join(SETUP_EXIT)).ok()?).ok()?;
    let log = std::fs::read(io.join(SETUP_LOG)).unwrap_or_default();
    Some(SetupReport {
        exit_code: exit.exit_code,
        duration_ms: exit.duration_ms,
        log_tail: tail(&log),
    })
}

/// The last [`SETUP_LOG_TAIL_BYTES`] of `log`, from a line start when one
/// is in reach, as text.
fn tail(log: &[u8]) -> String {
    let start = log.len().saturating_sub(SETUP_LOG_TAIL_BYTES);
    let mut slice = &log[start..];
    if start > 0 {
        if let Some(newline) = slice.iter().position(|b| *b == b'\n') {
            slice = &slice[newline + 1..];
        }
    }
    String::from_utf8_lossy(slice).into_owned()
}

/// `relay_url` (`ws(s)://host:port/runner/connect`, or an `http(s)` base)
/// as the base URL `runner run --url` takes, and its host and port.
pub fn relay_address(relay_url: &str) -> Result<(String, String, u16)> {
    let url = reqwest::Url::parse(relay_url).context("relay_url is not a URL")?;
    let scheme = match url.scheme() {
        "ws" | "http" => "http",
        "wss" | "https" => "https",
        other => bail!("relay_url has scheme {other:?}; ws, wss, http or https expected"),
    };
    let Some(host) = url.host_str() else {
        bail!("relay_url has no host");
    };
    let port = url
        .port_or_known_default()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let path = url.path().trim_end_matches('/');
    let path = path
        .strip_suffix(runner_proto::RUNNER_CONNECT_PATH)
        .unwrap_or(path);
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let base = format!("{scheme}://{authority}{path}");
    Ok((base, host.to_owned(), port))
}

/// Writes a secret file, 0600 from its creation.
fn write_secret(path: &std::path::Path, value: &str) -> Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    file.write_all(value.as_bytes())?;
    Ok(())
}

/// Destroys the sandboxes whose idle timeout the relay's absence has
/// outlasted: nobody can reach them, and they must not live on.
async fn watch_relay(host: std::sync::Weak<Host>) {
    let mut gone_since: Option<Instant> = None;
    loop {
        tokio::time::sleep(RELAY_WATCH).await;
        let Some(host) = host.upgrade() else { return };
        if host.health.is_connected() {
            gone_since = None;
            continue;
        }
        let since = *gone_since.get_or_insert_with(Instant::now);
        let expired: Vec<String> = host
            .lock()
            .iter()
            .filter_map(|(id, sandbox)| {
                let sandbox = sandbox.as_ref()?;
                let idle = sandbox.idle_timeout?;
                (since.elapsed() > idle).then(|| id.clone())
            })
            .collect();
        for id in expired {
            tracing::warn!(sandbox = %id, "the relay has been unreachable longer than the sandbox's idle timeout: destroying it");
            host.destroy(&id).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_urls_become_run_urls() {
        let (base, host, port) =
            relay_address("ws://127.0.0.1:7700/runner/connect").expect("test setup");
        assert_eq!(
            (base.as_str(), host.as_str(), port),
            ("http://127.0.0.1:7700", "127.0.0.1", 7700)
        );
        let (base, _, port) =
            relay_address("wss://relay.example.com/runner/connect").expect("test setup");
        assert_eq!((base.as_str(), port), ("https://relay.example.com", 443));
        assert!(relay_address("ftp://x/").is_err());
    }

    #[test]
    fn the_tail_starts_at_a_line() {
        let log = format!("{}\nlast line\n", "x".repeat(SETUP_LOG_TAIL_BYTES));
        assert_eq!(tail(log.as_bytes()), "last line\n");
        assert_eq!(tail(b"short"), "short");
    }
}
