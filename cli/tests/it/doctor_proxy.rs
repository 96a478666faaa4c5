//! `runner doctor` names the certificate it actually saw, directly and
//! through an HTTPS proxy (issue 5): a proxy that only tunnels shows the
//! relay's CA; a TLS-intercepting one shows its own CA, and doctor says
//! interception is the likely cause.
//!
//! The proxy is a real CONNECT proxy on 127.0.0.1:0 in this process. No
//! `NO_PROXY` is set: neither the runner's WebSocket dialer
//! (`agent::dial::proxy_for`) nor reqwest bypass loopback on their own, so
//! the relay at `https://127.0.0.1:PORT` is reached through the proxy, and
//! each test checks that the proxy really carried the connection.

use std::path::Path;
use std::sync::{Arc, Mutex};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::{doctor_check as check, runner_bin, Relay};
use crate::tls::TestPki;

const RELAY_CA: &str = "runner test CA";
const INTERCEPTING_CA: &str = "runner intercepting proxy CA";

/// A CONNECT proxy; with `intercept`, it terminates the client's TLS itself
/// with that certificate and re-encrypts towards the target (as corporate
/// inspection proxies do).
struct ConnectProxy {
    url: String,
    /// The authority of every CONNECT it was asked for.
    connects: Arc<Mutex<Vec<String>>>,
}

