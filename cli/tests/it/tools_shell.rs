//! `shell` completed: bounded output kept whole in a file, process trees
//! stopped on timeout, streaming to the API caller (SSE and `runner invoke
//! --stream`), and argument validation at the relay.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{self, dev_env, Relay, Runner};
use crate::tools_support::{invoke_events, peak_rss_kib};

const FIFTY_MB: u64 = 50 * 1024 * 1024;

#[tokio::test]
async fn fifty_megabytes_of_output_arrive_whole_through_the_kept_file_with_bounded_memory() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let pid = runner
        .child
        .as_ref()
        .and_then(|child| child.id())
        .expect("runner pid");
    let before = peak_rss_kib(pid);

    // 37-byte lines (36 characters and a newline), cut at exactly 50 MiB.
    let command =
        format!("yes abcdefghijklmnopqrstuvwxyz0123456789 | head -c {FIFTY_MB}; echo finished >&2");
    let started = Instant::now();
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 300}),
        )
        .await;
    let elapsed = started.elapsed();
    assert_eq!(
        status,
        200,
        "{}",
        &body.to_string()[..body.to_string().len().min(2000)]
    );
    let result = &body["result"];
    assert_eq!(body["exit_code"], 0);
    assert_eq!(result["stdout_bytes"], FIFTY_MB);
    assert_eq!(result["truncated"], true);
    assert_eq!(result["stderr"], "finished\n", "stderr is kept apart");
    let inline = result["stdout"].as_str().expect("stdout text");
    assert!(
        inline.len() < 1024 * 1024 + 200,
        "inline output is bounded: {}",
        inline.len()
    );
    assert!(inline.starts_with("abcdefghijklmnopqrstuvwxyz0123456789\n"));
    assert!(
        inline.contains("bytes truncated"),
        "a marker where the middle was cut"
    );

    // Everything is in the kept file, named in the result (relative to the workspace).
    let kept = result["stdout_file"].as_str().expect("stdout_file");
    assert!(kept.starts_with(".runner/output/"), "{kept}");
    let bytes = std::fs::read(runner.workspace().join(kept)).expect("kept file");
    assert_eq!(bytes.len() as u64, FIFTY_MB);
    // The output may hold secrets: the runner's user alone reads it.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(runner.workspace().join(kept))
            .expect("kept file")
            .permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "{kept}");
    let line = b"abcdefghijklmnopqrstuvwxyz0123456789\n";
    assert!(
        bytes
            .chunks(line.len())
            .all(|chunk| line.starts_with(chunk)),
        "the kept file is the exact output"
    );
    // The tail of the inline text is the tail of the output.
    let tail = String::from_utf8_lossy(&bytes[bytes.len() - 100..]).into_owned();
    assert!(inline.ends_with(&tail));

    // ...and file_read reaches it in pages.
    let (_, page) = relay
        .invoke(&env, json!({"tool_name": "file_read", "args": {"path": kept, "offset": FIFTY_MB - 37, "limit": 37}}))
        .await;
    assert_eq!(page["result"]["size"], FIFTY_MB, "{page}");

    let after = peak_rss_kib(pid);
    eprintln!(
        "50 MiB of shell output: {:.2} s; runner peak RSS {} KiB before, {} KiB after",
        elapsed.as_secs_f64(),
        before,
        after
    );
    // Holding the output would add at least 50 MiB to the peak.
    assert!(
        after - before < 24 * 1024,
        "runner peak RSS grew from {before} KiB to {after} KiB"
    );
}

