//! `runner-relay dev`: one command from a fresh clone to a working setup. It
//! starts the relay in-process on a SQLite file in a directory, prepares an
//! admin key, a development environment named "dev" and a registration
//! token, then runs the real `runner` binary against it (`register`, then
//! `run`), waits until the environment is online and prints how to use it.
//!
//! The relay outlives its runner: a runner that crashes (or is killed) is
//! started again after a backoff ([`RESTART_BACKOFF`], doubling up to
//! [`RESTART_BACKOFF_MAX`], reset after [`HEALTHY_RUN`]); one that stops on
//! the relay's word ([`RUNNER_STOPPED_BY_RELAY`]: token revoked, replaced,
//! environment deleted) is reported and left stopped, since starting it
//! again would only be refused again. Only Ctrl-C stops the relay.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use runner_proto::api::{Status, Tier};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

use super::{cancel_on_signal, lock_sqlite, open_store, say};
use crate::args::DevArgs;
use crate::clock::{Clock, SystemClock};
use crate::environment::{default_policy, new_environment_id, EnvironmentRecord, Scope};
use crate::secret::{hash_secret, hashes_match, Secret};
use crate::state::{AppState, RelayConfig, StreamTimings};
use crate::store::{MemberKind, NewMember, Store};
use crate::{members, registration, sign_in_links};

/// Name of the environment `dev` creates.
const ENVIRONMENT_NAME: &str = "dev";
/// File with the settings to use the dev setup from another shell.
const ENV_FILE: &str = "dev.env";
/// How long `runner register` may take.
const REGISTER_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the runner may take to come online.
const ONLINE_TIMEOUT: Duration = Duration::from_secs(60);
/// Between two status checks while waiting for the runner.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How long the runner gets to exit after SIGTERM before it is killed.
const CHILD_STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The runner's exit code when the relay told it to stop (the runner's
/// `exit::STOPPED_BY_RELAY`): not restarted.
const RUNNER_STOPPED_BY_RELAY: i32 = 10;
/// Wait before restarting a runner that exited otherwise.
const RESTART_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between restarts of a runner that keeps exiting.
const RESTART_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// A runner that ran this long before exiting is restarted after the
/// shortest wait again.
const HEALTHY_RUN: Duration = Duration::from_secs(60);

pub async fn run(args: DevArgs) -> anyhow::Result<()> {
    let dir = match args.data_dir {
        Some(dir) => dir,
        None => std::env::temp_dir().join(format!(
            "runner-relay-dev-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        )),
    };
    // Owner only: it holds the database, the API key and the runner's
    // credentials (in a world-readable temporary directory by default).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs_err::canonicalize(&dir)?;
    eprintln!(
        "runner-relay dev: data directory {} (kept after exit)",
        dir.display()
    );
    let runner_bin = find_runner(args.runner_bin.as_deref())?;

    let url = format!("sqlite://{}", dir.join("relay.db").display());
    let _store_lock = lock_sqlite(&url)?;
    let store = open_store(&url).await?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let api_key = admin_key(store.as_ref(), clock.as_ref(), &dir).await?;
    let environment = dev_environment(store.as_ref(), clock.as_ref()).await?;
    let (token, _) = registration::generate(store.as_ref(), &environment.id, 0, clock.now())
        .await
        .context("generating a registration token")?;

    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|error| super::bind_error(args.listen, error))?;
    let address = listener.local_addr().context("reading the bound address")?;
    let url = format!("http://{address}");
    say(&format!("runner-relay listening on {url}"))?;

    // Ctrl-C stops the runner first, then the relay, so that the runner is
    // not told to reconnect (GOING_AWAY) while it is being stopped.
    let stop = CancellationToken::new();
    cancel_on_signal(stop.clone());
    let relay_shutdown = CancellationToken::new();
    let state = AppState::new(RelayConfig {
        store,
        clock,
        streams: StreamTimings::default(),
    });
    let server = tokio::spawn(crate::serve(
        listener,
        state.clone(),
        relay_shutdown.clone(),
    ));

    let sandbox_host = if args.no_sandbox_host {
        None
    } else {
        start_sandbox_host(&state, &runner_bin, &dir, &url).await
    };
    let outcome = supervise(
        &state,
        &stop,
        &runner_bin,
        &dir,
        &url,
        &token,
        &api_key,
        &environment,
    )
    .await;
    if let Some(mut host) = sandbox_host {
        stop_child(&mut host).await;
    }
    relay_shutdown.cancel();
    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => tracing::error!(%error, "relay stopped with an error"),
        Err(error) => tracing::error!(%error, "relay task failed"),
    }
    outcome
}

