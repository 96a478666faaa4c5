//! `runner doctor`: explains what is wrong when the runner can't connect.
//!
//! Checks run in order, from "is there a config" outwards to the relay, and
//! each one says what to do when it fails. The summary separates the two
//! cases a user must tell apart: *can't reach the relay* (config, DNS, TCP,
//! proxy, TLS) versus *reached it, but the relay refuses* (token, upgrade).
//! Network checks after a failed reachability check are skipped, not failed,
//! so the first ✗ is the cause.

use std::io::Write;
use std::time::{Duration, SystemTime};

use anyhow::Result;
use serde::Serialize;

use crate::args::DoctorArgs;
use crate::config::{ConfigFile, Dirs};
use crate::credentials::{self, SecretKind};
use crate::secret::Secret;
use crate::tools::browser::install;
use crate::{client, env_vars, exit, output, tls, tools};

/// Time each network probe gets.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// Clock skew beyond which we warn (token ages and expiry are the relay's).
const SKEW_WARNING: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Warn,
    Fail,
    Skip,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    /// `reachability`, `relay` or `machine`.
    pub group: &'static str,
    pub outcome: Outcome,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// On the `tls` check: the certificate that actually arrived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<SeenCertificate>,
    /// On the `browser` check: what the runner was told and did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser: Option<BrowserFacts>,
}

/// The browser tools of this machine: the browser found, the
/// environment's wish as the runner last heard it, and the install.
#[derive(Debug, Clone, Serialize)]
pub struct BrowserFacts {
    /// The browser on PATH, if any.
    pub binary: Option<String>,
    /// The environment's `install_browser_tools` as the runner last heard
    /// it; `None` when it never did (not connected since).
    pub wanted: Option<bool>,
    /// How the runner would install Chromium here, by doctor's reading
    /// (this process's PATH, user and `--browser-install-command`).
    pub plan: Option<String>,
    /// Why it could not: the runner's last verdict, or doctor's reading
    /// when the runner never tried.
    pub blocked: Option<install::Blocked>,
    /// The runner's last install, of this start or an earlier one.
    pub last_attempt: Option<install::Attempt>,
}

/// The leaf certificate the relay's address presented to this machine, over
/// the path the runner's WebSocket takes. Behind a TLS-intercepting proxy it
/// is the proxy's certificate, which is the point of showing it.
#[derive(Debug, Clone, Serialize)]
pub struct SeenCertificate {
    /// RFC 4514 (`CN=…,O=…`).
    pub issuer: String,
    pub subject: String,
    /// Certificates presented, the leaf included.
    pub chain_length: usize,
    /// `host:port` of the proxy the handshake went through; absent when
    /// the connection was direct.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy: Option<String>,
}

/// What doctor's own handshake saw.
struct Inspection {
    certificate: SeenCertificate,
    verdict: Result<(), rustls::Error>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub version: &'static str,
    pub ok: bool,
    pub summary: String,
    pub checks: Vec<Check>,
}

struct Doctor {
    checks: Vec<Check>,
}

impl Doctor {
    fn add(
        &mut self,
        name: &'static str,
        group: &'static str,
        outcome: Outcome,
        detail: impl Into<String>,
        fix: Option<String>,
    ) {
        self.checks.push(Check {
            name,
            group,
            outcome,
            detail: detail.into(),
            fix,
            certificate: None,
            browser: None,
        });
    }
    fn ok(&mut self, name: &'static str, group: &'static str, detail: impl Into<String>) {
        self.add(name, group, Outcome::Ok, detail, None);
    }
    fn fail(
        &mut self,
        name: &'static str,
        group: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.add(name, group, Outcome::Fail, detail, Some(fix.into()));
    }
    fn skip(&mut self, name: &'static str, group: &'static str, why: &str) {
        self.add(name, group, Outcome::Skip, why, None);
    }
    fn failed(&self) -> bool {
        self.checks.iter().any(|c| c.outcome == Outcome::Fail)
    }
}

pub async fn run(dirs: &Dirs, args: DoctorArgs) -> Result<u8> {
    let report = diagnose(dirs, &args).await;
    if args.api.json {
        output::json(&report)?;
    } else {
        print(&report)?;
    }
    Ok(if report.ok { exit::OK } else { exit::FAILURE })
}