impl ConnectProxy {
    async fn spawn(intercept: Option<&TestPki>) -> ConnectProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let url = format!("http://{}", listener.local_addr().expect("proxy addr"));
        let acceptor = intercept.map(|pki| {
            let certs = CertificateDer::pem_file_iter(pki.path("server.pem"))
                .expect("server.pem")
                .collect::<Result<Vec<_>, _>>()
                .expect("server.pem parses");
            let key = PrivateKeyDer::from_pem_file(pki.path("server.key")).expect("server.key");
            let config = rustls::ServerConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server certificate");
            tokio_rustls::TlsAcceptor::from(Arc::new(config))
        });
        let connects = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&connects);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(relay_one(client, acceptor.clone(), Arc::clone(&seen)));
            }
        });
        ConnectProxy { url, connects }
    }

    fn connects(&self) -> Vec<String> {
        self.connects.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

/// Serves one CONNECT. Failures end the connection quietly: a client that
/// rejects the intercepting certificate hangs up mid-handshake on purpose.
async fn relay_one(
    mut client: TcpStream,
    intercept: Option<tokio_rustls::TlsAcceptor>,
    connects: Arc<Mutex<Vec<String>>>,
) {
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    while !header.ends_with(b"\r\n\r\n") {
        match client.read(&mut byte).await {
            Ok(1) if header.len() < 16 * 1024 => header.push(byte[0]),
            _ => return,
        }
    }
    let text = String::from_utf8_lossy(&header).into_owned();
    let Some(authority) = text
        .strip_prefix("CONNECT ")
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
    else {
        let _ = client
            .write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            .await;
        return;
    };
    if let Ok(mut connects) = connects.lock() {
        connects.push(authority.clone());
    }
    let Ok(mut upstream) = TcpStream::connect(authority.as_str()).await else {
        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
        return;
    };
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    let Some(acceptor) = intercept else {
        let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        return;
    };
    let Ok(mut client) = acceptor.accept(client).await else {
        return;
    };
    // Towards the relay the interceptor trusts anything, as such proxies
    // are configured to; what is under test is the client's view.
    let host = authority
        .rsplit_once(':')
        .map(|(host, _)| host.to_owned())
        .unwrap_or_default();
    let Ok(name) = ServerName::try_from(host) else {
        return;
    };
    let insecure = runner_cli::tls::build(&runner_cli::tls::TlsOptions {
        ca_file: None,
        insecure_skip_verify: true,
    })
    .expect("tls config");
    let Ok(mut upstream) = tokio_rustls::TlsConnector::from(insecure)
        .connect(name, upstream)
        .await
    else {
        return;
    };
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// A TLS relay signed by [`RELAY_CA`], an environment and its token.
async fn tls_relay(pki: &TestPki) -> (Relay, String) {
    let cert = pki.path("server.pem").display().to_string();
    let key = pki.path("server.key").display().to_string();
    let relay = Relay::spawn_with(&["--tls-cert", &cert, "--tls-key", &key]).await;
    assert!(relay.url.starts_with("https://127.0.0.1:"), "{}", relay.url);
    let env = relay
        .create_env(serde_json::json!({"tier": "development"}))
        .await;
    let token = relay.token(&env).await;
    (relay, token)
}

/// Runs `runner doctor` (async: the proxy runs on this test's runtime) with
/// only the proxy variables given here; returns exit code and stdout.
async fn doctor(
    home: &Path,
    relay: &Relay,
    token: &str,
    ca_file: &Path,
    https_proxy: Option<&str>,
    json: bool,
) -> (Option<i32>, String) {
    let mut command = tokio::process::Command::new(runner_bin());
    command
        .env("RUNNER_CONFIG_DIR", home.join("config"))
        .env("RUNNER_STATE_DIR", home.join("state"))
        .env("RUNNER_URL", &relay.url)
        .env("RUNNER_TOKEN", token)
        .env("RUNNER_CA_FILE", ca_file)
        .env_remove("RUNNER_INSECURE_SKIP_TLS_VERIFY")
        .env_remove("RUNNER_PERMISSION_CONFIG")
        .arg("doctor");
    for name in ["HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY"] {
        command.env_remove(name).env_remove(name.to_lowercase());
    }
    if let Some(proxy) = https_proxy {
        command.env("HTTPS_PROXY", proxy);
    }
    if json {
        command.arg("--json");
    }
    let output = command.output().await.expect("doctor runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        !stdout.contains(token) && !String::from_utf8_lossy(&output.stderr).contains(token),
        "token leaked"
    );
    (output.status.code(), stdout)
}

fn proxy_authority(proxy: &ConnectProxy) -> String {
    proxy.url.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn doctor_names_the_relays_issuer_directly_and_through_a_tunnelling_proxy() {
    let pki = TestPki::with_ca_name(RELAY_CA);
    let (relay, token) = tls_relay(&pki).await;
    let ca = pki.path("ca.pem");
    let home = tempfile::tempdir().expect("tempdir");

    // Direct: the relay's own certificate.
    let (code, stdout) = doctor(home.path(), &relay, &token, &ca, None, true).await;
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(code, Some(0), "{report}");
    let tls = check(&report, "tls");
    assert_eq!(tls["outcome"], "ok", "{tls}");
    assert_eq!(
        tls["certificate"]["issuer"],
        format!("CN={RELAY_CA}"),
        "{tls}"
    );
    assert_eq!(tls["certificate"]["subject"], "CN=localhost", "{tls}");
    assert_eq!(tls["certificate"]["chain_length"], 1, "{tls}");
    assert!(tls["certificate"].get("proxy").is_none(), "{tls}");

    // Through a proxy that only tunnels: still the relay's CA, and doctor
    // says which proxy the certificate was seen through.
    let proxy = ConnectProxy::spawn(None).await;
    let (code, stdout) = doctor(home.path(), &relay, &token, &ca, Some(&proxy.url), true).await;
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(code, Some(0), "{report}");
    let tls = check(&report, "tls");
    assert_eq!(tls["outcome"], "ok", "{tls}");
    assert_eq!(
        tls["certificate"]["issuer"],
        format!("CN={RELAY_CA}"),
        "{tls}"
    );
    assert_eq!(
        tls["certificate"]["proxy"],
        proxy_authority(&proxy),
        "{tls}"
    );
    assert_eq!(check(&report, "websocket")["outcome"], "ok", "{report}");
    let relay_authority = relay.url.trim_start_matches("https://").to_owned();
    let connects = proxy.connects();
    assert!(
        connects.len() >= 2 && connects.iter().all(|a| *a == relay_authority),
        "the proxy carried {connects:?}, wanted CONNECTs to {relay_authority}"
    );

    // The text report shows it too.
    let (code, stdout) = doctor(home.path(), &relay, &token, &ca, Some(&proxy.url), false).await;
    assert_eq!(code, Some(0), "{stdout}");
    let line = format!(
        "certificate seen through the proxy {}: issuer CN={RELAY_CA}, subject CN=localhost, chain of 1",
        proxy_authority(&proxy)
    );
    assert!(stdout.contains(&line), "{stdout}");
}

#[tokio::test]
async fn doctor_names_an_intercepting_proxys_issuer_and_blames_interception() {
    let pki = TestPki::with_ca_name(RELAY_CA);
    let interceptor = TestPki::with_ca_name(INTERCEPTING_CA);
    let (relay, token) = tls_relay(&pki).await;
    let home = tempfile::tempdir().expect("tempdir");
    let proxy = ConnectProxy::spawn(Some(&interceptor)).await;

    // Trusting only the relay's CA: the interception is caught and named.
    let ca = pki.path("ca.pem");
    let (code, stdout) = doctor(home.path(), &relay, &token, &ca, Some(&proxy.url), true).await;
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(code, Some(1), "{report}");
    let tls = check(&report, "tls");
    assert_eq!(tls["outcome"], "fail", "{tls}");
    assert_eq!(
        tls["certificate"]["issuer"],
        format!("CN={INTERCEPTING_CA}"),
        "{tls}"
    );
    assert_eq!(
        tls["certificate"]["proxy"],
        proxy_authority(&proxy),
        "{tls}"
    );
    let detail = tls["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("UnknownIssuer"), "{tls}");
    let fix = tls["fix"].as_str().unwrap_or_default();
    assert!(fix.contains("TLS interception"), "{fix}");
    assert!(fix.contains(INTERCEPTING_CA), "{fix}");
    assert!(fix.contains(&proxy_authority(&proxy)), "{fix}");
    assert!(fix.contains("--ca-file"), "{fix}");
    assert!(
        report["summary"]
            .as_str()
            .unwrap_or_default()
            .starts_with("can't reach the relay: tls failed"),
        "{report}"
    );
    assert!(!proxy.connects().is_empty(), "the proxy was not used");

    // The fix works: with the interceptor's CA trusted (sanctioned
    // interception), every check passes and the issuer is still named.
    let sanctioned = interceptor.path("ca.pem");
    let (code, stdout) = doctor(
        home.path(),
        &relay,
        &token,
        &sanctioned,
        Some(&proxy.url),
        true,
    )
    .await;
    let report: Value = serde_json::from_str(&stdout).expect("json report");
    assert_eq!(code, Some(0), "{report}");
    let tls = check(&report, "tls");
    assert_eq!(tls["outcome"], "ok", "{tls}");
    assert_eq!(
        tls["certificate"]["issuer"],
        format!("CN={INTERCEPTING_CA}"),
        "{tls}"
    );
    assert_eq!(check(&report, "websocket")["outcome"], "ok", "{report}");
}
