//! A runner killed with `kill -9` in the middle of a call leaves that
//! call's processes running; the next start on the same state directory
//! stops them (and says so), and stops nothing else: not another runner's
//! calls, not a process that merely carries the same call id.

use std::collections::BTreeMap;

use serde_json::json;

use crate::support::{self, dev_env, Relay, Runner};

/// Starts a `shell` call on `env` with our own `call_id`, answered or not.
fn start_call(
    relay: &Relay,
    env: &str,
    call_id: &str,
    command: &str,
) -> tokio::task::JoinHandle<()> {
    let url = format!("{}/execution-environments/{env}/invoke-tool", relay.url);
    let key = relay.admin_key.clone();
    let body = json!({
        "tool_name": "shell",
        "args": {"command": command},
        "timeout_s": 120,
        "call_id": call_id,
    });
    tokio::spawn(async move {
        let _ = reqwest::Client::new()
            .post(url)
            .bearer_auth(key)
            .json(&body)
            .send()
            .await;
    })
}

/// Live (not zombie) processes whose environment has `variable`, by
/// command line.
fn live_with(variable: &str) -> BTreeMap<String, i32> {
    let mut found = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if !alive(pid) {
            continue;
        }
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if !environ
            .split(|byte| *byte == 0)
            .any(|entry| entry == variable.as_bytes())
        {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline)
            .trim_end_matches('\0')
            .replace('\0', " ");
        found.insert(cmdline, pid);
    }
    found
}

/// Whether `pid` is there and not a zombie.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rfind(')')?;
            stat[after + 1..]
                .split_whitespace()
                .next()
                .map(str::to_owned)
        })
        .is_some_and(|state| state != "Z" && state != "X")
}

/// Live processes running `cmdline` whose cgroup's path contains `cgroup`.
fn live_in_cgroup(cmdline: &str, cgroup: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            let command = std::fs::read(entry.path().join("cmdline")).ok()?;
            let command = String::from_utf8_lossy(&command)
                .trim_end_matches('\0')
                .replace('\0', " ");
            let group = std::fs::read_to_string(entry.path().join("cgroup")).ok()?;
            (alive(pid) && command == cmdline && group.contains(cgroup)).then_some(pid)
        })
        .collect()
}

/// SIGKILLs what a failed test would leave behind.
struct KillOnDrop(Vec<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[tokio::test]
async fn a_restarted_runner_stops_what_its_killed_run_left_and_nothing_else() {
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let (other_env, mut other) = Runner::online(&relay, dev_env()).await;
    let tag = std::process::id();
    let call = format!("left-{tag}");
    let other_call = format!("other-{tag}");

    // Not a call of any runner, though it carries the same call id and an
    // owner variable: it must outlive every clean-up.
    let mut bystander = std::process::Command::new("sleep")
        .arg("406")
        .env("RUNNER_CALL_ID", &call)
        .env("RUNNER_CALL_OWNER", "00000000000000000000000000000000")
        .spawn()
        .expect("sleep");
    let mut guard = KillOnDrop(vec![bystander.id() as i32]);

    let _answer = start_call(
        &relay,
        &env,
        &call,
        "sleep 401 & setsid sleep 402 & sleep 403; wait",
    );
    let _other_answer = start_call(
        &relay,
        &other_env,
        &other_call,
        "sleep 404 & setsid sleep 405 & wait",
    );
    let marker = format!("RUNNER_CALL_ID={call}");
    let other_marker = format!("RUNNER_CALL_ID={other_call}");
    let sleeps = ["sleep 401", "sleep 402", "sleep 403"];
    support::wait_until("the call's three sleeps run", || {
        let live = live_with(&marker);
        sleeps.iter().all(|sleep| live.contains_key(*sleep))
    })
    .await;
    support::wait_until("the other runner's two sleeps run", || {
        let live = live_with(&other_marker);
        ["sleep 404", "sleep 405"]
            .iter()
            .all(|sleep| live.contains_key(*sleep))
    })
    .await;
    let left = live_with(&marker);
    let pids: Vec<i32> = sleeps.iter().map(|sleep| left[*sleep]).collect();
    guard.0.extend(&pids);
    let other_pids: Vec<i32> = live_with(&other_marker).into_values().collect();
    guard.0.extend(&other_pids);

    // Where calls get a cgroup, one that also wiped its environment (no
    // marker, no owner variable) is found by its cgroup alone.
    let owner = std::fs::read_to_string(runner.state_dir().join("runner-id")).expect("runner-id");
    let ours = format!("runner-call-{}-", owner.trim());
    let in_cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", pids[0]))
        .is_ok_and(|group| group.contains(&ours));
    let mut wiped = Vec::new();
    if in_cgroup {
        let _wiped_answer = start_call(
            &relay,
            &env,
            &format!("wiped-{tag}"),
            "env -i setsid sleep 407 & wait",
        );
        support::wait_until("the call without an environment runs", || {
            !live_in_cgroup("sleep 407", &ours).is_empty()
        })
        .await;
        wiped = live_in_cgroup("sleep 407", &ours);
        guard.0.extend(&wiped);
    } else {
        eprintln!("SKIP (env -i part only): calls get no cgroup of their own here");
    }

    // kill -9: the runner cannot stop anything.
    let mut killed = runner.child.take().expect("running");
    killed.start_kill().expect("SIGKILL");
    let _ = killed.wait().await;
    // The status below is then the new run's (see the browser's test).
    relay.wait_status(&env, "offline").await;
    for (sleep, pid) in sleeps.iter().zip(&pids) {
        assert!(
            alive(*pid),
            "{sleep} (pid {pid}) outlives a kill -9 of its runner"
        );
    }

    // The same state directory again: the previous run's processes go.
    runner.start(&[]);
    support::wait_until("the killed run's sleeps are stopped", || {
        !pids.iter().chain(&wiped).any(|pid| alive(*pid))
    })
    .await;
    relay.wait_status(&env, "online").await;
    for pid in &other_pids {
        assert!(
            alive(*pid),
            "another runner's call (pid {pid}) is left alone"
        );
    }
    assert!(
        bystander.try_wait().expect("wait").is_none(),
        "a process that only carries the call id is left alone"
    );

    let doctor = runner
        .command()
        .arg("doctor")
        .output()
        .await
        .expect("doctor");
    let doctor = String::from_utf8_lossy(&doctor.stdout).into_owned();
    let (code, stderr) = runner.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("WARN") && stderr.contains("a previous run of this runner left running"),
        "{stderr}"
    );
    for (sleep, pid) in sleeps.iter().zip(&pids) {
        let name = format!("sleep (pid {pid}, call {call}");
        assert!(stderr.contains(&name), "{sleep}: {name} in {stderr}");
        assert!(doctor.contains(&name), "{sleep}: {name} in {doctor}");
    }
    assert!(doctor.contains("left running"), "{doctor}");
    for pid in &wiped {
        let name = format!("sleep (pid {pid}, by cgroup)");
        assert!(stderr.contains(&name), "{name} in {stderr}");
    }

    let _ = other.stop().await;
    let _ = bystander.kill();
    let _ = bystander.wait();
}