#[allow(clippy::too_many_arguments)]
async fn supervise(
    state: &AppState,
    shutdown: &CancellationToken,
    runner_bin: &Path,
    dir: &Path,
    url: &str,
    token: &Secret,
    api_key: &Secret,
    environment: &EnvironmentRecord,
) -> anyhow::Result<()> {
    let workspace = dir.join("workspace");
    fs_err::create_dir_all(&workspace)?;
    let runner = RunnerCommand {
        bin: runner_bin,
        dir,
        workspace: &workspace,
        token,
    };

    eprintln!(
        "runner-relay dev: registering the runner ({})",
        runner_bin.display()
    );
    let mut register = runner
        .command(&["register", "--url", url])
        .spawn()
        .with_context(|| format!("starting {} register", runner_bin.display()))?;
    let status = tokio::select! {
        status = tokio::time::timeout(REGISTER_TIMEOUT, register.wait()) => match status {
            Ok(status) => status.context("waiting for runner register")?,
            Err(_) => {
                stop_child(&mut register).await;
                bail!("runner register did not finish within {} s", REGISTER_TIMEOUT.as_secs());
            }
        },
        () = shutdown.cancelled() => {
            stop_child(&mut register).await;
            return Ok(());
        }
    };
    if !status.success() {
        bail!("runner register failed ({})", describe(status));
    }

    let mut child = runner
        .command(&["run"])
        .spawn()
        .with_context(|| format!("starting {} run", runner_bin.display()))?;
    let online = wait_online(state, shutdown, &mut child, &environment.id).await;
    let result = match online {
        Ok(true) => {
            announce(state, dir, url, api_key, environment)?;
            keep_running(&runner, shutdown, &mut child).await
        }
        Ok(false) => Ok(()),
        Err(error) => Err(error),
    };
    eprintln!("runner-relay dev: stopping");
    stop_child(&mut child).await;
    result
}

/// Until shutdown: restarts the runner when it exits, with backoff,
/// unless the relay stopped it (then it is reported and left stopped).
/// `child` is the runner running now, for the caller to stop.
async fn keep_running(
    runner: &RunnerCommand<'_>,
    shutdown: &CancellationToken,
    child: &mut Child,
) -> anyhow::Result<()> {
    let mut delay = RESTART_BACKOFF;
    let mut started = tokio::time::Instant::now();
    loop {
        let status = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            status = child.wait() => status,
        };
        let what = match status {
            Ok(status) if status.code() == Some(RUNNER_STOPPED_BY_RELAY) => {
                eprintln!(
                    "runner-relay dev: the runner stopped on the relay's word ({}: its token was revoked, another runner replaced it, or its environment was deleted); not restarting it. The relay keeps running; Ctrl-C stops it.",
                    describe(status)
                );
                shutdown.cancelled().await;
                return Ok(());
            }
            Ok(status) => describe(status),
            Err(error) => format!("lost track of it: {error}"),
        };
        if started.elapsed() >= HEALTHY_RUN {
            delay = RESTART_BACKOFF;
        }
        eprintln!(
            "runner-relay dev: the runner exited ({what}); restarting it in {} s",
            delay.as_secs()
        );
        loop {
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = shutdown.cancelled() => return Ok(()),
            }
            delay = (delay * 2).min(RESTART_BACKOFF_MAX);
            match runner.command(&["run"]).spawn() {
                Ok(restarted) => {
                    *child = restarted;
                    started = tokio::time::Instant::now();
                    break;
                }
                Err(error) => eprintln!(
                    "runner-relay dev: cannot start {} run: {error}; trying again in {} s",
                    runner.bin.display(),
                    delay.as_secs()
                ),
            }
        }
    }
}

