//! `runner run` behaviour: permission file, single instance, shutdown,
//! being stopped by the relay.

use reqwest::Method;
use serde_json::json;

use crate::support::{self, dev_env, Relay, Runner};

#[tokio::test]
async fn a_bad_permission_file_stops_the_runner_before_it_connects() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
    let missing = runner.home.path().join("missing.yaml");
    let broken = runner.home.path().join("broken.yaml");
    support::write(&broken, "permission: [not, a, map");
    let empty = runner.home.path().join("empty.yaml");
    support::write(&empty, "permission: {}\n");
    for file in [&missing, &broken, &empty] {
        runner.start(&["--permission-config", &file.display().to_string()]);
        let child = runner.child.take().expect("spawned");
        let (code, stderr) = support::wait_output(child).await;
        assert_eq!(code, Some(78), "{}: {stderr}", file.display());
        assert!(stderr.contains("refusing to start"), "{stderr}");
    }
    assert_eq!(relay.status(&env).await, "pending");
}

#[tokio::test]
async fn the_permission_file_gates_every_shell_call() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
    let rules = runner.home.path().join("permission.yaml");
    support::write(
        &rules,
        "permission:\n  \"*\": deny\n  \"echo *\": allow\n  \"> /srv/allowed/*\": allow\n",
    );
    runner.start(&["--permission-config", &rules.display().to_string()]);
    relay.wait_status(&env, "online").await;

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": "echo allowed"}}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "allowed\n", "{body}");

    let marker = runner.home.path().join("must-not-exist");
    for command in [
        format!("echo x; touch {}", marker.display()),
        format!("echo $(touch {})", marker.display()),
        format!("echo x > {}", marker.display()),
    ] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": command}}),
            )
            .await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["error"]["code"], "denied_by_runner_policy", "{body}");
        let error = body["error"]["message"].as_str().unwrap_or_default();
        assert!(error.contains("permission file"), "{command}: {body}");
        assert!(!marker.exists(), "{command} ran");
    }

    // `runner invoke` exits 66 for it, as for any policy refusal, streamed
    // or not, and says where to look.
    for stream in [false, true] {
        let mut command = relay.admin_command();
        command.args(["invoke", &env, "shell", "--arg"]);
        command.arg(format!("command=touch {}", marker.display()));
        if stream {
            command.arg("--stream");
        }
        let output = command.output().await.expect("runner invoke");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(66), "stream {stream}: {stderr}");
        assert!(stderr.contains("permission file"), "{stderr}");
        assert!(!marker.exists(), "ran");
    }
}

/// A call's `env` argument is checked too: `BASH_ENV`, an exported
/// function or `GIT_CONFIG_*` would otherwise run code no rule allowed, under
/// an allowlist and a denylist alike.
#[tokio::test]
async fn the_permission_file_gates_a_calls_environment() {
    let relay = Relay::spawn().await;
    for rules_text in [
        "permission:\n  \"*\": deny\n  \"echo *\": allow\n  \"git status\": allow\n  \"LANG=*\": allow\n",
        "permission:\n  \"*\": allow\n  \"touch *\": deny\n",
    ] {
        let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
        let rules = runner.home.path().join("permission.yaml");
        support::write(&rules, rules_text);
        runner.start(&["--permission-config", &rules.display().to_string()]);
        relay.wait_status(&env, "online").await;
        let marker = runner.home.path().join("must-not-exist");
        let touch = format!("touch {}", marker.display());

        // A variable the rules allow (or do not deny) passes.
        let (_, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": "echo \"$LANG\"", "env": {"LANG": "C"}}}),
            )
            .await;
        assert_eq!(body["result"]["stdout"], "C\n", "{rules_text}: {body}");

        for (tool, args) in [
            ("shell", json!({"command": "echo hi", "env": {"BASH_ENV": format!("$({touch})")}})),
            ("shell", json!({"command": "echo hi", "env": {"BASH_FUNC_echo%%": format!("() {{ {touch}; }}")}})),
            ("git", json!({"args": ["status"], "env": {
                "GIT_CONFIG_COUNT": "1",
                "GIT_CONFIG_KEY_0": "core.fsmonitor",
                "GIT_CONFIG_VALUE_0": touch,
            }})),
        ] {
            let (status, body) = relay
                .invoke(&env, json!({"tool_name": tool, "args": args}))
                .await;
            assert_eq!(status, 403, "{body}");
            assert_eq!(body["error"]["code"], "denied_by_runner_policy", "{body}");
            let error = body["error"]["message"].as_str().unwrap_or_default();
            assert!(
                error.contains("permission file") && error.contains("environment variable"),
                "{rules_text}: {tool} {args}: {body}"
            );
            assert!(!marker.exists(), "{rules_text}: {tool} {args} ran");
        }
        runner.stop().await;
    }
}

