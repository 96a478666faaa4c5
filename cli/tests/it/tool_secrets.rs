//! A tool cannot read the runner's secrets: not through `/proc` (a runner
//! started as an unprivileged user, tools running as that user, with
//! `RUNNER_API_KEY` in its environment, and `shell` calls that try its
//! environment and its memory), and not through its files or its keychain
//! (the credential file, the config and state directories and the session
//! bus socket are hidden from tools, as root and as another user), while
//! the workspace under the state directory stays theirs.

use std::os::unix::fs::{chown, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::*;

/// `nobody`'s ids on Debian.
const NOBODY: u32 = 65534;
/// `setpriv` dropping to [`NOBODY`]; the command to run follows `--`.
fn as_nobody() -> Vec<String> {
    let id = NOBODY.to_string();
    ["setpriv", "--reuid", &id, "--regid", &id, "--clear-groups"]
        .map(str::to_owned)
        .to_vec()
}
const SECRET: &str = "rnrk_secret-the-tools-must-not-see";

fn chown_tree(path: &Path) {
    chown(path, Some(NOBODY), Some(NOBODY)).expect("chown");
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("read dir") {
            chown_tree(&entry.expect("entry").path());
        }
    }
}

/// `runner run` for `runner` as `nobody` (through `setpriv`), with the
/// environment its own command would have plus `vars`.
fn start_as_nobody(runner: &mut Runner, extra: &[&str], vars: &[(&str, &str)]) {
    chown_tree(runner.home.path());
    let command = runner.command();
    let program = command.as_std().get_program().to_owned();
    let setpriv = as_nobody();
    let mut as_nobody = tokio::process::Command::new(&setpriv[0]);
    as_nobody
        .args(&setpriv[1..])
        .arg("--")
        .arg(program)
        .arg("run")
        .args(extra);
    for (key, value) in command.as_std().get_envs() {
        match value {
            Some(value) => as_nobody.env(key, value),
            None => as_nobody.env_remove(key),
        };
    }
    as_nobody
        .envs(vars.iter().copied())
        .env("HOME", runner.home.path())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    runner.child = Some(as_nobody.spawn().expect("start the runner as nobody"));
}

async fn shell(relay: &Relay, env: &str, command: &str) -> Value {
    let (status, body) = relay
        .invoke(
            env,
            json!({"tool_name": "shell", "args": {"command": command}}),
        )
        .await;
    assert_eq!(status, 200, "{command}: {body}");
    body
}

fn stdout(body: &Value) -> &str {
    body["result"]["stdout"].as_str().unwrap_or_default()
}

fn stderr(body: &Value) -> &str {
    body["result"]["stderr"].as_str().unwrap_or_default()
}

/// Whether `argv` runs and succeeds here: what a test needs of the host.
fn host_runs(argv: &[&str]) -> bool {
    let Some((program, args)) = argv.split_first() else {
        return false;
    };
    std::process::Command::new(program)
        .args(args)
        .status()
        .is_ok_and(|status| status.success())
}

#[tokio::test]
async fn a_tool_cannot_read_the_runners_environment_or_memory() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!(
            "SKIPPED: starting the runner as another user needs root (CI runs as root); \
             as root a tool could read anything, so the test needs both"
        );
        return;
    }
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut runner = Runner::register(&relay, &token).await;
    start_as_nobody(&mut runner, &[], &[("RUNNER_API_KEY", SECRET)]);
    relay.wait_status(&env, "online").await;

    let body = shell(&relay, &env, "id -u; echo ppid=$PPID").await;
    assert!(
        stdout(&body).starts_with(&format!("{NOBODY}\n")),
        "the tool runs as nobody: {body}"
    );

    for (what, command) in [
        ("environment", "tr '\\0' '\\n' < /proc/$PPID/environ"),
        (
            "memory",
            "set -o pipefail; head -c 16 /proc/$PPID/mem | od -c",
        ),
        ("file descriptors", "ls -l /proc/$PPID/fd"),
    ] {
        let body = shell(&relay, &env, command).await;
        let text = body.to_string();
        assert!(
            !text.contains(SECRET),
            "the tool read the key from the runner's {what}: {body}"
        );
        assert_ne!(
            body["exit_code"], 0,
            "the runner's {what} was readable: {body}"
        );
        assert!(
            stderr(&body).contains("Permission denied"),
            "{what}: {body}"
        );
    }
}

