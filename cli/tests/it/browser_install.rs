//! `install_browser_tools` reaches the runner (in `welcome`, and in a
//! `policy` frame when an admin changes it) and the runner installs a
//! browser with the install command it is given, then announces `browser`;
//! with the setting off the command never runs; `runner doctor` says why
//! it cannot install.
//!
//! The runners here get a PATH of one temporary directory: no package
//! manager of this machine is ever found, so nothing is installed for
//! real, and a browser already installed here cannot hide the install.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{doctor_check, wait_until, Relay, Runner};
use crate::tools_support::{tool_names, wait_for_tools, BinDir};

/// An install command: records its arguments in `marker`, then puts a
/// `chromium` into `bin` (a link to this machine's browser when it has
/// one, else a stand-in script: enough for the catalogue).
fn install_script(scripts: &BinDir, bin: &Path, marker: &Path) -> PathBuf {
    let place = match crate::tools_support::chromium() {
        Some(browser) => format!("ln -s '{}' '{}/chromium'", browser.display(), bin.display()),
        None => format!(
            "printf '#!/bin/sh\\nexit 0\\n' > '{bin}/.chromium.tmp' && chmod 755 '{bin}/.chromium.tmp' && mv '{bin}/.chromium.tmp' '{bin}/chromium'",
            bin = bin.display()
        ),
    };
    scripts.script(
        "get-chromium",
        &format!(
            "#!/bin/sh\nPATH=/usr/bin:/bin\necho \"installing chromium: $*\"\necho \"$*\" > '{}'\n{place}\n",
            marker.display()
        ),
    )
}

/// The runner's `STATE_DIR/browser-install.json`, once it has one.
fn record(runner: &Runner) -> Option<Value> {
    let text = std::fs::read(runner.state_dir().join("browser-install.json")).ok()?;
    serde_json::from_slice(&text).ok()
}

async fn wait_for_record(runner: &Runner, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    wait_until(what, || record(runner).is_some_and(|record| check(&record))).await;
    record(runner).unwrap_or_default()
}

fn path_var(bin: &BinDir) -> String {
    bin.path().display().to_string()
}

/// A registered runner of an environment that does (or does not) want
/// browser tools, a PATH of one empty directory, and an install command
/// that fills it.
struct Setup {
    relay: Relay,
    env: String,
    runner: Runner,
    bin: BinDir,
    /// Holds the install script.
    _scripts: BinDir,
    marker: PathBuf,
    script: PathBuf,
}

impl Setup {
    async fn new(install_browser_tools: bool) -> Setup {
        let relay = Relay::spawn().await;
        let (env, runner) = Runner::registered(
            &relay,
            json!({"tier": "development", "install_browser_tools": install_browser_tools}),
        )
        .await;
        let bin = BinDir::new();
        let scripts = BinDir::new();
        let marker = scripts.path().join("ran");
        let script = install_script(&scripts, bin.path(), &marker);
        Setup {
            relay,
            env,
            runner,
            bin,
            _scripts: scripts,
            marker,
            script,
        }
    }

    /// Waits until the runner announces `browser`, then checks the install
    /// command ran once, with `args`.
    async fn installed_with(&self, args: &str) {
        wait_for_tools(&self.relay, &self.env, "browser is announced", |names| {
            names.iter().any(|name| name == "browser")
        })
        .await;
        assert_eq!(
            std::fs::read_to_string(&self.marker).expect("the install command ran"),
            format!("{args}\n")
        );
    }
}

#[tokio::test]
async fn an_environment_that_wants_browser_tools_gets_chromium_installed_and_announced() {
    let mut setup = Setup::new(true).await;
    // The config file's way: a program and its arguments, as a list.
    let config = setup.runner.config_dir().join("config.yaml");
    let mut text = std::fs::read_to_string(&config).expect("config written by register");
    text.push_str(&format!(
        "browser_install_command:\n- {}\n- --from-config\n",
        setup.script.display()
    ));
    std::fs::write(&config, text).expect("write config");
    setup
        .runner
        .start_with(&[], &[("PATH", &path_var(&setup.bin))]);
    setup.relay.wait_status(&setup.env, "online").await;

    setup.installed_with("--from-config").await;
    let record = wait_for_record(&setup.runner, "the install is recorded", |record| {
        record["attempt"]["outcome"]["status"] == "succeeded"
    })
    .await;
    assert_eq!(record["wanted"], true, "{record}");
    assert_eq!(
        record["attempt"]["source"]["kind"], "configured",
        "{record}"
    );
    let (_, stderr) = setup.runner.stop().await;
    assert!(
        stderr.contains("installing chromium: --from-config"),
        "the install's output is logged: {stderr}"
    );
}

