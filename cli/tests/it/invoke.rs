//! invoke-tool through the relay to a real runner (SPEC §7).

use reqwest::Method;
use serde_json::json;

use crate::support::{self, dev_env, Relay, Runner};

#[tokio::test]
async fn shell_round_trip_output_exit_code_and_stderr() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "echo hi"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["stdout"], "hi\n");
    assert_eq!(body["exit_code"], 0);
    assert!(body["error"].is_null(), "{body}");

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "echo out; echo oops >&2; exit 3"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["stdout"], "out\n");
    assert_eq!(body["result"]["stderr"], "oops\n");
    assert_eq!(body["exit_code"], 3);
}

#[tokio::test]
async fn calls_run_concurrently_on_one_socket() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    // Eight 1-second sleeps finish in well under 8 s only if they overlap.
    let started = std::time::Instant::now();
    let calls = (0..8).map(|i| {
        let relay = &relay;
        let env = &env;
        async move {
            relay
                .invoke(env, json!({"tool_name": "shell", "args": {"command": format!("sleep 1; echo {i}")}}))
                .await
        }
    });
    let answers = futures_util::future::join_all(calls).await;
    for (i, (status, body)) in answers.iter().enumerate() {
        assert_eq!(*status, 200, "{body}");
        assert_eq!(body["result"]["stdout"], format!("{i}\n"));
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn no_runner_is_503() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "true"}}),
        )
        .await;
    assert_eq!(status, 503, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
}

#[tokio::test]
async fn timeout_is_504_and_the_process_group_is_killed() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    // A marker only this test's processes carry; the grandchild sleep (in
    // the background of a subshell) must die too, not just bash.
    let marker = format!("31.{}", std::process::id());
    let command = format!("(sleep {marker} &) ; sleep {marker}");
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 1}),
        )
        .await;
    assert_eq!(status, 504, "{body}");
    assert!(
        body["error"]["call_id"].is_string(),
        "504 names the call: {body}"
    );
    support::wait_until("the sleeping processes are gone", || {
        !support::process_with(&marker)
    })
    .await;
}

#[tokio::test]
async fn timeout_bounds_are_400() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    for timeout in [json!(0), json!(3601), json!(-1), json!("10")] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": "true"}, "timeout_s": timeout}),
            )
            .await;
        assert_eq!(status, 400, "timeout_s {timeout}: {body}");
        assert!(body["error"]["code"].is_string(), "{body}");
    }
}

#[tokio::test]
async fn bad_api_key_is_401() {
    let relay = Relay::spawn().await;
    let (status, body) = relay
        .api_with_key("rnrk_wrong", Method::GET, "/execution-environments", None)
        .await;
    assert_eq!(status, 401, "{body}");
    assert!(!body.to_string().contains(&relay.admin_key));
}

#[tokio::test]
async fn policy_refusals_are_403_and_checked_before_the_runner() {
    let relay = Relay::spawn().await;
    let allowed = relay.dir.path().join("allowed");
    std::fs::create_dir_all(&allowed).expect("mkdir");
    support::write(&allowed.join("ok.txt"), "fine");
    // A production environment: the default allow-list has no `shell`.
    let (env, _runner) = Runner::online(
        &relay,
        json!({"name": "prod", "policy": {
            "tools": {"mode": "list", "tools": ["file_read", "ping"]},
            "file_paths": [allowed.display().to_string()]
        }}),
    )
    .await;

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "echo hi"}}),
        )
        .await;
    assert_eq!(status, 403, "{body}");

    let inside = allowed.join("ok.txt").display().to_string();
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_read", "args": {"path": inside}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["content"], "fine");

    let sibling = format!("{}2/x", allowed.display());
    let escape = format!("{}/../secret", allowed.display());
    for path in ["/etc/hostname", sibling.as_str(), escape.as_str()] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await;
        assert_eq!(status, 403, "{path}: {body}");
    }
}