/// A registered runner whose files a tool will look for: its credential
/// file, its config and state directories (the workspace inside the
/// latter, as by default), and a session bus socket the runner is told
/// about, which the config makes worth hiding (it says the token is in
/// the keychain; the token itself comes from `RUNNER_TOKEN`, as in a
/// service or container).
struct Secrets {
    relay: Relay,
    env: String,
    token: String,
    runner: Runner,
    credential_file: PathBuf,
    bus: PathBuf,
    _bus: UnixListener,
}

impl Secrets {
    /// A `shell` call's answer to `cat` of the credential file.
    async fn cat_credential_file(&self) -> Value {
        let command = format!("cat '{}'", self.credential_file.display());
        shell(&self.relay, &self.env, &command).await
    }

    /// What the runner's browser shows of `path` as a `file://` page (an
    /// error page where it is hidden).
    async fn browser_text_of(&self, path: &Path) -> String {
        let browser = |args: Value| {
            self.relay.invoke(
                &self.env,
                json!({"tool_name": "browser", "args": args, "timeout_s": 120}),
            )
        };
        let url = format!("file://{}", path.display());
        let (status, body) = browser(json!({"action": "navigate", "url": url})).await;
        assert_eq!(status, 200, "{body}");
        let (_, body) = browser(json!({"action": "text", "selector": "body"})).await;
        body.to_string()
    }

    /// The runner's `file_read` of the credential file: status and body.
    async fn file_read_credential_file(&self) -> (u16, Value) {
        let path = self.credential_file.display().to_string();
        self.relay
            .invoke(
                &self.env,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await
    }

    async fn new() -> Secrets {
        let relay = Relay::spawn().await;
        let env = relay.create_env(dev_env()).await;
        let token = relay.token(&env).await;
        let runner = Runner::register(&relay, &token).await;
        let credential_file = runner.config_dir().join("credentials/registration-token");
        let config_file = runner.config_dir().join("config.yaml");
        let config = std::fs::read_to_string(&config_file).expect("config.yaml");
        assert!(config.contains("token_location: file"), "{config}");
        write(
            &config_file,
            &config.replace("token_location: file", "token_location: keyring"),
        );
        let bus = runner.home.path().join("bus");
        let listener = UnixListener::bind(&bus).expect("bind the bus socket");
        std::fs::set_permissions(&bus, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        std::fs::create_dir_all(runner.state_dir().join("workspace")).expect("workspace");
        Secrets {
            relay,
            env,
            token,
            runner,
            credential_file,
            bus,
            _bus: listener,
        }
    }

    fn workspace(&self) -> PathBuf {
        self.runner.state_dir().join("workspace")
    }

    /// What `runner run` needs beyond the runner's own command.
    fn vars(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RUNNER_TOKEN", self.token.clone()),
            ("RUNNER_API_KEY", SECRET.to_owned()),
            ("RUNNER_WORKSPACE", self.workspace().display().to_string()),
            (
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", self.bus.display()),
            ),
        ]
    }

    fn start(&mut self, extra: &[&str]) {
        let vars = self.vars();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.runner.start_with(extra, &vars);
    }

    fn start_as_nobody(&mut self) {
        let vars = self.vars();
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        start_as_nobody(&mut self.runner, &[], &vars);
    }

    /// The files are there and readable, for this test process: what the
    /// tool fails to see is hidden, not missing.
    fn control(&self) {
        let stored = std::fs::read_to_string(&self.credential_file).expect("credential file");
        assert_eq!(stored.trim(), self.token);
        let listing = |dir: PathBuf| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .expect("list")
                .map(|entry| entry.expect("entry").file_name().to_string_lossy().into())
                .collect();
            names.sort();
            names
        };
        let config = listing(self.runner.config_dir());
        assert!(config.contains(&"config.yaml".to_owned()), "{config:?}");
        assert!(config.contains(&"credentials".to_owned()), "{config:?}");
        let state = listing(self.runner.state_dir());
        assert!(state.contains(&"runner.lock".to_owned()), "{state:?}");
        std::os::unix::net::UnixStream::connect(&self.bus).expect("the bus socket answers");
    }

