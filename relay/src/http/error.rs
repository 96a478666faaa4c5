//! JSON error answers (`{"error":{"code","message"}}`) and the JSON body
//! extractor that turns every malformed body into one.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use runner_proto::api::{ErrorBody, ErrorDetail};
use serde::de::DeserializeOwned;

use crate::store::StoreError;

/// An error answer of the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    /// Stable machine-readable code.
    pub code: &'static str,
    pub message: String,
    /// Set on errors about a call.
    pub call_id: Option<String>,
    /// Seconds for a `Retry-After` header (429).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            call_id: None,
            retry_after: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn environment_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("environment {id:?} not found"),
        )
    }

    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the relay's log",
        )
    }

    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    pub fn with_call_id(mut self, call_id: &str) -> Self {
        self.call_id = Some(call_id.to_owned());
        self
    }
}

impl crate::metrics::ErrorCode for ApiError {
    fn code(&self) -> &str {
        self.code
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::NameTaken(_) | StoreError::TemplateNameTaken(_) => {
                Self::new(StatusCode::CONFLICT, "conflict", error.to_string())
            }
            StoreError::NotFound => Self::new(StatusCode::NOT_FOUND, "not_found", "not found"),
            StoreError::UnknownTeam(_) => {
                Self::new(StatusCode::NOT_FOUND, "team_not_found", error.to_string())
            }
            other => {
                tracing::error!(error = %other, "store failure");
                Self::internal()
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_owned(),
                message: self.message,
                call_id: self.call_id,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            if let Ok(value) = axum::http::HeaderValue::from_str(&seconds.to_string()) {
                response
                    .headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, value);
            }
        }
        response
    }
}

fn code_for(status: StatusCode) -> &'static str {
    match status {
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::BAD_REQUEST => "bad_request",
        _ => "invalid_request",
    }
}

/// Turns one of axum's own rejections into our JSON error.
pub fn from_rejection(status: StatusCode, message: String) -> ApiError {
    ApiError::new(status, code_for(status), message)
}

/// The request body as raw bytes (bounded by the body limit), with a JSON
/// error when it is too large or unreadable.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(request, state)
            .await
            .map(RawBody)
            .map_err(|rejection| from_rejection(rejection.status(), rejection.body_text()))
    }
}

/// A JSON object body; malformed JSON or a wrong shape is a 400 with
/// serde's message (which names the unknown field or the position). Every
/// body of the API is an object, and serde's derive would also read a
/// struct from an array of its fields in order (`[null, null]`), so any
/// other JSON value is refused before serde sees it.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let RawBody(bytes) = RawBody::from_request(request, state).await?;
        parse_object(&bytes).map(ApiJson)
    }
}

/// Parses a body that must be a JSON object: a look at its first
/// non-blank byte, not a second parse.
pub fn parse_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes
        .iter()
        .find(|byte| !matches!(byte, b' ' | b'\t' | b'\n' | b'\r'));
    match first {
        Some(b'{') => serde_json::from_slice(bytes)
            .map_err(|error| ApiError::bad_request(format!("invalid JSON body: {error}"))),
        None => Err(ApiError::bad_request(
            "invalid JSON body: empty; send a JSON object",
        )),
        Some(_) => Err(ApiError::bad_request(
            "invalid JSON body: the body must be a JSON object",
        )),
    }
}

/// A query string; one that does not fit `T` is a 400 with a JSON error
/// (axum's own rejection is plain text).
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(query)| ApiQuery(query))
            .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
    }
}
