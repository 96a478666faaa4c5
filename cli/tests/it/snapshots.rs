//! What users read: help texts, error reports and `--json` bodies of the
//! real binary, pinned by snapshots (`cargo insta review` after an intended
//! change). Ports, ids, keys and times are filtered so the snapshots hold
//! on any run.

use serde_json::json;

use crate::support::{runner_bin, Relay, Runner};

/// Exit code, stdout and stderr in one text, as a user sees them.
fn transcript(output: &std::process::Output) -> String {
    format!(
        "exit code: {}\n--- stdout\n{}--- stderr\n{}",
        output
            .status
            .code()
            .map_or_else(|| "killed".to_owned(), |code| code.to_string()),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    )
}

/// Replaces what differs between runs.
macro_rules! assert_transcript {
    ($name:expr, $output:expr) => {
        insta::with_settings!({filters => vec![
            (r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]"),
            (r"/tmp/\.tmp\w+", "[TMP]"),
            (r"env_[0-9a-z]+", "env_[ID]"),
            (r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "[UUID]"),
            (r"rnr[kt]_[A-Za-z0-9_-]+", "rnr?_[SECRET]"),
            (r"rnr([kt])_…[A-Za-z0-9_-]+", "rnr${1}_…[HINT]"),
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[TIME]"),
        ]}, {
            insta::assert_snapshot!($name, transcript($output));
        });
    };
}

/// A `runner` that sees no relay configuration at all.
fn bare() -> (std::process::Command, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = std::process::Command::new(runner_bin());
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("RUNNER_CONFIG_DIR", dir.path().join("config"))
        .env("RUNNER_STATE_DIR", dir.path().join("state"))
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100");
    (command, dir)
}

#[test]
fn top_level_help() {
    let (mut command, _dir) = bare();
    let output = command.arg("--help").output().expect("runs");
    assert_transcript!("help", &output);
}

/// Options the environment may give (RUNNER_URL) are not shown as
/// required in a usage line; missing from both, the error names both.
#[test]
fn usage_lines_leave_options_from_the_environment_optional() {
    for command_name in ["register", "login", "doctor"] {
        let (mut command, _dir) = bare();
        let output = command
            .args([command_name, "--help"])
            .output()
            .expect("runs");
        let help = String::from_utf8_lossy(&output.stdout);
        let usage = help
            .lines()
            .find(|line| line.starts_with("Usage:"))
            .unwrap_or_else(|| panic!("no usage line: {help}"));
        assert_eq!(
            usage,
            format!("Usage: runner {command_name} [OPTIONS]"),
            "{help}"
        );
    }
    let (mut command, _dir) = bare();
    let output = command
        .args(["register"])
        .env("RUNNER_TOKEN", "rnrt_unused")
        .output()
        .expect("runs");
    assert_transcript!("register_without_url", &output);
}

/// Examples stay one command a line: in `--help` on an 80-column terminal,
/// and in the man page, where roff would otherwise fill them into one line.
#[test]
fn examples_stay_one_command_a_line_in_help_and_man_pages() {
    use runner_cli::args::examples;
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (args, page, text) in [
        (&[][..], "runner.1", examples::RUNNER),
        (&["session"][..], "runner-session.1", examples::SESSION),
        (
            &["approvals"][..],
            "runner-approvals.1",
            examples::APPROVALS,
        ),
        (&["audit"][..], "runner-audit.1", examples::AUDIT),
        (&["status"][..], "runner-status.1", examples::STATUS),
        (&["invoke"][..], "runner-invoke.1", examples::INVOKE),
        (&["template"][..], "runner-template.1", examples::TEMPLATE),
    ] {
        let (mut command, _dir) = bare();
        let output = command
            .args(args)
            .arg("--help")
            .env("COLUMNS", "80")
            .output()
            .expect("runs");
        let help = String::from_utf8_lossy(&output.stdout);
        let help_lines: Vec<&str> = help.lines().collect();
        let man = std::fs::read_to_string(repo.join("man").join(page)).expect("man page");
        let unfilled = man
            .split_once(".SH EXAMPLES\n.nf\n")
            .and_then(|(_, rest)| rest.split_once(".fi\n"))
            .map(|(section, _)| section)
            .unwrap_or_else(|| panic!("{page} has no unfilled EXAMPLES section"));
        let man_lines: Vec<&str> = unfilled.lines().collect();
        for line in text.lines().filter(|line| !line.trim().is_empty()) {
            assert!(line.len() <= 78, "{line:?} would wrap at 80 columns");
            assert!(
                help_lines.contains(&line),
                "{args:?} --help lost {line:?}:\n{help}"
            );
            if let Some(example) = line.strip_prefix("  ") {
                let roff = example.replace('-', "\\-").replace('\'', "\\(aq");
                assert!(man_lines.contains(&roff.as_str()), "{page} lost {line:?}");
            }
        }
    }
}