    /// A tool finds the credential file, the config and state directories
    /// and the bus empty or refused, `file_read` refuses the credential
    /// file, and the workspace works as ever.
    async fn tool_finds_nothing(&self) {
        let (relay, env) = (&self.relay, self.env.as_str());
        let body = self.cat_credential_file().await;
        assert!(!body.to_string().contains(&self.token), "{body}");
        assert_ne!(body["exit_code"], 0, "{body}");
        assert!(stderr(&body).contains("No such file"), "{body}");

        let body = shell(
            relay,
            env,
            &format!("ls -A '{}'", self.runner.config_dir().display()),
        )
        .await;
        assert_eq!(
            (body["exit_code"].clone(), stdout(&body)),
            (json!(0), ""),
            "{body}"
        );
        let body = shell(
            relay,
            env,
            &format!("ls -A '{}'", self.runner.state_dir().display()),
        )
        .await;
        assert_eq!(
            (body["exit_code"].clone(), stdout(&body)),
            (json!(0), "workspace\n"),
            "only the workspace shows in the state directory: {body}"
        );

        let python = Path::new("/usr/bin/python3");
        if python.exists() {
            let connect = format!(
                "{} -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(\"connected\")' '{}'",
                python.display(),
                self.bus.display()
            );
            let body = shell(relay, env, &connect).await;
            assert!(!stdout(&body).contains("connected"), "{body}");
            assert!(stderr(&body).contains("ConnectionRefusedError"), "{body}");
        } else {
            eprintln!("SKIPPED (the session bus part): no /usr/bin/python3 to connect with");
        }

        // Nor do the runner's own file tools, whatever the access list.
        let (status, body) = self.file_read_credential_file().await;
        assert_eq!(status, 200, "{body}");
        assert!(!body.to_string().contains(&self.token), "{body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap_or_default()
                .contains("one of the runner's own files"),
            "{body}"
        );

        let body = shell(relay, env, "echo visible > seen.txt && cat seen.txt && pwd").await;
        assert_eq!(
            stdout(&body),
            format!(
                "visible\n{}\n",
                self.workspace()
                    .canonicalize()
                    .expect("workspace")
                    .display()
            ),
            "{body}"
        );
        let seen = std::fs::read_to_string(self.workspace().join("seen.txt")).expect("seen.txt");
        assert_eq!(seen, "visible\n", "the tool wrote the real workspace");
    }
}

/// As root (how CI runs): tools run in a mount namespace of their own in
/// which the runner's files are covered. (Root's tools can still read the
/// runner's environment and memory, and undo the namespace: docs/security.md.)
#[tokio::test]
async fn a_root_runners_tools_find_its_files_and_session_bus_hidden() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: this test runs the runner as root; the nobody variant covers users");
        return;
    }
    let mut secrets = Secrets::new().await;
    secrets.start(&["--hide-runner-files", "on"]);
    secrets.relay.wait_status(&secrets.env, "online").await;
    secrets.control();
    secrets.tool_finds_nothing().await;

    // `runner doctor` says so.
    let output = secrets
        .runner
        .command()
        .args(["doctor", "--json"])
        .env("RUNNER_WORKSPACE", secrets.workspace())
        .output()
        .await
        .expect("doctor");
    let report: Value = serde_json::from_slice(&output.stdout).expect("doctor's JSON");
    let check = crate::support::doctor_check(&report, "runner files");
    assert_eq!(check["outcome"], "ok", "{check}");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(
        detail.starts_with("hidden from tools (in a mount namespace)"),
        "{detail}"
    );

    // Off, the same call reads the file: the check above can fail.
    secrets.runner.stop().await;
    secrets.start(&["--hide-runner-files", "off"]);
    secrets.relay.wait_status(&secrets.env, "online").await;
    let body = secrets.cat_credential_file().await;
    assert_eq!(stdout(&body).trim(), secrets.token, "{body}");
    let (_, body) = secrets.file_read_credential_file().await;
    assert!(body.to_string().contains(&secrets.token), "{body}");
}