async fn diagnose(dirs: &Dirs, args: &DoctorArgs) -> Report {
    let mut doctor = Doctor { checks: Vec::new() };
    let reach = "reachability";
    let relay = "relay";
    let machine = "machine";

    // 1. Config, the runner's token and the API key. Doctor checks both
    // roles a machine may have: a runner (its registration token) and an
    // administrator's terminal (an API key); either alone is enough.
    let config = ConfigFile::load(dirs);
    let env_token = std::env::var(env_vars::TOKEN)
        .ok()
        .filter(|v| !v.trim().is_empty());
    let api_key = api_key(dirs, config.as_ref().ok()).await;
    let has_key = matches!(api_key, Some(Ok(_)));
    let mut config_failed = false;
    let (registered_url, token) = match (&config, env_token) {
        (_, Some(token)) => {
            doctor.ok("config", reach, "RUNNER_TOKEN is set in the environment");
            doctor.ok("token", reach, "from RUNNER_TOKEN");
            (None, Some(Secret::new(token.trim())))
        }
        (Ok(config), None) => match &config.registration {
            Some(registration) => {
                doctor.ok(
                    "config",
                    reach,
                    format!(
                        "{} (environment {})",
                        dirs.config_file().display(),
                        registration.environment_id
                    ),
                );
                let token = match credentials::load(
                    dirs,
                    SecretKind::RegistrationToken,
                    registration.token_location,
                )
                .await
                {
                    Ok(token) => {
                        doctor.ok(
                            "token",
                            reach,
                            format!(
                                "{} in {}",
                                token.hint(),
                                credentials::describe(
                                    dirs,
                                    SecretKind::RegistrationToken,
                                    registration.token_location
                                )
                            ),
                        );
                        Some(token)
                    }
                    Err(error) => {
                        let fix = error
                            .downcast_ref::<exit::ExitError>()
                            .and_then(|e| e.hint.clone())
                            .unwrap_or_else(|| "run `runner register` again".to_owned());
                        doctor.fail("token", reach, format!("{error:#}"), fix);
                        None
                    }
                };
                (Some(registration.url.clone()), token)
            }
            None if has_key => {
                doctor.add(
                    "config",
                    reach,
                    Outcome::Warn,
                    format!(
                        "no runner registration ({} has none): only the relay and the API key are checked",
                        dirs.config_file().display()
                    ),
                    Some("to run tools on this machine: RUNNER_TOKEN=… runner register --url URL".to_owned()),
                );
                doctor.skip("token", reach, "no runner registration");
                (None, None)
            }
            None => {
                doctor.fail(
                    "config",
                    reach,
                    format!(
                        "not registered ({} has no registration) and no API key",
                        dirs.config_file().display()
                    ),
                    "a runner: RUNNER_TOKEN=… runner register --url URL; an administrator: RUNNER_API_KEY=… or `runner login --url URL`",
                );
                doctor.skip("token", reach, "no registration");
                config_failed = true;
                (None, None)
            }
        },
        (Err(error), None) => {
            doctor.fail(
                "config",
                reach,
                format!("{error:#}"),
                "fix or remove the file, then `runner register` again",
            );
            doctor.skip("token", reach, "no usable config");
            config_failed = true;
            (None, None)
        }
    };
    // --url / RUNNER_URL, else the registration's, else `runner login`'s.
    let login_url = config
        .as_ref()
        .ok()
        .and_then(|config| config.login.as_ref())
        .map(|login| login.url.clone());
    let url = args
        .api
        .url
        .clone()
        .filter(|url| !url.trim().is_empty())
        .or(registered_url)
        .or(login_url);

    // 2. Reachability.
    let base = match url.as_deref().map(client::normalise_base_url) {
        Some(Ok(base)) => {
            doctor.ok("url", reach, base.clone());
            Some(base)
        }
        Some(Err(error)) => {
            doctor.fail(
                "url",
                reach,
                format!("{error:#}"),
                "use the form https://relay.example.com",
            );
            None
        }
        None if config_failed => {
            doctor.skip("url", reach, "no URL");
            None
        }
        None => {
            doctor.fail(
                "url",
                reach,
                "no relay URL",
                "pass --url, set RUNNER_URL, or `runner register` / `runner login --url URL`",
            );
            None
        }
    };
    let parsed = base.as_deref().and_then(|b| reqwest::Url::parse(b).ok());
    let target = parsed.as_ref().and_then(|u| {
        Some((
            u.host_str()?.to_owned(),
            u.port_or_known_default()?,
            u.scheme().to_owned(),
        ))
    });
    let mut reachable = false;
    // `None` when the URL is not https or the relay's address is unreachable.
    let mut inspection: Option<Result<Inspection, String>> = None;
    if let Some((host, port, scheme)) = &target {
        let proxy = super::super::agent::dial::proxy_for(
            if scheme == "https" { "wss" } else { "ws" },
            host,
        );
        match &proxy {
            Some(p) => doctor.ok(
                "proxy",
                reach,
                format!(
                    "through {}:{} (from the proxy environment variables)",
                    p.host, p.port
                ),
            ),
            None => doctor.ok("proxy", reach, "none (direct connection)"),
        }
        let (dial_host, dial_port) = match &proxy {
            Some(p) => (p.host.clone(), p.port),
            None => (host.clone(), *port),
        };
        let lookup = tokio::time::timeout(
            PROBE_TIMEOUT,
            tokio::net::lookup_host((dial_host.as_str(), dial_port)),
        )
        .await
        .map(|found| found.map(|addrs| addrs.map(|a| a.ip().to_string()).collect::<Vec<_>>()));
        match lookup {
            Ok(Ok(addrs)) => {
                doctor.ok("dns", reach, format!("{dial_host} → {}", addrs.join(", ")));
                match tokio::time::timeout(PROBE_TIMEOUT, tokio::net::TcpStream::connect((dial_host.as_str(), dial_port))).await {
                    Ok(Ok(_)) => {
                        doctor.ok("tcp", reach, format!("connected to {dial_host}:{dial_port}"));
                        reachable = true;
                    }
                    Ok(Err(error)) => doctor.fail("tcp", reach, format!("{dial_host}:{dial_port}: {error}"), "is the relay running and listening on that port? is a firewall in the way?"),
                    Err(_) => doctor.fail("tcp", reach, format!("{dial_host}:{dial_port}: no answer in {}s", PROBE_TIMEOUT.as_secs()), "a firewall may drop the packets; check the port and the network path"),
                }
            }
            Ok(Err(error)) => doctor.fail(
                "dns",
                reach,
                format!("{dial_host}: {error}"),
                "check the host name and /etc/resolv.conf",
            ),
            Err(_) => doctor.fail(
                "dns",
                reach,
                format!("{dial_host}: no answer in {}s", PROBE_TIMEOUT.as_secs()),
                "check the resolver",
            ),
        }
        if reachable && scheme == "https" {
            inspection = Some(inspect_certificate(host, *port, proxy.as_ref()).await);
        }
    } else {
        for name in ["proxy", "dns", "tcp"] {
            doctor.skip(name, reach, "no URL");
        }
    }

    // 3. TLS and the relay's HTTP answer (one request does both).
    let http = client::http_client().ok();
    let mut relay_ok = false;
    match (&base, &http, reachable) {
        (Some(base), Some(http), true) => {
            let url = format!("{base}/healthz");
            match http.get(&url).timeout(PROBE_TIMEOUT).send().await {
                Ok(response) => {
                    let rejected = match &inspection {
                        Some(Ok(Inspection {
                            verdict: Err(error),
                            ..
                        })) => Some(error.to_string()),
                        _ => None,
                    };
                    if let Some(error) = rejected {
                        // The HTTP request got through, but the WebSocket's
                        // path (the one the runner lives on) did not.
                        let text = format!("the WebSocket's TLS handshake failed: {error}");
                        let seen = seen_certificate(&inspection);
                        doctor.fail("tls", reach, text.clone(), tls_fix(&text, seen));
                    } else if base.starts_with("https://") {
                        let mode = if tls::options().insecure_skip_verify {
                            "verification OFF (--insecure-skip-tls-verify)"
                        } else {
                            "chain and hostname verified"
                        };
                        let detail = match &inspection {
                            Some(Err(error)) => {
                                format!("{mode}; the certificate was not inspected: {error}")
                            }
                            _ => mode.to_owned(),
                        };
                        doctor.add(
                            "tls",
                            reach,
                            if tls::options().insecure_skip_verify {
                                Outcome::Warn
                            } else {
                                Outcome::Ok
                            },
                            detail,
                            None,
                        );
                    } else {
                        doctor.add(
                            "tls",
                            reach,
                            Outcome::Warn,
                            "plain http: the token crosses the network unencrypted",
                            Some("serve the relay over https outside a trusted network".to_owned()),
                        );
                    }
                    if response.status().is_success() {
                        doctor.ok(
                            "relay",
                            reach,
                            format!("{url} answered {}", response.status()),
                        );
                        relay_ok = true;
                    } else {
                        doctor.fail("relay", reach, format!("{url} answered {}", response.status()), "the URL reaches a server that is not a healthy runner-relay (wrong path, or a proxy/load balancer answering)");
                    }
                    clock_check(&mut doctor, response.headers().get("date"));
                }
                Err(error) => {
                    let text = client::error_chain(&error);
                    if base.starts_with("https://") && looks_like_tls(&text) {
                        let seen = seen_certificate(&inspection);
                        doctor.fail("tls", reach, text.clone(), tls_fix(&text, seen));
                        doctor.skip("relay", reach, "TLS failed");
                    } else {
                        doctor.ok("tls", reach, "not reached");
                        doctor.fail(
                            "relay",
                            reach,
                            text,
                            "the port answers but not as an HTTP relay; check the URL",
                        );
                    }
                    doctor.skip("clock", relay, "relay not reached");
                }
            }
        }
        _ => {
            for name in ["tls", "relay"] {
                doctor.skip(name, reach, "not reachable");
            }
            doctor.skip("clock", relay, "relay not reached");
        }
    }

    if let Some(seen) = seen_certificate(&inspection) {
        if let Some(check) = doctor.checks.iter_mut().find(|c| c.name == "tls") {
            check.certificate = Some(seen.clone());
        }
    }

    // 4. The relay's verdict on our token, and the WebSocket upgrade.
    match (&base, &http, &token, relay_ok) {
        (Some(base), Some(http), Some(token), true) => {
            // GET: the read-only check, which neither registers nor
            // records the token's use.
            let url = format!("{base}{}", runner_proto::RUNNER_REGISTER_PATH);
            match http
                .get(&url)
                .bearer_auth(token.expose())
                .timeout(PROBE_TIMEOUT)
                .send()
                .await
            {
                Ok(response) if response.status().is_success() => {
                    let body: Option<runner_proto::api::RegisterResponse> =
                        response.json().await.ok();
                    let env = body
                        .map(|b| format!("{} ({})", b.environment.name, b.environment.id))
                        .unwrap_or_default();
                    doctor.ok(
                        "token accepted",
                        relay,
                        format!("valid for environment {env}"),
                    );
                    websocket_check(&mut doctor, base, token).await;
                }
                Ok(response) if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED => {
                    doctor.skip(
                        "token accepted",
                        relay,
                        "this relay cannot check a token without registering it (older than this runner); `runner register` checks it",
                    );
                    websocket_check(&mut doctor, base, token).await;
                }
                Ok(response) => {
                    let status = response.status();
                    let code = response
                        .json::<runner_proto::api::ErrorBody>()
                        .await
                        .ok()
                        .map(|b| b.error.code)
                        .unwrap_or_default();
                    let (detail, fix) = match (status.as_u16(), code.as_str()) {
                        (401, "token_expired") => ("the token expired (90 days unused) or was rotated out", "generate a new one (`runner token generate ENV`) and `runner register` again"),
                        (401, _) => ("the token is unknown: revoked, or never issued by this relay", "check the URL points at the right relay; else generate a new token and register again"),
                        (429, _) => ("too many failed attempts from this address; the relay is rate limiting", "wait a minute, then fix the token"),
                        _ => ("the relay refused the token", "see the relay's logs"),
                    };
                    doctor.fail(
                        "token accepted",
                        relay,
                        format!("{detail} (HTTP {status})"),
                        fix,
                    );
                    doctor.skip("websocket", relay, "token refused");
                }
                Err(error) => {
                    doctor.fail(
                        "token accepted",
                        relay,
                        client::error_chain(&error),
                        "retry; if it persists, see the relay's logs",
                    );
                    doctor.skip("websocket", relay, "token check failed");
                }
            }
        }
        (_, _, None, _) => {
            doctor.skip("token accepted", relay, "no runner token");
            doctor.skip("websocket", relay, "no runner token");
        }
        _ => {
            doctor.skip("token accepted", relay, "relay not reached");
            doctor.skip("websocket", relay, "relay not reached");
        }
    }
    match (&base, &http, api_key, relay_ok) {
        (Some(base), Some(http), Some(Ok((key, source))), true) => {
            api_key_check(&mut doctor, http, base, &key, &source).await;
        }
        (_, _, Some(Err(error)), _) => doctor.fail(
            "api key",
            relay,
            format!("{error:#}"),
            "`runner login --url URL` again, or set RUNNER_API_KEY",
        ),
        (_, _, None, _) => doctor.skip(
            "api key",
            relay,
            "none (RUNNER_API_KEY or `runner login`): administration not checked",
        ),
        _ => doctor.skip("api key", relay, "relay not reached"),
    }

    // 5. This machine.
    match &args.permission_config {
        Some(path) => match runner_policy::PermissionSet::load(path) {
            Ok(set) => doctor.ok(
                "permission file",
                machine,
                format!("{} ({} rules)", path.display(), set.rules().len()),
            ),
            Err(error) => doctor.fail(
                "permission file",
                machine,
                error.to_string(),
                "fix it (`runner policy lint FILE`): the runner refuses to start with it",
            ),
        },
        None => doctor.add(
            "permission file",
            machine,
            Outcome::Warn,
            "none configured: every command is allowed",
            Some("set RUNNER_PERMISSION_CONFIG to restrict commands".to_owned()),
        ),
    }
    let workspace = args
        .workspace
        .clone()
        .unwrap_or_else(|| dirs.state.join("workspace"));
    match workspace_check(&workspace) {
        Ok(detail) => doctor.ok("workspace", machine, detail),
        Err(detail) => doctor.fail(
            "workspace",
            machine,
            detail,
            "create it and make it writable by the runner's user",
        ),
    }
    kept_output_check(&mut doctor, machine, &workspace, args.kept_output_max_mb);
    match crate::agent::lock::holder(&dirs.state) {
        Some(pid) => doctor.ok(
            "runner process",
            machine,
            format!("running (PID {pid} holds the lock)"),
        ),
        None => doctor.add(
            "runner process",
            machine,
            Outcome::Warn,
            format!(
                "no runner is running with state dir {}",
                dirs.state.display()
            ),
            Some("start it: `runner run` or `runner service start`".to_owned()),
        ),
    }
    if let Some(report) = crate::agent::leftovers::last_report(&dirs.state) {
        doctor.add(
            "left running",
            machine,
            Outcome::Warn,
            format!(
                "the runner's start {} stopped {} process(es) a previous run left running: {}",
                ago(report.at_unix),
                report.processes.len(),
                crate::agent::leftovers::describe(&report.processes)
            ),
            Some("a runner was killed or crashed with calls running: its log says when".to_owned()),
        );
    }
    service_check(&mut doctor);
    self_update_check(&mut doctor);
    if cfg!(target_os = "linux") {
        doctor.ok("call cgroups", machine, crate::exec::describe().await);
        // An unreadable config file is reported above; here it holds no
        // keychain secret.
        let config = config.as_ref().ok().cloned().unwrap_or_default();
        runner_files_check(
            &mut doctor,
            dirs,
            &config,
            &workspace,
            args.hide_runner_files,
        )
        .await;
    }
    let names: Vec<String> = tools::catalogue().into_iter().map(|t| t.name).collect();
    doctor.ok("tools", machine, names.join(", "));
    let install_command = match &config {
        Ok(config) => {
            super::run::browser_install_command(args.browser_install_command.as_deref(), config)
                .map_err(|error| format!("{error:#}"))
        }
        Err(_) => Ok(None),
    };
    browser_check(&mut doctor, machine, &dirs.state, install_command);
    if args.sandbox_host {
        sandbox_host_checks(&mut doctor);
    }

    let first_failure = doctor.checks.iter().find(|c| c.outcome == Outcome::Fail);
    let summary = match first_failure {
        None => "all checks passed".to_owned(),
        Some(check) if check.group == "reachability" => {
            format!("can't reach the relay: {} failed", check.name)
        }
        Some(check) if check.group == "relay" => format!(
            "reached the relay, but it refuses this runner: {} failed",
            check.name
        ),
        Some(check) => format!(
            "the relay is fine; this machine has a problem: {} failed",
            check.name
        ),
    };
    Report {
        version: env!("CARGO_PKG_VERSION"),
        ok: !doctor.failed(),
        summary,
        checks: doctor.checks,
    }
}

