//! The real binary: the stdout contract of `serve` and `admin create-key`,
//! and how it reports a failure on stderr.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn serve_prints_the_admin_key_then_the_address_and_admin_works_alongside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let binary = env!("CARGO_BIN_EXE_runner-relay");
    let (child, first, second) = serve(dir.path()).await;
    let key = first
        .strip_prefix("admin API key (shown once): ")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .to_owned();
    assert!(key.starts_with("rnrk_"));
    let url = second
        .strip_prefix("runner-relay listening on ")
        .unwrap_or_else(|| panic!("unexpected second line {second:?}"))
        .to_owned();
    assert!(!url.ends_with(":0"));

    let http = reqwest::Client::new();
    let response = http
        .get(format!("{url}/execution-environments"))
        .bearer_auth(&key)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);

    // admin create-key writes to the same database while the server runs.
    let output = Command::new(binary)
        .args(["admin", "--data-dir"])
        .arg(dir.path())
        .args(["create-key", "--name", "ci"])
        .env("RUST_LOG", "warn")
        .output()
        .expect("admin runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let member_key = String::from_utf8(output.stdout).expect("utf8");
    let member_key = member_key.trim_end();
    assert!(member_key.starts_with("rnrk_") && !member_key.contains(' '));
    let response = http
        .get(format!("{url}/execution-environments"))
        .bearer_auth(member_key)
        .send()
        .await
        .expect("request");
    assert_eq!(response.status(), StatusCode::OK);
    drop(child);
}

/// The soft and hard open-file limits of a process, from `/proc/PID/limits`.
#[cfg(target_os = "linux")]
fn open_file_limits(pid: &str) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .expect("the open-files line");
    let mut numbers = line
        .split_whitespace()
        .filter_map(|word| word.parse::<u64>().ok());
    let soft = numbers.next().expect("soft limit");
    let hard = numbers.next().expect("hard limit");
    (soft, hard)
}

/// Whether `serve` printed its listening line (read within the deadline).
async fn says_it_listens(stdout: std::process::ChildStdout) -> bool {
    let listening = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line.starts_with("runner-relay listening on "))
    });
    tokio::time::timeout(crate::support::DEADLINE, listening)
        .await
        .expect("listening in time")
        .expect("joined")
}

/// A relay started under the usual soft limit of 1024 (here 256) would
/// refuse runners past it: it raises its soft limit to the hard one.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn serve_raises_its_open_file_limit_to_the_hard_one() {
    let (_, hard) = open_file_limits("self");
    assert!(
        hard > 256,
        "this test needs a hard limit above 256, not {hard}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let binary = env!("CARGO_BIN_EXE_runner-relay");
    let mut child = Command::new("bash")
        .args([
            "-c",
            r#"ulimit -Sn 256 && exec "$0" serve --listen 127.0.0.1:0 --data-dir "$1""#,
        ])
        .arg(binary)
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let pid = child.id().to_string();
    let child = Killed(child);
    assert!(
        says_it_listens(stdout).await,
        "the relay said where it listens"
    );
    assert_eq!(open_file_limits(&pid), (hard, hard), "soft raised to hard");
    drop(child);
    let log: Vec<String> = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .collect();
    assert!(
        log.iter()
            .any(|line| line.contains("raised the open-file limit") && line.contains("256")),
        "{log:?}"
    );
}

