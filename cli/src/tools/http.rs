//! `http_local`: one HTTP request from the runner's machine, so agents reach
//! services on its private network. The response body is bounded like
//! process output: past the inline limit the result keeps head and tail and
//! the whole body is kept in a file in the workspace.
//!
//! Link-local and cloud metadata destinations are refused, after DNS
//! resolution and on every redirect ([`super::link_local`]), unless
//! `RUNNER_HTTP_ALLOW_LINK_LOCAL=true`. System proxies are not used: behind a
//! proxy the address connected to would be the proxy's, and the check would
//! see nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use runner_proto::tools;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::ToolContext;
use super::files::Encoding;
use super::link_local::{check_url, Guard, GuardedResolver};
use super::tool::{Running, Tool};
use crate::call::{CallScope, ToolOutcome};
use crate::exec::capture::Spool;
use crate::exec::kept::{display_path, enforce_cap, output_cap, output_file, INLINE_LIMIT};

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
            let guard = Guard::from_env();
            tokio::select! {
                outcome = request(&args, context, scope, &guard) => ToolOutcome::from_result(outcome),
                () = scope.cancel.cancelled() => ToolOutcome::error("cancelled"),
            }
        })
    }
}

/// Redirects followed at most.
const MAX_REDIRECTS: usize = 10;

async fn request(
    args: &HttpArgs,
    context: &ToolContext,
    scope: &CallScope,
    guard: &Guard,
) -> Result<Value, String> {
    let url = args.url.as_str();
    let parsed = reqwest::Url::parse(url).map_err(|error| format!("url {url:?}: {error}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("url {url:?} must be http:// or https://"));
    }
    check_url(guard, &parsed)?;
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
        .redirect(redirect_policy(guard.clone()))
        .dns_resolver(std::sync::Arc::new(GuardedResolver::new(guard.clone())))
        .no_proxy()
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
        enforce_cap(context.boundary.root(), output_cap(), &[file.as_path()]);
    }
    if let Some(error) = &kept.file_error {
        result["body_file_error"] = json!(error);
    }
    Ok(result)
}

/// Follows up to [`MAX_REDIRECTS`] redirects, each judged like the first
/// URL (a redirect to a literal address meets no resolver).
fn redirect_policy(guard: Guard) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
        }
        match check_url(&guard, attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(refusal) => attempt.error(refusal),
        }
    })
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::net::IpAddr;
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// A server on 127.0.0.1 that answers every request with `response`.
    async fn answering(response: String) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        port
    }

    fn redirect_to(location: &str) -> String {
        format!("HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    }

    /// Test names resolve only through this table, never through DNS: no
    /// lookup or connection leaves loopback. Refused answers are refused
    /// before any connection is made.
    fn guard(allow_link_local: bool) -> Guard {
        let table: HashMap<String, Vec<IpAddr>> = [
            ("local.test", "127.0.0.1"),
            ("innocent.test", "169.254.169.254"),
            ("aws6.test", "fd00:ec2::254"),
            ("linklocal6.test", "fe80::1"),
        ]
        .into_iter()
        .map(|(name, address)| (name.to_owned(), vec![address.parse().expect("address")]))
        .collect();
        Guard {
            allow_link_local,
            hosts: Some(Arc::new(table)),
        }
    }

    async fn call(url: &str, guard: &Guard) -> Result<Value, String> {
        let root = tempfile::tempdir().expect("tempdir");
        let context = ToolContext::allowing_all(root.path());
        let scope = CallScope {
            call_id: "c1".to_owned(),
            cancel: CancellationToken::new(),
            timeout: Duration::from_secs(5),
            limit: crate::call::Limit::call(5),
            output: None,
            binary_output: true,
        };
        let args = HttpArgs {
            url: url.to_owned(),
            method: None,
            headers: None,
            body: None,
            body_encoding: None,
            timeout_s: Some(5),
        };
        request(&args, &context, &scope, guard).await
    }

    #[tokio::test]
    async fn names_resolving_to_metadata_addresses_are_refused_after_resolution() {
        let ok =
            answering("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi".into())
                .await;
        // The table is what the client resolves with: a test name reaches
        // the local server through it.
        let result = call(&format!("http://local.test:{ok}/"), &guard(false))
            .await
            .expect("local.test is 127.0.0.1");
        assert_eq!(result["body"], "hi", "{result}");

        for (name, address) in [
            ("innocent.test", "169.254.169.254"),
            ("aws6.test", "fd00:ec2::254"),
            ("linklocal6.test", "fe80::1"),
        ] {
            let refusal = call(
                &format!("http://{name}:{ok}/latest/meta-data/"),
                &guard(false),
            )
            .await
            .expect_err(name);
            assert!(
                refusal.contains(&format!("{name:?} resolves to {address}")),
                "{refusal}"
            );
            assert!(
                refusal.contains("RUNNER_HTTP_ALLOW_LINK_LOCAL=true"),
                "{refusal}"
            );
        }

        // Literal addresses and metadata names are refused before any request.
        for url in [
            "http://169.254.169.254/latest/meta-data/",
            "http://[fd00:ec2::254]/",
            "http://metadata.google.internal/computeMetadata/v1/",
        ] {
            let refusal = call(url, &guard(false)).await.expect_err(url);
            assert!(refusal.starts_with("http_local refuses"), "{refusal}");
        }
    }

    #[tokio::test]
    async fn redirects_to_metadata_destinations_are_refused() {
        let ok =
            answering("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi".into())
                .await;
        let to_literal = answering(redirect_to("http://169.254.169.254/latest/meta-data/")).await;
        let refusal = call(&format!("http://127.0.0.1:{to_literal}/"), &guard(false))
            .await
            .expect_err("redirect to a literal metadata address");
        assert!(
            refusal.contains("169.254.169.254 is the cloud metadata address"),
            "{refusal}"
        );

        let to_name = answering(redirect_to(&format!("http://innocent.test:{ok}/"))).await;
        let refusal = call(&format!("http://127.0.0.1:{to_name}/"), &guard(false))
            .await
            .expect_err("redirect to a name resolving to it");
        assert!(refusal.contains("resolves to 169.254.169.254"), "{refusal}");

        // A redirect to an allowed name is followed.
        let to_local = answering(redirect_to(&format!("http://local.test:{ok}/"))).await;
        let result = call(&format!("http://127.0.0.1:{to_local}/"), &guard(false))
            .await
            .expect("followed");
        assert_eq!(result["body"], "hi", "{result}");
    }
}
