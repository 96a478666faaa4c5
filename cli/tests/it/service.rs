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
