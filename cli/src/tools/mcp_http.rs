//! The HTTP client under MCP servers reached by URL (streamable HTTP).
//!
//! rmcp runs the streamable-HTTP protocol (sessions, SSE streams, session
//! recovery) and leaves the HTTP requests to a [`StreamableHttpClient`].
//! Its own implementation is built on reqwest 0.13, while this workspace
//! uses reqwest 0.12: two copies of reqwest, hyper-rustls and their TLS
//! setup would cost build time and binary size for the same job. So this
//! module implements the trait over the workspace's reqwest, following the
//! SDK's client: the same headers, status handling and byte limits.
//!
//! What it enforces, as the SDK's client does: a JSON response body is read
//! up to `max_json_response_size`, one server-sent event up to
//! `max_sse_event_size` (counted on the raw bytes, before parsing), and an
//! error body only up to `max_error_response_size` (kept for the message).
//! Redirects are not followed: a redirected POST would lose its JSON-RPC
//! message, and a redirect to another host would carry the session id and
//! configured headers there.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::BoxStream;
use futures_util::StreamExt as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::StatusCode;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ErrorData, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

/// Time to open the TCP (and TLS) connection to a server.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Headers the protocol sets itself; a config may not set them.
pub const RESERVED_HEADERS: [&str; 5] = [
    "accept",
    "content-type",
    HEADER_SESSION_ID,
    HEADER_LAST_EVENT_ID,
    "mcp-protocol-version",
];
/// Longest `Retry-After` value kept (the SDK's own bound).
const MAX_RETRY_AFTER_BYTES: usize = 128;

type Error = StreamableHttpError<reqwest::Error>;
type Events = BoxStream<'static, Result<Sse, SseError>>;

/// A reqwest 0.12 client speaking streamable HTTP for rmcp.
#[derive(Clone)]
pub struct HttpClient {
    client: reqwest::Client,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The default headers may hold credentials: never print them.
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}

impl HttpClient {
    /// A client sending `headers` (from the config, e.g. `Authorization`)
    /// with every request.
    pub fn new(headers: &BTreeMap<String, String>) -> Result<HttpClient, String> {
        let mut defaults = HeaderMap::new();
        for (name, value) in headers {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("header name {name:?} is not valid"))?;
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| format!("header {name:?} has a value that is not valid"))?;
            value.set_sensitive(true);
            defaults.insert(header, value);
        }
        // System roots plus `--ca-file`; never the control connection's
        // "skip verification" switch, which is for the relay only.
        let tls = crate::tls::build(&crate::tls::TlsOptions {
            ca_file: crate::tls::options().ca_file,
            insecure_skip_verify: false,
        })
        .map_err(|error| format!("TLS setup: {error:#}"))?;
        let client = reqwest::Client::builder()
            .use_preconfigured_tls(tls.as_ref().clone())
            .default_headers(defaults)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            // The SDK does the same: a pooled connection whose previous
            // response was not read to the end stalls ~40 ms on delayed ACK.
            .pool_max_idle_per_host(0)
            .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION"), " mcp"))
            .build()
            .map_err(|error| format!("building the HTTP client: {error}"))?;
        Ok(HttpClient { client })
    }
}