/// Whether the environment's browser tools are there, and when they are
/// wanted but missing, why the runner cannot install them.
fn browser_check(
    doctor: &mut Doctor,
    group: &'static str,
    state_dir: &std::path::Path,
    install_command: Result<Option<install::InstallCommand>, String>,
) {
    let binary = tools::toolbox::find_browser();
    let record = install::Record::load(state_dir);
    let plan_here = install_command
        .as_ref()
        .map(|command| install::plan_here(command.as_ref()));
    let facts = BrowserFacts {
        binary: binary.as_ref().map(|path| path.display().to_string()),
        wanted: record.as_ref().map(|record| record.wanted),
        plan: match &plan_here {
            Ok(Ok(plan)) => Some(plan.describe()),
            _ => None,
        },
        // The runner's verdict is its latest word (it clears it when it
        // tries); doctor's own reading stands in when it never tried.
        blocked: match (&record, &plan_here) {
            (Some(record), _) if record.blocked.is_some() || record.attempt.is_some() => {
                record.blocked.clone()
            }
            (_, Ok(Err(blocked))) => Some(blocked.clone()),
            _ => None,
        },
        last_attempt: record.as_ref().and_then(|record| record.attempt.clone()),
    };
    let (outcome, detail, fix) = browser_verdict(&facts, install_command.as_ref().err());
    doctor.add("browser", group, outcome, detail, fix);
    if let Some(check) = doctor.checks.last_mut() {
        check.browser = Some(facts);
    }
}