/// `--worker-threads` (or RUNNER_RELAY_WORKER_THREADS) sets how many
/// threads serve the API and the sockets; without it, one per CPU.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn serve_uses_the_worker_threads_it_is_given() {
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    for (flags, env, want) in [
        (&[][..], None, cpus),
        (&["--worker-threads", "3"][..], None, 3),
        (&[][..], Some("1"), 1),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut command = Command::new(env!("CARGO_BIN_EXE_runner-relay"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(flags)
            .env_remove("RUNNER_RELAY_WORKER_THREADS")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(threads) = env {
            command.env("RUNNER_RELAY_WORKER_THREADS", threads);
        }
        let mut child = command.spawn().expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let pid = child.id();
        let child = Killed(child);
        assert!(says_it_listens(stdout).await, "{flags:?} {env:?}");
        // Tokio names its blocking-pool threads alike. A relay that has
        // only started has none, but on a loaded machine a blocking task
        // of its start may still hold one; such a thread ends after 10 s
        // idle, worker threads never do.
        let workers = || {
            std::fs::read_dir(format!("/proc/{pid}/task"))
                .expect("tasks")
                .flatten()
                .filter(|task| {
                    std::fs::read_to_string(task.path().join("comm"))
                        .is_ok_and(|comm| comm.trim() == "tokio-rt-worker")
                })
                .count()
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        let mut seen = workers();
        while seen > want && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            seen = workers();
        }
        assert_eq!(seen, want, "{flags:?} {env:?}");
        drop(child);
    }
}

/// Runs the real binary to its exit; its status code and its stderr.
fn failing(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_runner-relay"))
        .args(args)
        .env("RUST_LOG", "off")
        .stdin(Stdio::null())
        .output()
        .expect("the relay runs");
    (
        output.status.code(),
        String::from_utf8(output.stderr).expect("UTF-8 on stderr"),
    )
}

/// A failure reads as `runner`'s do: `error:` with what failed, one
/// `Caused by:` line per cause, then `hint:` with what to do about it.
#[tokio::test]
async fn a_failure_is_reported_as_error_caused_by_and_hint() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port to take");
    let address = taken.local_addr().expect("its address").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_str().expect("a UTF-8 temp path");

    let (code, stderr) = failing(&["serve", "--listen", &address, "--data-dir", data_dir]);
    assert_eq!(code, Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(lines[0], format!("error: binding {address}"));
    assert!(
        lines[1].starts_with("  Caused by: ") && lines[1].contains("in use"),
        "{stderr}"
    );
    assert_eq!(
        lines[2],
        format!(
            "hint: another process listens on {address}; stop it, or pick another address with --listen"
        )
    );

    // A configuration the relay refuses before starting: no cause, a hint.
    let (code, stderr) = failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--nats-url",
        "nats://127.0.0.1:4222",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: --nats-url needs a shared postgres:// --database-url (several relays cannot \
         share a SQLite file)\nhint: give every relay the same --database-url postgres://…, \
         or drop --nats-url to run one relay\n"
    );
}

/// A flag it does not know: clap's own `error:` and usage, exit code 2, as
/// `runner` answers one.
#[test]
fn an_unknown_flag_is_a_usage_error() {
    let (code, stderr) = failing(&["serve", "--no-such-flag"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: unexpected argument '--no-such-flag' found"),
        "{stderr}"
    );
    assert!(stderr.contains("Usage: runner-relay serve"), "{stderr}");
}

/// `serve` binds before it creates the store's first admin key: a start
/// that cannot listen prints no key, and the next start still gets one.
/// A second relay on the same SQLite data dir is refused, naming the PID
/// of the one that serves it.
#[tokio::test]
async fn serve_binds_first_and_owns_its_sqlite_store() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port to take");
    let address = taken.local_addr().expect("its address").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_str().expect("a UTF-8 temp path");
    let binary = env!("CARGO_BIN_EXE_runner-relay");

    let refused = Command::new(binary)
        .args(["serve", "--listen", &address, "--data-dir", data_dir])
        .env("RUST_LOG", "off")
        .output()
        .expect("the relay runs");
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        refused.stdout.is_empty(),
        "a relay that cannot listen printed {:?}",
        String::from_utf8_lossy(&refused.stdout)
    );

    let (child, key, listening) = serve(std::path::Path::new(data_dir)).await;
    let pid = child.0.id();
    assert!(
        key.starts_with("admin API key (shown once): rnrk_"),
        "{key:?}"
    );
    assert!(
        listening.starts_with("runner-relay listening on "),
        "{listening:?}"
    );

    // Bounded: without the lock this relay would start and serve, and the
    // test must fail rather than wait for it.
    let second = tokio::process::Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir", data_dir])
        .env("RUST_LOG", "off")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let second = tokio::time::timeout(crate::support::DEADLINE, second)
        .await
        .expect("a second relay on the same store exits at once")
        .expect("the relay runs");
    let (code, stderr) = (
        second.status.code(),
        String::from_utf8_lossy(&second.stderr).into_owned(),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: another relay (PID {pid}) already serves the store"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("hint: stop that relay first"), "{stderr}");
    drop(child);
}

