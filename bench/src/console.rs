//! Issue 31's figure: the console's environments page with 1,000
//! environments (target: ≤ 50 ms server time), beside the API's JSON list
//! of the same environments in the same run (the floor: the same store
//! read and access checks without HTML).
//!
//! Timed from a keep-alive client on loopback, so each figure is the
//! relay's time plus one loopback round trip.

use std::time::Instant;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::procs::{self, Bins, Relay};
use crate::stats::Summary;
use crate::{note, round, RunArgs};

/// Environments in the store.
const ENVIRONMENTS: usize = 1_000;
/// Requests per batch before switching pages.
const BATCH: usize = 10;
/// The bound on a page's server time.
const TARGET_MS: f64 = 50.0;

pub async fn run(bins: &Bins, args: &RunArgs) -> anyhow::Result<Value> {
    let data = tempfile::Builder::new()
        .prefix("runner-bench-console-")
        .tempdir()?;
    let relay = Relay::spawn(bins, &data.path().join("relay"), "127.0.0.1:0", None).await?;
    let (_envs, _runners) = procs::online_runners(bins, &relay, 1).await?;
    for n in 1..ENVIRONMENTS {
        let tags = if n % 3 == 0 {
            json!(["gpu", "linux"])
        } else {
            json!(["linux"])
        };
        relay
            .api(
                reqwest::Method::POST,
                "/execution-environments",
                Some(&json!({"name": format!("bench-{n:04}"), "tags": tags})),
            )
            .await
            .with_context(|| format!("creating environment {n}"))?;
    }
    let http = procs::http_client(2)?;
    let cookie = sign_in(&relay).await?;
    let requests = if args.quick { 20 } else { 200 };
    let pages = [
        ("api_json_list", "/execution-environments", None),
        ("console_page", "/console/environments", Some(&cookie)),
        ("console_rows", "/console/environments/rows", Some(&cookie)),
        (
            "console_filtered",
            "/console/environments?tag=gpu",
            Some(&cookie),
        ),
    ];
    let mut times: Vec<Vec<std::time::Duration>> = vec![Vec::new(); pages.len()];
    for (_, path, cookie) in &pages {
        fetch(&http, &relay, path, *cookie).await?;
    }
    while times[0].len() < requests {
        for (index, (_, path, cookie)) in pages.iter().enumerate() {
            for _ in 0..BATCH {
                let started = Instant::now();
                fetch(&http, &relay, path, *cookie).await?;
                times[index].push(started.elapsed());
            }
        }
    }
    let summaries: Vec<Summary> = times.iter().map(|t| Summary::of(t)).collect();
    let floor = summaries[0].p50_us.max(f64::MIN_POSITIVE);
    let page_ms = summaries[1].p50_us / 1000.0;
    note(&format!(
        "{ENVIRONMENTS} environments: console page p50 {page_ms:.1} ms ({:.2}× the JSON list's {:.1} ms), rows {:.1} ms, filtered {:.1} ms",
        summaries[1].p50_us / floor,
        floor / 1000.0,
        summaries[2].p50_us / 1000.0,
        summaries[3].p50_us / 1000.0,
    ));
    let mut result = serde_json::Map::new();
    for ((name, _, _), summary) in pages.iter().zip(&summaries) {
        result.insert((*name).to_owned(), summary.to_json());
        result.insert(
            format!("{name}_over_json_p50"),
            json!(round(summary.p50_us / floor, 3)),
        );
    }
    result.insert("environments".to_owned(), json!(ENVIRONMENTS));
    result.insert("target_ms".to_owned(), json!(TARGET_MS));
    result.insert("met".to_owned(), json!(page_ms <= TARGET_MS));
    Ok(Value::Object(result))
}

/// Signs in with the admin key; returns the console cookie.
async fn sign_in(relay: &Relay) -> anyhow::Result<String> {
    // The answer is a redirect carrying the cookie: not followed.
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let response = http
        .post(format!("{}/console/sign-in", relay.url))
        .form(&[("key", relay.admin_key.as_str())])
        .send()
        .await
        .context("POST /console/sign-in")?;
    response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| {
            value
                .split(';')
                .next()
                .filter(|pair| pair.starts_with("runner_console="))
        })
        .map(str::to_owned)
        .context("signing in to the console gave no cookie")
}

async fn fetch(
    http: &reqwest::Client,
    relay: &Relay,
    path: &str,
    cookie: Option<&String>,
) -> anyhow::Result<()> {
    let request = http.get(format!("{}{path}", relay.url));
    let request = match cookie {
        Some(cookie) => request.header(reqwest::header::COOKIE, cookie.as_str()),
        None => request.bearer_auth(&relay.admin_key),
    };
    let response = request
        .send()
        .await
        .with_context(|| format!("GET {path}"))?;
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() || body.len() < 1_000 {
        bail!("GET {path}: HTTP {status}, {} bytes", body.len());
    }
    Ok(())
}
