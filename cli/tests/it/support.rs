//! Test support: a real relay process on 127.0.0.1:0 with a fresh SQLite
//! file, and real runner processes registered against it.
//!
//! No fixed ports and no sleeps for readiness: the relay prints its bound
//! address, and runner readiness is polled through the API with a deadline.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Generous: a cold debug build on a 2-core CI machine is slow to start.
pub const READY_DEADLINE: Duration = Duration::from_secs(30);

pub fn runner_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_runner"))
}

/// Runs `start` (a spawn of a binary this test process wrote) again while
/// the kernel refuses it as busy: a file just written can still be open for
/// writing in a child another test thread forked and has not yet exec'd
/// (ETXTBSY), for as long as that fork takes. Gives up after 2 s.
pub fn retry_while_busy<T>(mut start: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    for _ in 0..100 {
        match start() {
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20));
            }
            started => return started,
        }
    }
    start()
}

/// `runner-relay` is built next to `runner` (README: `cargo build --workspace --bins`).
pub fn relay_bin() -> PathBuf {
    let path = runner_bin().with_file_name("runner-relay");
    assert!(
        path.exists(),
        "{} is missing: build it first with `cargo build --workspace --bins`",
        path.display()
    );
    path
}

pub struct Relay {
    pub url: String,
    pub admin_key: String,
    /// The console's one-time sign-in link a first start prints.
    pub sign_in_link: Option<String>,
    pub dir: tempfile::TempDir,
    /// Killed when the test ends (kill_on_drop).
    child: Child,
    /// How it was started, for [`Relay::restart`].
    launch: Launch,
    http: reqwest::Client,
}

/// The flags and variables a relay was started with.
struct Launch {
    extra: Vec<String>,
    env: Vec<(String, String)>,
    logged: bool,
}