/// Polls the environment's status until it is online; `Ok(false)` when
/// shutdown was requested first.
async fn wait_online(
    state: &AppState,
    shutdown: &CancellationToken,
    child: &mut Child,
    environment_id: &str,
) -> anyhow::Result<bool> {
    let deadline = tokio::time::Instant::now() + ONLINE_TIMEOUT;
    loop {
        if shutdown.is_cancelled() {
            return Ok(false);
        }
        if let Some(status) = child.try_wait().context("checking on the runner")? {
            bail!(
                "the runner exited before coming online ({})",
                describe(status)
            );
        }
        let environment = state
            .store
            .environment(environment_id)
            .await?
            .context("the dev environment disappeared")?;
        let status = state.environment_status(&environment).await?;
        if matches!(status.status, Status::Online | Status::Degraded) {
            return Ok(true);
        }
        if tokio::time::Instant::now() >= deadline {
            bail!(
                "the runner did not come online within {} s (status: {})",
                ONLINE_TIMEOUT.as_secs(),
                status.status.as_str()
            );
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_INTERVAL) => {}
            () = shutdown.cancelled() => return Ok(false),
        }
    }
}

fn announce(
    state: &AppState,
    dir: &Path,
    url: &str,
    api_key: &Secret,
    environment: &EnvironmentRecord,
) -> anyhow::Result<()> {
    let key = api_key.expose();
    let code = state
        .console
        .links
        .issue(api_key, state.clock.now())
        .context("making the console's sign-in link")?;
    let env_file = dir.join(ENV_FILE);
    write_private(
        &env_file,
        &format!(
            "RUNNER_URL={url}\nRUNNER_API_KEY={key}\nRUNNER_ENV={}\n",
            environment.id
        ),
    )?;
    let lines = [
        String::new(),
        format!("runner-relay dev: environment \"{ENVIRONMENT_NAME}\" is online"),
        format!("  relay URL:    {url}"),
        format!("  API key:      {key}"),
        format!("  environment:  {ENVIRONMENT_NAME} ({})", environment.id),
        format!("  settings:     {}", env_file.display()),
        format!(
            "  console:      {} (signs in once, within 15 min; then use the API key)",
            sign_in_links::link(url, &code)
        ),
        String::new(),
        "Try it:".to_owned(),
        format!(
            "  RUNNER_URL={url} RUNNER_API_KEY={key} runner invoke {ENVIRONMENT_NAME} shell --arg command='echo hello'"
        ),
        format!(
            "  curl -sS -H 'Authorization: Bearer {key}' -H 'Content-Type: application/json' -d '{{\"tool_name\":\"shell\",\"args\":{{\"command\":\"echo hello\"}}}}' {url}/execution-environments/{}/invoke-tool",
            environment.id
        ),
        format!(
            "  claude mcp add --transport http runner {url}/mcp --header 'Authorization: Bearer {key}'"
        ),
        String::new(),
        "Press Ctrl-C to stop.".to_owned(),
    ];
    for line in lines {
        say(&line)?;
    }
    Ok(())
}