#[tokio::test]
async fn relative_paths_stay_in_the_workspace_and_symlink_escapes_are_refused() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let outside = runner.home.path().join("outside");
    support::write(&outside.join("secret"), "s3cret");
    std::os::unix::fs::symlink(&outside, runner.workspace().join("link")).expect("symlink");

    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_write", "args": {"path": "notes/a.txt", "content": "hello"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(
        std::fs::read_to_string(runner.workspace().join("notes/a.txt")).expect("written"),
        "hello"
    );
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_read", "args": {"path": "notes/a.txt"}}),
        )
        .await;
    assert_eq!(body["result"]["content"], "hello", "{body}");

    for path in ["link/secret", "../outside/secret"] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await;
        let refused = status == 403 || body["error"].is_string();
        assert!(refused, "{path}: {status} {body}");
        assert!(!body.to_string().contains("s3cret"), "{path}: {body}");
    }
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_write", "args": {"path": "link/planted", "content": "x"}}),
        )
        .await;
    assert!(body["error"].is_string(), "{body}");
    assert!(!outside.join("planted").exists());
}

#[tokio::test]
async fn binary_files_come_back_base64() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    std::fs::write(runner.workspace().join("blob"), [0u8, 159, 146, 150, 255]).expect("write");
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_read", "args": {"path": "blob", "offset": 1, "limit": 3}}),
        )
        .await;
    assert_eq!(body["result"]["encoding"], "base64", "{body}");
    assert_eq!(body["result"]["content"], "n5KW", "{body}");
    assert_eq!(body["result"]["bytes_read"], 3);
}

/// A log test's case: flags, environment variables, and whether the log
/// in question is on.
type LogCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    bool,
);

/// The runner's per-call log: by default (and with `--call-log true` or
/// RUNNER_CALL_LOG=1) one "call finished" line per call (naming the call,
/// its tool and exit code); with `--call-log false` or RUNNER_CALL_LOG=0,
/// none. A call that fails (here a file that is not there) is logged
/// either way, as "call failed".
#[tokio::test]
async fn the_runner_logs_each_call_only_with_call_log() {
    let cases: [LogCase; 5] = [
        (&[], &[], true),
        (&["--call-log", "false"], &[], false),
        (&["--call-log", "true"], &[("RUNNER_CALL_LOG", "0")], true),
        (&[], &[("RUNNER_CALL_LOG", "off")], false),
        (&[], &[("RUNNER_CALL_LOG", "1")], true),
    ];
    let relay = Relay::spawn().await;
    for (flags, vars, call_log) in cases {
        let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
        runner.start_with(flags, vars);
        relay.wait_status(&env, "online").await;
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": "exit 3"}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let finished_id = body["call_id"].as_str().expect("call id").to_owned();
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "file_read", "args": {"path": "not-there"}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert!(body["error"].is_string(), "{body}");
        let failed_id = body["call_id"].as_str().expect("call id").to_owned();

        let (_, log) = runner.stop().await;
        assert!(log.contains("connected"), "{log}");
        let lines = |needle: &str| -> Vec<String> {
            log.lines()
                .filter(|line| line.contains(needle))
                .map(str::to_owned)
                .collect()
        };
        let failed = lines("call failed");
        assert_eq!(failed.len(), 1, "{log}");
        for part in [failed_id.as_str(), "tool=file_read", "not-there"] {
            assert!(failed[0].contains(part), "{part} in {}", failed[0]);
        }
        let finished = lines("call finished");
        if call_log {
            assert_eq!(finished.len(), 1, "{log}");
            for part in [finished_id.as_str(), "tool=shell", "exit_code=3"] {
                assert!(finished[0].contains(part), "{part} in {}", finished[0]);
            }
        } else {
            assert!(finished.is_empty(), "{log}");
            assert!(!log.contains(&finished_id), "{log}");
        }
    }
}