#[tokio::test]
async fn a_second_runner_with_the_same_state_dir_is_refused_naming_the_pid() {
    let relay = Relay::spawn().await;
    let (_env, mut runner) = Runner::online(&relay, dev_env()).await;
    let pid = runner.child.as_ref().and_then(|c| c.id()).expect("pid");
    let output = runner
        .command()
        .arg("run")
        .output()
        .await
        .expect("second run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("PID {pid}")), "{stderr}");
    let (code, _) = runner.stop().await;
    assert_eq!(code, Some(0));
}

#[tokio::test]
async fn sigterm_answers_in_flight_calls_and_exits_cleanly() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let marker = format!("47.{}", std::process::id());
    let call = {
        let relay = &relay;
        let env = env.clone();
        let marker = marker.clone();
        async move {
            relay
                .invoke(
                    &env,
                    json!({"tool_name": "shell", "args": {"command": format!("sleep {marker}")}}),
                )
                .await
        }
    };
    let stop = async {
        support::wait_until("the call is running", || support::process_with(&marker)).await;
        runner.stop().await
    };
    let ((status, body), (code, stderr)) = tokio::join!(call, stop);
    assert_eq!(code, Some(0), "{stderr}");
    // Either the runner's cancelled answer or the relay's prompt 503 when the
    // socket closed: never a hang until the 300 s default timeout.
    assert!(
        (status == 200
            && body["error"]
                .as_str()
                .unwrap_or_default()
                .contains("cancelled"))
            || status == 503,
        "{status} {body}"
    );
    assert!(!support::process_with(&marker));
}

#[tokio::test]
async fn revoking_the_token_stops_the_runner_with_a_clear_message() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let (status, body) = relay
        .api(
            Method::POST,
            &format!("/execution-environments/{env}/revoke-token"),
            None,
        )
        .await;
    assert!(status == 200 || status == 204, "{status} {body}");
    let child = runner.child.take().expect("running");
    let (code, stderr) = support::wait_output(child).await;
    assert_eq!(code, Some(10), "{stderr}");
    assert!(stderr.contains("revoked"), "{stderr}");
}

#[tokio::test]
async fn the_token_never_appears_in_the_runner_logs_or_config() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut runner = Runner::register(&relay, &token).await;
    runner.start(&[]);
    relay.wait_status(&env, "online").await;
    let (_, stderr) = runner.stop().await;
    let secret_part = &token[token.len() - 16..];
    assert!(!stderr.contains(secret_part), "token in logs: {stderr}");
    let config = std::fs::read_to_string(runner.config_dir().join("config.yaml")).expect("config");
    assert!(!config.contains(secret_part), "token in config.yaml");
}