#[test]
fn invoke_help() {
    let (mut command, _dir) = bare();
    let output = command.args(["invoke", "--help"]).output().expect("runs");
    assert_transcript!("invoke_help", &output);
}

#[test]
fn a_command_without_a_relay_says_how_to_name_one() {
    let (mut command, _dir) = bare();
    let output = command.args(["env", "list"]).output().expect("runs");
    assert_transcript!("env_list_without_url", &output);
}

#[test]
fn a_bad_argument_names_the_expected_form() {
    let (mut command, _dir) = bare();
    let output = command
        .args(["invoke", "box", "shell", "--arg", "novalue"])
        .output()
        .expect("runs");
    assert_transcript!("invoke_bad_arg", &output);
}

#[tokio::test]
async fn reports_of_a_real_relay() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = Runner::online(
        &relay,
        json!({"name": "prod-box", "policy": {"tools": {"mode": "list", "tools": ["shell"]}}}),
    )
    .await;
    let run = |args: &[&str]| {
        let mut command = relay.admin_command();
        command.args(args).env("COLUMNS", "100");
        async move { command.output().await.expect("runs") }
    };
    let refused = run(&["invoke", "prod-box", "git", "--arg", "x=y"]).await;
    assert_transcript!("invoke_refused_by_relay_policy", &refused);
    let unknown = run(&["invoke", "nope", "shell"]).await;
    assert_transcript!("invoke_unknown_environment", &unknown);
    let shown = run(&["env", "show", "prod-box", "--json"]).await;
    assert_transcript!("env_show_json", &shown);
    // Destructive without a terminal to ask on: refused, pointing at --yes.
    let revoke = run(&["token", "revoke", "prod-box"]).await;
    assert_transcript!("token_revoke_unconfirmed", &revoke);
    let rotated = run(&["token", "rotate", "prod-box", "--json"]).await;
    assert_eq!(rotated.status.code(), Some(0), "{}", transcript(&rotated));
    // The runner still uses the token it connected with: both views say so.
    let token_status = run(&["token", "status", "prod-box"]).await;
    assert_transcript!("token_status_after_rotation", &token_status);
    let status = run(&["status", "prod-box"]).await;
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("(previous, valid until"),
        "{}",
        transcript(&status)
    );
}

/// Every destructive command refuses without a terminal to ask on (exit 2,
/// pointing at --yes) and changes nothing; with --yes it goes ahead.
#[tokio::test]
async fn destructive_commands_refuse_without_yes_when_nobody_can_confirm() {
    let relay = Relay::spawn().await;
    let (_env, runner) = Runner::registered(&relay, json!({"name": "cut-box"})).await;
    let unregister = runner
        .command()
        .arg("unregister")
        .output()
        .await
        .expect("runs");
    assert_transcript!("unregister_unconfirmed", &unregister);
    let cut = relay
        .admin_command()
        .args(["token", "generate", "cut-box", "--grace-hours", "0"])
        .output()
        .await
        .expect("runs");
    assert_transcript!("token_generate_no_grace_unconfirmed", &cut);
    let confirmed = relay
        .admin_command()
        .args(["token", "rotate", "cut-box", "--grace-hours", "0", "--yes"])
        .output()
        .await
        .expect("runs");
    assert_eq!(
        confirmed.status.code(),
        Some(0),
        "{}",
        transcript(&confirmed)
    );
    let gone = runner
        .command()
        .args(["unregister", "--yes"])
        .output()
        .await
        .expect("runs");
    assert_eq!(gone.status.code(), Some(0), "{}", transcript(&gone));
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("unregistered from"),
        "the refused unregister kept the registration: {}",
        transcript(&gone)
    );
}

/// `--require-approval ''` clears the list instead of storing `[""]`.
#[tokio::test]
async fn an_empty_list_flag_clears_the_list() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = Runner::online(&relay, json!({"name": "gated"})).await;
    let approvals = |args: &'static [&'static str]| {
        let mut update = relay.admin_command();
        update.args(["env", "update", "gated"]).args(args);
        let mut show = relay.admin_command();
        show.args(["env", "show", "gated", "--json"]);
        async move {
            let updated = update.output().await.expect("runs");
            assert!(updated.status.success(), "{}", transcript(&updated));
            let shown = show.output().await.expect("runs");
            let body: serde_json::Value =
                serde_json::from_slice(&shown.stdout).expect("env show --json prints JSON");
            body["policy"]["approval_required"].clone()
        }
    };
    assert_eq!(
        approvals(&["--require-approval", "shell"]).await,
        json!(["shell"])
    );
    assert_eq!(approvals(&["--require-approval", ""]).await, json!([]));
}
