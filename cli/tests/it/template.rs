//! `runner template` against a real relay, with real `.env` and setup
//! files: create, list, show, edit and delete, warnings on stderr, parse
//! errors naming the line, and no deletion without a confirmation.

use serde_json::Value;

use crate::support::{write, Relay};

async fn run(relay: &Relay, args: &[&str]) -> (Option<i32>, String, String) {
    let output = relay
        .admin_command()
        .arg("template")
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("runner runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|error| panic!("{error}: {stdout}"))
}

#[tokio::test]
async fn templates_are_made_from_files_listed_shown_edited_and_deleted() {
    let relay = Relay::spawn().await;
    let files = tempfile::tempdir().expect("tempdir");
    let env_file = files.path().join(".env");
    let setup = files.path().join("setup.sh");
    write(
        &env_file,
        "# Python tools\nexport PIP_INDEX_URL=https://pypi.org/simple\nMOTD=\"two\nlines\"\nAPI_TOKEN=abc123\n",
    );
    write(
        &setup,
        "#!/bin/bash\nset -e\napt-get install -y python3-pip\n",
    );
    let env_path = env_file.to_str().expect("utf-8 path");
    let setup_path = setup.to_str().expect("utf-8 path");

    let (code, stdout, stderr) = run(
        &relay,
        &[
            "create",
            "python tools",
            "--description",
            "pip and friends",
            "--env-file",
            env_path,
            "--setup-script",
            setup_path,
            "--network",
            "allowlist",
            "--allow-domain",
            "pypi.org",
            "--allow-domain",
            "files.pythonhosted.org",
            "--idle-timeout",
            "30m",
            "--max-lifetime",
            "2h",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    let created = json(&stdout);
    assert_eq!(created["name"], "python tools");
    assert_eq!(
        created["env_text"],
        std::fs::read_to_string(&env_file).expect("read")
    );
    assert_eq!(
        created["setup_script"],
        std::fs::read_to_string(&setup).expect("read")
    );
    assert_eq!(created["idle_timeout_s"], 1800);
    assert_eq!(created["max_lifetime_s"], 7200);
    assert_eq!(created["network"], "allowlist");
    // The warning goes to stderr, stdout stays one JSON document.
    assert!(
        stderr.contains("warning: line 5: the name API_TOKEN contains TOKEN"),
        "{stderr}"
    );
    let id = created["id"].as_str().expect("id").to_owned();

    let (code, stdout, stderr) = run(&relay, &["list"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let row = stdout
        .lines()
        .find(|line| line.starts_with(&id))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.contains("python tools"), "{row}");
    assert!(row.contains("allowlist"), "{row}");
    let (code, stdout, _) = run(&relay, &["list", "--json"]).await;
    assert_eq!(code, Some(0));
    assert_eq!(json(&stdout)["templates"][0]["id"], id.as_str());

    let (code, stdout, stderr) = run(&relay, &["show", "python tools"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    for expected in [
        "variables        PIP_INDEX_URL, MOTD, API_TOKEN",
        "allowed domains  pypi.org, files.pythonhosted.org",
        "setup script     3 lines, ",
        "idle timeout     30m",
        "max lifetime     2h",
    ] {
        assert!(stdout.contains(expected), "{expected:?} in:\n{stdout}");
    }
    assert!(stderr.contains("API_TOKEN"), "{stderr}");

    // Edit: a new .env without the token, no setup script, open network.
    write(&env_file, "LANG=C.UTF-8\n");
    let empty = files.path().join("empty.sh");
    write(&empty, "");
    let (code, stdout, stderr) = run(
        &relay,
        &[
            "edit",
            &id,
            "--name",
            "py",
            "--env-file",
            env_path,
            "--setup-script",
            empty.to_str().expect("utf-8"),
            "--network",
            "allow-all",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let edited = json(&stdout);
    assert_eq!(edited["name"], "py");
    assert_eq!(edited["env_names"], serde_json::json!(["LANG"]));
    assert_eq!(edited["setup_script"], "");
    assert_eq!(edited["network"], "allow_all");
    assert_eq!(edited["allowed_domains"], serde_json::json!([]));
    assert_eq!(edited["idle_timeout_s"], 1800, "kept");

    // Without a terminal and --yes, nothing is deleted.
    let (code, _, stderr) = run(&relay, &["delete", "py"]).await;
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, _) = run(&relay, &["show", "py"]).await;
    assert_eq!(code, Some(0), "still there");
    let (code, stdout, stderr) = run(&relay, &["delete", "py", "--yes", "--json"]).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(json(&stdout)["deleted"], id.as_str());
    let (code, _, stderr) = run(&relay, &["show", "py"]).await;
    assert_eq!(code, Some(67), "{stderr}");
    assert!(stderr.contains("template \"py\" not found"), "{stderr}");
}

#[tokio::test]
async fn a_bad_env_file_is_refused_naming_its_line_and_a_missing_file_its_path() {
    let relay = Relay::spawn().await;
    let files = tempfile::tempdir().expect("tempdir");
    let env_file = files.path().join("bad.env");
    write(&env_file, "A=1\nB=\"never closed\nC=3\n");
    let (code, stdout, stderr) = run(
        &relay,
        &[
            "create",
            "bad",
            "--env-file",
            env_file.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_eq!(code, Some(64), "{stderr}");
    assert_eq!(stdout, "");
    assert!(
        stderr.contains("env_text: line 2: the double quote opened here is never closed"),
        "{stderr}"
    );

    let missing = files.path().join("missing.sh");
    let (code, _, stderr) = run(
        &relay,
        &[
            "create",
            "x",
            "--setup-script",
            missing.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_ne!(code, Some(0));
    assert!(stderr.contains("missing.sh"), "{stderr}");
    let (code, stdout, _) = run(&relay, &["list", "--json"]).await;
    assert_eq!(code, Some(0));
    assert_eq!(json(&stdout)["templates"], serde_json::json!([]));
}