/// What the `browser` check says of `facts`; `bad_command` is a
/// `--browser-install-command` that `runner run` would refuse.
fn browser_verdict(
    facts: &BrowserFacts,
    bad_command: Option<&String>,
) -> (Outcome, String, Option<String>) {
    let wish = match facts.wanted {
        Some(true) => "the environment asks for browser tools",
        Some(false) => "the environment does not ask for browser tools (install_browser_tools off)",
        None => "the runner has not heard the environment's browser setting (not connected since)",
    };
    if let Some(error) = bad_command {
        return (
            Outcome::Fail,
            error.clone(),
            Some("fix --browser-install-command / RUNNER_BROWSER_INSTALL_COMMAND / browser_install_command: `runner run` refuses to start with it".to_owned()),
        );
    }
    if let Some(binary) = &facts.binary {
        return (Outcome::Ok, format!("{binary} ({wish})"), None);
    }
    if facts.wanted != Some(true) {
        let could = match (&facts.plan, &facts.blocked) {
            (Some(plan), _) => format!("; if asked, the runner installs Chromium with `{plan}`"),
            (None, Some(blocked)) => {
                format!("; if asked, it could not install Chromium: {blocked}")
            }
            (None, None) => String::new(),
        };
        return (
            Outcome::Ok,
            format!("no browser on PATH: {wish}{could}"),
            None,
        );
    }
    if let Some(blocked) = &facts.blocked {
        let fix = match blocked {
            install::Blocked::NotRoot { manager } => format!(
                "install Chromium yourself (`sudo {manager} install {}`), run the runner as root (a container), or set --browser-install-command",
                install::PACKAGE
            ),
            install::Blocked::NoPackageManager => "install a browser yourself (chromium, google-chrome), or set --browser-install-command".to_owned(),
        };
        return (
            Outcome::Warn,
            format!("{wish}, but Chromium cannot be installed here: {blocked}"),
            Some(fix),
        );
    }
    let Some(attempt) = &facts.last_attempt else {
        let how = facts
            .plan
            .as_deref()
            .map(|plan| format!(" with `{plan}`"))
            .unwrap_or_default();
        return (
            Outcome::Ok,
            format!("no browser on PATH yet: {wish}; the runner installs Chromium{how}"),
            None,
        );
    };
    let command = &attempt.command;
    let started = ago(attempt.started_at_unix);
    match &attempt.outcome {
        install::Outcome::Running => (
            Outcome::Ok,
            format!("{wish}: installing Chromium, started {started} (`{command}`)"),
            None,
        ),
        install::Outcome::Succeeded => (
            Outcome::Warn,
            format!("{wish}; the last install (`{command}`) succeeded, but no browser is on PATH"),
            Some(format!(
                "make the install put {} on the runner's PATH",
                tools::toolbox::BROWSER_NAMES.join(" or ")
            )),
        ),
        failed => (
            Outcome::Warn,
            format!(
                "{wish}, but Chromium could not be installed: the last attempt (`{command}`, {started}) {failed}"
            ),
            Some("the runner's log has the install's output; turn browser tools off and on for the environment (or restart the runner) to try again".to_owned()),
        ),
    }
}