/// The relay's access log: with `--access-log` (or
/// RUNNER_RELAY_ACCESS_LOG=1), one "call finished" line per call (naming
/// the call, its tool, caller and exit code) and one "answered" line per
/// API request; without it, neither (the journal is the record), while the
/// relay's other info lines are still written.
#[tokio::test]
async fn the_relay_logs_each_call_only_with_access_log() {
    let cases: [LogCase; 4] = [
        (&[], &[], false),
        (&["--access-log"], &[], true),
        (&[], &[("RUNNER_RELAY_ACCESS_LOG", "1")], true),
        (&[], &[("RUNNER_RELAY_ACCESS_LOG", "off")], false),
    ];
    for (flags, env, access_log) in cases {
        let relay = Relay::spawn_logged(flags, env).await;
        let (env, _runner) = Runner::online(&relay, dev_env()).await;
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": "exit 3"}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let call_id = body["call_id"].as_str().expect("call id");

        // The lines are written before the answer leaves the relay.
        let log = relay.log();
        assert!(log.contains("runner connected"), "{log}");
        let finished: Vec<&str> = log
            .lines()
            .filter(|line| line.contains("call finished"))
            .collect();
        let answered = log
            .lines()
            .filter(|line| line.contains("answered") && line.contains("/invoke-tool"))
            .count();
        if access_log {
            assert_eq!(finished.len(), 1, "{log}");
            for part in [
                call_id,
                env.as_str(),
                "tool=shell",
                "member=",
                "exit_code=3",
            ] {
                assert!(finished[0].contains(part), "{part} in {}", finished[0]);
            }
            assert_eq!(answered, 1, "{log}");
        } else {
            assert!(finished.is_empty() && answered == 0, "{log}");
            assert!(!log.contains(call_id), "{log}");
        }
    }
}

/// The call id `runner invoke` names in its notes ("during call ID") or
/// its hint ("--call-id ID").
fn call_id_in(stderr: &str) -> String {
    ["during call ", "--call-id "]
        .iter()
        .find_map(|before| stderr.split(before).nth(1))
        .and_then(|rest| rest.split([' ', '`']).next())
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no call id in {stderr:?}"))
}

/// `runner invoke` on a call that the relay loses mid-way (kill -9, then
/// a restart on the same address and data directory): it asks again with
/// its own call id and gets the call's answer; the call ran once.
#[tokio::test]
async fn invoke_gets_the_answer_across_a_relay_killed_and_restarted_mid_call() {
    across_a_relay_restart(false).await;
}

/// The same with `--stream`: the output the relay could not stream comes
/// from the answer.
#[tokio::test]
async fn invoke_stream_gets_the_answer_across_a_relay_killed_and_restarted_mid_call() {
    across_a_relay_restart(true).await;
}

async fn across_a_relay_restart(stream: bool) {
    let mut relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let ledger = runner.workspace().join("ledger");
    let started = runner.workspace().join("started");
    let command = format!(
        "touch '{}'; sleep 3; echo ran >> '{}'; echo finished",
        started.display(),
        ledger.display()
    );
    let invoke = relay
        .admin_command()
        .args(["invoke", &env, "shell", "--timeout", "60", "--arg"])
        .arg(format!("command={command}"))
        .args(stream.then_some("--stream"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runner invoke");
    support::wait_until("the call runs", || started.exists()).await;

    relay.kill().await;
    // Down for a moment: the first attempts to ask again are refused.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    relay.restart().await;

    let output = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        invoke.wait_with_output(),
    )
    .await
    .expect("invoke ends")
    .expect("wait");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert_eq!(stdout, "finished\n", "{stderr}");
    assert!(stderr.contains("lost the relay during call"), "{stderr}");
    assert!(stderr.contains("never runs twice"), "{stderr}");
    let call_id = call_id_in(&stderr);
    let lines = std::fs::read_to_string(&ledger).expect("the call ran");
    assert_eq!(lines, "ran\n", "the call ran once");

    // The relay's journal has it too, under the id invoke chose.
    let (status, entry) = relay
        .api(Method::GET, &format!("/invocations/{call_id}"), None)
        .await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["state"], "done", "{entry}");
    eprintln!("invoke (stream: {stream}) across a relay restart:\n{stderr}");
}

