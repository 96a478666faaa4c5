//! The Docker image (`installers/Dockerfile`), built unchanged by podman
//! around this test's own `runner` and run against a real relay: the
//! image's entrypoint answers `--version`; a container started with only
//! `RUNNER_URL` and `RUNNER_TOKEN` connects, answers `ping` and runs
//! `shell` as the image's user in its workspace; `podman stop` ends it
//! with SIGTERM (forwarded by tini), long before podman would kill it.
//!
//! It needs podman (with runc) and the base image, which no registry
//! serves here: `scripts/install-test-deps.sh` installs the one and runs
//! `scripts/prepare-image-test.sh`, which makes a stand-in for the other
//! from Debian's packages. The podman settings
//! this machine needs are in `containers.conf` beside this file, passed in
//! `CONTAINERS_CONF`. The build's `apt-get` fetches from Debian's mirror.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::process::Command;

use crate::support::{self, dev_env, Relay};

/// What makes a machine ready for this test.
const PREPARE: &str = "scripts/install-test-deps.sh";
/// The Dockerfile's `FROM`.
const BASE_IMAGE: &str = "docker.io/library/debian:bookworm-slim";
/// A build runs `apt-get` against Debian's mirror on a loaded machine.
const BUILD_DEADLINE: Duration = Duration::from_secs(600);
/// Any other podman command.
const PODMAN_DEADLINE: Duration = Duration::from_secs(120);
/// `podman stop -t`: after this, podman kills the container.
const STOP_TIMEOUT_S: u64 = 10;
/// A runner that heard the SIGTERM exits well before podman's kill.
const STOPPED_WITHIN: Duration = Duration::from_secs(5);

/// The podman settings of this test (see the file's comments).
fn containers_conf() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/containers.conf")
}

