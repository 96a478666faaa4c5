//! A reboot must not unregister a runner (issue 5): the token must never
//! live only in a store that does not persist.
//!
//! The test registers for real with the default credential store choice
//! (`auto`), stops the runner, then empties what a reboot empties, the stores
//! that live in memory only, and starts `runner run` again:
//!
//! - the Linux kernel keyrings (session, user-session, user, and the
//!   per-user persistent keyring, which despite its name is kernel memory);
//! - a Secret Service daemon's in-memory `session` collection, when a daemon
//!   answers on this machine's session bus.
//!
//! These stores are shared by every process of the user (a developer's
//! Kerberos tickets may live in the persistent keyring), so the test removes
//! from them everything that names this runner (the keychain entries are
//! named after its config dir, a fresh temporary directory) rather than
//! wiping them; a sentinel key proves the removal reaches them.
//!
//! The kernel keyring cannot be picked by this build: `keyring` is compiled
//! with `async-secret-service` only (workspace `Cargo.toml`), and its kernel
//! back ends (`keyutils`, `keyutils_persistent`) exist only with its
//! `linux-native*` features. So there is no configuration of this binary to
//! cover there; clearing the keyrings anyway catches a later change of
//! features.

use std::path::Path;
use std::process::Command as StdCommand;

use serde_json::Value;

use crate::support::{dev_env, runner_bin, wait_output, Relay};

/// Runs `keyctl` (package keyutils, scripts/install-test-deps.sh).
fn keyctl(args: &[&str]) -> Option<String> {
    let output = StdCommand::new("keyctl")
        .args(args)
        .output()
        .expect("keyctl is installed (scripts/install-test-deps.sh)");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The kernel keyrings of this process that a reboot empties. The
/// persistent keyring is only listed when it already exists (asking for it
/// would create it).
fn kernel_keyrings() -> Vec<String> {
    let mut keyrings: Vec<String> = ["@s", "@us", "@u"].map(str::to_owned).to_vec();
    let uid = nix::unistd::getuid();
    let listed = std::fs::read_to_string("/proc/keys").unwrap_or_default();
    for line in listed.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.get(7) == Some(&"keyring") && line.contains(&format!("_persistent.{uid}")) {
            if let Some(serial) = fields.first().and_then(|h| u32::from_str_radix(h, 16).ok()) {
                keyrings.push(serial.to_string());
            }
        }
    }
    keyrings
}

/// Unlinks from the volatile kernel keyrings every key whose description
/// contains `marker`.
fn clear_kernel_keyrings(marker: &str) {
    for keyring in kernel_keyrings() {
        let members = keyctl(&["rlist", &keyring]).unwrap_or_default();
        for key in members.split_whitespace() {
            let description = keyctl(&["rdescribe", key]).unwrap_or_default();
            if description.contains(marker) {
                assert!(
                    keyctl(&["unlink", key, &keyring]).is_some(),
                    "could not unlink key {key} ({description}) from {keyring}"
                );
            }
        }
    }
}