impl StreamableHttpClient for HttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut request = self.client.post(uri.as_ref()).header(ACCEPT, accept_both());
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        request = with_headers(request, custom_headers);
        let session_attached = session_id.is_some();
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        let response = request.json(&message).send().await.map_err(Error::Client)?;
        let status = response.status();
        auth_failure(&response)?;
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_attached {
            return Err(Error::SessionExpired);
        }
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let is = |expected: &str| {
            content_type
                .as_ref()
                .is_some_and(|value| media_type_is(value.as_bytes(), expected))
        };
        let (is_json, is_events) = (is(JSON_MIME_TYPE), is(EVENT_STREAM_MIME_TYPE));
        let new_session = response
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        // Notifications, responses and errors leave nothing to wait for.
        let awaits_nothing = !matches!(message, ClientJsonRpcMessage::Request(_));
        if status.is_success() && response.content_length() == Some(0) && awaits_nothing {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            let mut retry_status = status_error(status, response.headers());
            // Rate limits, and server errors without a JSON-RPC body to
            // read, are answered from the status alone.
            if status == StatusCode::TOO_MANY_REQUESTS || !is_json {
                if let Some(error) = retry_status.take() {
                    return Err(error.into());
                }
            }
            let body = if is_json {
                let body = read_bounded(response, limits.max_json_response_size).await?;
                if let Ok(error @ ServerJsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    if let Some(answer) =
                        discover_rejected(&message, session_attached, status, &body)
                    {
                        return Ok(answer);
                    }
                    return Ok(StreamableHttpPostResponse::Json(error, new_session));
                }
                prefix(&body, limits.max_error_response_size)
            } else {
                let body = read_prefix(response, limits.max_error_response_size).await;
                String::from_utf8_lossy(&body).into_owned()
            };
            if let Some(answer) =
                discover_rejected(&message, session_attached, status, body.as_bytes())
            {
                return Ok(answer);
            }
            if let Some(error) = retry_status {
                return Err(error.into());
            }
            return Err(Error::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {body}"
            ))));
        }
        if is_events {
            let events = sse_events(response, limits.max_sse_event_size);
            return Ok(StreamableHttpPostResponse::Sse(events, new_session));
        }
        if is_json {
            let body = read_bounded(response, limits.max_json_response_size).await?;
            return match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                Err(_) if awaits_nothing => Ok(StreamableHttpPostResponse::Accepted),
                Err(error) => Err(Error::UnexpectedServerResponse(Cow::Owned(format!(
                    "the server's JSON is not a JSON-RPC message: {error}: {}",
                    prefix(&body, 256)
                )))),
            };
        }
        if awaits_nothing {
            // Some servers answer a notification with an empty 200 and no
            // content type; nothing in it matters.
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        Err(Error::UnexpectedContentType(content_type.map(|value| {
            String::from_utf8_lossy(value.as_bytes()).into_owned()
        })))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let mut request = self
            .client
            .delete(uri.as_ref())
            .header(HEADER_SESSION_ID, session_id.as_ref());
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        request = with_headers(request, custom_headers);
        let response = request.send().await.map_err(Error::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            // Sessions that cannot be deleted end when the server drops them.
            return Ok(());
        }
        response.error_for_status().map_err(Error::Client)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, Error> {
        let mut request = self.client.get(uri.as_ref()).header(ACCEPT, accept_both());
        if let Some(session_id) = session_id {
            request = request.header(HEADER_SESSION_ID, session_id.as_ref());
        }
        if let Some(last_event_id) = last_event_id {
            request = request.header(HEADER_LAST_EVENT_ID, last_event_id);
        }
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        request = with_headers(request, custom_headers);
        let response = request.send().await.map_err(Error::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(Error::ServerDoesNotSupportSse);
        }
        auth_failure(&response)?;
        if let Some(error) = status_error(response.status(), response.headers()) {
            return Err(error.into());
        }
        let response = response.error_for_status().map_err(Error::Client)?;
        match response.headers().get(CONTENT_TYPE) {
            Some(value)
                if media_type_is(value.as_bytes(), EVENT_STREAM_MIME_TYPE)
                    || media_type_is(value.as_bytes(), JSON_MIME_TYPE) => {}
            other => {
                return Err(Error::UnexpectedContentType(other.map(|value| {
                    String::from_utf8_lossy(value.as_bytes()).into_owned()
                })))
            }
        }
        Ok(sse_events(response, max_sse_event_size))
    }
}

fn accept_both() -> String {
    format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}")
}

/// The protocol's per-request headers (protocol version, method names);
/// the reserved ones are set here and are not replaced.
fn with_headers(
    mut request: reqwest::RequestBuilder,
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    for (name, value) in headers {
        let reserved = ["accept", HEADER_SESSION_ID, HEADER_LAST_EVENT_ID]
            .iter()
            .any(|r| name.as_str().eq_ignore_ascii_case(r));
        if !reserved {
            request = request.header(name, value);
        }
    }
    request
}

