//! `runner service install` into a throwaway root: real files, checked by
//! `systemd-analyze verify`.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use crate::support::runner_bin;

const TOKEN: &str = "rnrt_service-test-token-0123456789";

fn install(root: &std::path::Path, extra: &[&str]) -> std::process::Output {
    Command::new(runner_bin())
        .env("RUNNER_CONFIG_DIR", root.join("user-config"))
        .env("RUNNER_TOKEN", TOKEN)
        .args(["service", "install", "--root"])
        .arg(root)
        .args([
            "--binary",
            &runner_bin().display().to_string(),
            "--url",
            "https://relay.example.test",
        ])
        .args(extra)
        .output()
        .expect("runner runs")
}

#[test]
fn install_writes_a_hardened_unit_that_systemd_accepts_and_a_private_env_file() {
    let root = tempfile::tempdir().expect("tempdir");
    let output = install(root.path(), &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains(TOKEN) && !String::from_utf8_lossy(&output.stdout).contains(TOKEN));

    let env_file = root.path().join("etc/runner/env");
    let mode = std::fs::metadata(&env_file)
        .expect("env file")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let env = std::fs::read_to_string(&env_file).expect("read");
    assert!(env.contains(&format!("RUNNER_TOKEN=\"{TOKEN}\"")), "{env}");
    assert!(
        env.contains("RUNNER_URL=\"https://relay.example.test\""),
        "{env}"
    );

    let unit = root.path().join("etc/systemd/system/runner.service");
    let text = std::fs::read_to_string(&unit).expect("unit");
    for needle in [
        "User=runner",
        "NoNewPrivileges=true",
        "ProtectSystem=strict",
        "PrivateTmp=true",
        "RestartPreventExitStatus=10 78",
    ] {
        assert!(text.contains(needle), "{needle} missing:\n{text}");
    }
    // `--man=no`: the Documentation= pages ship in man/, not installed here.
    let verify = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&unit)
        .output()
        .expect("systemd-analyze is installed (scripts/install-test-deps.sh)");
    assert!(
        verify.status.success(),
        "systemd-analyze verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
}

#[test]
fn run_as_binds_only_that_users_home_and_dry_run_writes_nothing() {
    let root = tempfile::tempdir().expect("tempdir");
    let output = install(root.path(), &["--run-as", "root", "--dry-run"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("User=root"), "{stdout}");
    assert!(
        stdout.contains("ProtectHome=tmpfs") && stdout.contains("BindPaths=/root"),
        "{stdout}"
    );
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "dry run shows the token"
    );
    assert!(stderr.contains("would run: systemctl"), "{stderr}");
    assert!(!root.path().join("etc").exists(), "dry run wrote files");

    let output = install(root.path(), &["--run-as", "no-such-user-here"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn uninstall_keeps_the_settings_unless_purged() {
    let root = tempfile::tempdir().expect("tempdir");
    assert!(install(root.path(), &[]).status.success());
    let uninstall = |extra: &[&str]| {
        Command::new(runner_bin())
            .args(["service", "uninstall", "--root"])
            .arg(root.path())
            .args(extra)
            .output()
            .expect("runs")
    };
    assert!(uninstall(&[]).status.success());
    assert!(!root
        .path()
        .join("etc/systemd/system/runner.service")
        .exists());
    assert!(root.path().join("etc/runner/env").exists());
    // --purge removes the token: without a terminal it needs --yes.
    let unconfirmed = uninstall(&["--purge"]);
    assert_eq!(unconfirmed.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unconfirmed.stderr).contains("--yes"));
    assert!(root.path().join("etc/runner/env").exists());
    assert!(uninstall(&["--purge", "--yes"]).status.success());
    assert!(!root.path().join("etc/runner/env").exists());
}

/// `install` with this relay's URL and `token`, into `root`, with `extra`
/// flags; the environment's RUN_AS variables as given.
async fn install_against(
    root: &std::path::Path,
    url: &str,
    token: &str,
    extra: &[&str],
) -> std::process::Output {
    tokio::process::Command::new(runner_bin())
        .env("RUNNER_CONFIG_DIR", root.join("user-config"))
        .env("RUNNER_TOKEN", token)
        .env_remove("RUN_AS")
        .env_remove("RUNNER_RUN_AS")
        .args(["service", "install", "--root"])
        .arg(root)
        .args(["--url", url])
        .args(extra)
        .output()
        .await
        .expect("runner runs")
}

#[tokio::test]
async fn install_checks_the_binary_it_starts_and_the_token_against_the_relay() {
    let relay = crate::support::Relay::spawn().await;
    let env = relay.create_env(crate::support::dev_env()).await;
    let token = relay.token(&env).await;
    let binary = runner_bin().display().to_string();

    // A binary path that does not exist: refused, with this binary named.
    let root = tempfile::tempdir().expect("tempdir");
    let output = install_against(
        root.path(),
        &relay.url,
        &token,
        &["--binary", "/nowhere/runner"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("/nowhere/runner, which does not exist"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("--binary {binary}")), "{stderr}");
    assert!(!root.path().join("etc").exists(), "wrote files anyway");

    // A token the relay refuses: refused (65) before anything is written,
    // unless --no-verify.
    let wrong = "rnrt_not-a-token-of-this-relay-0123456789";
    let output = install_against(root.path(), &relay.url, wrong, &["--binary", &binary]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains("refuses the token"), "{stderr}");
    assert!(!root.path().join("etc").exists(), "wrote files anyway");
    let output = install_against(
        root.path(),
        &relay.url,
        wrong,
        &["--binary", &binary, "--no-verify"],
    )
    .await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The right token: checked and said so; RUNNER_RUN_AS is read, an
    // unprefixed RUN_AS is not.
    let root = tempfile::tempdir().expect("tempdir");
    let output = tokio::process::Command::new(runner_bin())
        .env("RUNNER_CONFIG_DIR", root.path().join("user-config"))
        .env("RUNNER_TOKEN", &token)
        .env("RUNNER_RUN_AS", "root")
        .env("RUN_AS", "no-such-user-here")
        .args(["service", "install", "--dry-run", "--root"])
        .arg(root.path())
        .args(["--url", &relay.url, "--binary", &binary])
        .output()
        .await
        .expect("runner runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("the relay accepts the token"), "{stderr}");
    assert!(
        stdout.contains("User=root"),
        "RUNNER_RUN_AS is read: {stdout}"
    );

    // A relay that cannot be reached: a warning by default, refused with
    // --verify.
    let gone = "http://127.0.0.1:9";
    let output = install_against(
        root.path(),
        gone,
        &token,
        &["--binary", &binary, "--dry-run"],
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: the token was not checked"),
        "{stderr}"
    );
    let output = install_against(
        root.path(),
        gone,
        &token,
        &["--binary", &binary, "--dry-run", "--verify"],
    )
    .await;
    assert_eq!(
        output.status.code(),
        Some(76),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn service_status_without_systemd_says_so_and_what_to_do_instead() {
    // A PATH without systemctl: as on a machine without systemd.
    let empty = tempfile::tempdir().expect("tempdir");
    for verb in [&["status"][..], &["logs"][..], &["start"][..]] {
        let output = Command::new(runner_bin())
            .arg("service")
            .args(verb)
            .env("PATH", empty.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("runner runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{verb:?}: {stderr}");
        assert!(
            stderr.contains("error: no service manager to ask: systemctl is not installed"),
            "{verb:?}: {stderr}"
        );
        assert!(
            stderr.contains("hint:") && stderr.contains("`runner run`"),
            "{stderr}"
        );
    }
}
