//! The `runner` CLI against a real relay: exit codes and messages.

use serde_json::json;

use crate::support::{runner_bin, Relay, Runner};

fn admin(relay: &Relay) -> tokio::process::Command {
    relay.admin_command()
}

async fn run(mut command: tokio::process::Command) -> (Option<i32>, String, String) {
    let output = command.output().await.expect("runner runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn invoke_prints_output_and_exits_with_the_tools_code() {
    let relay = Relay::spawn().await;
    let (env, _runner) =
        Runner::online(&relay, json!({"name": "box", "tier": "development"})).await;

    let mut command = admin(&relay);
    command.args([
        "invoke",
        "box",
        "shell",
        "--arg",
        "command=echo hello; echo warn >&2; exit 7",
    ]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(7), "{stderr}");
    assert_eq!(stdout, "hello\n");
    assert!(stderr.contains("warn"), "{stderr}");

    // By id, with --json.
    let mut command = admin(&relay);
    command.args(["invoke", &env, "ping", "--arg", "n:=5", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let body: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(body["result"]["n"], 5);

    // An id goes straight to invoke-tool; a tool the runner lacks is still
    // "not found" (67), after the lookup confirms the id.
    let mut command = admin(&relay);
    command.args(["invoke", &env, "no_such_tool"]);
    let (code, _stdout, stderr) = run(command).await;
    assert_eq!(code, Some(67), "{stderr}");
    assert!(stderr.contains("no_such_tool"), "{stderr}");

    // The tool alone: the environment comes from RUNNER_ENV (dev.env sets
    // it); without it the command says how to name one.
    let mut command = admin(&relay);
    command
        .args(["invoke", "ping", "--arg", "n:=2", "--json"])
        .env("RUNNER_ENV", "box");
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let body: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(body["result"]["n"], 2);
    let mut command = admin(&relay);
    command.args(["invoke", "ping"]).env_remove("RUNNER_ENV");
    let (code, _stdout, stderr) = run(command).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("RUNNER_ENV"), "{stderr}");
}

/// A name that looks like an id still works: the id is tried first, then
/// the name.
#[tokio::test]
async fn invoke_finds_an_environment_whose_name_looks_like_an_id() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = Runner::online(
        &relay,
        json!({"name": "env_lookalike", "tier": "development"}),
    )
    .await;
    let mut command = admin(&relay);
    command.args(["invoke", "env_lookalike", "ping", "--arg", "n:=1", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let body: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(body["result"]["n"], 1);
}

#[tokio::test]
async fn invoke_failures_have_distinct_exit_codes_and_hints() {
    let relay = Relay::spawn().await;
    let (_env, _runner) = Runner::online(
        &relay,
        json!({"name": "prod-box", "policy": {"tools": {"mode": "list", "tools": ["shell"]}}}),
    )
    .await;
    relay
        .create_env(json!({"name": "idle", "tier": "development"}))
        .await;

    let cases: &[(&[&str], i32, &str)] = &[
        (&["invoke", "prod-box", "git", "--arg", "x=y"], 66, "hint:"),
        (
            &["invoke", "idle", "shell", "--arg", "command=true"],
            69,
            "runner",
        ),
        (
            &[
                "invoke",
                "prod-box",
                "shell",
                "--arg",
                "command=sleep 20",
                "--timeout",
                "1",
            ],
            75,
            "cancelled",
        ),
        (
            &[
                "invoke",
                "prod-box",
                "shell",
                "--arg",
                "command=true",
                "--timeout",
                "0",
            ],
            64,
            "error:",
        ),
        (&["invoke", "nope", "shell"], 67, "runner env list"),
        (
            &["invoke", "prod-box", "shell", "--arg", "novalue"],
            2,
            "KEY=VALUE",
        ),
    ];
    for (args, want, needle) in cases {
        let mut command = admin(&relay);
        command.args(*args);
        let (code, _stdout, stderr) = run(command).await;
        assert_eq!(code, Some(*want), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }

    let mut command = admin(&relay);
    command
        .env("RUNNER_API_KEY", "rnrk_bad")
        .args(["env", "list"]);
    let (code, _, stderr) = run(command).await;
    assert_eq!(code, Some(65), "{stderr}");
}

/// `runner register` with a token the relay does not know, in `home`: its
/// exit code and stderr.
async fn register_bad_token(relay: &Relay, home: &std::path::Path) -> (Option<i32>, String) {
    let output = tokio::process::Command::new(runner_bin())
        .env("RUNNER_CONFIG_DIR", home)
        .env("RUNNER_TOKEN", "rnrt_not-a-real-token-at-all")
        .args(["register", "--url", &relay.url])
        .output()
        .await
        .expect("runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code(), stderr)
}

#[tokio::test]
async fn register_with_a_bad_token_fails_without_storing_anything() {
    let relay = Relay::spawn().await;
    let runner_home = tempfile::tempdir().expect("tempdir");
    let (code, stderr) = register_bad_token(&relay, runner_home.path()).await;
    assert_eq!(code, Some(65), "{stderr}");
    assert!(
        !stderr.contains("not-a-real-token"),
        "token echoed: {stderr}"
    );
    assert!(!runner_home.path().join("config.yaml").exists());
}

/// Past the relay's limit of failed attempts from one address, a bad token
/// is answered 429: its own exit code and a hint, not "unreachable".
#[tokio::test]
async fn register_past_the_failed_attempt_limit_says_it_is_rate_limited() {
    let relay = Relay::spawn().await;
    let runner_home = tempfile::tempdir().expect("tempdir");
    // The relay's per-address limit (runner_relay::ratelimit::PER_ADDRESS).
    for _ in 0..10 {
        let (code, stderr) = register_bad_token(&relay, runner_home.path()).await;
        assert_eq!(code, Some(65), "{stderr}");
    }
    let (code, stderr) = register_bad_token(&relay, runner_home.path()).await;
    assert_eq!(code, Some(73), "{stderr}");
    assert!(
        stderr.contains("hint: too many failed attempts"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_tools_own_timeout_exits_75_like_the_calls_and_says_which_timeout_it_was() {
    let relay = Relay::spawn().await;
    let (_env, _runner) =
        Runner::online(&relay, json!({"name": "box", "tier": "development"})).await;
    // The shell tool's own timeout_s: the killed bash would exit 143.
    let mut command = admin(&relay);
    command.args([
        "invoke",
        "box",
        "shell",
        "--arg",
        "command=echo started; sleep 30",
        "--arg",
        "timeout_s:=1",
    ]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(75), "{stdout}{stderr}");
    assert_eq!(stdout, "started\n", "the output so far is printed");
    assert!(
        stderr.contains("timed out after 1s (the tool's timeout_s)"),
        "{stderr}"
    );
    // The call's own timeout: the relay's 504, the same exit code.
    let mut command = admin(&relay);
    command.args([
        "invoke",
        "box",
        "shell",
        "--arg",
        "command=sleep 30",
        "--timeout",
        "1",
    ]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(75), "{stdout}{stderr}");
    assert!(stderr.contains("within 1 s"), "{stderr}");
}

#[tokio::test]
async fn doctor_reports_without_log_lines_about_the_tools_it_finds() {
    // A tool binary on PATH: the catalogue doctor reads must find it
    // without announcing a change, as a running runner does when PATH
    // changes under it.
    let home = tempfile::tempdir().expect("tempdir");
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).expect("bin dir");
    let git = bin.join("git");
    std::fs::write(&git, "#!/bin/sh\nexit 0\n").expect("fake git");
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&git, executable).expect("chmod");
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path().join("config"))
        .env("RUNNER_STATE_DIR", home.path().join("state"))
        // Only the fake: the tools check can list git only by finding it.
        .env("PATH", &bin)
        .env_remove("RUNNER_URL")
        .env_remove("RUNNER_TOKEN")
        .env_remove("RUNNER_LOG")
        .args(["doctor", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    // Not registered: doctor says so and fails.
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
    let tools = crate::support::doctor_check(&report, "tools")["detail"].to_string();
    assert!(tools.contains("git"), "the tools check lists git: {report}");
    assert!(
        !stderr.contains("tool binaries on PATH changed"),
        "doctor logged the catalogue as a change: {stderr}"
    );
}

#[tokio::test]
async fn env_and_token_commands_report_as_text_and_json() {
    let relay = Relay::spawn().await;
    let mut command = admin(&relay);
    command.args([
        "env",
        "create",
        "--name",
        "ci-box",
        "--tier",
        "development",
        "--json",
    ]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let env: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(env["name"], "ci-box");

    let mut command = admin(&relay);
    command.args(["token", "generate", "ci-box"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let token = stdout.trim().to_owned();
    assert!(token.starts_with("rnrt_"), "token on stdout: {stdout}");

    let mut command = admin(&relay);
    command.args(["token", "status", "ci-box", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains(&token), "never the token: {stdout}");
    let status: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(status["has_token"], true);
    assert_eq!(status["runner_connected"], false);

    let mut command = admin(&relay);
    command.args(["env", "list"]);
    let (code, stdout, _) = run(command).await;
    assert_eq!(code, Some(0));
    assert!(stdout.contains("ci-box"), "{stdout}");

    let mut command = admin(&relay);
    command.args(["env", "delete", "ci-box", "--yes"]);
    let (code, _, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let mut command = admin(&relay);
    command.args(["env", "show", "ci-box"]);
    let (code, _, _) = run(command).await;
    assert_eq!(code, Some(67));
}

#[tokio::test]
async fn login_stores_the_key_privately_and_commands_use_it() {
    let relay = Relay::spawn().await;
    let home = tempfile::tempdir().expect("tempdir");
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path())
        .env("RUNNER_CREDENTIAL_STORE", "file")
        .env("RUNNER_API_KEY", &relay.admin_key)
        .env_remove("RUNNER_URL")
        .args(["login", "--url", &relay.url]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stdout.contains(&relay.admin_key) && !stderr.contains(&relay.admin_key));
    let key_file = home.path().join("credentials/api-key");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&key_file)
        .expect("key file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path())
        .env_remove("RUNNER_API_KEY")
        .env_remove("RUNNER_URL")
        .args(["env", "list", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("environments"), "{stdout}");

    // `runner logout` forgets both; commands then ask for a login again,
    // and a second logout is fine.
    for round in 0..2 {
        let mut command = tokio::process::Command::new(runner_bin());
        command
            .env("RUNNER_CONFIG_DIR", home.path())
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env_remove("RUNNER_API_KEY")
            .env_remove("RUNNER_URL")
            .args(["logout", "--json"]);
        let (code, stdout, stderr) = run(command).await;
        assert_eq!(code, Some(0), "{stderr}");
        let expected = if round == 0 {
            serde_json::json!({"logged_out_of": relay.url})
        } else {
            serde_json::json!({"logged_out_of": null})
        };
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&stdout).expect("json"),
            expected
        );
    }
    assert!(!key_file.exists(), "the key file is gone");
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.path())
        .env_remove("RUNNER_API_KEY")
        .env_remove("RUNNER_URL")
        .args(["env", "list"]);
    let (code, _, stderr) = run(command).await;
    assert_ne!(code, Some(0), "{stderr}");
}

/// A CI job's session: created once, used by later steps through
/// RUNNER_SESSION or --session, shown, listed and ended; a call after the
/// end fails with "not found" (67) and says what to do.
#[tokio::test]
async fn a_session_holds_calls_on_one_machine_across_commands() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(
        &relay,
        json!({"name": "ci-box", "tier": "development", "tags": ["linux"]}),
    )
    .await;

    let mut command = admin(&relay);
    command.args(["session", "create", "--tag", "linux"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let session = stdout.trim().to_owned();
    assert!(
        session.starts_with("ses_"),
        "the id alone on stdout: {stdout:?}"
    );
    assert!(stderr.contains("RUNNER_SESSION"), "{stderr}");

    let mut command = admin(&relay);
    command
        .args(["invoke", "shell", "--arg", "command=echo in-session"])
        .env("RUNNER_SESSION", &session)
        .env("RUNNER_ENV", "no-such-env");
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, "in-session\n", "the session wins over RUNNER_ENV");

    let mut command = admin(&relay);
    command.args([
        "invoke",
        "--session",
        &session,
        "ping",
        "--arg",
        "n:=3",
        "--json",
    ]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let body: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(body["result"]["n"], 3);

    let mut command = admin(&relay);
    command.args(["invoke", "--session", &session, "ci-box", "ping"]);
    let (code, _stdout, stderr) = run(command).await;
    assert_eq!(code, Some(2), "both a session and an environment: {stderr}");

    let mut command = admin(&relay);
    command.args(["session", "show", &session, "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let shown: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(shown["environment"]["id"], env.as_str());
    assert_eq!(shown["environment"]["status"], "online");
    assert_eq!(shown["state"], "open");

    let mut command = admin(&relay);
    command.args(["session", "list"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&session) && stdout.contains("ci-box (online)"),
        "{stdout}"
    );

    let mut command = admin(&relay);
    command.args(["env", "list"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("STATUS") && stdout.contains("online"),
        "{stdout}"
    );

    let mut command = admin(&relay);
    command.args(["session", "end", &session]);
    let (code, _stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let mut command = admin(&relay);
    command.args(["invoke", "--session", &session, "ping"]);
    let (code, _stdout, stderr) = run(command).await;
    assert_eq!(code, Some(67), "{stderr}");
    assert!(
        stderr.contains("was ended") && stderr.contains("runner session create"),
        "{stderr}"
    );
}

/// `runner audit`: JSON Lines (one entry a line, oldest first, the chain
/// fields included) and a table; filters reach the relay.
#[tokio::test]
async fn audit_exports_json_lines_and_prints_a_table() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(
        &relay,
        json!({"name": "audited-box", "tier": "development"}),
    )
    .await;
    let mut command = admin(&relay);
    command.args(["invoke", &env, "ping", "--arg", "n:=1"]);
    let (code, _, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");

    let mut command = admin(&relay);
    command.args(["audit", "--json"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    let entries: Vec<runner_proto::audit::AuditEntry> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let actions: Vec<&str> = entries.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "environment.create",
            "token.generate",
            "runner.connect",
            "tool.invoke"
        ],
        "{stdout}"
    );
    assert!(entries
        .windows(2)
        .all(|w| w[1].prev_hash == w[0].hash && w[1].seq == w[0].seq + 1));
    let connect = &entries[2];
    assert_eq!(connect.actor.kind.as_deref(), Some("runner"), "{stdout}");
    let call = &entries[3];
    assert_eq!(call.tool.as_deref(), Some("ping"));
    assert_eq!(call.decision, runner_proto::audit::AuditDecision::Allowed);
    assert!(
        call.actor
            .client
            .as_deref()
            .unwrap_or("")
            .starts_with("runner"),
        "the CLI names itself: {:?}",
        call.actor
    );

    let mut command = admin(&relay);
    command.args(["audit", "--json", "--action", "tool.invoke", "--limit", "1"]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");

    let mut command = admin(&relay);
    command.args(["audit", "--env", &env]);
    let (code, stdout, stderr) = run(command).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.starts_with("SEQ"), "{stdout}");
    assert!(
        stdout.contains("tool.invoke") && stdout.contains("allowed"),
        "{stdout}"
    );

    let mut command = admin(&relay);
    command.args(["audit", "--action", "nonsense"]);
    let (code, _, stderr) = run(command).await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("unknown action"), "{stderr}");
}

/// A runner of `hostname` connected with `token`, speaking the protocol by
/// hand (the real runner reports this machine's own hostname).
async fn connect_as(
    relay: &Relay,
    token: &str,
    hostname: &str,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    use futures_util::{SinkExt, StreamExt};
    use runner_proto::ws::{Hello, HostFacts, RunnerMessage};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;
    let url = format!(
        "{}{}",
        relay.url.replacen("http", "ws", 1),
        runner_proto::RUNNER_CONNECT_PATH
    );
    let mut request = url.into_client_request().expect("request");
    request.headers_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("header"),
    );
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("connects");
    let hello = RunnerMessage::Hello(Hello {
        protocol_version: runner_proto::PROTOCOL_VERSION,
        runner_version: env!("CARGO_PKG_VERSION").to_owned(),
        instance_id: "other-instance".to_owned(),
        host: HostFacts {
            hostname: hostname.to_owned(),
            os: "linux".to_owned(),
            arch: "x86_64".to_owned(),
            workspace: "/srv".to_owned(),
        },
        tools: Vec::new(),
        sandbox_capacity: None,
    });
    let text = serde_json::to_string(&hello).expect("json");
    socket.send(Message::text(text)).await.expect("hello sent");
    let welcome = tokio::time::timeout(std::time::Duration::from_secs(10), socket.next())
        .await
        .expect("welcome in time");
    assert!(
        matches!(welcome, Some(Ok(Message::Text(ref text))) if text.contains("welcome")),
        "{welcome:?}"
    );
    socket
}

/// Registering a second machine with a token whose environment has a
/// runner connected elsewhere is refused (naming that host and since
/// when), storing nothing, unless --replace.
#[tokio::test]
async fn register_refuses_to_take_over_from_another_machine_without_replace() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(json!({"name": "busy-box"})).await;
    let token = relay.token(&env).await;
    let _other = connect_as(&relay, &token, "other-box").await;

    let home = tempfile::tempdir().expect("tempdir");
    let register = |extra: &[&str]| {
        let mut command = tokio::process::Command::new(runner_bin());
        command
            .env("RUNNER_CONFIG_DIR", home.path().join("config"))
            .env("RUNNER_STATE_DIR", home.path().join("state"))
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env("RUNNER_TOKEN", &token)
            .env_remove("RUNNER_URL")
            .args(["register", "--url", &relay.url])
            .args(extra);
        run(command)
    };
    let (code, _, stderr) = register(&[]).await;
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("error: a runner on other-box is connected to environment busy-box"),
        "{stderr}"
    );
    assert!(stderr.contains("(since 20"), "{stderr}");
    assert!(stderr.contains("hint: pass --replace"), "{stderr}");
    assert!(
        !home.path().join("config").join("config.yaml").exists(),
        "a refused register stored its registration"
    );

    let (code, _, stderr) = register(&["--replace"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: a runner on other-box"),
        "{stderr}"
    );
    assert!(home.path().join("config").join("config.yaml").exists());
}
