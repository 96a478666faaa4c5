//! Self-update on the relay's word, for real: a COPY of the built runner
//! connects to a relay serving a signed release (`--releases-dir`), hears
//! of it in a heartbeat answer, installs it and restarts into it (same PID,
//! re-executed), and the new binary confirms itself by connecting. A
//! release that cannot start, or an update that cannot connect within its
//! probation, is rolled back. The service's root step (`update
//! --service-step`) installs a requested release and rolls back on request.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use crate::install::{make_release, test_private_key, MirrorServer, BUILT_VERSION};
use crate::support::{dev_env, retry_while_busy, runner_bin, wait_until, Relay, Runner};

/// The version published as newer than this build.
const NEWER: &str = "99.1.0";

/// A tree holding the runner copy (`bin/runner`) and a release directory.
struct Copy {
    dir: tempfile::TempDir,
    exe: PathBuf,
    original: Vec<u8>,
}

impl Copy {
    fn new() -> Copy {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let exe = bin.join("runner");
        std::fs::copy(runner_bin(), &exe).expect("copy runner");
        let original = std::fs::read(&exe).expect("read");
        Copy { dir, exe, original }
    }

    /// Publishes `bytes` as NEWER, signed with the test release key (the
    /// key built into debug and test builds), under `releases/`.
    fn publish(&self, bytes: &[u8]) -> PathBuf {
        let staged = self.dir.path().join("to-publish");
        std::fs::write(&staged, bytes).expect("write");
        let releases = self.dir.path().join("releases");
        make_release(NEWER, &releases, &staged, &test_private_key());
        releases
    }

    /// This build with junk appended: runs, and differs from the original.
    fn runnable_release(&self) -> Vec<u8> {
        let mut bytes = self.original.clone();
        bytes.extend_from_slice(format!("\0runner test release {NEWER}\n").as_bytes());
        bytes
    }

    fn current(&self) -> Vec<u8> {
        std::fs::read(&self.exe).expect("read exe")
    }

    /// `runner` from the copy, with `runner`'s directories.
    fn command(&self, runner: &Runner) -> Command {
        let mut command = Command::new(&self.exe);
        command
            .env("RUNNER_CONFIG_DIR", runner.config_dir())
            .env("RUNNER_STATE_DIR", runner.state_dir())
            .env("RUNNER_WORKSPACE", runner.workspace())
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env("RUST_LOG", "info")
            .env_remove("RUNNER_URL")
            .env_remove("RUNNER_TOKEN")
            .env_remove("RUNNER_UPDATE_MIRROR")
            .env_remove("RUNNER_TEST_RELEASE_PUBKEY")
            .env_remove("RUNNER_AUTO_UPDATE")
            .env_remove("INVOCATION_ID")
            .kill_on_drop(true);
        command
    }

    /// `runner run` from the copy, with extra environment.
    fn run(&self, runner: &Runner, env: &[(&str, &str)]) -> tokio::process::Child {
        let mut command = self.command(runner);
        command
            .arg("run")
            .envs(env.iter().copied())
            .stderr(std::process::Stdio::null());
        // The copy was written by this process (see `retry_while_busy`).
        retry_while_busy(|| command.spawn()).expect("spawn the copy")
    }
}

fn history(state: &Path) -> Value {
    std::fs::read(state.join("update-history.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null)
}

fn listed(history: &Value, list: &str, version: &str) -> bool {
    history[list]
        .as_array()
        .is_some_and(|versions| versions.iter().any(|v| v == version))
}

#[tokio::test]
async fn the_runner_installs_an_announced_release_restarts_into_it_and_confirms_it() {
    let copy = Copy::new();
    let published = copy.runnable_release();
    let releases = copy.publish(&published);
    let relay = Relay::spawn_with(&["--releases-dir", &releases.display().to_string()]).await;
    let (env, runner) = Runner::registered(&relay, dev_env()).await;

    let mut child = copy.run(&runner, &[]);
    let pid = child.id().expect("pid");

    let exe = copy.exe.clone();
    wait_until("the copy is replaced by the release", || {
        std::fs::read(&exe).is_ok_and(|bytes| bytes == published)
    })
    .await;
    let state = runner.state_dir();
    // Re-executed (same PID), connected, and confirmed: the probation
    // marker is gone and the version recorded as installed.
    wait_until("the new binary confirmed itself", || {
        listed(&history(&state), "installed", NEWER) && !state.join("update-pending.json").exists()
    })
    .await;
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the runner exited"
    );
    assert_eq!(child.id(), Some(pid), "restarted in place");
    relay.wait_status(&env, "online").await;
    let previous = copy.exe.with_file_name("runner.previous");
    assert_eq!(
        std::fs::read(previous).expect("previous kept"),
        copy.original
    );

    // It does not update again to the same version (this test release
    // still reports the old version number): the history remembers it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(copy.current(), published);
    let _ = child.kill().await;
}

#[tokio::test]
async fn a_release_that_cannot_start_is_rolled_back_at_once_and_the_runner_carries_on() {
    let copy = Copy::new();
    // A signed, correctly built executable for this machine that is not a
    // runner: `false --version` fails.
    let not_a_runner = std::fs::read("/usr/bin/false")
        .or_else(|_| std::fs::read("/bin/false"))
        .expect("false(1) on this machine");
    let releases = copy.publish(&not_a_runner);
    let relay = Relay::spawn_with(&["--releases-dir", &releases.display().to_string()]).await;
    let (env, runner) = Runner::registered(&relay, dev_env()).await;

    let mut child = copy.run(&runner, &[]);
    let state = runner.state_dir();
    wait_until("the release is rejected", || {
        listed(&history(&state), "rejected", NEWER)
    })
    .await;
    assert_eq!(copy.current(), copy.original, "the old binary is back");
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the runner exited"
    );
    relay.wait_status(&env, "online").await;
    let status: Value =
        serde_json::from_slice(&std::fs::read(state.join("status.json")).expect("status file"))
            .expect("status JSON");
    let update = status["update"].as_str().unwrap_or_default();
    assert!(
        update.contains("rejected") && update.contains("does not start"),
        "{status}"
    );
    let _ = child.kill().await;
}