fn podman() -> Command {
    let mut command = Command::new("podman");
    command
        .env("CONTAINERS_CONF", containers_conf())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// A command's program and arguments, without its environment (which may
/// hold the token).
fn argv(command: &Command) -> String {
    let command = command.as_std();
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a podman command to its end within `deadline`.
async fn run(mut command: Command, deadline: Duration) -> Output {
    let what = argv(&command);
    tokio::time::timeout(deadline, command.output())
        .await
        .unwrap_or_else(|_| panic!("{what} did not end within {deadline:?}"))
        .unwrap_or_else(|error| panic!("{what}: {error}: install podman with `sudo {PREPARE}`"))
}

/// Runs a podman command that must succeed; returns its stdout.
async fn succeed(command: Command, deadline: Duration) -> String {
    let what = argv(&command);
    let output = run(command, deadline).await;
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Removes what the test made, however it ends.
struct Cleanup {
    image: String,
    container: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let podman = || {
            let mut command = std::process::Command::new("podman");
            command
                .env("CONTAINERS_CONF", containers_conf())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            command
        };
        let _ = podman()
            .args(["rm", "--force", "--volumes", "--time", "0", &self.container])
            .status();
        let _ = podman().args(["rmi", "--force", &self.image]).status();
    }
}

/// Builds the image from `installers/Dockerfile` with this test's
/// `runner` as the only file of the build context.
async fn build(tag: &str) {
    let context = tempfile::tempdir().expect("tempdir");
    std::fs::copy(support::runner_bin(), context.path().join("runner"))
        .expect("copy runner into the build context");
    let dockerfile = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../installers/Dockerfile");
    let mut command = podman();
    command
        // No registry is asked: the base is the one podman has.
        .args([
            "build",
            "--pull=never",
            "--network",
            "host",
            "--quiet",
            "-f",
        ])
        .arg(&dockerfile)
        .args(["-t", tag])
        .arg(context.path());
    succeed(command, BUILD_DEADLINE).await;
}

/// podman and the base image are there, or the test says how to get them.
async fn require_podman_and_base_image() {
    let mut exists = podman();
    exists.args(["image", "exists", BASE_IMAGE]);
    let output = run(exists, PODMAN_DEADLINE).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "podman has no {BASE_IMAGE}: make its stand-in with `sudo {PREPARE}`\n{}",
        stderr.trim()
    );
}

async fn container_logs(container: &str) -> String {
    let mut logs = podman();
    logs.args(["logs", container]);
    let output = run(logs, PODMAN_DEADLINE).await;
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test]
#[ignore = "needs podman and the stand-in base image: run scripts/install-test-deps.sh as root (.ci/run does, and runs it with --include-ignored)"]
async fn the_docker_image_runs_the_runner_against_a_relay_and_stops_on_sigterm() {
    require_podman_and_base_image().await;
    let unique = format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis()
    );
    let cleanup = Cleanup {
        image: format!("localhost/runner-image-test:{unique}"),
        container: format!("runner-image-test-{unique}"),
    };
    let started = Instant::now();
    build(&cleanup.image).await;
    eprintln!("container image: built in {:?}", started.elapsed());

    // The entrypoint is the binary, through tini.
    let direct = tokio::process::Command::new(support::runner_bin())
        .arg("--version")
        .output()
        .await
        .expect("runner --version");
    let mut version = podman();
    version.args([
        "run",
        "--rm",
        "--network",
        "none",
        &cleanup.image,
        "--version",
    ]);
    let in_image = succeed(version, PODMAN_DEADLINE).await;
    assert_eq!(in_image, String::from_utf8_lossy(&direct.stdout));
    assert!(in_image.starts_with("runner "), "{in_image}");

    // As the Dockerfile says to run it, the token in the environment only:
    // `-e NAME` without a value passes podman's own variable on.
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut start = podman();
    start
        .args(["run", "--detach", "--name", &cleanup.container])
        .args([
            "--network",
            "host",
            "-e",
            "RUNNER_URL",
            "-e",
            "RUNNER_TOKEN",
        ])
        .arg(&cleanup.image)
        .env("RUNNER_URL", &relay.url)
        .env("RUNNER_TOKEN", &token);
    succeed(start, PODMAN_DEADLINE).await;

    let deadline = Instant::now() + support::READY_DEADLINE;
    while relay.status(&env).await != "online" {
        if Instant::now() >= deadline {
            panic!(
                "the container's runner never came online:\n{}",
                container_logs(&cleanup.container).await
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Nor does the image's entrypoint put the token on a command line:
    // every process's argv in the container, read from outside it.
    let mut argvs = podman();
    argvs.args([
        "exec",
        &cleanup.container,
        "sh",
        "-c",
        "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done",
    ]);
    let argvs = succeed(argvs, PODMAN_DEADLINE).await;
    assert!(
        argvs.contains("runner"),
        "the runner's argv is listed: {argvs}"
    );
    assert!(!argvs.contains(&token), "the token is not in argv: {argvs}");

    let (status, pong) = relay
        .invoke(
            &env,
            json!({"tool_name": "ping", "args": {"from": "the image"}}),
        )
        .await;
    assert_eq!(status, 200, "{pong}");
    assert_eq!(pong["result"]["from"], "the image", "{pong}");

    let (status, shell) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command":
                ". /etc/os-release; echo \"$VERSION_CODENAME\"; id -u; pwd; \
                 touch probe && echo writable; echo \"token:${RUNNER_TOKEN:-unset}\""}}),
        )
        .await;
    assert_eq!(status, 200, "{shell}");
    assert_eq!(shell["exit_code"], 0, "{shell}");
    assert_eq!(
        shell["result"]["stdout"], "bookworm\n10001\n/workspace\nwritable\ntoken:unset\n",
        "bookworm, the image's user, its workspace, and no token for tools: {shell}"
    );

    let stopping = Instant::now();
    let mut stop = podman();
    stop.args([
        "stop",
        "--time",
        &STOP_TIMEOUT_S.to_string(),
        &cleanup.container,
    ]);
    succeed(stop, PODMAN_DEADLINE).await;
    let stopped_in = stopping.elapsed();
    let mut exit_code = podman();
    exit_code.args([
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        &cleanup.container,
    ]);
    let exit_code = succeed(exit_code, PODMAN_DEADLINE).await;
    let logs = container_logs(&cleanup.container).await;
    assert_eq!(
        exit_code.trim(),
        "0",
        "the runner exited by itself on SIGTERM, not killed:\n{logs}"
    );
    assert!(
        logs.contains("SIGTERM: shutting down"),
        "tini passed SIGTERM on to the runner:\n{logs}"
    );
    assert!(
        stopped_in < STOPPED_WITHIN,
        "stopped in {stopped_in:?}: tini forwards SIGTERM, the runner should not wait for the kill:\n{logs}"
    );
    relay.wait_status(&env, "offline").await;
    eprintln!(
        "container image: stopped in {stopped_in:?}; whole test {:?}",
        started.elapsed()
    );
}
