//! `tools/call` answered in the request's own task: the fast path.
//!
//! The SDK serves each stateless request by building a server, spawning
//! its message loop and the request's handler as tasks, and passing the
//! request and the answer through channels. For a `ping` that costs about
//! as much as everything else the relay does for the call (BENCHMARKS.md,
//! issue 30). A plain `tools/call` is answered here instead, with the
//! SDK's own message types and the same [`McpServer::call`] the SDK would
//! run; its answer is shaped as the SDK shapes it for the protocol
//! revisions before 2026-07-28.
//!
//! Plain means: one JSON-RPC request, method `tools/call`, no protocol
//! version in its `_meta` (per-request negotiation is 2026-07-28's), an
//! `MCP-Protocol-Version` header naming a revision before that (or none),
//! a client that takes both JSON and event streams, a JSON body, no
//! `Origin` header and no `Host` list to check. Anything else goes to the
//! SDK: the simple path, beside this one, with a test that both answer
//! alike (`serve --mcp-no-fast-path` turns this one off).

use axum::body::Bytes;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolResponse, ClientJsonRpcMessage, ClientRequest, ProtocolVersion, ServerJsonRpcMessage,
    ServerResult,
};

use super::handler::McpServer;

/// The answer to a plain `tools/call` in `body`, or `None` for the SDK.
pub async fn answer(server: &McpServer, parts: &Parts, body: &Bytes) -> Option<Response> {
    if !plain_headers(&parts.headers) || server.checks_hosts() {
        return None;
    }
    let message: ClientJsonRpcMessage = serde_json::from_slice(body).ok()?;
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = request.request else {
        return None;
    };
    if call
        .params
        .meta
        .as_ref()
        .is_some_and(|meta| meta.protocol_version().is_some())
    {
        return None;
    }
    let id = request.id;
    tracing::debug!(tool = %call.params.name, "tools/call on the fast path");
    let answer = match server.request_of(parts, None) {
        Ok(caller) => server.call(&caller, call.params).await,
        Err(error) => Err(error),
    };
    let message = match answer {
        Ok(result) => {
            let mut result = ServerResult::from(CallToolResponse::from(result));
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    let body = serde_json::to_vec(&message).ok()?;
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Some(response)
}

/// Headers the fast path answers as the SDK would; anything else (an
/// `Accept` with weights, a browser's `Origin`, another revision) is the
/// SDK's to judge.
fn plain_headers(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|value| value.to_str().ok());
    let accepts = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let accepted: Vec<&str> = accepts.split(',').map(str::trim).collect();
    let json = text(header::CONTENT_TYPE).is_some_and(|value| {
        let essence = value.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("application/json")
    });
    let version = match text(header::HeaderName::from_static("mcp-protocol-version")) {
        None => true,
        Some(version) => ProtocolVersion::KNOWN_VERSIONS.iter().any(|known| {
            known.as_str() == version && version < ProtocolVersion::V_2026_07_28.as_str()
        }),
    };
    accepted.contains(&"application/json")
        && accepted.contains(&"text/event-stream")
        && json
        && version
        && !headers.contains_key(header::ORIGIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn only_plain_requests_take_the_fast_path() {
        let plain = [
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
        ];
        assert!(plain_headers(&headers(&plain)));
        let mut versioned = plain.to_vec();
        versioned.push(("mcp-protocol-version", "2025-06-18"));
        assert!(plain_headers(&headers(&versioned)));
        for extra in [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-protocol-version", "1999-01-01"),
            ("origin", "https://example.com"),
        ] {
            let mut odd = plain.to_vec();
            odd.push(extra);
            assert!(!plain_headers(&headers(&odd)), "{extra:?}");
        }
        assert!(!plain_headers(&headers(&[
            ("accept", "application/json"),
            ("content-type", "application/json")
        ])));
        assert!(!plain_headers(&headers(&[
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "application/json")
        ])));
        assert!(!plain_headers(&headers(&[(
            "accept",
            "application/json, text/event-stream"
        )])));
    }
}
