//! `/metrics`: a mixed workload through a real relay and a fake runner,
//! scraped over HTTP and parsed by the Prometheus client's own OpenMetrics
//! parser (scripts/parse-openmetrics.py); the counts must match the calls
//! made, and no label may carry an id.

use std::collections::HashMap;

use reqwest::StatusCode;
use runner_proto::ws::{CallResult, RunnerMessage};
use runner_relay::metrics::Metrics;
use runner_relay::secret::Secret;
use runner_relay::AppState;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{hello, spawn_relay_with, FakeRunner, TestRelay};

#[path = "../../../scripts/parse_openmetrics.rs"]
mod openmetrics;

const SCRAPE_TOKEN: &str = "metrics-scrape-token-0123456789abcdef0123456789";

#[derive(Debug, Deserialize)]
pub struct Exposition {
    pub families: Vec<MetricFamily>,
}

#[derive(Debug, Deserialize)]
pub struct MetricFamily {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub unit: String,
    pub samples: Vec<Sample>,
}

#[derive(Debug, Deserialize)]
pub struct Sample {
    pub name: String,
    pub labels: HashMap<String, String>,
    pub value: f64,
}

impl Exposition {
    pub fn family(&self, name: &str) -> &MetricFamily {
        self.families
            .iter()
            .find(|family| family.name == name)
            .unwrap_or_else(|| panic!("no family {name} in {:?}", self.names()))
    }

    fn names(&self) -> Vec<&str> {
        self.families.iter().map(|f| f.name.as_str()).collect()
    }

    /// The value of sample `sample` whose labels include `labels`; 0 when
    /// there is none.
    pub fn value(&self, sample: &str, labels: &[(&str, &str)]) -> f64 {
        self.families
            .iter()
            .flat_map(|family| &family.samples)
            .filter(|s| s.name == sample)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }
}

/// Parses an exposition with the Prometheus Python client's OpenMetrics
/// parser. Fails (never skips) when the parser is not installed.
pub fn parse(text: &str) -> Exposition {
    serde_json::from_value(openmetrics::parse_json(text)).expect("the parser's JSON")
}