#[tokio::test]
async fn the_setting_turned_on_reaches_a_connected_runner_and_off_never_runs_the_install() {
    let mut setup = Setup::new(false).await;
    let command = format!("{} --from-flag", setup.script.display());
    setup.runner.start_with(
        &["--browser-install-command", &command],
        &[("PATH", &path_var(&setup.bin))],
    );
    let (relay, env) = (&setup.relay, &setup.env);
    relay.wait_status(env, "online").await;

    // Off: the runner heard it (the record says so) and did nothing.
    let record = wait_for_record(&setup.runner, "the runner heard the setting", |record| {
        record["wanted"] == false
    })
    .await;
    assert!(record.get("attempt").is_none(), "{record}");
    assert!(
        !setup.marker.exists(),
        "the install ran with the setting off"
    );
    assert!(
        !tool_names(relay, env).await.contains(&"browser".to_owned()),
        "no browser yet"
    );

    // On, on the same connection.
    let (status, body) = relay
        .api(
            reqwest::Method::PATCH,
            &format!("/execution-environments/{env}"),
            Some(json!({"install_browser_tools": true})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    setup.installed_with("--from-flag").await;
    let (_, stderr) = setup.runner.stop().await;
    assert_eq!(
        stderr.matches("connected to the relay").count(),
        1,
        "the setting reached the runner without a reconnect: {stderr}"
    );
}

/// `runner doctor --json` with the runner's directories and `vars`.
async fn doctor(runner: &Runner, vars: &[(&str, &str)]) -> Value {
    let output = runner
        .command()
        .args(["doctor", "--json"])
        .envs(vars.iter().copied())
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|error| {
        panic!(
            "JSON report ({error}): {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    doctor_check(&report, "browser").clone()
}

#[tokio::test]
async fn doctor_says_why_the_runner_cannot_install_a_browser() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(
        &relay,
        json!({"tier": "development", "install_browser_tools": true}),
    )
    .await;
    // No install command and no package manager on PATH.
    let bin = BinDir::new();
    let path = path_var(&bin);
    for manager in ["apt-get", "dnf", "apk", "zypper", "pacman"] {
        assert!(!bin.path().join(manager).exists());
    }
    runner.start_with(&[], &[("PATH", &path)]);
    relay.wait_status(&env, "online").await;
    let record = wait_for_record(&runner, "the runner gave up", |record| {
        record["blocked"].is_object()
    })
    .await;
    assert_eq!(
        record["blocked"]["reason"], "no_package_manager",
        "{record}"
    );
    let check = doctor(&runner, &[("PATH", &path)]).await;
    assert_eq!(check["outcome"], "warn", "{check}");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("the environment asks for browser tools")
            && detail.contains("no known package manager on PATH"),
        "{check}"
    );
    assert_eq!(check["browser"]["wanted"], true, "{check}");
    runner.stop().await;

    // An install command that fails: doctor names its exit code.
    let scripts = BinDir::new();
    let failing = scripts.script(
        "get-chromium",
        "#!/bin/sh\necho 'no mirror reachable' >&2\nexit 3\n",
    );
    let command = failing.display().to_string();
    let vars = [
        ("PATH", path.as_str()),
        ("RUNNER_BROWSER_INSTALL_COMMAND", command.as_str()),
    ];
    runner.start_with(&[], &vars);
    let record = wait_for_record(&runner, "the install failed", |record| {
        record["attempt"]["outcome"]["status"] == "failed"
    })
    .await;
    assert_eq!(record["attempt"]["outcome"]["exit_code"], 3, "{record}");
    assert!(record.get("blocked").is_none(), "{record}");
    let check = doctor(&runner, &vars).await;
    assert_eq!(check["outcome"], "warn", "{check}");
    let detail = check["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("failed with exit code 3"), "{check}");
    assert!(detail.contains(&command), "{check}");
    assert_eq!(check["browser"]["last_attempt"]["outcome"]["exit_code"], 3);
    let (_, stderr) = runner.stop().await;
    assert!(stderr.contains("no mirror reachable"), "{stderr}");
    // Quiet after its one attempt: no second try on the same start.
    assert_eq!(stderr.matches("installing Chromium").count(), 1, "{stderr}");
}

#[tokio::test]
async fn a_blank_install_command_stops_the_runner_before_it_connects() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, json!({"tier": "development"})).await;
    runner.start(&["--browser-install-command", "  "]);
    let child = runner.child.take().expect("spawned");
    let (code, stderr) = crate::support::wait_output(child).await;
    assert_eq!(code, Some(78), "{stderr}");
    assert!(
        stderr.contains("refusing to start: the browser install command is empty"),
        "{stderr}"
    );
    assert_eq!(relay.status(&env).await, "pending");
}
