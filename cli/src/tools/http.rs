//! `http_local`: one HTTP request from the runner's machine, so agents reach
//! services on its private network. The response body is bounded like
//! process output: past the inline limit the result keeps head and tail and
//! the whole body is kept in a file in the workspace.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};

use super::capture::Spool;
use super::process::{display_path, output_file, INLINE_LIMIT};
use super::{
    optional_string_arg, optional_u64_arg, string_arg, CallScope, ToolContext, ToolOutcome,
};

/// Default request timeout when neither the argument nor the call sets a
/// shorter one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Time to open the TCP (and TLS) connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub fn spec() -> runner_proto::ws::ToolSpec {
    runner_proto::ws::ToolSpec {
        name: "http_local".into(),
        description: "Send an HTTP request from the runner's machine (reach services on its network); returns status, headers and body (long bodies kept whole in a file).".into(),
        input_schema: json!({
            "type": "object",
            "required": ["url"],
            "additionalProperties": false,
            "properties": {
                "url": {"type": "string", "description": "http:// or https:// URL"},
                "method": {"type": "string", "description": "GET (default), POST, PUT, PATCH, DELETE, HEAD, OPTIONS"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string"},
                "body_encoding": {"enum": ["utf-8", "base64"]},
                "timeout_s": {"type": "integer", "minimum": 1}
            }
        }),
    }
}

pub async fn run(args: Value, context: &ToolContext, scope: &CallScope) -> ToolOutcome {
    tokio::select! {
        outcome = request(&args, context, scope) => ToolOutcome::from_result(outcome),
        () = scope.cancel.cancelled() => ToolOutcome::error("cancelled"),
    }
}

async fn request(args: &Value, context: &ToolContext, scope: &CallScope) -> Result<Value, String> {
    let url = string_arg(args, "url")?;
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("url {url:?}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url {url:?} must be http:// or https://"));
    }
    let method_name = optional_string_arg(args, "method")?
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let method = reqwest::Method::from_bytes(method_name.as_bytes())
        .map_err(|_| format!("method {method_name:?} is not an HTTP method"))?;
    let timeout = optional_u64_arg(args, "timeout_s")?
        .map(|seconds| Duration::from_secs(seconds.max(1)))
        .unwrap_or(DEFAULT_TIMEOUT)
        .min(scope.timeout);

    let mut headers = reqwest::header::HeaderMap::new();
    match args.get("headers") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                let Value::String(value) = value else {
                    return Err(format!("header {name:?} must be a string"));
                };
                let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("header name {name:?} is not valid"))?;
                let value = reqwest::header::HeaderValue::from_str(value)
                    .map_err(|_| format!("header {name:?} has a value that is not valid"))?;
                headers.append(name, value);
            }
        }
        Some(_) => return Err("argument \"headers\" must be an object of strings".to_owned()),
    }
    let body = match (
        optional_string_arg(args, "body")?,
        optional_string_arg(args, "body_encoding")?.unwrap_or("utf-8"),
    ) {
        (None, _) => None,
        (Some(text), "utf-8") => Some(text.as_bytes().to_vec()),
        (Some(text), "base64") => Some(
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|error| format!("body is not valid base64: {error}"))?,
        ),
        (Some(_), other) => return Err(format!("body_encoding {other:?} is not utf-8 or base64")),
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
    let mut spool = Spool::new(INLINE_LIMIT, output_file(context, &scope.call_id, "body"));
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
