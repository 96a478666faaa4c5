//! The runner's `/metrics` on `--health-addr`, and the relay binary's
//! `--metrics-addr` listener, after real calls; both parsed by the
//! Prometheus client's OpenMetrics parser (scripts/parse-openmetrics.py).

use serde_json::{json, Value};

use crate::support::{dev_env, Relay, Runner};

#[path = "../../../scripts/parse_openmetrics.rs"]
mod openmetrics;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The families of an exposition as the Python parser reads them. Fails
/// (never skips) when the parser is not installed.
fn parse(text: &str) -> Value {
    openmetrics::parse_json(text)
}

/// The family `name`'s type, and the sum of its samples named `sample`
/// whose labels include `labels`.
fn value(parsed: &Value, sample: &str, labels: &[(&str, &str)]) -> f64 {
    parsed["families"]
        .as_array()
        .expect("families")
        .iter()
        .flat_map(|family| family["samples"].as_array().cloned().unwrap_or_default())
        .filter(|s| s["name"] == sample)
        .filter(|s| labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap_or(0.0))
        .sum()
}

fn kind<'a>(parsed: &'a Value, family: &str) -> &'a str {
    parsed["families"]
        .as_array()
        .expect("families")
        .iter()
        .find(|f| f["name"] == family)
        .and_then(|f| f["type"].as_str())
        .unwrap_or_else(|| panic!("no family {family}"))
}

async fn scrape(url: &str) -> Value {
    let response = reqwest::get(url).await.expect("metrics answer");
    assert_eq!(response.status().as_u16(), 200);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    parse(&response.text().await.expect("body"))
}

#[tokio::test]
async fn the_runner_and_the_relay_listener_count_the_same_calls() {
    let relay_metrics = format!("127.0.0.1:{}", free_port());
    let relay = Relay::spawn_with(&["--metrics-addr", &relay_metrics]).await;
    let (env, mut runner) = Runner::registered(&relay, dev_env()).await;
    let health = format!("127.0.0.1:{}", free_port());
    runner.start(&["--health-addr", &health]);
    relay.wait_status(&env, "online").await;

    for _ in 0..2 {
        let (status, body) = relay.invoke(&env, json!({"tool_name": "ping"})).await;
        assert_eq!(status, 200, "{body}");
    }

    let parsed = scrape(&format!("http://{health}/metrics")).await;
    assert_eq!(kind(&parsed, "runner_build"), "info");
    assert_eq!(kind(&parsed, "runner_tool_calls"), "counter");
    assert_eq!(kind(&parsed, "runner_tool_calls_in_flight"), "gauge");
    assert_eq!(kind(&parsed, "runner_tool_calls_queued"), "gauge");
    assert_eq!(kind(&parsed, "runner_relay_connected"), "gauge");
    assert_eq!(kind(&parsed, "runner_update_state"), "gauge");
    assert_eq!(
        value(
            &parsed,
            "runner_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    assert_eq!(
        value(
            &parsed,
            "runner_tool_calls_total",
            &[("tool", "ping"), ("outcome", "ok")]
        ),
        2.0
    );
    assert_eq!(value(&parsed, "runner_relay_connected", &[]), 1.0);
    assert_eq!(value(&parsed, "runner_tool_calls_in_flight", &[]), 0.0);
    assert_eq!(value(&parsed, "runner_tool_calls_queued", &[]), 0.0);
    assert_eq!(
        value(&parsed, "runner_update_state", &[("state", "idle")]),
        1.0
    );
    assert_eq!(value(&parsed, "runner_update_available", &[]), 0.0);

    // The relay's own listener, no credential: the same two pings.
    let parsed = scrape(&format!("http://{relay_metrics}/metrics")).await;
    assert_eq!(
        value(
            &parsed,
            "runner_relay_tool_calls_total",
            &[("tool", "ping"), ("outcome", "ok")]
        ),
        2.0
    );
    assert_eq!(value(&parsed, "runner_relay_runners_connected", &[]), 1.0);
    // The API port serves none without a scrape token.
    let (status, body) = relay.api(reqwest::Method::GET, "/metrics", None).await;
    assert_eq!(status, 404, "{body}");

    let (_, _) = runner.stop().await;
}
