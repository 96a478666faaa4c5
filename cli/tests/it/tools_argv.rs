//! argv tools (`git`, `kubectl`, …): announced only where the binary is on
//! PATH, re-announced when one appears, run without a shell, checked
//! against the permission file as their command line.

use serde_json::json;

use crate::support::{dev_env, Relay};
use crate::tools_support::{online_with, tool_names, wait_for_tools, BinDir};

#[tokio::test]
async fn only_binaries_on_path_are_announced_and_new_ones_are_announced_live() {
    let relay = Relay::spawn().await;
    let bin = BinDir::new();
    bin.link("git");
    let path = bin.path().display().to_string();
    let (env, runner) = online_with(&relay, dev_env(), &[("PATH", &path)], &[]).await;

    let names = tool_names(&relay, &env).await;
    assert!(names.contains(&"git".to_owned()), "{names:?}");
    for absent in [
        "kubectl",
        "helm",
        "docker",
        "terraform",
        "browser",
        "claude_code",
    ] {
        assert!(
            !names.contains(&absent.to_owned()),
            "{absent} is not on PATH: {names:?}"
        );
    }
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "kubectl", "args": {"args": ["get", "pods"]}}),
        )
        .await;
    assert_eq!(status, 404, "{body}");

    // kubectl appears on PATH: announced without reconnecting.
    bin.script("kubectl", "#!/bin/sh\necho \"kubectl stand-in: $*\"\n");
    wait_for_tools(&relay, &env, "kubectl is announced", |names| {
        names.iter().any(|n| n == "kubectl")
    })
    .await;
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "kubectl", "args": {"args": ["get", "pods", "-n", "a b; rm -rf /"]}}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["stdout"],
        "kubectl stand-in: get pods -n a b; rm -rf /\n"
    );
    assert_eq!(body["exit_code"], 0);
    drop(runner);
}

#[tokio::test]
async fn git_runs_in_a_workspace_repository() {
    let relay = Relay::spawn().await;
    let bin = BinDir::new();
    bin.link("git");
    let path = bin.path().display().to_string();
    let (env, runner) = online_with(&relay, dev_env(), &[("PATH", &path)], &[]).await;
    std::fs::create_dir_all(runner.workspace().join("repo")).expect("mkdir");

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "git", "args": {"args": ["--version"]}}),
        )
        .await;
    assert!(
        body["result"]["stdout"]
            .as_str()
            .unwrap_or_default()
            .starts_with("git version"),
        "{body}"
    );

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "git", "args": {"args": ["init", "-q", "-b", "main"], "workdir": "repo"}}))
        .await;
    assert_eq!(body["exit_code"], 0, "{body}");
    std::fs::write(runner.workspace().join("repo/new.txt"), "x").expect("write");
    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "git", "args": {"args": ["status", "--porcelain"], "workdir": "repo"}}))
        .await;
    assert_eq!(body["result"]["stdout"], "?? new.txt\n", "{body}");
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "git", "args": {"args": ["status"], "workdir": "../"}}),
        )
        .await;
    assert!(
        body["error"].as_str().unwrap_or_default().contains(".."),
        "{body}"
    );
}

#[tokio::test]
async fn argv_calls_are_checked_against_the_permission_file_and_name_the_rule() {
    let relay = Relay::spawn().await;
    let bin = BinDir::new();
    bin.link("git");
    let rules = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(
        rules.path(),
        "permission:\n  \"*\": \"deny\"\n  \"git *\": \"allow\"\n  \"git push *\": \"deny\"\n",
    )
    .expect("write rules");
    let path = bin.path().display().to_string();
    let rules_path = rules.path().display().to_string();
    let (env, _runner) = online_with(
        &relay,
        dev_env(),
        &[("PATH", &path)],
        &["--permission-config", &rules_path],
    )
    .await;
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "git", "args": {"args": ["--version"]}}),
        )
        .await;
    assert_eq!(body["exit_code"], 0, "{body}");
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "git", "args": {"args": ["push", "origin", "main"]}}),
        )
        .await;
    assert_eq!(body["error"]["code"], "denied_by_runner_policy", "{body}");
    let error = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        error.contains("permission file") && error.contains("git push *"),
        "{body}"
    );
}