#[tokio::test]
async fn an_update_that_cannot_connect_is_rolled_back_after_its_probation() {
    let copy = Copy::new();
    let relay = Relay::spawn().await;
    let (_env, runner) = Runner::registered(&relay, dev_env()).await;
    // The relay goes: the "new" binary will not connect.
    drop(relay);

    // As an update leaves it: the new bytes in place, the old ones kept,
    // and the probation marker.
    let new_bytes = copy.runnable_release();
    std::fs::write(copy.exe.with_file_name("runner.previous"), &copy.original).expect("previous");
    std::fs::write(&copy.exe, &new_bytes).expect("new");
    let state = runner.state_dir();
    std::fs::create_dir_all(&state).expect("state");
    let marker = serde_json::json!({
        "version": NEWER,
        "previous_version": BUILT_VERSION,
        "path": copy.exe,
    });
    std::fs::write(state.join("update-pending.json"), marker.to_string()).expect("marker");

    let mut child = copy.run(&runner, &[("RUNNER_UPDATE_PROBATION_SECS", "2")]);
    let exe = copy.exe.clone();
    let original = copy.original.clone();
    wait_until("the old binary is restored", || {
        std::fs::read(&exe).is_ok_and(|bytes| bytes == original)
    })
    .await;
    wait_until("the version is rejected and the marker gone", || {
        listed(&history(&state), "rejected", NEWER) && !state.join("update-pending.json").exists()
    })
    .await;
    // The old binary runs on (re-executed), retrying the relay.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "the runner exited"
    );
    let _ = child.kill().await;
}

async fn service_step(copy: &Copy, state: &Path, mirror: Option<&str>) -> Value {
    let mut command = Command::new(&copy.exe);
    command
        .args(["update", "--service-step", "--json"])
        .env("RUNNER_STATE_DIR", state)
        .env("RUNNER_CONFIG_DIR", state.join("config"))
        .env_remove("RUNNER_URL")
        .env_remove("RUNNER_TEST_RELEASE_PUBKEY")
        .env_remove("RUNNER_UPDATE_MIRROR");
    if let Some(mirror) = mirror {
        command.env("RUNNER_UPDATE_MIRROR", mirror);
    }
    let output = command.output().await.expect("service step");
    assert_eq!(
        output.status.code(),
        Some(0),
        "the service step never fails the start: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON outcome")
}

#[tokio::test]
async fn the_service_step_installs_what_was_asked_and_rolls_back_on_request() {
    let copy = Copy::new();
    let published = copy.runnable_release();
    let releases = copy.publish(&published);
    let mirror = MirrorServer::start(&releases);
    let state = copy.dir.path().join("state");
    std::fs::create_dir_all(&state).expect("state");

    // Nothing asked: nothing done.
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "nothing", "{outcome}");
    assert_eq!(copy.current(), copy.original);

    // A downgrade (or garbage) asked by the unprivileged runner: refused.
    std::fs::write(state.join("update-requested"), "0.0.1").expect("request");
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "refused", "{outcome}");
    assert_eq!(copy.current(), copy.original);

    // No mirror configured: refused, and said why.
    std::fs::write(state.join("update-requested"), NEWER).expect("request");
    let outcome = service_step(&copy, &state, None).await;
    assert_eq!(outcome["action"], "refused", "{outcome}");
    assert!(outcome["reason"]
        .as_str()
        .unwrap_or_default()
        .contains("no mirror"));

    // Asked for NEWER: verified, installed, on probation.
    std::fs::write(state.join("update-requested"), NEWER).expect("request");
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "installed", "{outcome}");
    assert_eq!(copy.current(), published);
    assert!(!state.join("update-requested").exists());
    let marker: Value =
        serde_json::from_slice(&std::fs::read(state.join("update-pending.json")).expect("marker"))
            .expect("marker JSON");
    assert_eq!(marker["version"], NEWER);
    assert_eq!(marker["starts"], 0);

    // The next start counts; the binary on probation asked for nothing.
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "nothing", "{outcome}");

    // The new binary failed its probation and asked: rolled back.
    std::fs::write(state.join("rollback-requested"), NEWER).expect("request");
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "rolled_back", "{outcome}");
    assert_eq!(copy.current(), copy.original);
    assert!(!state.join("update-pending.json").exists());
    assert!(listed(&history(&state), "rejected", NEWER));
}

#[tokio::test]
async fn the_service_step_rolls_back_a_binary_that_keeps_failing_to_start() {
    let copy = Copy::new();
    let published = copy.runnable_release();
    let releases = copy.publish(&published);
    let mirror = MirrorServer::start(&releases);
    let state = copy.dir.path().join("state");
    std::fs::create_dir_all(&state).expect("state");
    std::fs::write(state.join("update-requested"), NEWER).expect("request");
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "installed", "{outcome}");
    // Three starts that never connected (nothing confirmed the marker)...
    for _ in 0..3 {
        let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
        assert_eq!(outcome["action"], "nothing", "{outcome}");
    }
    // ...and the fourth goes back to the old binary.
    let outcome = service_step(&copy, &state, Some(&mirror.url)).await;
    assert_eq!(outcome["action"], "rolled_back", "{outcome}");
    assert_eq!(copy.current(), copy.original);
}