impl Relay {
    /// A `runner` command for the API (`invoke`, `env`, …) as this relay's
    /// admin, with its own config and state directories.
    pub fn admin_command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(runner_bin());
        command
            .env("RUNNER_URL", &self.url)
            .env("RUNNER_API_KEY", &self.admin_key)
            .env("RUNNER_CONFIG_DIR", self.dir.path().join("admin-config"))
            .env("RUNNER_STATE_DIR", self.dir.path().join("admin-state"))
            .env("NO_COLOR", "1");
        command
    }

    pub async fn spawn() -> Relay {
        Relay::spawn_with(&[]).await
    }

    /// A relay with extra `serve` flags (e.g. `--tls-cert`).
    pub async fn spawn_with(extra: &[&str]) -> Relay {
        Relay::start(extra, &[], None).await
    }

    /// A relay with extra `serve` flags and environment variables,
    /// logging at info into [`Relay::log`] instead of the test's stderr.
    pub async fn spawn_logged(extra: &[&str], env: &[(&str, &str)]) -> Relay {
        let dir = tempfile::tempdir().expect("tempdir");
        Relay::start(extra, env, Some(dir)).await
    }

    fn log_path(dir: &Path) -> PathBuf {
        dir.join("relay.log")
    }

    /// What a relay of [`Relay::spawn_logged`] has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(Relay::log_path(self.dir.path())).expect("relay log")
    }

    async fn start(
        extra: &[&str],
        env: &[(&str, &str)],
        logged: Option<tempfile::TempDir>,
    ) -> Relay {
        let launch = Launch {
            extra: extra.iter().map(|flag| (*flag).to_owned()).collect(),
            env: env
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect(),
            logged: logged.is_some(),
        };
        let dir = logged.unwrap_or_else(|| tempfile::tempdir().expect("tempdir"));
        let (child, url, admin_key, sign_in_link) =
            Relay::launch(dir.path(), "127.0.0.1:0", &launch).await;
        Relay {
            url,
            sign_in_link,
            admin_key: admin_key.expect("first start prints an admin key"),
            dir,
            child,
            launch,
            // The API client of the tests trusts any certificate: TLS
            // behaviour is what the runner is tested for, not this client.
            http: reqwest::Client::builder()
                .use_preconfigured_tls(insecure_client_tls())
                .build()
                .expect("client"),
        }
    }

    /// Starts `runner-relay serve` on `listen` with the data directory in
    /// `dir`; waits until it listens. Returns it, its URL and the admin key
    /// it printed (only a first start prints one).
    async fn launch(
        dir: &Path,
        listen: &str,
        launch: &Launch,
    ) -> (Child, String, Option<String>, Option<String>) {
        let (stderr, level) = if launch.logged {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(Relay::log_path(dir))
                .expect("log file");
            (Stdio::from(file), "info")
        } else {
            (Stdio::inherit(), "warn")
        };
        let mut child = Command::new(relay_bin())
            .args(["serve", "--listen", listen, "--data-dir"])
            .arg(dir.join("relay"))
            .args(&launch.extra)
            .env_remove("RUNNER_RELAY_DATABASE_URL")
            .env_remove("RUNNER_RELAY_ACCESS_LOG")
            .env("RUST_LOG", level)
            .envs(launch.env.iter().map(|(name, value)| (name, value)))
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn runner-relay");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut admin_key = None;
        let mut sign_in_link = None;
        let url = tokio::time::timeout(READY_DEADLINE, async {
            while let Some(line) = lines.next_line().await.expect("read relay stdout") {
                if let Some(key) = line.strip_prefix("admin API key (shown once): ") {
                    admin_key = Some(key.trim().to_owned());
                }
                if let Some(link) =
                    line.strip_prefix("console sign-in link (works once, for 15 min): ")
                {
                    sign_in_link = Some(link.trim().to_owned());
                }
                if let Some(url) = line.strip_prefix("runner-relay listening on ") {
                    return url.trim().to_owned();
                }
            }
            panic!("runner-relay exited before listening");
        })
        .await
        .expect("relay did not start listening in time");
        // Keep draining stdout so the relay never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        (child, url, admin_key, sign_in_link)
    }

    /// Kills the relay process at once (SIGKILL), as a crash would.
    pub async fn kill(&mut self) {
        self.child.start_kill().expect("kill the relay");
        self.child.wait().await.expect("the relay exits");
    }

    /// Starts the relay again (after [`Relay::kill`]) on the same address
    /// and data directory: its SQLite store keeps everything, the admin key
    /// included.
    pub async fn restart(&mut self) {
        let address = self
            .url
            .split_once("://")
            .map_or(self.url.as_str(), |(_, rest)| rest)
            .to_owned();
        let (child, url, _, _) = Relay::launch(self.dir.path(), &address, &self.launch).await;
        assert_eq!(url, self.url, "the relay came back on its address");
        self.child = child;
    }

    /// Sends an API request with the admin key; returns status and JSON body.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        self.api_with_key(&self.admin_key, method, path, body).await
    }

    pub async fn api_with_key(
        &self,
        key: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(key);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("relay answers");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub async fn create_env(&self, body: Value) -> String {
        let (status, env) = self
            .api(reqwest::Method::POST, "/execution-environments", Some(body))
            .await;
        assert!(status == 200 || status == 201, "create env: {status} {env}");
        env["id"].as_str().expect("id").to_owned()
    }

    pub async fn token(&self, env: &str) -> String {
        let (status, body) = self
            .api(
                reqwest::Method::POST,
                &format!("/execution-environments/{env}/generate-token"),
                None,
            )
            .await;
        assert_eq!(status, 200, "generate token: {body}");
        body["token"].as_str().expect("token").to_owned()
    }

    pub async fn invoke(&self, env: &str, body: Value) -> (u16, Value) {
        self.api(
            reqwest::Method::POST,
            &format!("/execution-environments/{env}/invoke-tool"),
            Some(body),
        )
        .await
    }

    pub async fn status(&self, env: &str) -> String {
        let (_, body) = self
            .api(
                reqwest::Method::GET,
                &format!("/execution-environments/{env}/status"),
                None,
            )
            .await;
        body["status"].as_str().unwrap_or("?").to_owned()
    }

    pub async fn wait_status(&self, env: &str, want: &str) {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let status = self.status(env).await;
            if status == want {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{env} stayed {status}, wanted {want}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A registered runner's directories and (when running) its process.
pub struct Runner {
    pub home: tempfile::TempDir,
    pub child: Option<Child>,
}

/// Longest a runner still running when its test ends is given to stop.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// A runner still running when its test ends (a failed assertion, or a
/// test that leaves it running) gets SIGTERM and [`STOP_GRACE`] to stop
/// what it started, as a service manager gives it; then `kill_on_drop`'s
/// SIGKILL. Killed outright, it would leave its browser running.
impl Drop for Runner {
    fn drop(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            return;
        };
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            match child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Ok(Some(_)) | Err(_) => return,
            }
        }
    }
}