/// Reuses the admin key saved in `dev.env` when it still works, else
/// creates a new admin.
async fn admin_key(store: &dyn Store, clock: &dyn Clock, dir: &Path) -> anyhow::Result<Secret> {
    if let Ok(text) = fs_err::read_to_string(dir.join(ENV_FILE)) {
        let saved = text
            .lines()
            .find_map(|line| line.strip_prefix("RUNNER_API_KEY="))
            .map(|key| Secret::new(key.trim()));
        if let Some(key) = saved {
            let hash = hash_secret(key.expose());
            if let Some((member, stored)) = store.member_by_key_hash(&hash).await? {
                if member.is_admin && hashes_match(&stored, &hash) {
                    return Ok(key);
                }
            }
        }
    }
    let admin = NewMember {
        name: "dev".to_owned(),
        is_admin: true,
        teams: Vec::new(),
        kind: MemberKind::Person,
    };
    let (_, key) = members::create_with_key(store, clock, &admin)
        .await
        .context("creating the dev admin API key")?;
    Ok(key)
}

async fn dev_environment(
    store: &dyn Store,
    clock: &dyn Clock,
) -> anyhow::Result<EnvironmentRecord> {
    if let Some(existing) = store.environment_by_name(ENVIRONMENT_NAME).await? {
        return Ok(existing);
    }
    let record = EnvironmentRecord {
        id: new_environment_id(),
        name: ENVIRONMENT_NAME.to_owned(),
        description: "created by runner-relay dev".to_owned(),
        env_type: "Local".to_owned(),
        tags: Vec::new(),
        scope: Scope::Shared,
        tier: Tier::Development,
        install_browser_tools: false,
        policy: default_policy(Tier::Development),
        created_at: clock.now(),
        last_seen: None,
        runner: None,
    };
    store
        .insert_environment(&record)
        .await
        .context("creating the dev environment")?;
    Ok(record)
}

/// Name of the local sandbox host's environment.
const SANDBOX_HOST_NAME: &str = "dev-sandbox-host";
/// `runner sandbox-host`'s exit code when this machine cannot isolate.
const CANNOT_SANDBOX: i32 = 15;

/// Starts `runner sandbox-host` for this relay where the machine can
/// isolate sandboxes, and says which: sessions asking for `sandbox` then
/// work out of the box. Nothing here stops the relay: without a host,
/// those sessions answer `503 no_sandbox_host`.
async fn start_sandbox_host(
    state: &AppState,
    runner_bin: &Path,
    dir: &Path,
    url: &str,
) -> Option<Child> {
    match try_sandbox_host(state, runner_bin, dir, url).await {
        Ok(child) => child,
        Err(error) => {
            eprintln!("runner-relay dev: no local sandbox host: {error:#}");
            None
        }
    }
}