/// `admin` never makes a store by accident: where there is none it refuses,
/// saying where it looked and why there, and creates nothing; `--create`
/// asks for a new one. The store options work after the subcommand too.
#[test]
fn admin_refuses_to_create_a_store_unless_asked() {
    let home = tempfile::tempdir().expect("tempdir");
    let data_dir = home.path().join("relay-data");
    let admin = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_runner-relay"))
            .arg("admin")
            .args(args)
            .env_remove("RUNNER_RELAY_DATA_DIR")
            .env_remove("RUNNER_RELAY_DATABASE_URL")
            .env("HOME", home.path())
            .env("XDG_DATA_HOME", home.path().join("xdg"))
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .expect("the relay runs")
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();

    let refused = admin(&[
        "create-key",
        "--data-dir",
        data_dir.to_str().expect("UTF-8"),
    ]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        refused.stdout.is_empty(),
        "a key was printed: {}",
        text(&refused.stdout)
    );
    assert!(
        stderr.starts_with(&format!(
            "error: no relay store at {} (looked there because of --data-dir",
            data_dir.join("relay.db").display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("--create"), "{stderr}");
    assert!(!data_dir.exists(), "admin created {}", data_dir.display());

    // Without any store option: the platform directory, said so, untouched.
    let refused = admin(&["create-key"]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the platform data directory"), "{stderr}");
    assert!(!home.path().join("xdg").exists(), "{stderr}");

    let created = admin(&[
        "create-key",
        "--name",
        "first",
        "--data-dir",
        data_dir.to_str().expect("UTF-8"),
        "--create",
    ]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    assert!(text(&created.stdout).starts_with("rnrk_"));
    // The store exists now: no --create needed, before or after the subcommand.
    for args in [
        [
            "--data-dir",
            data_dir.to_str().expect("UTF-8"),
            "create-team",
            "ops",
        ],
        [
            "create-team",
            "dev",
            "--data-dir",
            data_dir.to_str().expect("UTF-8"),
        ],
    ] {
        let output = admin(&args);
        assert!(
            output.status.success(),
            "{args:?}: {}",
            text(&output.stderr)
        );
    }
}

/// `--metrics-addr` beyond loopback and a scrape token file others can
/// read are refused at start, with a hint; neither is needed to start.
#[test]
fn metrics_flags_are_checked_before_serving() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().to_str().expect("a UTF-8 temp path");
    let (code, stderr) = failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--metrics-addr",
        "0.0.0.0:0",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with("error: --metrics-addr 0.0.0.0:0 is not a loopback address"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: ") && stderr.contains("--metrics-addr-public"),
        "{stderr}"
    );

    let token = dir.path().join("scrape-token");
    std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").expect("token written");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    let token_path = token.to_str().expect("UTF-8 path");
    let (code, stderr) = failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--metrics-token-file",
        token_path,
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("is readable by others"), "{stderr}");
    assert!(
        stderr.contains(&format!("hint: chmod 600 {token_path}")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("0123456789abcdef"),
        "the token leaked: {stderr}"
    );

    // Too short, even when private.
    std::fs::write(&token, "short\n").expect("token written");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let (code, stderr) = failing(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir,
        "--metrics-token-file",
        token_path,
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("at least 32 characters"), "{stderr}");
    assert!(!stderr.contains("short"), "the token leaked: {stderr}");

    let (code, stderr) = failing(&["serve", "--no-metrics", "--metrics-addr", "127.0.0.1:0"]);
    assert_eq!(code, Some(2), "{stderr}");
}

/// `admin list-keys`, `list-members` and `revoke-key` on the store a
/// running relay serves: keys by hint only, members with their roles, and
/// a revoked key refused by that relay (after its 10 s member cache at
/// most; a fresh key is not cached yet).
#[tokio::test]
async fn admin_lists_keys_and_members_and_revokes_a_key_the_running_relay_then_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let binary = env!("CARGO_BIN_EXE_runner-relay");
    let (child, _key_line, listening) = serve(dir.path()).await;
    let url = listening
        .strip_prefix("runner-relay listening on ")
        .expect("listening line")
        .to_owned();
    let admin = |args: &[&str]| {
        Command::new(binary)
            .args(["admin", "--data-dir"])
            .arg(dir.path())
            .args(args)
            .env("RUST_LOG", "off")
            .stdin(Stdio::null())
            .output()
            .expect("admin runs")
    };
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    assert!(admin(&["create-team", "ops"]).status.success());
    let created = admin(&["create-key", "--name", "ci-bot", "--agent", "--team", "ops"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let ci_key = text(&created.stdout).trim().to_owned();

    let listed = admin(&["list-keys", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let keys: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let keys = keys.as_array().expect("an array");
    assert_eq!(keys.len(), 2, "the first admin's and ci-bot's: {keys:?}");
    assert!(!text(&listed.stdout).contains(&ci_key), "a key was printed");
    let ci = keys
        .iter()
        .find(|key| key["member"]["name"] == "ci-bot")
        .expect("ci-bot's key");
    assert_eq!(ci["member"]["kind"], "agent");
    assert_eq!(ci["member"]["teams"], serde_json::json!(["ops"]));
    let hint = ci["hint"].as_str().expect("hint");
    assert!(
        hint.starts_with("rnrk_…") && ci_key.ends_with(&hint["rnrk_…".len()..]),
        "{hint}"
    );
    let table = admin(&["list-keys"]);
    let table = text(&table.stdout);
    assert!(table.starts_with("KEY"), "{table}");
    assert!(
        table.contains("agent (ops)") && table.contains(hint),
        "{table}"
    );

    let listed = admin(&["list-members", "--json"]);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let members: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("JSON");
    let members = members.as_array().expect("an array");
    assert_eq!(members.len(), 2, "{members:?}");
    let named = |members: &[serde_json::Value], name: &str| {
        members
            .iter()
            .find(|member| member["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no member {name:?}: {members:?}"))
    };
    assert_eq!(named(members, "admin")["admin"], true, "{members:?}");
    assert_eq!(named(members, "ci-bot")["api_keys"], 1);

    // Without a terminal, revoking asks for --yes and changes nothing.
    let refused = admin(&["revoke-key", "ci-bot"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused.stderr));
    assert!(
        text(&refused.stderr).contains("--yes"),
        "{}",
        text(&refused.stderr)
    );
    let http = reqwest::Client::new();
    let status = |key: String| {
        let http = http.clone();
        let url = url.clone();
        async move {
            http.get(format!("{url}/execution-environments"))
                .bearer_auth(key)
                .send()
                .await
                .expect("request")
                .status()
        }
    };
    let revoked = admin(&["revoke-key", "ci-bot", "--yes"]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    assert!(
        text(&revoked.stderr).contains("revoked 1 API key of \"ci-bot\""),
        "{}",
        text(&revoked.stderr)
    );
    // Never used before the revocation, so not in the relay's cache.
    assert_eq!(status(ci_key.clone()).await, StatusCode::UNAUTHORIZED);
    let members = admin(&["list-members", "--json"]);
    let members: serde_json::Value = serde_json::from_slice(&members.stdout).expect("JSON");
    let members = members.as_array().expect("an array");
    assert_eq!(
        named(members, "ci-bot")["api_keys"],
        0,
        "the member stays, keyless"
    );
    let again = admin(&["revoke-key", "ci-bot", "--yes"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("holds no API key"),
        "{}",
        text(&again.stderr)
    );
    let audit = admin(&["audit", "verify", "--json"]);
    assert!(audit.status.success(), "{}", text(&audit.stderr));
    drop(child);
}

/// `runner-relay serve` on a free port over `data_dir`: the process
/// (killed when dropped), its first line on stdout (the admin key, on a
/// first start) and the `listening` line that follows the console's.
async fn serve(data_dir: &std::path::Path) -> (Killed, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_runner-relay"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .env("RUST_LOG", "off")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let child = Killed(child);
    let lines = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let listening = after_console_lines(&mut lines);
        (first, listening)
    });
    let (first, listening) = tokio::time::timeout(crate::support::DEADLINE, lines)
        .await
        .expect("lines in time")
        .expect("joined");
    (child, first, listening)
}

/// The line after the console's (`console: URL`, and the sign-in link on a
/// first start), which `serve` prints before it says it listens; panics
/// if they are missing.
fn after_console_lines(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> String {
    let console = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(
        console.starts_with("console: http://") && console.ends_with("/console"),
        "{console:?}"
    );
    let mut next = lines.next().and_then(Result::ok).unwrap_or_default();
    if next.starts_with("console sign-in link (works once, for 15 min): ") {
        assert!(next.contains("/console/sign-in#code=rnrl_"), "{next:?}");
        next = lines.next().and_then(Result::ok).unwrap_or_default();
    }
    next
}
