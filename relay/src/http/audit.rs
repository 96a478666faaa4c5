//! `GET /audit`: the audit log, to organisation admins only, filtered and
//! paged by an opaque cursor.

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::Json;
use runner_proto::audit::{AuditAction, AuditPage, DEFAULT_AUDIT_PAGE, MAX_AUDIT_PAGE};
use serde::Deserialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::auth::Caller;
use super::error::ApiError;
use crate::audit::{unix_ms, AuditQuery};
use crate::state::AppState;

/// `GET /audit` parameters.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuditParams {
    pub environment: Option<String>,
    /// Member id.
    pub actor: Option<String>,
    pub action: Option<String>,
    pub session: Option<String>,
    pub tool: Option<String>,
    /// RFC 3339 or Unix seconds; inclusive.
    pub since: Option<String>,
    /// RFC 3339 or Unix seconds; exclusive.
    pub until: Option<String>,
    pub limit: Option<u32>,
    pub cursor: Option<String>,
    /// `asc` (default: oldest first) or `desc`.
    pub order: Option<String>,
}

/// What `since` and `until` take besides RFC 3339: Unix seconds, signed,
/// any number of digits (saturating); the OpenAPI document's pattern.
pub const UNIX_SECONDS_PATTERN: &str = "^[+-]?[0-9]+$";
/// A cursor: the `next_cursor` of a page, a `u64`; the document's pattern.
pub const CURSOR_PATTERN: &str = "^[0-9]{1,19}$";

fn time_param(name: &str, text: &str) -> Result<i64, ApiError> {
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
        let seconds = text
            .parse::<i64>()
            .unwrap_or(if negative { i64::MIN } else { i64::MAX });
        return Ok(seconds.saturating_mul(1000));
    }
    OffsetDateTime::parse(text, &Rfc3339)
        .map(unix_ms)
        .map_err(|_| {
            ApiError::bad_request(format!(
                "{name} must be an RFC 3339 time or Unix seconds (got {text:?})"
            ))
        })
}

/// The store query `params` ask for.
fn query(params: AuditParams) -> Result<AuditQuery, ApiError> {
    let action = params
        .action
        .as_deref()
        .map(|text| {
            AuditAction::parse(text).ok_or_else(|| {
                let known: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
                ApiError::bad_request(format!(
                    "unknown action {text:?}; expected one of {}",
                    known.join(", ")
                ))
            })
        })
        .transpose()?;
    let limit = params.limit.unwrap_or(DEFAULT_AUDIT_PAGE);
    if !(1..=MAX_AUDIT_PAGE).contains(&limit) {
        return Err(ApiError::bad_request(format!(
            "limit must be from 1 to {MAX_AUDIT_PAGE} (got {limit})"
        )));
    }
    let descending = match params.order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "order must be \"asc\" or \"desc\" (got {other:?})"
            )))
        }
    };
    let cursor = params
        .cursor
        .as_deref()
        .map(|text| {
            let digits = (1..=19).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
            digits
                .then(|| text.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| ApiError::bad_request(format!("invalid cursor {text:?}")))
        })
        .transpose()?;
    Ok(AuditQuery {
        environment_id: params.environment,
        actor_id: params.actor,
        action,
        session_id: params.session,
        tool: params.tool,
        since_ms: params
            .since
            .as_deref()
            .map(|text| time_param("since", text))
            .transpose()?,
        until_ms: params
            .until
            .as_deref()
            .map(|text| time_param("until", text))
            .transpose()?,
        cursor,
        descending,
        limit,
    })
}

pub async fn list(
    State(state): State<AppState>,
    Caller(caller): Caller,
    params: Result<Query<AuditParams>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    if !caller.is_admin {
        return Err(ApiError::forbidden(
            "only organisation admins may read the audit log",
        ));
    }
    let Query(params) = params.map_err(|rejection| ApiError::bad_request(rejection.body_text()))?;
    let query = query(params)?;
    // What this relay has queued is part of the answer.
    state.audit.flush().await;
    let rows = state.store.audit_entries(&query).await?;
    let last = rows.last().map(|row| row.seq);
    let next_cursor = if query.descending {
        last.filter(|_| rows.len() == query.limit as usize)
    } else {
        // Ascending: entries appended later follow; resume after the last
        // one seen (or where this page started).
        Some(last.or(query.cursor).unwrap_or(0))
    };
    Ok(Json(AuditPage {
        entries: rows.iter().map(|row| row.to_api()).collect(),
        next_cursor: next_cursor.map(|seq| seq.to_string()),
    }))
}