#[tokio::test]
async fn a_timeout_stops_grandchildren_and_processes_that_left_the_group() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    let id = std::process::id();
    // A background grandchild in the group, a `setsid` escapee in its own
    // session and group, and the foreground sleep.
    let grandchild = format!("41.{id}1");
    let escapee = format!("41.{id}2");
    let foreground = format!("41.{id}3");
    let command = format!("(sleep {grandchild} &); setsid sleep {escapee} & sleep {foreground}");
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "shell", "args": {"command": command, "timeout_s": 1}, "timeout_s": 60}))
        .await;
    assert_eq!(status, 200, "{body}");
    let error = body["error"]
        .as_str()
        .expect("a timed-out call is an error");
    assert!(
        error.contains("timed out after 1s (the tool's timeout_s)"),
        "{error}"
    );
    assert_eq!(body["error_code"], "timeout", "the 504's code: {body}");
    let killed = body["result"]["killed"]["processes"]
        .as_array()
        .expect("what was killed");
    let found_by = |how: &str| {
        killed
            .iter()
            .any(|p| p["found_by"] == how && p["command"] == "sleep")
    };
    assert!(found_by("process_group"), "{killed:?}");
    assert!(
        found_by("call_marker"),
        "the setsid escapee is found by the call marker: {killed:?}"
    );
    for marker in [&grandchild, &escapee, &foreground] {
        support::wait_until(&format!("sleep {marker} is gone"), || {
            !support::process_with(marker)
        })
        .await;
    }
}

#[tokio::test]
async fn a_relay_timeout_cancels_the_escapees_too() {
    relay_timeout_stops(&format!("42.{}", std::process::id()), "setsid").await;
}

/// A call whose command leaves a `sleep` behind through `escape` (e.g.
/// `setsid`), cancelled by the relay's timeout (504): the sleep is gone.
async fn relay_timeout_stops(marker: &str, escape: &str) {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    let command = format!("{escape} sleep {marker} & sleep {marker}");
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {"command": command}, "timeout_s": 1}),
        )
        .await;
    assert_eq!(status, 504, "{body}");
    support::wait_until(&format!("the {escape} escapee is gone"), || {
        !support::process_with(marker)
    })
    .await;
}

#[tokio::test]
async fn output_streams_as_server_sent_events_then_one_result() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    let command = "echo first; echo oops >&2; sleep 2; printf 'second €\\n'; exit 7";
    let (status, events) = invoke_events(
        &relay,
        &env,
        json!({"tool_name": "shell", "args": {"command": command}}),
    )
    .await;
    assert_eq!(status, 200);
    let (last, result, result_at) = events.last().cloned().expect("events");
    assert_eq!(last, "result", "{events:?}");
    assert_eq!(result["exit_code"], 7);
    assert_eq!(result["result"]["stdout"], "first\nsecond €\n");
    let outputs: Vec<_> = events
        .iter()
        .filter(|(name, _, _)| name == "output")
        .collect();
    let text = |stream: &str| -> String {
        outputs
            .iter()
            .filter(|(_, data, _)| data["stream"] == stream)
            .filter_map(|(_, data, _)| data["data"].as_str())
            .collect()
    };
    assert_eq!(text("stdout"), "first\nsecond €\n");
    assert_eq!(text("stderr"), "oops\n");
    // The first line came while the command was still sleeping.
    let first_at = outputs
        .first()
        .map(|(_, _, at)| *at)
        .expect("output events");
    assert!(
        result_at - first_at >= Duration::from_millis(1500),
        "output was not live"
    );
    assert_eq!(
        events
            .iter()
            .filter(|(name, _, _)| name == "result")
            .count(),
        1
    );
}

#[tokio::test]
async fn invoke_stream_prints_output_live_and_exits_with_the_tools_code() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    let mut command = relay.admin_command();
    command
        .args(["invoke", &env, "shell", "--stream", "--arg"])
        .arg("command=echo to-out; echo to-err >&2; exit 3");
    let output = command.output().await.expect("runner invoke runs");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "to-out\n");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("to-err\n"),
        "{output:?}"
    );
}

