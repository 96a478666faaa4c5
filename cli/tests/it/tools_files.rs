//! `file_write` modes and permission bits, `list`, `glob`, `grep`: through
//! the relay's file-access list and the runner's workspace boundary.

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};

use crate::support::{self, dev_env, Relay, Runner};

fn paths(result: &Value, key: &str) -> Vec<String> {
    result[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} in {result}"))
        .iter()
        .filter_map(|entry| entry["path"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn file_write_creates_overwrites_appends_and_sets_permission_bits() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let write = |args: Value| relay.invoke(&env, json!({"tool_name": "file_write", "args": args}));

    let (_, body) = write(json!({"path": "bin/tool.sh", "content": "#!/bin/sh\n", "mode": "create", "permissions": "0755"})).await;
    assert!(body["error"].is_null(), "{body}");
    let file = runner.workspace().join("bin/tool.sh");
    let mode = std::fs::metadata(&file)
        .expect("written")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o755);

    let (_, body) =
        write(json!({"path": "bin/tool.sh", "content": "again", "mode": "create"})).await;
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("exists"),
        "create refuses an existing file: {body}"
    );

    let (_, body) =
        write(json!({"path": "bin/tool.sh", "content": "echo hi\n", "mode": "append"})).await;
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(
        std::fs::read_to_string(&file).expect("read"),
        "#!/bin/sh\necho hi\n"
    );

    // Overwrite keeps the mode unless told otherwise; then sets it.
    let (_, body) = write(json!({"path": "bin/tool.sh", "content": "new"})).await;
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(
        std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777,
        0o755
    );
    let (_, body) =
        write(json!({"path": "bin/tool.sh", "content": "newer", "permissions": "600"})).await;
    assert_eq!(body["result"]["permissions"], "0600", "{body}");
    assert_eq!(
        std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "newer");

    // A new file made by overwrite is readable (0644), not the temp file's 0600.
    let (_, body) = write(json!({"path": "plain.txt", "content": "x"})).await;
    assert!(body["error"].is_null(), "{body}");
    let mode = std::fs::metadata(runner.workspace().join("plain.txt"))
        .expect("meta")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644);

    let (status, body) = write(json!({"path": "x", "content": "y", "permissions": "999"})).await;
    assert!(
        status == 400 || body["error"].is_string(),
        "{status} {body}"
    );

    // No temp file is left beside what overwrite replaced.
    let leftovers: Vec<_> = std::fs::read_dir(runner.workspace().join("bin"))
        .expect("bin")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name())
        .filter(|name| name != "tool.sh")
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn list_glob_and_grep_walk_the_workspace_and_honour_ignore_rules() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let ws = runner.workspace();
    support::write(
        &ws.join("src/main.rs"),
        "fn main() {\n    println!(\"needle\");\n}\n",
    );
    support::write(
        &ws.join("src/lib/util.rs"),
        "// Needle in a comment\npub fn util() {}\n",
    );
    support::write(&ws.join("notes.md"), "needle in notes\n");
    support::write(&ws.join("target/debug/out.rs"), "needle in build output\n");
    support::write(&ws.join(".gitignore"), "target/\n");
    support::write(&ws.join(".hidden/secret.rs"), "needle hidden\n");
    std::fs::write(ws.join("blob.bin"), b"needle\0\x01\x02binary").expect("write");

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "list", "args": {}}))
        .await;
    let top = paths(&body["result"], "entries");
    assert!(
        top.contains(&"src".to_owned()) && top.contains(&"notes.md".to_owned()),
        "{top:?}"
    );
    assert!(
        !top.iter().any(|p| p.starts_with("src/")),
        "not recursive by default: {top:?}"
    );
    assert!(
        !top.contains(&"target".to_owned()),
        ".gitignore applies: {top:?}"
    );
    assert!(
        !top.contains(&".hidden".to_owned()),
        "hidden files are left out: {top:?}"
    );

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "list", "args": {"recursive": true, "ignore": ["*.md"]}}),
        )
        .await;
    let all = paths(&body["result"], "entries");
    assert!(all.contains(&"src/lib/util.rs".to_owned()), "{all:?}");
    assert!(
        !all.contains(&"notes.md".to_owned()),
        "ignore patterns exclude: {all:?}"
    );

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "glob", "args": {"pattern": "**/*.rs"}}),
        )
        .await;
    let rs = paths(&body["result"], "matches");
    assert_eq!(
        rs,
        vec!["src/lib/util.rs".to_owned(), "src/main.rs".to_owned()],
        "{body}"
    );

    let (_, body) = relay
        .invoke(&env, json!({"tool_name": "grep", "args": {"pattern": "needle", "case_insensitive": true, "include": ["*.rs"]}}))
        .await;
    let result = &body["result"];
    let hits: Vec<(String, u64)> = result["matches"]
        .as_array()
        .expect("matches")
        .iter()
        .map(|m| {
            (
                m["path"].as_str().unwrap_or_default().to_owned(),
                m["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        hits,
        vec![
            ("src/lib/util.rs".to_owned(), 1),
            ("src/main.rs".to_owned(), 2)
        ],
        "{result}"
    );

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "grep", "args": {"pattern": "needle", "max_results": 1}}),
        )
        .await;
    assert_eq!(
        body["result"]["matches"].as_array().map(Vec::len),
        Some(1),
        "{body}"
    );
    assert_eq!(body["result"]["truncated"], true);

    // A FIFO is not opened: it would wait for a writer until the timeout.
    let fifo = ws.join("src/pipe.rs");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "grep", "args": {"pattern": "needle", "case_insensitive": true, "include": ["*.rs"]}, "timeout_s": 20}),
        )
        .await;
    assert!(body["error"].is_null(), "{body}");
    assert_eq!(
        body["result"]["matches"].as_array().map(Vec::len),
        Some(2),
        "{body}"
    );
    std::fs::remove_file(&fifo).expect("remove the FIFO");

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "grep", "args": {"pattern": "(unclosed"}}),
        )
        .await;
    assert!(
        body["error"]
            .as_str()
            .unwrap_or_default()
            .contains("(unclosed"),
        "{body}"
    );
}