/// Handshakes with the relay's host over the WebSocket's path (the proxy's
/// CONNECT tunnel when one applies) and records the certificate presented.
async fn inspect_certificate(
    host: &str,
    port: u16,
    proxy: Option<&crate::agent::dial::Proxy>,
) -> Result<Inspection, String> {
    let probe = async {
        let stream = match proxy {
            Some(proxy) => crate::agent::dial::tunnel(proxy, host, port)
                .await
                .map_err(|error| error.to_string())?,
            None => tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|error| format!("{host}:{port}: {error}"))?,
        };
        tls::peer::handshake(stream, host)
            .await
            .map_err(|error| format!("{error:#}"))
    };
    let peer = tokio::time::timeout(PROBE_TIMEOUT, probe)
        .await
        .map_err(|_| format!("no TLS handshake in {}s", PROBE_TIMEOUT.as_secs()))??;
    let names = peer.chain.first().and_then(tls::peer::names);
    let (issuer, subject) = match names {
        Some(names) => (names.issuer, names.subject),
        None => {
            let unreadable = "(not a readable X.509 certificate)".to_owned();
            (unreadable.clone(), unreadable)
        }
    };
    Ok(Inspection {
        certificate: SeenCertificate {
            issuer,
            subject,
            chain_length: peer.chain.len(),
            proxy: proxy.map(|p| format!("{}:{}", p.host, p.port)),
        },
        verdict: peer.verdict,
    })
}

fn seen_certificate(inspection: &Option<Result<Inspection, String>>) -> Option<&SeenCertificate> {
    match inspection {
        Some(Ok(inspection)) => Some(&inspection.certificate),
        _ => None,
    }
}