/// The runner killed mid-call: `runner invoke` says so at once (exit 69,
/// the reason, the call id), and asking again with that id gets the same
/// answer at once instead of waiting for the call's timeout.
#[tokio::test]
async fn invoke_says_the_runner_dropped_and_the_call_id_answers_the_same_at_once() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let started = runner.workspace().join("started");
    let command = format!("touch '{}'; sleep 8", started.display());
    let invoke = relay
        .admin_command()
        .args(["invoke", &env, "shell", "--timeout", "300", "--arg"])
        .arg(format!("command={command}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runner invoke");
    support::wait_until("the call runs", || started.exists()).await;

    let mut killed = runner.child.take().expect("running");
    killed.start_kill().expect("kill -9 the runner");
    let _ = killed.wait().await;
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        invoke.wait_with_output(),
    )
    .await
    .expect("invoke ends at once")
    .expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(69), "{stderr}");
    assert!(
        stderr.contains("the runner disconnected before the call finished"),
        "{stderr}"
    );
    let call_id = call_id_in(&stderr);
    assert!(stderr.contains(&format!("--call-id {call_id}")), "{stderr}");

    let (status, entry) = relay
        .api(Method::GET, &format!("/invocations/{call_id}"), None)
        .await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["state"], "failed", "{entry}");
    assert_eq!(entry["error_code"], "runner_disconnected", "{entry}");

    let asked = std::time::Instant::now();
    let again = relay
        .admin_command()
        .args(["invoke", &env, "shell", "--timeout", "300", "--call-id"])
        .arg(&call_id)
        .arg("--arg")
        .arg(format!("command={command}"))
        .output()
        .await
        .expect("runner invoke again");
    let took = asked.elapsed();
    let again_stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(69), "{again_stderr}");
    assert_eq!(again_stderr, stderr, "the same answer");
    assert!(took < std::time::Duration::from_secs(5), "took {took:?}");
}

/// A relay that is not there at all (nothing was sent) is said at once,
/// not after the time `invoke` spends asking again for a lost call.
#[tokio::test]
async fn invoke_to_a_relay_that_is_not_running_fails_at_once() {
    let relay = Relay::spawn().await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address")
    };
    let started = std::time::Instant::now();
    let output = relay
        .admin_command()
        .env("RUNNER_URL", format!("http://{closed}"))
        .args(["invoke", "env_nowhere", "shell", "--arg", "command=true"])
        .output()
        .await
        .expect("runner invoke");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(76), "{stderr}");
    assert!(stderr.contains("could not connect"), "{stderr}");
    assert!(!stderr.contains("asking again"), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// The relay's log lines carry plain values: a default environment as its
/// id or `none`, teams as a list, never Rust's `Some(..)` or `[".."]`.
#[tokio::test]
async fn the_relay_logs_plain_values_not_rust_debug_ones() {
    let relay = Relay::spawn_logged(&[], &[]).await;
    let env = relay.create_env(json!({"name": "plain"})).await;
    let (status, body) = relay
        .api(Method::POST, "/teams", Some(json!({"name": "ops"})))
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, member) = relay
        .api(
            Method::POST,
            "/members",
            Some(json!({"name": "ada", "teams": ["ops"]})),
        )
        .await;
    assert_eq!(status, 201, "{member}");
    let member_path = format!("/members/{}", member["id"].as_str().expect("id"));
    for default in [json!(env), json!(null)] {
        let (status, body) = relay
            .api(
                Method::PATCH,
                &member_path,
                Some(json!({"default_environment": default})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // A refused token: no environment to name, so no environment_id.
    let refused = reqwest::Client::new()
        .post(format!(
            "{}{}",
            relay.url,
            runner_proto::RUNNER_REGISTER_PATH
        ))
        .bearer_auth("rnrt_not_a_token")
        .send()
        .await
        .expect("answer");
    assert_eq!(refused.status(), 401);
    let log = relay.log();
    let line =
        |what: &str| -> Vec<&str> { log.lines().filter(|line| line.contains(what)).collect() };
    let created = line("member created");
    assert_eq!(created.len(), 1, "{log}");
    assert!(created[0].contains("teams=ops"), "{}", created[0]);
    let defaults = line("default environment set");
    assert_eq!(defaults.len(), 2, "{log}");
    assert!(
        defaults[0].contains(&format!("default_environment={env}")),
        "{}",
        defaults[0]
    );
    assert!(
        defaults[1].contains("default_environment=none"),
        "{}",
        defaults[1]
    );
    let refusals = line("registration token refused");
    assert_eq!(refusals.len(), 1, "{log}");
    assert!(!refusals[0].contains("environment_id"), "{}", refusals[0]);
    for line in log.lines() {
        assert!(
            !line.contains("Some(") && !line.contains("[\"") && !line.contains("=\""),
            "a Rust debug value in the log: {line}"
        );
    }
}