/// The browser runs in the tools' view too: a `file://` page of the
/// credential file shows nothing of it; with hiding off it shows the
/// token, so the check can fail. (Without the test's bus, which never
/// answers and would hold Chromium's start.)
#[tokio::test]
async fn a_root_runners_browser_cannot_open_its_files() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: this test runs the runner as root; the nobody variant covers users");
        return;
    }
    crate::tools_support::require_chromium();
    let mut secrets = Secrets::new().await;
    // The workspace stays visible in the view: the browser works there.
    let visible = secrets.workspace().join("page.txt");
    write(&visible, "visible-in-the-view");
    for (setting, shown) in [("on", false), ("off", true)] {
        let vars = secrets.vars();
        let vars: Vec<(&str, &str)> = vars
            .iter()
            .filter(|(key, _)| *key != "DBUS_SESSION_BUS_ADDRESS")
            .map(|(key, value)| (*key, value.as_str()))
            .collect();
        secrets
            .runner
            .start_with(&["--hide-runner-files", setting], &vars);
        secrets.relay.wait_status(&secrets.env, "online").await;
        let page = secrets.browser_text_of(&visible).await;
        assert!(page.contains("visible-in-the-view"), "{setting}: {page}");
        let page = secrets.browser_text_of(&secrets.credential_file).await;
        assert_eq!(
            page.contains(&secrets.token),
            shown,
            "--hide-runner-files {setting}: {page}"
        );
        // Nor through the browser's working directory or root: a tool
        // reading `/proc/PID/cwd/…` walks from that directory, which must be
        // the view's root, not a way back to the runner's (with hiding off,
        // the root shows the file: the walk works). Only this runner's
        // browser: in the tool's own mount namespace.
        let relative = secrets.credential_file.strip_prefix("/").expect("absolute");
        let command = format!(
            "ns=$(readlink /proc/self/ns/mnt); for p in /proc/[0-9]*; do \
             case \"$(cat $p/comm 2>/dev/null)\" in chrom*) \
             [ \"$(readlink $p/ns/mnt)\" = \"$ns\" ] || continue; \
             echo found-browser; cat \"$p/cwd/{0}\" \"$p/root/{0}\" 2>/dev/null;; esac; done; true",
            relative.display()
        );
        let body = shell(&secrets.relay, &secrets.env, &command).await;
        assert!(stdout(&body).contains("found-browser"), "{setting}: {body}");
        assert_eq!(
            stdout(&body).contains(&secrets.token),
            shown,
            "--hide-runner-files {setting}, through the browser's cwd or root: {body}"
        );
        secrets.runner.stop().await;
    }
}