async fn websocket_check(doctor: &mut Doctor, base: &str, token: &Secret) {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let Ok(url) = crate::agent::session::connect_url(base) else {
        doctor.skip("websocket", "relay", "bad URL");
        return;
    };
    let Ok(mut request) = url.as_str().into_client_request() else {
        doctor.fail(
            "websocket",
            "relay",
            format!("{url} is not a WebSocket URL"),
            "check the relay URL",
        );
        return;
    };
    if let Ok(value) = format!("Bearer {}", token.expose()).parse() {
        request.headers_mut().insert("authorization", value);
    }
    // Upgrade and close at once, without `hello`: the relay only replaces a
    // connected runner after a `hello`, so this never disturbs it.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default();
    match tokio::time::timeout(PROBE_TIMEOUT, crate::agent::dial::dial(request, config)).await {
        Ok(Ok(mut socket)) => {
            let _ = socket.close(None).await;
            doctor.ok("websocket", "relay", format!("{url} upgraded"));
        }
        Ok(Err(error)) => doctor.fail("websocket", "relay", format!("{url}: {error}"), "a proxy or load balancer in front of the relay must pass WebSocket upgrades (Connection: upgrade)"),
        Err(_) => doctor.fail("websocket", "relay", format!("{url}: no upgrade in {}s", PROBE_TIMEOUT.as_secs()), "a proxy may be buffering the upgrade"),
    }
}

fn clock_check(doctor: &mut Doctor, date: Option<&reqwest::header::HeaderValue>) {
    let Some(relay_time) = date
        .and_then(|d| d.to_str().ok())
        .and_then(httpdate_to_system)
    else {
        doctor.skip("clock", "relay", "the relay sent no Date header");
        return;
    };
    let now = SystemTime::now();
    let skew = now
        .duration_since(relay_time)
        .or_else(|e| Ok::<_, ()>(e.duration()))
        .unwrap_or_default();
    if skew > SKEW_WARNING {
        doctor.add(
            "clock",
            "relay",
            Outcome::Warn,
            format!(
                "this machine's clock is {}s off the relay's",
                skew.as_secs()
            ),
            Some("enable time sync (chrony, systemd-timesyncd)".to_owned()),
        );
    } else {
        doctor.ok(
            "clock",
            "relay",
            format!("within {}s of the relay", skew.as_secs()),
        );
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
fn httpdate_to_system(text: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as i64
        + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else {
        return None;
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + s;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).ok()?))
}

fn looks_like_tls(text: &str) -> bool {
    let lower = text.to_lowercase();
    [
        "certificate",
        "tls",
        "handshake",
        "unknownissuer",
        "notvalidforname",
        "expired",
    ]
    .iter()
    .any(|n| lower.contains(n))
}

/// The fix for a TLS failure described by `text`; `seen` is the certificate
/// that arrived, when doctor's own handshake got one.
fn tls_fix(text: &str, seen: Option<&SeenCertificate>) -> String {
    let lower = text.to_lowercase();
    if lower.contains("unknownissuer") || lower.contains("unknown issuer") {
        match seen {
            Some(SeenCertificate {
                issuer,
                proxy: Some(proxy),
                ..
            }) => format!(
                "TLS interception by the proxy {proxy} is the likely cause: the certificate seen through it was issued by {issuer:?}, a CA this machine does not trust. If the interception is sanctioned, add that proxy's CA with --ca-file / RUNNER_CA_FILE; otherwise have the proxy pass the relay through untouched, or bypass it with NO_PROXY"
            ),
            Some(SeenCertificate { issuer, .. }) => format!(
                "the relay's certificate was issued by {issuer:?}, a CA this machine does not trust: add that CA with --ca-file / RUNNER_CA_FILE (a TLS-intercepting middlebox causes this too); inside a trusted network only, --insecure-skip-tls-verify"
            ),
            None => "the relay's certificate is signed by a CA this machine does not trust: add it with --ca-file / RUNNER_CA_FILE (a TLS-intercepting proxy causes this too); inside a trusted network only, --insecure-skip-tls-verify".to_owned(),
        }
    } else if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        "the certificate does not name this host: use the URL's host name as it appears in the certificate".to_owned()
    } else if lower.contains("expired") {
        "the relay's certificate has expired (or this machine's clock is wrong): renew it"
            .to_owned()
    } else {
        "check the relay's TLS setup; add its CA with --ca-file".to_owned()
    }
}

/// `3 min ago` for a time in seconds since the Unix epoch.
fn ago(at_unix: u64) -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default();
    let seconds = now.saturating_sub(at_unix);
    match seconds {
        0..120 => format!("{seconds} s ago"),
        120..7200 => format!("{} min ago", seconds / 60),
        7200..172_800 => format!("{} h ago", seconds / 3600),
        _ => format!("{} days ago", seconds / 86_400),
    }
}

/// The API key the admin commands would use (RUNNER_API_KEY, else the one
/// `runner login` stored) and where it came from; `None` when there is none.
async fn api_key(dirs: &Dirs, config: Option<&ConfigFile>) -> Option<Result<(Secret, String)>> {
    if let Some(key) = std::env::var(env_vars::API_KEY)
        .ok()
        .filter(|key| !key.trim().is_empty())
    {
        return Some(Ok((
            Secret::new(key.trim()),
            format!("from {}", env_vars::API_KEY),
        )));
    }
    let login = config?.login.as_ref()?;
    Some(
        credentials::load(dirs, SecretKind::ApiKey, login.api_key_location)
            .await
            .map(|key| {
                let place = credentials::describe(dirs, SecretKind::ApiKey, login.api_key_location);
                (key, format!("stored by `runner login` in {place}"))
            }),
    )
}