#[tokio::test]
async fn a_second_runner_replaces_the_first_which_stops_without_fighting_back() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut first = Runner::register(&relay, &token).await;
    first.start(&[]);
    relay.wait_status(&env, "online").await;
    let mut second = Runner::register(&relay, &token).await;
    second.start(&[]);
    let child = first.child.take().expect("running");
    let (code, stderr) = support::wait_output(child).await;
    assert_eq!(code, Some(10), "{stderr}");
    assert!(stderr.contains("replaced"), "{stderr}");
    let host = nix::unistd::gethostname()
        .expect("hostname")
        .into_string()
        .expect("utf-8");
    assert!(
        stderr.contains(&host),
        "names the host that replaced it: {stderr}"
    );
    // The newer runner serves the environment.
    relay.wait_status(&env, "online").await;
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "ping", "args": {"who": "second"}}),
        )
        .await;
    assert_eq!(body["result"]["who"], "second", "{body}");
    let (code, _) = second.stop().await;
    assert_eq!(code, Some(0));
}

/// A relay that turns connects away with `503` and `Retry-After: 3` (as a
/// relay at its handshake limit does) is not asked again sooner: the
/// runner's own first backoff is 0.25–0.5 s.
#[tokio::test]
async fn a_busy_relays_retry_after_is_honoured() {
    use std::io::{Read, Write};
    let relay = Relay::spawn().await;
    let (_env, mut runner) = Runner::registered(&relay, dev_env()).await;
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", busy.local_addr().expect("address"));
    let attempts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = std::sync::Arc::clone(&attempts);
    std::thread::spawn(move || {
        for stream in busy.incoming() {
            let Ok(mut stream) = stream else { return };
            seen.lock().expect("lock").push(std::time::Instant::now());
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let _ = stream.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    runner.start(&["--url", &url]);
    support::wait_until("two connect attempts", || {
        attempts.lock().expect("lock").len() >= 2
    })
    .await;
    let times = attempts.lock().expect("lock").clone();
    let gap = times[1] - times[0];
    assert!(
        gap >= std::time::Duration::from_secs(3),
        "retried after {gap:?}, before the relay's Retry-After"
    );
    assert!(
        gap <= std::time::Duration::from_millis(4_500 + 500),
        "retried after {gap:?}: more than Retry-After plus its jitter"
    );
    let (_, stderr) = runner.stop().await;
    assert!(stderr.contains("retry after 3 s"), "{stderr}");
}

/// `run` works its connection and calls on one thread unless
/// `--worker-threads` (or RUNNER_WORKER_THREADS) asks for more, and a
/// runner with more threads serves calls as well.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn run_uses_the_worker_threads_it_is_given() {
    let relay = Relay::spawn().await;
    for (flags, env, want) in [
        (&[][..], None, 1),
        (&["--worker-threads", "3"][..], None, 3),
        (&[][..], Some("2"), 2),
    ] {
        let (env_id, mut runner) = Runner::registered(&relay, dev_env()).await;
        let vars: Vec<(&str, &str)> = env
            .map(|threads| ("RUNNER_WORKER_THREADS", threads))
            .into_iter()
            .collect();
        runner.start_with(flags, &vars);
        relay.wait_status(&env_id, "online").await;
        let (status, body) = relay
            .invoke(
                &env_id,
                json!({"tool_name": "shell", "args": {"command": "echo ok"}}),
            )
            .await;
        assert_eq!(
            (status, body["result"]["stdout"].as_str()),
            (200, Some("ok\n")),
            "{body}"
        );

        // Blocking-pool threads bear the same name; these runners keep
        // their token in a file and ran only a shell call, so none is alive.
        let pid = runner
            .child
            .as_ref()
            .and_then(|child| child.id())
            .expect("pid");
        let workers = std::fs::read_dir(format!("/proc/{pid}/task"))
            .expect("tasks")
            .flatten()
            .filter(|task| {
                std::fs::read_to_string(task.path().join("comm"))
                    .is_ok_and(|comm| comm.trim() == "tokio-rt-worker")
            })
            .count();
        assert_eq!(workers, want, "{flags:?} {env:?}");
    }
}