async fn scrape(relay: &TestRelay, token: Option<&str>) -> (StatusCode, String, String) {
    let mut request = relay.http.get(format!("{}/metrics", relay.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("scrape sent");
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, content_type, response.text().await.expect("body"))
}

fn is_uuid_like(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(part, len)| part.len() == len && part.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[tokio::test]
async fn a_mixed_workload_is_counted_and_scraped_by_a_real_parser() {
    let mut captured: Option<AppState> = None;
    let relay = spawn_relay_with(|state| {
        let state =
            state.with_metrics(Metrics::new().with_scrape_token(&Secret::new(SCRAPE_TOKEN)));
        captured = Some(state.clone());
        state
    })
    .await;
    let state = captured.expect("state captured");
    let (env_id, token) = relay.dev_env("metered").await;
    let mut runner =
        FakeRunner::connect(&relay, &token, hello("box", "inst-1", &["ping", "shell"])).await;
    let denying = relay
        .create_env(json!({
            "name": "strict",
            "policy": {"tools": {"mode": "list", "tools": ["git"]}}
        }))
        .await;
    let invoke_path = format!("/execution-environments/{env_id}/invoke-tool");

    // Three ok calls and one the runner fails.
    for n in 0..4 {
        let call = {
            let relay = &relay;
            let path = invoke_path.clone();
            let tool = if n == 3 { "shell" } else { "ping" };
            let request = tokio::spawn({
                let http = relay.http.clone();
                let url = format!("{}{path}", relay.url);
                let key = relay.admin_key.clone();
                async move {
                    http.post(url)
                        .bearer_auth(key)
                        .json(&json!({"tool_name": tool, "args": {}}))
                        .send()
                        .await
                        .expect("invoke sent")
                        .status()
                }
            });
            let call = runner.next_call().await;
            let exit_code = if n == 3 { 1 } else { 0 };
            runner.answer(&call, exit_code).await;
            request.await.expect("joined")
        };
        assert_eq!(call, StatusCode::OK);
    }
    // Refused by policy, unknown to the runner, and timed out.
    let (status, _) = relay.invoke(&denying, json!({"tool_name": "shell"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = relay
        .invoke(&env_id, json!({"tool_name": "no_such_tool"}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let timed_out = tokio::spawn({
        let http = relay.http.clone();
        let url = format!("{}{invoke_path}", relay.url);
        let key = relay.admin_key.clone();
        async move {
            http.post(url)
                .bearer_auth(key)
                .json(&json!({"tool_name": "shell", "args": {}, "timeout_s": 1}))
                .send()
                .await
                .expect("invoke sent")
                .status()
        }
    });
    let unanswered = runner.next_call().await;
    assert_eq!(
        timed_out.await.expect("joined"),
        StatusCode::GATEWAY_TIMEOUT
    );
    // A late result of the timed-out call changes no count.
    runner
        .send(&RunnerMessage::Result(CallResult {
            call_id: unanswered.call_id.clone(),
            result: json!(null),
            exit_code: Some(0),
            error: None,
            error_code: None,
        }))
        .await;
    // Two failed authentications.
    let (status, _) = relay
        .request(
            reqwest::Method::GET,
            "/execution-environments",
            Some("rnrk_wrong"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = relay
        .request(reqwest::Method::GET, "/execution-environments", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // The API port: no token, a wrong one, an API key: all refused.
    let (status, _, _) = scrape(&relay, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = scrape(&relay, Some("metrics-scrape-token-wrong")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = scrape(&relay, Some(&relay.admin_key)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let (status, content_type, text) = scrape(&relay, Some(SCRAPE_TOKEN)).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let metrics = parse(&text);

    // Names and types.
    for (name, kind) in [
        ("runner_relay_build", "info"),
        ("runner_relay_runners_connected", "gauge"),
        ("runner_relay_environments", "gauge"),
        ("runner_relay_runner_connects", "counter"),
        ("runner_relay_runner_disconnects", "counter"),
        ("runner_relay_tool_calls", "counter"),
        ("runner_relay_tool_call_duration_seconds", "histogram"),
        ("runner_relay_tool_calls_in_flight", "gauge"),
        ("runner_relay_approvals_pending", "gauge"),
        ("runner_relay_approvals_decided", "counter"),
        ("runner_relay_auth_failures", "counter"),
        ("runner_relay_http_requests", "counter"),
        ("runner_relay_nats_requests", "counter"),
        ("runner_relay_nats_request_duration_seconds", "histogram"),
    ] {
        assert_eq!(metrics.family(name).kind, kind, "{name}");
    }
    assert_eq!(
        metrics
            .family("runner_relay_tool_call_duration_seconds")
            .unit,
        "seconds"
    );
    assert_eq!(
        metrics.value(
            "runner_relay_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );

    // Counts match the calls made.
    let calls = |tool: &str, outcome: &str| {
        metrics.value(
            "runner_relay_tool_calls_total",
            &[("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("ping", "ok"), 3.0);
    assert_eq!(calls("shell", "error"), 1.0);
    assert_eq!(calls("shell", "timeout"), 1.0);
    // The strict environment has no runner: the name is known (offered
    // elsewhere), so it keeps its own label.
    assert_eq!(calls("shell", "denied"), 1.0);
    // A name no runner offers is never a label of its own.
    assert_eq!(calls("other", "rejected"), 1.0);
    assert_eq!(
        metrics.value("runner_relay_tool_calls_total", &[]),
        7.0,
        "every call counted once"
    );
    assert_eq!(
        metrics.value(
            "runner_relay_tool_call_duration_seconds_count",
            &[("tool", "ping")]
        ),
        3.0
    );
    assert_eq!(
        metrics.value(
            "runner_relay_tool_call_duration_seconds_count",
            &[("tool", "shell")]
        ),
        2.0
    );
    assert_eq!(metrics.value("runner_relay_tool_calls_in_flight", &[]), 0.0);
    assert_eq!(metrics.value("runner_relay_runners_connected", &[]), 1.0);
    assert_eq!(
        metrics.value("runner_relay_environments", &[("status", "online")]),
        1.0
    );
    assert_eq!(
        metrics.value("runner_relay_environments", &[("status", "pending")]),
        1.0
    );
    assert_eq!(
        metrics.value(
            "runner_relay_runner_connects_total",
            &[("outcome", "welcomed")]
        ),
        1.0
    );
    let failures =
        |reason: &str| metrics.value("runner_relay_auth_failures_total", &[("reason", reason)]);
    assert_eq!(failures("invalid_api_key"), 1.0);
    assert_eq!(
        failures("missing_credential"),
        2.0,
        "one API call, one scrape"
    );
    assert_eq!(failures("malformed_api_key"), 0.0);
    assert_eq!(failures("invalid_metrics_token"), 2.0);
    assert_eq!(
        metrics.value(
            "runner_relay_http_requests_total",
            &[
                ("method", "POST"),
                ("route", "/execution-environments/{id}/invoke-tool"),
                ("status", "200"),
            ],
        ),
        4.0
    );
    assert_eq!(
        metrics.value(
            "runner_relay_http_requests_total",
            &[
                ("route", "/execution-environments/{id}/invoke-tool"),
                ("status", "504")
            ],
        ),
        1.0
    );

    // No label value is an id, a uuid or a secret.
    for sample in metrics.families.iter().flat_map(|f| &f.samples) {
        for (name, value) in &sample.labels {
            assert!(
                !value.contains(&env_id) && !value.contains(&denying),
                "{name}={value} carries an environment id"
            );
            assert!(!is_uuid_like(value), "{name}={value} looks like an id");
            assert!(
                !value.contains("rnrk_")
                    && !value.contains("rnrt_")
                    && !value.contains(SCRAPE_TOKEN),
                "{name}={value} carries a secret"
            );
            assert!(!value.starts_with("env_"), "{name}={value}");
        }
    }
    assert!(
        !text.contains(&unanswered.call_id),
        "a call id in the exposition"
    );

    // The runner goes away: its disconnect is counted.
    drop(runner);
    let deadline = tokio::time::Instant::now() + crate::support::DEADLINE;
    loop {
        let (_, _, text) = scrape(&relay, Some(SCRAPE_TOKEN)).await;
        let metrics = parse(&text);
        let lost = metrics.value(
            "runner_relay_runner_disconnects_total",
            &[("reason", "connection_lost")],
        );
        if lost == 1.0 {
            assert_eq!(metrics.value("runner_relay_runners_connected", &[]), 0.0);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "disconnect never counted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }

    // The separate listener answers without a credential, and only /metrics.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    let shutdown = CancellationToken::new();
    tokio::spawn(runner_relay::http::metrics::serve_metrics(
        listener,
        state,
        shutdown.clone(),
    ));
    let response = relay
        .http
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .expect("scrape sent");
    assert_eq!(response.status(), StatusCode::OK);
    let metrics = parse(&response.text().await.expect("body"));
    assert_eq!(
        metrics.value(
            "runner_relay_tool_calls_total",
            &[("tool", "ping"), ("outcome", "ok")]
        ),
        3.0
    );
    let response = relay
        .http
        .get(format!("http://{address}/execution-environments"))
        .send()
        .await
        .expect("request sent");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    shutdown.cancel();
}

#[tokio::test]
async fn without_a_scrape_token_or_with_metrics_off_the_api_port_serves_none() {
    let relay = spawn_relay_with(|state| state).await;
    let (status, _, body) = scrape(&relay, Some(SCRAPE_TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("metrics_not_served"), "{body}");

    let relay = spawn_relay_with(|state| state.with_metrics(Metrics::disabled())).await;
    let (status, _, body) = scrape(&relay, Some(SCRAPE_TOKEN)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("metrics_disabled"), "{body}");
    // Everything else works as before.
    let (status, _) = relay.get("/execution-environments").await;
    assert_eq!(status, StatusCode::OK);
}

#[test]
fn a_tool_past_the_cap_is_counted_as_other() {
    use runner_relay::metrics::labels::Outcome;
    use runner_relay::metrics::tools::MAX_TOOLS;
    let metrics = Metrics::new();
    let started = std::time::Instant::now();
    for n in 0..=MAX_TOOLS {
        metrics
            .call(&format!("mcp__tool_{n}"), true, started)
            .finish(Outcome::Ok);
    }
    metrics
        .call("never_offered", false, started)
        .finish(Outcome::Rejected);
    let parsed = parse(&metrics.encode().expect("on"));
    let family = parsed.family("runner_relay_tool_calls");
    let mut tools: Vec<&str> = family
        .samples
        .iter()
        .filter_map(|s| s.labels.get("tool").map(String::as_str))
        .collect();
    tools.sort_unstable();
    tools.dedup();
    assert_eq!(tools.len(), MAX_TOOLS + 1, "the capped names and `other`");
    assert_eq!(
        parsed.value(
            "runner_relay_tool_calls_total",
            &[("tool", "other"), ("outcome", "ok")]
        ),
        1.0
    );
    assert_eq!(
        parsed.value(
            "runner_relay_tool_calls_total",
            &[("tool", "other"), ("outcome", "rejected")]
        ),
        1.0
    );
}
