//! `http_local`: one HTTP request from the runner's machine, so agents reach
//! services on its private network. The response body is bounded like
//! process output: past the inline limit the result keeps head and tail and
//! the whole body is kept in a file in the workspace.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::ToolContext;
use super::files::Encoding;
use super::tool::{Running, Tool};
use crate::call::{CallScope, ToolOutcome};
use crate::exec::capture::Spool;
use crate::exec::kept::{display_path, output_file, INLINE_LIMIT};

/// Default request timeout when neither the argument nor the call sets a
/// shorter one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to open the TCP (and TLS) connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct HttpLocal;

/// The arguments of `http_local`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpArgs {
    /// http:// or https:// URL
    pub url: String,
    /// GET (default), POST, PUT, PATCH, DELETE, HEAD, OPTIONS
    pub method: Option<String>,
    pub headers: Option<BTreeMap<String, String>>,
    pub body: Option<String>,
    pub body_encoding: Option<Encoding>,
    #[schemars(range(min = 1))]
    pub timeout_s: Option<u64>,
}

impl Tool for HttpLocal {
    type Args = HttpArgs;

    fn name(&self) -> &'static str {
        tools::HTTP_LOCAL
    }

    fn description(&self) -> String {
        "Send an HTTP request from the runner's machine (reach services on its network); returns status, headers and body (long bodies kept whole in a file).".into()
    }

    fn run<'a>(
        &'a self,
        args: HttpArgs,
        context: &'a ToolContext,
        scope: &'a CallScope,
    ) -> Running<'a> {
        Box::pin(async move {
            tokio::select! {
                outcome = request(&args, context, scope) => ToolOutcome::from_result(outcome),
                () = scope.cancel.cancelled() => ToolOutcome::error("cancelled"),
            }
        })
    }
}

async fn request(
    args: &HttpArgs,
    context: &ToolContext,
    scope: &CallScope,
) -> Result<Value, String> {
    let url = args.url.as_str();
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("url {url:?}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url {url:?} must be http:// or https://"));
    }
    let method_name = args.method.as_deref().unwrap_or("GET").to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method_name.as_bytes())
        .map_err(|_| format!("method {method_name:?} is not an HTTP method"))?;
    let timeout = args
        .timeout_s
        .map(|seconds| Duration::from_secs(seconds.max(1)))
        .unwrap_or(DEFAULT_TIMEOUT)
        .min(scope.timeout);

    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in args.headers.iter().flatten() {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header name {name:?} is not valid"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("header {name:?} has a value that is not valid"))?;
        headers.append(name, value);
    }
    let body = match (&args.body, args.body_encoding.unwrap_or(Encoding::Utf8)) {
        (None, _) => None,
        (Some(text), Encoding::Utf8) => Some(text.as_bytes().to_vec()),
        (Some(text), Encoding::Base64) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|error| format!("body is not valid base64: {error}"))?,
        ),
    };

    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT.min(timeout))
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::limited(10))
        .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION"), " http_local"))
        .build()
        .map_err(|error| format!("building the HTTP client: {error}"))?;
    let mut request = client.request(method, parsed).headers(headers);
    if let Some(body) = body {
        request = request.body(body);
    }
    let started = std::time::Instant::now();
    let mut response = request
        .send()
        .await
        .map_err(|error| format!("request to {url} failed: {}", error_chain(&error)))?;
    let status = response.status();
    let mut response_headers = serde_json::Map::new();
    for (name, value) in response.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match response_headers.get_mut(name.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&value);
            }
            _ => {
                response_headers.insert(name.as_str().to_owned(), Value::String(value));
            }
        }
    }
    let final_url = response.url().to_string();
    let mut spool = Spool::new(
        INLINE_LIMIT,
        output_file(context.boundary.root(), &scope.call_id, "body"),
    );
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => spool.push(&chunk),
            Ok(None) => break,
            Err(error) => {
                return Err(format!(
                    "reading the body from {url} failed after {} bytes: {}",
                    spool.total(),
                    error_chain(&error)
                ))
            }
        }
    }
    let (kept, whole) = spool.finish_with_bytes();
    // Binary bodies within the limit come back exactly, base64-encoded;
    // longer ones are in the kept file.
    let (body, encoding) = match whole {
        Some(bytes) if std::str::from_utf8(&bytes).is_err() => (
            base64::engine::general_purpose::STANDARD.encode(bytes),
            "base64",
        ),
        _ => (kept.text.clone(), "utf-8"),
    };
    let mut result = json!({
        "status": status.as_u16(),
        "reason": status.canonical_reason().unwrap_or(""),
        "url": final_url,
        "headers": response_headers,
        "body": body,
        "body_encoding": encoding,
        "body_bytes": kept.total,
        "truncated": kept.truncated,
        "elapsed_ms": started.elapsed().as_millis() as u64,
    });
    if let Some(file) = &kept.file {
        result["body_file"] = json!(display_path(context.boundary.root(), file));
    }
    if let Some(error) = &kept.file_error {
        result["body_file_error"] = json!(error);
    }
    Ok(result)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
