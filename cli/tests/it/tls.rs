//! TLS between runner and relay with a throwaway CA made in the test
//! (SPEC §5 "TLS"): verified by default, a custom CA can be trusted,
//! `--insecure-skip-tls-verify` turns verification off (flag beats env).

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use crate::support::{runner_bin, Relay};

/// A CA and a server certificate for 127.0.0.1/localhost, made with openssl.
pub(crate) struct TestPki {
    dir: tempfile::TempDir,
}

impl TestPki {
    fn new() -> TestPki {
        TestPki::with_ca_name("runner test CA")
    }

    /// A PKI whose CA is called `ca_name` (tests that tell two CAs apart).
    pub(crate) fn with_ca_name(ca_name: &str) -> TestPki {
        let dir = tempfile::tempdir().expect("tempdir");
        let run = |args: &[&str]| {
            let output = StdCommand::new("openssl")
                .args(args)
                .current_dir(dir.path())
                .output()
                .expect("openssl is installed (scripts/install-test-deps.sh)");
            assert!(
                output.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        };
        run(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            &format!("/CN={ca_name}"),
        ]);
        run(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ]);
        std::fs::write(
            dir.path().join("ext.cnf"),
            "subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .expect("write ext");
        run(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ]);
        TestPki { dir }
    }
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn register(
    relay: &Relay,
    token: &str,
    home: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String) {
    let mut command = StdCommand::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.join("config"))
        .env("RUNNER_STATE_DIR", home.join("state"))
        .env("RUNNER_CREDENTIAL_STORE", "file")
        .env("RUNNER_TOKEN", token)
        .env_remove("RUNNER_CA_FILE")
        .env_remove("RUNNER_INSECURE_SKIP_TLS_VERIFY")
        .args(extra)
        .args(["register", "--url", &relay.url]);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("runner runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_relay_serves_tls_and_the_runner_verifies_it() {
    let pki = TestPki::new();
    let cert = pki.path("server.pem").display().to_string();
    let key = pki.path("server.key").display().to_string();
    let relay = Relay::spawn_with(&["--tls-cert", &cert, "--tls-key", &key]).await;
    assert!(relay.url.starts_with("https://"), "{}", relay.url);
    let env = relay
        .create_env(serde_json::json!({"tier": "development"}))
        .await;
    let token = relay.token(&env).await;
    let ca = pki.path("ca.pem").display().to_string();
    let home = tempfile::tempdir().expect("tempdir");

    // Verified by default: an unknown CA is refused, and the message says why.
    let (code, stderr) = register(&relay, &token, home.path(), &[], &[]);
    assert_eq!(code, Some(76), "{stderr}");
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
    assert!(!stderr.contains(&token), "token leaked: {stderr}");

    // The test CA trusted: accepted.
    let (code, stderr) = register(&relay, &token, home.path(), &["--ca-file", &ca], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = register(&relay, &token, home.path(), &[], &[("RUNNER_CA_FILE", &ca)]);
    assert_eq!(code, Some(0), "{stderr}");

    // Verification off, from the env: accepted, with a loud warning.
    let (code, stderr) = register(
        &relay,
        &token,
        home.path(),
        &[],
        &[("RUNNER_INSECURE_SKIP_TLS_VERIFY", "true")],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("TLS VERIFICATION IS OFF"), "{stderr}");

    // The flag beats the env: `=false` restores verification.
    let (code, stderr) = register(
        &relay,
        &token,
        home.path(),
        &["--insecure-skip-tls-verify=false"],
        &[("RUNNER_INSECURE_SKIP_TLS_VERIFY", "true")],
    );
    assert_eq!(code, Some(76), "{stderr}");
}

#[tokio::test]
async fn a_runner_connects_over_tls_and_doctor_explains_an_untrusted_ca() {
    let pki = TestPki::new();
    let cert = pki.path("server.pem").display().to_string();
    let key = pki.path("server.key").display().to_string();
    let relay = Relay::spawn_with(&["--tls-cert", &cert, "--tls-key", &key]).await;
    let env = relay
        .create_env(serde_json::json!({"tier": "development"}))
        .await;
    let token = relay.token(&env).await;
    let ca = pki.path("ca.pem").display().to_string();
    let home = tempfile::tempdir().expect("tempdir");

    let mut runner = tokio::process::Command::new(runner_bin())
        .env("RUNNER_STATE_DIR", home.path().join("state"))
        .env("RUNNER_CONFIG_DIR", home.path().join("config"))
        .env("RUNNER_TOKEN", &token)
        .env("RUNNER_CA_FILE", &ca)
        .args(["run", "--url", &relay.url])
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    relay.wait_status(&env, "online").await;
    let (status, body) = relay
        .invoke(
            &env,
            serde_json::json!({"tool_name": "ping", "args": {"over": "tls"}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["over"], "tls");
    let _ = runner.start_kill();

    let output = StdCommand::new(runner_bin())
        .env("RUNNER_CONFIG_DIR", home.path().join("config"))
        .env("RUNNER_STATE_DIR", home.path().join("state"))
        .env("RUNNER_URL", &relay.url)
        .env("RUNNER_TOKEN", &token)
        .env_remove("RUNNER_CA_FILE")
        .args(["doctor", "--json"])
        .output()
        .expect("doctor runs");
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json report");
    let tls = crate::support::doctor_check(&report, "tls");
    assert_eq!(tls["outcome"], "fail", "{tls}");
    assert!(
        tls["fix"]
            .as_str()
            .unwrap_or_default()
            .contains("--ca-file"),
        "{tls}"
    );
    assert!(
        report["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("can't reach the relay"),
        "{report}"
    );
}