impl Runner {
    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join("config")
    }
    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join("state")
    }
    pub fn workspace(&self) -> PathBuf {
        self.home.path().join("workspace")
    }

    /// A `runner` command with this runner's directories.
    pub fn command(&self) -> Command {
        let mut command = Command::new(runner_bin());
        command
            .env("RUNNER_CONFIG_DIR", self.config_dir())
            .env("RUNNER_STATE_DIR", self.state_dir())
            .env("RUNNER_WORKSPACE", self.workspace())
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env_remove("RUNNER_PERMISSION_CONFIG")
            .env_remove("RUNNER_URL")
            .env_remove("RUNNER_API_KEY")
            .env_remove("RUNNER_TOKEN")
            .kill_on_drop(true);
        command
    }

    /// Registers with `token` (passed in the environment, as users should).
    pub async fn register(relay: &Relay, token: &str) -> Runner {
        let runner = Runner {
            home: tempfile::tempdir().expect("tempdir"),
            child: None,
        };
        std::fs::create_dir_all(runner.workspace()).expect("workspace");
        let output = runner
            .command()
            .args(["register", "--url", &relay.url])
            .env("RUNNER_TOKEN", token)
            .output()
            .await
            .expect("run register");
        assert!(
            output.status.success(),
            "register failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        runner
    }

    pub fn start(&mut self, extra: &[&str]) {
        self.start_with(extra, &[]);
    }

    /// `run` with extra arguments and environment variables; stderr is
    /// kept for [`Runner::stop`].
    pub fn start_with(&mut self, extra: &[&str], vars: &[(&str, &str)]) {
        let child = self
            .command()
            .arg("run")
            .args(extra)
            .envs(vars.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn runner run");
        self.child = Some(child);
    }

    /// Registers a runner for a new environment (not started).
    pub async fn registered(relay: &Relay, env_body: Value) -> (String, Runner) {
        let env = relay.create_env(env_body).await;
        let token = relay.token(&env).await;
        (env, Runner::register(relay, &token).await)
    }

    /// Registers and starts a runner for a new environment, waits until online.
    pub async fn online(relay: &Relay, env_body: Value) -> (String, Runner) {
        let (env, mut runner) = Runner::registered(relay, env_body).await;
        runner.start(&[]);
        relay.wait_status(&env, "online").await;
        (env, runner)
    }

    /// Sends SIGTERM and waits for the exit status and stderr.
    pub async fn stop(&mut self) -> (Option<i32>, String) {
        let child = self.child.take().expect("running");
        if let Some(pid) = child.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        wait_output(child).await
    }
}

/// Waits (with a deadline) for a child to exit; returns its code and stderr.
pub async fn wait_output(child: Child) -> (Option<i32>, String) {
    let output = tokio::time::timeout(READY_DEADLINE, child.wait_with_output())
        .await
        .expect("process exits in time")
        .expect("wait");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A development-tier environment: every tool, every path.
pub fn dev_env() -> Value {
    json!({"tier": "development"})
}

/// Whether any process's command line contains `marker`.
pub fn process_with(marker: &str) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|bytes| {
                let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
                text.contains(marker)
            })
            .unwrap_or(false)
    })
}

pub async fn wait_until(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + READY_DEADLINE;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The check named `name` in a `runner doctor --json` report.
pub fn doctor_check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .and_then(|checks| checks.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no {name:?} check in {report}"))
}

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// A rustls client config that accepts any server certificate (test API
/// client only; see [`Relay::spawn_with`]): the runner's own
/// `--insecure-skip-tls-verify` mode.
fn insecure_client_tls() -> rustls::ClientConfig {
    let options = runner_cli::tls::TlsOptions {
        ca_file: None,
        insecure_skip_verify: true,
    };
    runner_cli::tls::build(&options)
        .expect("tls config")
        .as_ref()
        .clone()
}
