//! API key authentication: the [`Caller`] extractor, and the lookups that
//! combine it with the access rules (404 for what a member cannot see, 403
//! for what they see but may not do).

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use runner_proto::audit::{AuditAction, AuditDecision};

use super::error::ApiError;
use super::origin::{key_id, KeyId, Origin};
use crate::access;
use crate::audit::AuditRecord;
use crate::environment::EnvironmentRecord;
use crate::metrics::labels::AuthFailure;
use crate::ratelimit;
use crate::secret::{hash_secret, hashes_match, API_KEY_PREFIX};
use crate::state::AppState;
use crate::store::Member;

/// The credential in `Authorization: Bearer <value>`, if any.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, credential) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credential.trim())
        .filter(|credential| !credential.is_empty())
}

/// The authenticated member making an API request.
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<Member>);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(key) = bearer(&parts.headers) else {
            state.metrics.auth_failure(AuthFailure::MissingCredential);
            auth_failed(state, parts, "missing_api_key");
            return Err(ApiError::unauthorized(
                "missing API key: send `Authorization: Bearer rnrk_…`",
            ));
        };
        if !key.starts_with(API_KEY_PREFIX) {
            state.metrics.auth_failure(AuthFailure::MalformedApiKey);
            auth_failed(state, parts, "invalid_api_key");
            return Err(ApiError::unauthorized("invalid API key"));
        }
        let hash = hash_secret(key);
        let found = match state.reads.member(&hash) {
            Some(found) => Some(found),
            None => {
                let generation = state.reads.generation();
                let found = state
                    .store
                    .member_by_key_hash(&hash)
                    .await?
                    .map(|(member, stored)| (Arc::new(member), Arc::<str>::from(stored)));
                if let Some(found) = &found {
                    state.reads.keep_member(generation, &hash, found);
                }
                found
            }
        };
        match found {
            Some((member, stored)) if hashes_match(&stored, &hash) => {
                // For the audit log's actor (`Origin`); nothing else reads it.
                if state.audit.enabled() {
                    parts.extensions.insert(KeyId(key_id(&stored)));
                }
                Ok(Caller(member))
            }
            _ => {
                state.metrics.auth_failure(AuthFailure::InvalidApiKey);
                auth_failed(state, parts, "invalid_api_key");
                Err(ApiError::unauthorized("invalid API key"))
            }
        }
    }
}

/// Audits a request refused for its API key: the first
/// [`ratelimit::PER_ADDRESS`] a minute from one address; past that they
/// are only counted, so a flood of bad keys cannot fill the audit log.
fn auth_failed(state: &AppState, parts: &Parts, code: &str) {
    if !state.audit.enabled() {
        return;
    }
    let now = state.clock.now();
    let origin = Origin::of(parts);
    if let Some(source) = &origin.source {
        let key = format!("api-key:{source}");
        let flooding = state
            .failures
            .check(&key, ratelimit::PER_ADDRESS, now)
            .is_err();
        state.failures.record_failure(&key, now);
        if flooding {
            return;
        }
    }
    let record = AuditRecord::new(now, origin.anonymous(), AuditAction::AuthFailed)
        .decided(AuditDecision::Denied, code);
    state.audit.record(record);
}

/// What the caller wants to do with an environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// Read it, its status and tools.
    Read,
    /// Invoke its tools.
    Use,
    /// Change, delete, manage tokens.
    Manage,
}

/// Every environment `caller` may use (shared ones and their teams'), but
/// sandbox hosts and sandboxes, which are reached through sessions.
pub async fn usable_environments(
    state: &AppState,
    caller: &Member,
) -> Result<Vec<EnvironmentRecord>, ApiError> {
    Ok(state
        .store
        .list_environments()
        .await?
        .into_iter()
        .filter(|environment| {
            access::can_use(caller, &environment.scope) && !access::is_machinery(environment)
        })
        .collect())
}

/// Loads an environment, by id or by name, the caller may act on: 404 if it
/// does not exist or the caller cannot see it, 403 if they see it but may
/// not do this.
pub async fn environment_for(
    state: &AppState,
    caller: &Member,
    id: &str,
    intent: Intent,
) -> Result<Arc<EnvironmentRecord>, ApiError> {
    // Only using an environment may read a copy: whatever writes one back
    // must start from the store.
    let cached = match intent {
        Intent::Use => state.reads.environment(id),
        Intent::Read | Intent::Manage => None,
    };
    let environment = match cached {
        Some(environment) => Some(environment),
        None => {
            let generation = state.reads.generation();
            let read = state.store.environment(id).await?.map(Arc::new);
            if let Some(environment) = &read {
                state.reads.keep_environment(generation, environment);
            }
            match read {
                Some(environment) => Some(environment),
                // Names are unique, so a path may name one instead of an id.
                None => state.store.environment_by_name(id).await?.map(Arc::new),
            }
        }
    };
    let environment = environment
        .filter(|environment| access::can_see(caller, environment))
        .ok_or_else(|| ApiError::environment_not_found(id))?;
    if intent == Intent::Use {
        if let Some(why) = access::refuses_calls(&environment) {
            return Err(ApiError::forbidden(why));
        }
    }
    let allowed = match intent {
        Intent::Read => true,
        Intent::Use => access::can_use(caller, &environment.scope),
        Intent::Manage => access::can_manage(caller, &environment.scope),
    };
    if !allowed {
        let why = match &environment.scope {
            crate::environment::Scope::Shared => {
                "only organisation admins may manage shared environments".to_owned()
            }
            crate::environment::Scope::Team(team) => {
                format!("only members of team {team:?} may act on its environments")
            }
        };
        return Err(ApiError::forbidden(why));
    }
    Ok(environment)
}