/// Output that is not text (every byte value, several MiB, more than the
/// inline limit) arrives through `runner invoke --stream` byte for byte:
/// binary frames from the runner, the binary stream from the relay.
#[tokio::test]
async fn invoke_stream_is_byte_exact_for_binary_output() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    // 3 MiB of a simple generator: every byte value, no pattern that a
    // chunk boundary could hide.
    let mut state = 0x2545_f491_u32;
    let blob: Vec<u8> = (0..3 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(runner.workspace().join("blob.bin"), &blob).expect("blob");
    let mut command = relay.admin_command();
    command
        .args(["invoke", &env, "shell", "--stream", "--arg"])
        .arg("command=cat blob.bin; printf '\\377\\376' >&2");
    let output = command.output().await.expect("runner invoke runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{:?}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.stdout == blob,
        "stdout differs: {} bytes of {}",
        output.stdout.len(),
        blob.len()
    );
    assert!(
        output.stderr.starts_with(&[0xff, 0xfe]),
        "{:?}",
        &output.stderr[..output.stderr.len().min(64)]
    );
    // The caller had every byte: nothing is kept on the runner's disk.
    let kept = std::fs::read_dir(runner.workspace().join(".runner/output"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(kept, 0, "a streamed call's output was kept in a file");
}

#[tokio::test]
async fn arguments_are_checked_against_the_announced_schema() {
    let relay = Relay::spawn().await;
    let (env, _runner) = Runner::online(&relay, dev_env()).await;
    for (args, field) in [
        (json!({}), "args.command"),
        (json!({"command": 5}), "args.command"),
        (json!({"command": "true", "bogus": 1}), "args.bogus"),
        (json!({"command": "true", "env": {"A": 1}}), "args.env.A"),
        (json!({"command": "true", "timeout_s": 0}), "args.timeout_s"),
    ] {
        let (status, body) = relay
            .invoke(&env, json!({"tool_name": "shell", "args": args}))
            .await;
        assert_eq!(status, 400, "{args}: {body}");
        assert_eq!(body["error"]["code"], "invalid_arguments", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(field), "{args}: {message}");
    }
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "file_write", "args": {"path": "x", "content": "y", "mode": "truncate"}}))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .contains("args.mode"));
}

/// Whether this test process may make cgroup v2 groups under its own (the
/// runner it starts inherits its cgroup, so the runner may too): the
/// cgroup2 mount and our path in it, and a probe directory made and
/// removed.
fn cgroup_v2_writable() -> bool {
    let Ok(membership) = std::fs::read_to_string("/proc/self/cgroup") else {
        return false;
    };
    let Some(path) = membership.lines().find_map(|line| line.strip_prefix("0::")) else {
        return false;
    };
    let Ok(mountinfo) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let Some(mount) = mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split_whitespace().collect();
        (after.starts_with("cgroup2 ") && fields.get(3) == Some(&"/")).then(|| fields[4].to_owned())
    }) else {
        return false;
    };
    let probe = std::path::Path::new(&mount)
        .join(path.trim().trim_start_matches('/'))
        .join(format!("runner-test-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

#[tokio::test]
async fn a_timeout_stops_processes_that_left_the_group_and_wiped_their_environment() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let id = std::process::id();
    let marked = format!("43.{id}1");
    let wiped = format!("43.{id}2");
    let foreground = format!("43.{id}3");
    let command =
        format!("setsid sleep {marked} & env -i setsid sleep {wiped} & sleep {foreground}");
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "shell", "args": {"command": command, "timeout_s": 1}, "timeout_s": 60}))
        .await;
    assert_eq!(status, 200, "{body}");
    let error = body["error"]
        .as_str()
        .expect("a timed-out call is an error");
    assert!(error.contains("timed out after 1s"), "{error}");
    let killed = &body["result"]["killed"];
    let processes = killed["processes"].as_array().expect("what was killed");
    assert_eq!(killed["count"], processes.len(), "{killed}");
    let found_by = |how: &str| {
        processes
            .iter()
            .filter(|p| p["found_by"] == how && p["command"] == "sleep")
            .count()
    };
    assert!(found_by("process_group") >= 1, "{killed}");
    assert_eq!(found_by("call_marker"), 1, "the setsid escapee: {killed}");
    assert_eq!(killed["by"]["call_marker"], 1, "{killed}");

    if !cgroup_v2_writable() {
        // Without a cgroup the `env -i` escapee is out of reach (documented);
        // stop it here so the test leaves nothing behind.
        assert!(killed["cgroup"].is_null(), "{killed}");
        eprintln!("skipped the cgroup part: this host gives the test no writable cgroup v2 (no cgroup2 mount with its cgroup, or no directory can be made there), so the env -i escapee is out of reach");
        kill_processes_with(&wiped);
        return;
    }
    let cgroup = killed["cgroup"].as_str().expect("the call ran in a cgroup");
    assert!(cgroup.contains("runner-call-"), "{cgroup}");
    assert!(
        killed["cgroup_kill"] == "cgroup.kill" || killed["cgroup_kill"] == "cgroup.procs",
        "{killed}"
    );
    assert_eq!(found_by("cgroup"), 1, "the env -i escapee: {killed}");
    assert!(error.contains("1 by cgroup"), "{error}");
    for marker in [&marked, &wiped, &foreground] {
        support::wait_until(&format!("sleep {marker} is gone"), || {
            !support::process_with(marker)
        })
        .await;
    }
    // The emptied cgroup is removed.
    support::wait_until("the call's cgroup is removed", || {
        !std::path::Path::new(cgroup).exists()
    })
    .await;
    // The call's process was created inside it, not moved in (x86_64).
    let (_, log) = runner.stop().await;
    if cfg!(target_arch = "x86_64") {
        assert!(
            log.contains("and starts inside it (clone3)"),
            "the runner's log: {log}"
        );
    }
}