/// `busctl --user`, when a user session bus exists.
fn busctl(args: &[&str]) -> Option<String> {
    let runtime_bus = std::env::var("XDG_RUNTIME_DIR")
        .map(|dir| Path::new(&dir).join("bus").exists())
        .unwrap_or(false);
    if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() && !runtime_bus {
        return None;
    }
    let output = StdCommand::new("busctl")
        .arg("--user")
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Deletes this runner's items from a Secret Service's in-memory `session`
/// collection; returns whether a Secret Service answered at all.
fn clear_secret_service_session(service: &str) -> bool {
    let session = "/org/freedesktop/secrets/collection/session";
    let Some(found) = busctl(&[
        "call",
        "org.freedesktop.secrets",
        session,
        "org.freedesktop.Secret.Collection",
        "SearchItems",
        "a{ss}",
        "1",
        "service",
        service,
    ]) else {
        return busctl(&["status", "org.freedesktop.secrets"]).is_some();
    };
    // `ao 1 "/org/.../session/7"`: the quoted parts are the items.
    for item in found.split('"').skip(1).step_by(2) {
        assert!(
            busctl(&[
                "call",
                "org.freedesktop.secrets",
                item,
                "org.freedesktop.Secret.Item",
                "Delete",
            ])
            .is_some(),
            "could not delete Secret Service item {item}"
        );
    }
    true
}

/// `runner …` with this runner's directories and the default credential
/// store choice (no RUNNER_CREDENTIAL_STORE).
fn runner(home: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.join("config"))
        .env("RUNNER_STATE_DIR", home.join("state"))
        .env("RUNNER_WORKSPACE", home.join("workspace"))
        .env_remove("RUNNER_CREDENTIAL_STORE")
        .env_remove("RUNNER_PERMISSION_CONFIG")
        .env_remove("RUNNER_URL")
        .env_remove("RUNNER_TOKEN")
        .env_remove("RUNNER_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn stop(child: tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
    let (code, stderr) = wait_output(child).await;
    assert_eq!(code, Some(0), "runner did not stop cleanly: {stderr}");
}

async fn assert_connected(relay: &Relay, env: &str) {
    relay.wait_status(env, "online").await;
    let (status, body) = relay
        .invoke(
            env,
            serde_json::json!({"tool_name": "ping", "args": {"after": "reboot"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["after"], "reboot", "{body}");
}

#[tokio::test]
async fn a_reboot_does_not_unregister_a_runner() {
    let relay = Relay::spawn().await;
    let env = relay.create_env(dev_env()).await;
    let token = relay.token(&env).await;
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(home.path().join("workspace")).expect("workspace");
    let config_dir = home.path().join("config");
    // Every keychain entry of this runner is named after its config dir.
    let marker = config_dir.display().to_string();
    let sentinel = format!("runner-reboot-sentinel:{marker}");
    assert!(
        keyctl(&["add", "user", &sentinel, "volatile", "@u"]).is_some(),
        "cannot add a key to the user keyring"
    );

    let output = runner(home.path())
        .args(["register", "--json", "--url", &relay.url])
        .env("RUNNER_TOKEN", &token)
        .stdout(std::process::Stdio::piped())
        .output()
        .await
        .expect("register runs");
    assert!(
        output.status.success(),
        "register: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let answer: Value = serde_json::from_slice(&output.stdout).expect("register --json");
    let stored_in = answer["token_stored_in"].as_str().unwrap_or_default();
    let token_file = config_dir.join("credentials").join("registration-token");
    let file_store = format!("{} (mode 0600)", token_file.display());

    let mut first = runner(home.path()).arg("run").spawn().expect("spawn run");
    assert_connected(&relay, &env).await;
    if let Ok(Some(status)) = first.try_wait() {
        panic!("runner exited: {status}");
    }
    stop(first).await;
    relay.wait_status(&env, "offline").await;

    // The reboot: what lives in memory is gone.
    clear_kernel_keyrings(&marker);
    assert!(
        keyctl(&["search", "@u", "user", &sentinel]).is_none(),
        "the kernel keyring was not cleared"
    );
    let secret_service = clear_secret_service_session(&format!("runner:{marker}"));

    if secret_service {
        // A desktop with a keychain: the token may be there, in a persistent
        // collection; the restart below proves it was not only in memory.
        assert!(
            stored_in == "the OS keychain" || stored_in == file_store,
            "register said {stored_in:?}"
        );
    } else {
        // No OS keychain answers: the token went to a private file.
        assert_eq!(stored_in, file_store, "{answer}");
    }
    if stored_in == file_store {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("token file and directory exist")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode(&token_file), 0o600);
        let directory = token_file.parent().expect("the file is in a directory");
        assert_eq!(mode(directory), 0o700);
        let text = std::fs::read_to_string(&token_file).expect("token file");
        assert_eq!(text.trim(), token, "the file holds the registered token");
    }

    let second = runner(home.path())
        .arg("run")
        .spawn()
        .expect("spawn run after the reboot");
    assert_connected(&relay, &env).await;
    stop(second).await;
}