/// Whether the relay accepts the API key, and whose it is (`GET
/// /members/me`, which reads and changes nothing).
async fn api_key_check(
    doctor: &mut Doctor,
    http: &reqwest::Client,
    base: &str,
    key: &Secret,
    source: &str,
) {
    let url = format!("{base}/members/me");
    let answer = http
        .get(&url)
        .bearer_auth(key.expose())
        .timeout(PROBE_TIMEOUT)
        .send()
        .await;
    match answer {
        Ok(response) if response.status().is_success() => {
            let member: Option<runner_proto::members::MemberView> = response.json().await.ok();
            let whose = match member {
                Some(member) => {
                    let role = if member.admin {
                        "organisation admin".to_owned()
                    } else if member.teams.is_empty() {
                        format!("{}, in no team", member.kind)
                    } else {
                        format!("{}, teams {}", member.kind, member.teams.join(", "))
                    };
                    format!("member {} ({}; {role})", member.name, member.id)
                }
                None => "accepted".to_owned(),
            };
            doctor.ok(
                "api key",
                "relay",
                format!("{} {source}: {whose}", key.hint()),
            );
        }
        // A relay that does not know `me` still checked the key first.
        Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND => doctor.ok(
            "api key",
            "relay",
            format!("{} {source}: accepted", key.hint()),
        ),
        Ok(response) if response.status() == reqwest::StatusCode::UNAUTHORIZED => doctor.fail(
            "api key",
            "relay",
            format!(
                "{} {source}: the relay refuses it (unknown or revoked; HTTP 401)",
                key.hint()
            ),
            "check RUNNER_API_KEY, or `runner login --url URL` with a current key",
        ),
        Ok(response) => doctor.fail(
            "api key",
            "relay",
            format!("{url} answered {}", response.status()),
            "see the relay's logs",
        ),
        Err(error) => doctor.fail(
            "api key",
            "relay",
            client::error_chain(&error),
            "retry; if it persists, see the relay's logs",
        ),
    }
}

/// How full the workspace's kept output is against its cap: a warning
/// from 80 %, when the runner starts removing files soon.
fn kept_output_check(
    doctor: &mut Doctor,
    group: &'static str,
    workspace: &std::path::Path,
    cap_mb: u64,
) {
    const MIB: u64 = 1024 * 1024;
    let held: u64 = crate::exec::kept::kept_files(workspace)
        .iter()
        .map(|(_, size, _)| size)
        .sum();
    let cap = cap_mb.saturating_mul(MIB);
    let detail = format!(
        "{} MiB of {cap_mb} MiB in {}",
        held.div_ceil(MIB),
        crate::exec::kept::OUTPUT_DIR
    );
    if held.saturating_mul(5) >= cap.saturating_mul(4) {
        doctor.add(
            "kept output",
            group,
            Outcome::Warn,
            format!("{detail}: near its cap, the oldest files go first"),
            Some(
                "raise --kept-output-max-mb (RUNNER_KEPT_OUTPUT_MAX_MB) or give the disk room"
                    .to_owned(),
            ),
        );
    } else {
        doctor.ok("kept output", group, detail);
    }
}

/// Whether the runner could use `dir` as its workspace, checked without
/// creating or writing anything: an existing directory must be writable;
/// a missing one, creatable (its nearest existing ancestor writable), as
/// `runner run` creates it.
fn workspace_check(dir: &std::path::Path) -> Result<String, String> {
    use nix::unistd::{access, AccessFlags};
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => access(dir, AccessFlags::W_OK)
            .map(|()| format!("{} is writable", dir.display()))
            .map_err(|error| format!("{}: {error}", dir.display())),
        Ok(_) => Err(format!("{} is not a directory", dir.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let ancestor = dir
                .ancestors()
                .skip(1)
                .find(|parent| parent.exists())
                .unwrap_or(std::path::Path::new("/"));
            access(ancestor, AccessFlags::W_OK)
                .map(|()| {
                    format!(
                        "{} does not exist yet (`runner run` creates it)",
                        dir.display()
                    )
                })
                .map_err(|error| {
                    format!(
                        "{} does not exist and cannot be created: {}: {error}",
                        dir.display(),
                        ancestor.display()
                    )
                })
        }
        Err(error) => Err(format!("{}: {error}", dir.display())),
    }
}

/// Whether `runner run` would hide its files from tools here.
async fn runner_files_check(
    doctor: &mut Doctor,
    dirs: &Dirs,
    config: &ConfigFile,
    workspace: &std::path::Path,
    setting: crate::exec::tool_view::HideRunnerFiles,
) {
    use crate::agent::process_secrecy;
    let files = process_secrecy::runner_files(dirs, config, workspace, None);
    match process_secrecy::describe(setting, files).await {
        Ok(detail) => doctor.ok("runner files", "machine", detail),
        Err((detail, fix)) => doctor.add(
            "runner files",
            "machine",
            Outcome::Warn,
            format!("{detail}; tools running as the runner's user can read its credential files"),
            Some(fix),
        ),
    }
}

fn service_check(doctor: &mut Doctor) {
    if !cfg!(target_os = "linux") {
        doctor.skip("service", "machine", "not checked on this OS");
        return;
    }
    let installed = std::path::Path::new(crate::service::systemd::UNIT_PATH).exists();
    if !installed {
        doctor.skip(
            "service",
            "machine",
            "not installed (`runner service install` sets it up)",
        );
        return;
    }
    let state = std::process::Command::new("systemctl")
        .args(["is-active", crate::service::systemd::UNIT_NAME])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned());
    if state == "active" {
        doctor.ok("service", "machine", "installed and active");
    } else {
        doctor.add(
            "service",
            "machine",
            Outcome::Warn,
            format!("installed, {state}"),
            Some("`runner service start`; `runner service logs` shows why it stopped".to_owned()),
        );
    }
}

/// Which release key this build trusts; a build without one cannot update
/// itself, and a test build must never be installed for real.
fn self_update_check(doctor: &mut Doctor) {
    use crate::update::signature::{trust_root, TrustRoot};
    match trust_root() {
        Ok(trust @ TrustRoot::Release(_)) => doctor.ok("self-update", "machine", trust.describe()),
        Ok(trust @ TrustRoot::Test(_)) => doctor.add(
            "self-update",
            "machine",
            Outcome::Warn,
            trust.describe(),
            Some("install a release made by scripts/make-release.sh with your own key".to_owned()),
        ),
        Ok(trust @ TrustRoot::Off) => doctor.add(
            "self-update",
            "machine",
            Outcome::Warn,
            trust.describe(),
            Some(
                "`runner update` exits 14; install new versions with install.sh, or build with RUNNER_RELEASE_PUBKEY (scripts/make-release.sh)"
                    .to_owned(),
            ),
        ),
        Err(error) => doctor.fail(
            "self-update",
            "machine",
            error.to_string(),
            "fix the release key this build is given",
        ),
    }
}