#[tokio::test]
async fn call_cgroups_false_keeps_to_the_process_group_and_the_marker() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
    runner.start(&["--call-cgroups", "false"]);
    relay.wait_status(&env, "online").await;
    let marked = format!("45.{}", std::process::id());
    let command = format!("setsid sleep {marked} & sleep 45");
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "shell", "args": {"command": command, "timeout_s": 1}, "timeout_s": 60}))
        .await;
    assert_eq!(status, 200, "{body}");
    let killed = &body["result"]["killed"];
    // No cgroup even where one could be made: the choice is the runner's.
    assert!(killed["cgroup"].is_null(), "{killed}");
    assert!(
        killed["by"]["cgroup"].is_null() || killed["by"]["cgroup"] == 0,
        "{killed}"
    );
    assert_eq!(
        killed["by"]["call_marker"], 1,
        "the setsid escapee: {killed}"
    );
    support::wait_until(&format!("sleep {marked} is gone"), || {
        !support::process_with(&marked)
    })
    .await;
}

#[tokio::test]
async fn a_cancelled_call_stops_an_env_i_escapee_through_its_cgroup() {
    if !cgroup_v2_writable() {
        eprintln!("skipped: this host gives the test no writable cgroup v2 (no cgroup2 mount with its cgroup, or no directory can be made there), so a call gets no cgroup to stop an env -i escapee through");
        return;
    }
    // The relay's timeout (504) cancels the call on the runner.
    relay_timeout_stops(&format!("44.{}", std::process::id()), "env -i setsid").await;
}

/// SIGKILL, by pid, to the processes whose command line holds `marker`
/// (ones this test started).
fn kill_processes_with(marker: &str) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let holds = std::fs::read(entry.path().join("cmdline")).is_ok_and(|bytes| {
            String::from_utf8_lossy(&bytes)
                .replace('\0', " ")
                .contains(marker)
        });
        if holds {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The runner's own secrets, given to it in its environment (as a service
/// manager or `runner-relay dev` does), stay out of the processes its tools
/// start: with the token, a command could stand in for the runner.
#[tokio::test]
async fn the_runners_secrets_are_not_in_a_commands_environment() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let mut runner = Runner::register(&relay, &token).await;
    let child = runner
        .command()
        .arg("run")
        .env("RUNNER_TOKEN", &token)
        .env("RUNNER_API_KEY", "rnrk_not_for_tools")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn runner run");
    runner.child = Some(child);
    relay.wait_status(&env, "online").await;

    // `env` alone runs without bash; the second through it.
    for command in [
        "env",
        "echo \"token=$RUNNER_TOKEN key=$RUNNER_API_KEY\"; env",
    ] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "shell", "args": {"command": command}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let stdout = body["result"]["stdout"].as_str().expect("stdout");
        // The listing is there (the call's marker is in it)…
        assert!(stdout.contains("RUNNER_CALL_ID="), "{stdout}");
        // …and the secrets are not.
        assert!(!stdout.contains(&token), "the token leaked: {stdout}");
        assert!(
            !stdout.contains("rnrk_not_for_tools"),
            "the API key leaked: {stdout}"
        );
        assert!(!stdout.contains("RUNNER_TOKEN="), "{stdout}");
    }

    // A call may still set one for its own command.
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "shell", "args": {
                "command": "echo \"$RUNNER_API_KEY\"",
                "env": {"RUNNER_API_KEY": "given by the call"},
            }}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["stdout"], "given by the call\n");
}