/// As another user (`nobody`): tools run in a user namespace mapping the
/// runner's uid to itself, with its own mount namespace; nothing of the
/// runner's is readable, `/proc` included.
#[tokio::test]
async fn an_unprivileged_runners_tools_find_nothing_of_it() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: starting the runner as another user needs root (CI runs as root)");
        return;
    }
    let setpriv = as_nobody();
    let probe: Vec<&str> = setpriv
        .iter()
        .map(String::as_str)
        .chain(["--", "unshare", "--user", "--mount", "true"])
        .collect();
    if !host_runs(&probe) {
        eprintln!("SKIPPED: this host gives no user namespace to an unprivileged user");
        return;
    }
    let mut secrets = Secrets::new().await;
    secrets.start_as_nobody();
    secrets.relay.wait_status(&secrets.env, "online").await;
    secrets.control();
    let runner_pid = secrets
        .runner
        .child
        .as_ref()
        .and_then(|c| c.id())
        .expect("pid");
    let environ = std::fs::read(format!("/proc/{runner_pid}/environ")).expect("environ");
    assert!(
        String::from_utf8_lossy(&environ).contains(SECRET),
        "the key is in the runner's environment, for root to see"
    );
    secrets.tool_finds_nothing().await;

    let body = shell(
        &secrets.relay,
        &secrets.env,
        "id -u; cat /proc/self/uid_map",
    )
    .await;
    let ids: Vec<&str> = stdout(&body).split_whitespace().collect();
    assert_eq!(ids, ["65534", "65534", "65534", "1"], "{body}");
    for (what, command) in [
        ("environment", "tr '\\0' '\\n' < /proc/$PPID/environ"),
        (
            "memory",
            "set -o pipefail; head -c 16 /proc/$PPID/mem | od -c",
        ),
    ] {
        let body = shell(&secrets.relay, &secrets.env, command).await;
        assert!(!body.to_string().contains(SECRET), "{what}: {body}");
        assert_ne!(body["exit_code"], 0, "{what}: {body}");
        assert!(
            stderr(&body).contains("Permission denied"),
            "{what}: {body}"
        );
    }
}

/// `runner run` as root without `CAP_SYS_ADMIN` (a user namespace's root
/// with it dropped from the bounding set, as in a container), where no
/// namespace can be made: `on` refuses to start and says why; `auto`
/// says so once and runs tools as before (the file tools still refuse
/// the credential file).
#[tokio::test]
async fn where_no_namespace_can_be_made_on_refuses_to_start_and_auto_runs_tools_as_before() {
    if !nix::unistd::Uid::effective().is_root() {
        eprintln!("SKIPPED: dropping CAP_SYS_ADMIN from a root runner needs root");
        return;
    }
    if !host_runs(&[
        "unshare",
        "--user",
        "--map-root-user",
        "--",
        "setpriv",
        "--bounding-set=-sys_admin",
        "--inh-caps=-all",
        "--",
        "true",
    ]) {
        eprintln!("SKIPPED: no unshare/setpriv, or no user namespace for root here");
        return;
    }
    let mut secrets = Secrets::new().await;
    let capless = |secrets: &Secrets, setting: &str| {
        let command = secrets.runner.command();
        let mut capless = tokio::process::Command::new("unshare");
        capless
            .args([
                "--user",
                "--map-root-user",
                "--",
                "setpriv",
                "--bounding-set=-sys_admin",
            ])
            .args(["--inh-caps=-all", "--"])
            .arg(command.as_std().get_program())
            .args(["run", "--hide-runner-files", setting]);
        for (key, value) in command.as_std().get_envs() {
            match value {
                Some(value) => capless.env(key, value),
                None => capless.env_remove(key),
            };
        }
        capless
            .envs(secrets.vars())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        capless.spawn().expect("start the runner")
    };

    let (code, stderr) = wait_output(capless(&secrets, "on")).await;
    assert_eq!(code, Some(78), "{stderr}");
    assert!(
        stderr.contains("refusing to start: cannot hide the runner's files from tools: cannot make a mount namespace as root"),
        "{stderr}"
    );

    secrets.runner.child = Some(capless(&secrets, "auto"));
    secrets.relay.wait_status(&secrets.env, "online").await;
    let body = secrets.cat_credential_file().await;
    assert_eq!(stdout(&body).trim(), secrets.token, "{body}");
    let (_, body) = secrets.file_read_credential_file().await;
    assert!(!body.to_string().contains(&secrets.token), "{body}");
    let (_, stderr) = secrets.runner.stop().await;
    assert_eq!(
        stderr
            .matches("runner files are not hidden from tools")
            .count(),
        1,
        "{stderr}"
    );
}
