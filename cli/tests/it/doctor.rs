//! `runner doctor` against a real relay: both roles checked (runner token,
//! API key), the connection flags every command takes, and no side effects.

use serde_json::Value;

use crate::support::{dev_env, doctor_check as check, runner_bin, Relay, Runner};

async fn doctor(mut command: tokio::process::Command) -> (Option<i32>, Value, String) {
    command.arg("doctor");
    doctor_with_args(command).await
}

#[tokio::test]
async fn doctor_checks_a_registered_runner_without_registering_it_or_creating_its_workspace() {
    let relay = Relay::spawn_logged(&[], &[]).await;
    let (_env, runner) = Runner::registered(&relay, dev_env()).await;
    let registrations = |log: &str| log.matches("runner registered").count();
    let before = registrations(&relay.log());
    assert_eq!(before, 1, "`runner register` registered once");

    let mut command = runner.command();
    // The default workspace (STATE_DIR/workspace), which does not exist.
    command.env_remove("RUNNER_WORKSPACE");
    let (_code, report, stderr) = doctor(command).await;
    assert_eq!(
        check(&report, "token accepted")["outcome"],
        "ok",
        "{report}{stderr}"
    );
    assert_eq!(check(&report, "websocket")["outcome"], "ok", "{report}");
    let workspace = runner.state_dir().join("workspace");
    assert_eq!(check(&report, "workspace")["outcome"], "ok", "{report}");
    assert!(
        check(&report, "workspace")["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("does not exist yet")),
        "{report}"
    );
    assert!(
        !workspace.exists(),
        "doctor created {}",
        workspace.display()
    );
    assert_eq!(
        registrations(&relay.log()),
        before,
        "doctor showed up as a registration: {}",
        relay.log()
    );
}

#[tokio::test]
async fn doctor_with_only_the_url_and_an_api_key_in_the_environment_checks_the_relay_and_the_key() {
    let relay = Relay::spawn().await;
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path().join("config"))
        .env("RUNNER_STATE_DIR", home.path().join("state"))
        .env("RUNNER_URL", &relay.url)
        .env("RUNNER_API_KEY", &relay.admin_key)
        .env_remove("RUNNER_TOKEN")
        .env_remove("RUNNER_WORKSPACE")
        .env_remove("RUNNER_PERMISSION_CONFIG");
    let (code, report, stderr) = doctor(command).await;
    for name in ["url", "dns", "tcp", "relay"] {
        assert_eq!(
            check(&report, name)["outcome"],
            "ok",
            "{name}: {report}{stderr}"
        );
    }
    let key = check(&report, "api key");
    assert_eq!(key["outcome"], "ok", "{report}");
    assert!(
        key["detail"].as_str().is_some_and(
            |detail| detail.contains("organisation admin") && detail.contains("RUNNER_API_KEY")
        ),
        "the key's member and role: {key}"
    );
    // Not a runner here: said once, not a failure of every check.
    assert_eq!(check(&report, "config")["outcome"], "warn", "{report}");
    assert_eq!(check(&report, "token")["outcome"], "skip", "{report}");
    assert_eq!(code, Some(0), "{report}");
    assert!(
        !home.path().join("state").exists(),
        "doctor created the state dir"
    );

    // A wrong key fails its own check, with the fix; --url wins over
    // RUNNER_URL.
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path().join("config"))
        .env("RUNNER_STATE_DIR", home.path().join("state"))
        .env("RUNNER_URL", "http://127.0.0.1:9")
        .env("RUNNER_API_KEY", "rnrk_wrong")
        .env_remove("RUNNER_TOKEN")
        .args(["doctor", "--json", "--url", &relay.url]);
    let output = command.output().await.expect("runner runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let report: Value = serde_json::from_str(&stdout).expect("JSON report");
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert_eq!(
        check(&report, "relay")["outcome"],
        "ok",
        "--url won: {report}"
    );
    let key = check(&report, "api key");
    assert_eq!(key["outcome"], "fail", "{report}");
    assert!(
        key["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("RUNNER_API_KEY")),
        "{key}"
    );
}

#[tokio::test]
async fn doctor_warns_when_kept_output_nears_its_cap() {
    let relay = Relay::spawn().await;
    let (_env, runner) = Runner::registered(&relay, dev_env()).await;
    let kept = runner.workspace().join(".runner/output");
    std::fs::create_dir_all(&kept).expect("kept output dir");
    std::fs::write(kept.join("call.stdout"), vec![b'x'; 1024 * 1024]).expect("a kept file");

    let mut roomy = runner.command();
    roomy.env("RUNNER_KEPT_OUTPUT_MAX_MB", "10");
    let (_code, report, _) = doctor(roomy).await;
    let line = check(&report, "kept output");
    assert_eq!(line["outcome"], "ok", "{report}");
    assert_eq!(
        line["detail"], "1 MiB of 10 MiB in .runner/output",
        "{report}"
    );

    let mut full = runner.command();
    full.args(["doctor", "--kept-output-max-mb", "1"]);
    let (_code, report, _) = doctor_with_args(full).await;
    let line = check(&report, "kept output");
    assert_eq!(line["outcome"], "warn", "{report}");
    assert!(
        line["fix"]
            .as_str()
            .is_some_and(|fix| fix.contains("--kept-output-max-mb")),
        "{report}"
    );
}

/// `runner doctor --json` for a command that already names `doctor` (and
/// maybe its flags): exit code, report, stderr.
async fn doctor_with_args(mut command: tokio::process::Command) -> (Option<i32>, Value, String) {
    let output = command
        .arg("--json")
        .env("NO_COLOR", "1")
        .output()
        .await
        .expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("JSON report ({error}): {stdout}{stderr}"));
    (output.status.code(), report, stderr)
}