#[tokio::test]
async fn walks_and_searches_do_not_leave_the_workspace() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let ws = runner.workspace();
    let outside = runner.home.path().join("outside");
    support::write(&outside.join("secret.txt"), "needle s3cret\n");
    support::write(&ws.join("inside.txt"), "needle inside\n");
    std::os::unix::fs::symlink(&outside, ws.join("linkdir")).expect("symlink dir");
    std::os::unix::fs::symlink(outside.join("secret.txt"), ws.join("linkfile.txt"))
        .expect("symlink file");

    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "grep", "args": {"pattern": "needle"}}),
        )
        .await;
    let text = body.to_string();
    assert!(!text.contains("s3cret"), "{text}");
    assert_eq!(
        paths(&body["result"], "matches"),
        vec!["inside.txt".to_owned()]
    );
    assert!(
        text.contains("symlink leads outside"),
        "skipped links are reported: {text}"
    );

    for tool in ["list", "glob", "grep"] {
        let mut args = json!({"path": "linkdir"});
        if tool != "list" {
            args["pattern"] = json!("*");
        }
        let (status, body) = relay
            .invoke(&env, json!({"tool_name": tool, "args": args}))
            .await;
        assert!(
            status == 403 || body["error"].is_string(),
            "{tool} through a symlink: {status} {body}"
        );
        assert!(!body.to_string().contains("secret"), "{body}");

        let mut args = json!({"path": "../outside"});
        if tool != "list" {
            args["pattern"] = json!("*");
        }
        let (status, body) = relay
            .invoke(&env, json!({"tool_name": tool, "args": args}))
            .await;
        assert!(
            status == 403 || body["error"].is_string(),
            "{tool} with ..: {status} {body}"
        );
    }
    let (_, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_read", "args": {"path": "linkfile.txt"}}),
        )
        .await;
    assert!(
        body["error"].is_string() && !body.to_string().contains("s3cret"),
        "{body}"
    );
}