async fn try_sandbox_host(
    state: &AppState,
    runner_bin: &Path,
    dir: &Path,
    url: &str,
) -> anyhow::Result<Option<Child>> {
    let store = state.store.as_ref();
    let environment = match store.environment_by_name(SANDBOX_HOST_NAME).await? {
        Some(existing) => existing,
        None => {
            let record = EnvironmentRecord {
                id: new_environment_id(),
                name: SANDBOX_HOST_NAME.to_owned(),
                description: "this machine's sandbox host, started by runner-relay dev".to_owned(),
                env_type: runner_proto::sandbox::HOST_ROLE.to_owned(),
                tags: Vec::new(),
                scope: Scope::Shared,
                tier: Tier::Production,
                install_browser_tools: false,
                policy: crate::environment::host_policy(),
                created_at: state.clock.now(),
                last_seen: None,
                runner: None,
            };
            store.insert_environment(&record).await?;
            record
        }
    };
    let (token, _) = registration::generate(store, &environment.id, 0, state.clock.now())
        .await
        .context("generating the sandbox host's token")?;
    let home = dir.join("sandbox-host");
    let log_path = home.join("sandbox-host.log");
    fs_err::create_dir_all(&home)?;
    let log = fs_err::File::create(&log_path)?;
    let mut child = Command::new(runner_bin)
        .args(["sandbox-host", "--url", url])
        .env("RUNNER_TOKEN", token.expose())
        .env("RUNNER_CONFIG_DIR", home.join("config"))
        .env("RUNNER_STATE_DIR", home.join("state"))
        .env("RUNNER_CREDENTIAL_STORE", "file")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log.into_parts().0))
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {} sandbox-host", runner_bin.display()))?;
    let deadline = tokio::time::Instant::now() + ONLINE_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait()? {
            if status.code() == Some(CANNOT_SANDBOX) {
                eprintln!(
                    "runner-relay dev: this machine cannot isolate sandboxes, so sessions \
                     asking for \"sandbox\" answer 503 (`runner doctor --sandbox-host` says \
                     what is missing; log: {})",
                    log_path.display()
                );
                return Ok(None);
            }
            bail!(
                "it exited ({}); log: {}",
                describe(status),
                log_path.display()
            );
        }
        if crate::routing::CallRouter::presence(state.router.as_ref(), &environment.id)
            .await
            .is_some()
        {
            eprintln!(
                "runner-relay dev: local sandbox host online: `runner session create --env \
                 sandbox` gets a fresh isolated sandbox (log: {})",
                log_path.display()
            );
            return Ok(Some(child));
        }
        if tokio::time::Instant::now() >= deadline {
            stop_child(&mut child).await;
            bail!(
                "it did not connect within {} s; log: {}",
                ONLINE_TIMEOUT.as_secs(),
                log_path.display()
            );
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// How to start the runner binary for this dev directory.
struct RunnerCommand<'a> {
    bin: &'a Path,
    dir: &'a Path,
    workspace: &'a Path,
    token: &'a Secret,
}

impl RunnerCommand<'_> {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.bin);
        command
            .args(args)
            // In the environment, never on the command line, where `ps`
            // would show it to every user of the machine.
            .env("RUNNER_TOKEN", self.token.expose())
            .env("RUNNER_CONFIG_DIR", self.dir.join("runner").join("config"))
            .env("RUNNER_STATE_DIR", self.dir.join("runner").join("state"))
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env("RUNNER_WORKSPACE", self.workspace)
            .stdin(Stdio::null())
            // A backstop: the relay never leaves a runner behind.
            .kill_on_drop(true);
        command
    }
}

/// The runner binary: the flag, else `runner` next to this executable,
/// else on PATH.
fn find_runner(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(path) = flag {
        if path.is_file() {
            return Ok(path.to_owned());
        }
        bail!("runner binary {} does not exist", path.display());
    }
    let name = format!("runner{}", std::env::consts::EXE_SUFFIX);
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(&name)));
    if let Some(path) = beside.as_ref().filter(|path| path.is_file()) {
        return Ok(path.clone());
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(&name))
            .find(|candidate| candidate.is_file())
    });
    if let Some(path) = on_path {
        return Ok(path);
    }
    bail!(
        "runner binary not found: looked for {} and for `{name}` on PATH; build it with `cargo build -p runner-cli` or pass --runner-bin",
        beside
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| "<directory of runner-relay>".to_owned())
    )
}

/// Asks the child to stop (SIGTERM), then kills it if it does not.
async fn stop_child(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        if kill(Pid::from_raw(pid), Signal::SIGTERM).is_ok()
            && tokio::time::timeout(CHILD_STOP_TIMEOUT, child.wait())
                .await
                .is_ok()
        {
            return;
        }
    }
    if let Err(error) = child.kill().await {
        tracing::warn!(%error, "could not kill the runner");
    }
}

fn describe(status: ExitStatus) -> String {
    match status.code() {
        Some(code) => format!("exit code {code}"),
        None => format!("{status}"),
    }
}

/// Writes a file readable by its owner only (it holds an API key).
fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = fs_err::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    #[cfg(unix)]
    {
        // `mode` only applies when the file is created; an older file may be
        // more open.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    file.write_all(contents.as_bytes())?;
    Ok(())
}