/// Opens `runner`'s browser with a call; its processes (they carry the
/// runner's owner id).
async fn open_the_browser(relay: &Relay, env: &str, runner: &Runner) -> Vec<i32> {
    let (status, body) = relay
        .invoke(
            env,
            json!({"tool_name": "browser", "args": {"action": "navigate", "url": "about:blank"}, "timeout_s": 120}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(body["error"].is_null(), "{body}");
    let owner = std::fs::read_to_string(runner.state_dir().join("runner-id")).expect("runner-id");
    let owned = format!("RUNNER_CALL_OWNER={}", owner.trim());
    let browser: Vec<i32> = live_with(&owned).into_values().collect();
    assert!(!browser.is_empty(), "Chromium carries the owner id");
    browser
}

/// The browser is not a call, but it carries the runner's owner id: a
/// runner killed with the browser open leaves Chromium running, and the
/// next start stops it.
#[tokio::test]
async fn a_restarted_runner_stops_the_browser_its_killed_run_left() {
    crate::tools_support::require_chromium();
    let relay = Relay::spawn().await;
    let (env, mut runner) = Runner::online(&relay, dev_env()).await;
    let browser = open_the_browser(&relay, &env, &runner).await;
    let _guard = KillOnDrop(browser.clone());

    let mut killed = runner.child.take().expect("running");
    killed.start_kill().expect("SIGKILL");
    let _ = killed.wait().await;
    assert!(
        browser.iter().any(|pid| alive(*pid)),
        "Chromium outlives a kill -9 of its runner"
    );
    // Until the relay has seen the killed run go, "online" below would be
    // that run's status, and the stop could reach the new run before it
    // handles SIGTERM.
    relay.wait_status(&env, "offline").await;

    runner.start(&[]);
    relay.wait_status(&env, "online").await;
    support::wait_until("the restarted runner stopped Chromium", || {
        browser.iter().all(|pid| !alive(*pid))
    })
    .await;
    let (code, stderr) = runner.stop().await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("a previous run of this runner left running")
            && stderr.contains("chromium"),
        "{stderr}"
    );
}

/// A runner stopped by SIGTERM stops its browser with it. So does a
/// runner its test leaves running: `support::Runner`'s `Drop` stops it
/// that way, so that a failing browser test leaves no Chromium behind.
#[tokio::test]
async fn a_runner_stopped_by_sigterm_stops_its_browser() {
    crate::tools_support::require_chromium();
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let browser = open_the_browser(&relay, &env, &runner).await;
    let _guard = KillOnDrop(browser.clone());

    drop(runner);
    support::wait_until("the stopped runner's Chromium is gone", || {
        browser.iter().all(|pid| !alive(*pid))
    })
    .await;
}