#[tokio::test]
async fn the_relay_file_access_list_bounds_search_tools() {
    let relay = Relay::spawn().await;
    let allowed = relay.dir.path().join("allowed");
    support::write(&allowed.join("a.txt"), "needle\n");
    let (env, _runner) = Runner::online(
        &relay,
        json!({"policy": {"tools": {"mode": "list", "tools": ["list", "grep"]}, "file_paths": [allowed.display().to_string()]}}),
    )
    .await;
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "grep", "args": {"pattern": "needle", "path": allowed.display().to_string()}}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["matches"][0]["path"],
        allowed.join("a.txt").display().to_string()
    );
    let (status, body) = relay
        .invoke(&env, json!({"tool_name": "list", "args": {"path": "/etc"}}))
        .await;
    assert_eq!(status, 403, "{body}");
}

/// A dangling symlink in the workspace (planted by a `git checkout`, say)
/// must not let `file_write` create or chmod its target outside: every mode
/// is refused, nothing appears outside, and the link is left as it was.
#[tokio::test]
async fn file_write_does_not_follow_a_dangling_symlink_out_of_the_workspace() {
    let relay = Relay::spawn().await;
    let (env, runner) = Runner::online(&relay, dev_env()).await;
    let ws = runner.workspace();
    let outside = runner.home.path().join("outside");
    std::fs::create_dir_all(&outside).expect("outside dir");
    let target = outside.join("created-by-file-write");
    std::os::unix::fs::symlink(&target, ws.join("evil")).expect("dangling symlink");
    std::os::unix::fs::symlink(outside.join("newdir"), ws.join("evildir"))
        .expect("dangling dir symlink");

    for (path, mode) in [
        ("evil", "append"),
        ("evil", "create"),
        ("evil", "overwrite"),
        ("evildir/file", "append"),
    ] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "file_write", "args": {
                    "path": path, "content": "escaped\n", "mode": mode, "permissions": "0755",
                }}),
            )
            .await;
        let error = body["error"].as_str().unwrap_or_default();
        assert!(
            status == 403 || !error.is_empty(),
            "{path} {mode}: {status} {body}"
        );
        assert!(!target.exists(), "{path} {mode} created the target: {body}");
        assert!(!outside.join("newdir").exists(), "{path} {mode}: {body}");
    }
    assert!(ws
        .join("evil")
        .symlink_metadata()
        .expect("link still there")
        .file_type()
        .is_symlink());
}

/// SPEC §4: on a development tier environment an empty file-access list
/// means every path, at the runner as at the relay; on a production one it
/// means none.
#[tokio::test]
async fn an_empty_file_list_on_a_development_environment_reaches_every_path_at_the_runner() {
    let relay = Relay::spawn().await;
    let empty = json!({"tools": {"mode": "all"}, "file_paths": []});
    let (env, runner) =
        Runner::online(&relay, json!({"tier": "development", "policy": empty})).await;
    support::write(&runner.workspace().join("note.txt"), "inside\n");
    let outside = tempfile::tempdir().expect("tempdir");
    let elsewhere = outside.path().join("elsewhere.txt");
    support::write(&elsewhere, "outside\n");
    for (path, content) in [
        ("note.txt".to_owned(), "inside"),
        (elsewhere.display().to_string(), "outside"),
    ] {
        let (status, body) = relay
            .invoke(
                &env,
                json!({"tool_name": "file_read", "args": {"path": path}}),
            )
            .await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body["error"].is_null(), "{path}: {body}");
        assert!(body.to_string().contains(content), "{path}: {body}");
    }
    let (status, body) = relay
        .invoke(
            &env,
            json!({"tool_name": "file_write", "args": {"path": "made.txt", "content": "x"}}),
        )
        .await;
    assert!(status == 200 && body["error"].is_null(), "{status} {body}");
    assert!(runner.workspace().join("made.txt").exists());

    // Production, same empty list: refused (by the relay, before the runner).
    let (production, _other) = Runner::online(
        &relay,
        json!({"tier": "production", "policy": {"tools": {"mode": "all"}, "file_paths": []}}),
    )
    .await;
    let (status, body) = relay
        .invoke(
            &production,
            json!({"tool_name": "file_read", "args": {"path": "note.txt"}}),
        )
        .await;
    assert_eq!(status, 403, "{body}");
}