/// 401/403 with a challenge: the server wants credentials we do not have.
fn auth_failure(response: &reqwest::Response) -> Result<(), Error> {
    let challenge = || {
        response
            .headers()
            .get(WWW_AUTHENTICATE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
    };
    match response.status() {
        StatusCode::UNAUTHORIZED => match challenge() {
            Some(header) => Err(Error::AuthRequired(AuthRequiredError::new(header))),
            None => Ok(()),
        },
        StatusCode::FORBIDDEN => match challenge() {
            Some(header) => Err(Error::InsufficientScope(InsufficientScopeError::new(
                header, None,
            ))),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// 429 and 5xx become status errors (with `Retry-After`), like the SDK's.
fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let retry_after = headers
        .get(reqwest::header::RETRY_AFTER)
        .filter(|value| value.as_bytes().len() <= MAX_RETRY_AFTER_BYTES)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// A server that predates `server/discover` may reject it with an HTTP 4xx
/// (some SDKs answer with an id they made up): turn that into a JSON-RPC
/// error for the request's own id, so the client falls back to `initialize`.
fn discover_rejected(
    message: &ClientJsonRpcMessage,
    session_attached: bool,
    status: StatusCode,
    body: &[u8],
) -> Option<StreamableHttpPostResponse> {
    if session_attached
        || !status.is_client_error()
        || matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
    {
        return None;
    }
    let ClientJsonRpcMessage::Request(request) = message else {
        return None;
    };
    if !matches!(request.request, ClientRequest::DiscoverRequest(_)) {
        return None;
    }
    let error = match serde_json::from_slice::<ServerJsonRpcMessage>(body) {
        Ok(ServerJsonRpcMessage::Error(error)) => error.error,
        _ => ErrorData::invalid_request(
            format!(
                "server/discover rejected with HTTP {status}: {}",
                prefix(body, 256)
            ),
            None,
        ),
    };
    Some(StreamableHttpPostResponse::Json(
        ServerJsonRpcMessage::error(error, Some(request.id.clone())),
        None,
    ))
}

/// Media type comparison without parameters, case-insensitive (RFC 9110).
fn media_type_is(value: &[u8], expected: &str) -> bool {
    value
        .split(|byte| *byte == b';')
        .next()
        .and_then(|essence| std::str::from_utf8(essence).ok())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// The whole body, or an error past `limit` bytes.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Vec<u8>, Error> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Err(Error::ResponseBodyTooLarge { max_size: limit });
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Error::Client)? {
        if chunk.len() > limit - body.len() {
            return Err(Error::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Up to `limit` bytes of a body (for an error message); the rest is left
/// unread.
async fn read_prefix(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - body.len());
                body.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    body
}

/// At most `limit` bytes of `body` as text, cut on a character boundary.
fn prefix(body: &[u8], limit: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Why reading an event stream stopped.
#[derive(Debug, thiserror::Error)]
enum StreamError {
    #[error("reading the event stream: {0}")]
    Read(#[source] reqwest::Error),
    #[error("a server-sent event is larger than {0} bytes")]
    EventTooLarge(usize),
}

/// Bytes of the event being read, counted on the raw stream so that one
/// endless event cannot grow the parser's buffer without bound.
#[derive(Debug, Default)]
struct EventSize {
    event: usize,
    line_is_empty: bool,
}

impl EventSize {
    /// Counts `chunk`; false once an event outgrows `limit`.
    fn observe(&mut self, chunk: &[u8], limit: usize) -> bool {
        for byte in chunk {
            match byte {
                b'\n' if self.line_is_empty => self.event = 0,
                b'\n' => self.line_is_empty = true,
                b'\r' => {}
                _ => {
                    self.line_is_empty = false;
                    self.event += 1;
                    if self.event > limit {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// The response body parsed as server-sent events, with each event bounded.
fn sse_events(response: reqwest::Response, limit: usize) -> Events {
    let size = EventSize {
        event: 0,
        line_is_empty: true,
    };
    let bytes = futures_util::stream::unfold(Some((response, size)), move |state| async move {
        let (mut response, mut size) = state?;
        match response.chunk().await {
            Ok(Some(chunk)) if size.observe(&chunk, limit) => {
                Some((Ok(chunk), Some((response, size))))
            }
            Ok(Some(_)) => Some((Err(StreamError::EventTooLarge(limit)), None)),
            Ok(None) => None,
            Err(error) => Some((Err(StreamError::Read(error)), None)),
        }
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn media_types_ignore_case_and_parameters() {
        assert!(media_type_is(b"application/json", JSON_MIME_TYPE));
        assert!(media_type_is(
            b"Application/JSON; charset=utf-8",
            JSON_MIME_TYPE
        ));
        assert!(media_type_is(b"text/event-stream", EVENT_STREAM_MIME_TYPE));
        assert!(!media_type_is(b"application/jsonx", JSON_MIME_TYPE));
        assert!(!media_type_is(b"\xff", JSON_MIME_TYPE));
    }

    #[test]
    fn event_size_is_counted_per_event() {
        let mut size = EventSize {
            event: 0,
            line_is_empty: true,
        };
        assert!(size.observe(b"data: 1234\n\n", 10));
        // Events end at a blank line (LF or CRLF), also across chunks.
        assert!(size.observe(b"data: 1234\r\n", 10));
        assert!(size.observe(b"\r\ndata: 1\n", 10));
        assert!(!size.observe(b"data: 0123456789\n", 10));
    }

    #[test]
    fn prefixes_keep_whole_characters() {
        assert_eq!(prefix("a€b".as_bytes(), 2), "a");
        assert_eq!(prefix(b"abc", 10), "abc");
    }
}
