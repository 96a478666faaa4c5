//! Issue 30's figure: a `ping` through the relay's MCP server (`tools/call`
//! on `/mcp`) against the same `ping` through the HTTP API
//! (`invoke-tool`), one relay and one runner, one keep-alive client,
//! batches alternating between the two in the same run.
//!
//! Both are sent as the bytes a client puts on the wire (a JSON-RPC
//! request for MCP, with the headers streamable HTTP requires), so what
//! differs is the relay's work, not two client libraries'. A second relay
//! with `--mcp-no-fast-path` (every request through the SDK's service)
//! runs beside them: what the fast path buys.

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::procs::{self, Bins, Relay};
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Calls per batch before switching paths.
const BATCH: usize = 50;
/// The MCP revision the requests name (the one the SDK's clients speak).
const PROTOCOL_VERSION: &str = "2025-06-18";

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-mcp-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("fast"), "127.0.0.1:0", None).await?;
    let (envs, _runners) = procs::online_runners(bins, &relay, 1).await?;
    // The same with every MCP request through the SDK's per-request
    // service: what the fast path (`http::mcp::fast_call`) buys.
    let sdk = Relay::spawn_with(
        bins,
        &data.path().join("sdk"),
        "127.0.0.1:0",
        None,
        &["--mcp-no-fast-path"],
    )
    .await?;
    let (_, _sdk_runners) = procs::online_runners(bins, &sdk, 1).await?;
    let env = &envs[0];
    let http = procs::http_client(4)?;
    let tool = ping_tool(&http, &relay).await?;
    let sdk_tool = ping_tool(&http, &sdk).await?;
    let calls = args.invoke_calls;
    let mut over_http = Vec::with_capacity(calls);
    let mut over_mcp = Vec::with_capacity(calls);
    let mut over_sdk = Vec::with_capacity(calls);
    for n in 0..BATCH {
        procs::ping(&http, &relay, env, n).await?;
        mcp_ping(&http, &relay, &tool, n).await?;
        mcp_ping(&http, &sdk, &sdk_tool, n).await?;
    }
    while over_http.len() < calls {
        let batch = BATCH.min(calls - over_http.len());
        for n in 0..batch {
            let started = Instant::now();
            procs::ping(&http, &relay, env, n).await?;
            over_http.push(started.elapsed());
        }
        for n in 0..batch {
            let started = Instant::now();
            mcp_ping(&http, &relay, &tool, n).await?;
            over_mcp.push(started.elapsed());
        }
        for n in 0..batch {
            let started = Instant::now();
            mcp_ping(&http, &sdk, &sdk_tool, n).await?;
            over_sdk.push(started.elapsed());
        }
    }
    let http_summary = Summary::of(&over_http);
    let mcp_summary = Summary::of(&over_mcp);
    let sdk_summary = Summary::of(&over_sdk);
    let over = |summary: &Summary| summary.p50_us / http_summary.p50_us.max(f64::MIN_POSITIVE);
    let ratio = over(&mcp_summary);
    note(&format!(
        "ping p50: {:.0} µs over the HTTP API, {:.0} µs over MCP ({ratio:.2}×), {:.0} µs over MCP without the fast path ({:.2}×)",
        http_summary.p50_us,
        mcp_summary.p50_us,
        sdk_summary.p50_us,
        over(&sdk_summary)
    ));
    Ok(json!({
        "http_invoke": http_summary.to_json(),
        "mcp_tools_call": mcp_summary.to_json(),
        "mcp_tools_call_without_fast_path": sdk_summary.to_json(),
        "mcp_over_http_p50": round(ratio, 3),
        "mcp_without_fast_path_over_http_p50": round(over(&sdk_summary), 3),
        "target_ratio": 1.3,
        "met": ratio <= 1.3,
    }))
}

/// The MCP name of the environment's `ping`, from `tools/list`.
async fn ping_tool(http: &reqwest::Client, relay: &Relay) -> anyhow::Result<String> {
    let listed = rpc(
        http,
        relay,
        json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}),
    )
    .await?;
    listed["result"]["tools"]
        .as_array()
        .and_then(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str())
                .find(|name| name.ends_with("__ping"))
        })
        .map(str::to_owned)
        .with_context(|| format!("no environment's ping in tools/list: {listed}"))
}

async fn mcp_ping(
    http: &reqwest::Client,
    relay: &Relay,
    tool: &str,
    n: usize,
) -> anyhow::Result<()> {
    let answer = rpc(
        http,
        relay,
        json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
               "params": {"name": tool, "arguments": {"n": n}}}),
    )
    .await?;
    if answer["result"]["isError"] != json!(false) {
        bail!("MCP ping: {answer}");
    }
    Ok(())
}

/// One JSON-RPC request to `/mcp`, answered as JSON.
async fn rpc(http: &reqwest::Client, relay: &Relay, request: Value) -> anyhow::Result<Value> {
    let response = http
        .post(format!("{}/mcp", relay.url))
        .bearer_auth(&relay.admin_key)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", PROTOCOL_VERSION)
        .json(&request)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .context("POST /mcp")?;
    let status = response.status();
    let text = response.text().await.context("reading the MCP answer")?;
    if !status.is_success() {
        bail!("POST /mcp: HTTP {status}: {text}");
    }
    serde_json::from_str(&text).with_context(|| format!("the MCP answer is not JSON: {text}"))
}