/// What `runner sandbox-host` needs of this machine (it refuses to start
/// without any of it).
fn sandbox_host_checks(doctor: &mut Doctor) {
    for requirement in crate::sandbox::isolation::checks::requirements() {
        match requirement.fix {
            None => doctor.ok(requirement.name, "sandbox host", requirement.detail),
            Some(fix) => doctor.fail(requirement.name, "sandbox host", requirement.detail, fix),
        }
    }
}

fn print(report: &Report) -> Result<()> {
    let colour = crate::use_colour_on_stdout();
    let mut stdout = std::io::stdout().lock();
    let mut group = "";
    for check in &report.checks {
        if check.group != group {
            group = check.group;
            let title = match group {
                "reachability" => "Reaching the relay",
                "relay" => "The relay and this runner",
                "sandbox host" => "Running sandboxes (runner sandbox-host)",
                _ => "This machine",
            };
            writeln!(stdout, "{title}")?;
        }
        let (mark, paint) = match check.outcome {
            Outcome::Ok => ("✓", "32"),
            Outcome::Warn => ("!", "33"),
            Outcome::Fail => ("✗", "31"),
            Outcome::Skip => ("-", "2"),
        };
        let mark = if colour {
            format!("\x1b[{paint}m{mark}\x1b[0m")
        } else {
            mark.to_owned()
        };
        writeln!(stdout, "  {mark} {:<16} {}", check.name, check.detail)?;
        if let Some(seen) = &check.certificate {
            let path = match &seen.proxy {
                Some(proxy) => format!("through the proxy {proxy}"),
                None => "directly".to_owned(),
            };
            writeln!(
                stdout,
                "    {:<16} certificate seen {path}: issuer {}, subject {}, chain of {}",
                "", seen.issuer, seen.subject, seen.chain_length
            )?;
        }
        if let (Some(fix), Outcome::Fail | Outcome::Warn) = (&check.fix, check.outcome) {
            writeln!(stdout, "    {:<16} fix: {fix}", "")?;
        }
    }
    writeln!(stdout)?;
    writeln!(stdout, "{}", report.summary)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse() {
        let parsed = httpdate_to_system("Sun, 06 Nov 1994 08:49:37 GMT").expect("valid");
        assert_eq!(
            parsed
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("after")
                .as_secs(),
            784_111_777
        );
        assert!(httpdate_to_system("yesterday").is_none());
    }

    #[test]
    fn the_browser_check_puts_the_runners_verdict_before_its_last_attempt() {
        let failed = install::Attempt {
            command: "/usr/bin/apt-get install -y chromium".to_owned(),
            source: install::Source::PackageManager {
                name: "apt-get".to_owned(),
            },
            started_at_unix: 0,
            outcome: install::Outcome::Failed { exit_code: 100 },
        };
        let mut facts = BrowserFacts {
            binary: None,
            wanted: Some(true),
            plan: None,
            blocked: Some(install::Blocked::NotRoot {
                manager: "apt-get".to_owned(),
            }),
            last_attempt: Some(failed),
        };
        let (outcome, detail, fix) = browser_verdict(&facts, None);
        assert_eq!(outcome, Outcome::Warn);
        assert!(detail.contains("not root: apt-get"), "{detail}");
        assert!(fix
            .unwrap_or_default()
            .contains("sudo apt-get install chromium"));
        facts.blocked = None;
        let (_, detail, _) = browser_verdict(&facts, None);
        assert!(detail.contains("failed with exit code 100"), "{detail}");
        facts.wanted = Some(false);
        let (outcome, detail, _) = browser_verdict(&facts, None);
        assert_eq!(outcome, Outcome::Ok, "not asked for: nothing to warn of");
        assert!(detail.contains("install_browser_tools off"), "{detail}");
        facts.binary = Some("/usr/bin/chromium".to_owned());
        let (_, detail, _) = browser_verdict(
            &facts,
            Some(&"the browser install command is empty".to_owned()),
        );
        assert!(
            detail.contains("empty"),
            "a refused command comes first: {detail}"
        );
    }

    #[test]
    fn tls_failures_get_specific_fixes() {
        assert!(tls_fix("invalid peer certificate: UnknownIssuer", None).contains("--ca-file"));
        assert!(tls_fix("invalid peer certificate: NotValidForName", None).contains("host name"));
        assert!(tls_fix("certificate expired", None).contains("renew"));
        let mut seen = SeenCertificate {
            issuer: "CN=Corp Inspection CA".to_owned(),
            subject: "CN=relay.example.com".to_owned(),
            chain_length: 1,
            proxy: None,
        };
        let direct = tls_fix("invalid peer certificate: UnknownIssuer", Some(&seen));
        assert!(direct.contains("CN=Corp Inspection CA"), "{direct}");
        assert!(!direct.contains("proxy 10.0.0.1"), "{direct}");
        seen.proxy = Some("10.0.0.1:3128".to_owned());
        let proxied = tls_fix("invalid peer certificate: UnknownIssuer", Some(&seen));
        assert!(proxied.contains("TLS interception"), "{proxied}");
        assert!(proxied.contains("CN=Corp Inspection CA"), "{proxied}");
        assert!(proxied.contains("--ca-file"), "{proxied}");
    }
}
