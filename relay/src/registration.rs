//! Registration tokens (SPEC §3): generation with rotation grace, checking a
//! presented token, and the public facts `token-status` shows.

use runner_proto::api::{GeneratedToken, RunnerToken, TokenHint, TokenStatus};
use time::{Duration, OffsetDateTime};

use crate::clock::rfc3339;
use crate::environment::EnvironmentRecord;
use crate::secret::{hash_secret, hashes_match, Secret, REGISTRATION_TOKEN_PREFIX};
use crate::store::{Store, StoreError, TokenRecord};

/// A token unused for this long stops working.
pub const IDLE_EXPIRY: Duration = Duration::days(90);
/// A token's last use is recorded at most this often: every connect (a
/// reconnect storm is thousands) would otherwise be a write, and expiry is
/// counted in days.
pub const TOKEN_TOUCH_INTERVAL: Duration = Duration::hours(1);
/// Default and largest grace period of the previous token at rotation.
pub const DEFAULT_GRACE_HOURS: i64 = 24;
pub const MAX_GRACE_HOURS: i64 = 168;

/// Why a presented registration token was refused.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// No `Authorization: Bearer` header.
    #[error("missing registration token: send it as `Authorization: Bearer rnrt_…`")]
    Missing,
    /// Unknown or revoked (indistinguishable on purpose).
    #[error("invalid registration token")]
    Invalid,
    /// A newer token replaced it and its grace period is over.
    #[error("registration token was replaced by a newer one and its grace period is over")]
    Replaced {
        /// Whose token it was (for per-environment failure limits).
        environment_id: String,
    },
    /// Unused for 90 days.
    #[error("registration token expired after 90 days without use; generate a new one")]
    Expired {
        /// Whose token it was (for per-environment failure limits).
        environment_id: String,
    },
    /// The token's environment is gone.
    #[error("invalid registration token")]
    EnvironmentGone,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// When a token expires if it is not used again.
pub fn expires_at(token: &TokenRecord) -> OffsetDateTime {
    token.last_used_at.unwrap_or(token.created_at) + IDLE_EXPIRY
}

/// Checks a presented token and records its use (when the recorded one is
/// older than [`TOKEN_TOUCH_INTERVAL`]). Returns the token and its
/// environment.
pub async fn authenticate(
    store: &dyn Store,
    presented: Option<&str>,
    now: OffsetDateTime,
) -> Result<(TokenRecord, EnvironmentRecord), TokenError> {
    let (token, environment) = check(store, presented, now).await?;
    if environment.env_type == runner_proto::sandbox::SANDBOX_ROLE {
        // A sandbox's token admits its runner's first connection only: a
        // tool in the sandbox that finds it has nothing to connect with.
        if !store.claim_token(&token.id, now).await? {
            return Err(TokenError::Invalid);
        }
    } else if token
        .last_used_at
        .is_none_or(|used| now - used >= TOKEN_TOUCH_INTERVAL)
    {
        store.touch_token(&token.id, now).await?;
    }
    Ok((token, environment))
}

/// Checks a presented token as [`authenticate`] does, without recording a
/// use: `runner doctor` asks whether a token would be accepted, and asking
/// must not keep an unused token from expiring.
pub async fn check(
    store: &dyn Store,
    presented: Option<&str>,
    now: OffsetDateTime,
) -> Result<(TokenRecord, EnvironmentRecord), TokenError> {
    let presented = presented.ok_or(TokenError::Missing)?;
    if !presented.starts_with(REGISTRATION_TOKEN_PREFIX) {
        return Err(TokenError::Invalid);
    }
    let hash = hash_secret(presented);
    let token = store
        .token_by_hash(&hash)
        .await?
        .filter(|token| hashes_match(&token.token_hash, &hash))
        .ok_or(TokenError::Invalid)?;
    if token.valid_until.is_some_and(|until| now >= until) {
        return Err(TokenError::Replaced {
            environment_id: token.environment_id,
        });
    }
    if now >= expires_at(&token) {
        return Err(TokenError::Expired {
            environment_id: token.environment_id,
        });
    }
    let environment = store
        .environment(&token.environment_id)
        .await?
        .ok_or(TokenError::EnvironmentGone)?;
    Ok((token, environment))
}

/// Whether a token still admits a runner now (for connections that outlive
/// a rotation or expiry).
pub async fn still_valid(
    store: &dyn Store,
    token_hash: &str,
    now: OffsetDateTime,
) -> Result<bool, StoreError> {
    Ok(store.token_by_hash(token_hash).await?.is_some_and(|token| {
        token.valid_until.is_none_or(|until| now < until) && now < expires_at(&token)
    }))
}

/// Generates a new token for an environment; older ones keep working for
/// `grace_hours`.
pub async fn generate(
    store: &dyn Store,
    environment_id: &str,
    grace_hours: i64,
    now: OffsetDateTime,
) -> Result<(Secret, GeneratedToken), StoreError> {
    let secret =
        Secret::generate(REGISTRATION_TOKEN_PREFIX).map_err(|error| StoreError::Corrupt {
            table: "registration_tokens",
            message: format!("no OS randomness: {error}"),
        })?;
    let record = TokenRecord {
        id: format!("tok_{}", uuid::Uuid::new_v4().simple()),
        environment_id: environment_id.to_owned(),
        token_hash: secret.hash(),
        hint: secret.hint(),
        created_at: now,
        last_used_at: None,
        valid_until: None,
    };
    let previous_valid_until = now + Duration::hours(grace_hours);
    let had_previous = store.rotate_token(&record, previous_valid_until).await?;
    let answer = GeneratedToken {
        token: secret.expose().to_owned(),
        environment_id: environment_id.to_owned(),
        hint: record.hint,
        previous_valid_until: had_previous.then(|| rfc3339(previous_valid_until)),
    };
    Ok((secret, answer))
}

/// The public facts of a token, for `status`.
pub fn hint(token: &TokenRecord) -> TokenHint {
    TokenHint {
        hint: token.hint.clone(),
        created_at: rfc3339(token.created_at),
        last_used_at: token.last_used_at.map(rfc3339),
    }
}

/// Which token a connected runner uses, from the hash it connected with:
/// the current one, or a previous one and when it stops working. `None`
/// without a runner, or when the token is gone (revoked: the runner is
/// being disconnected).
pub async fn runner_token(
    store: &dyn Store,
    connected_with: Option<&str>,
    current: Option<&TokenRecord>,
) -> Result<Option<RunnerToken>, StoreError> {
    let Some(hash) = connected_with.filter(|hash| !hash.is_empty()) else {
        return Ok(None);
    };
    let Some(token) = store.token_by_hash(hash).await? else {
        return Ok(None);
    };
    Ok(Some(RunnerToken {
        current: current.is_some_and(|current| current.id == token.id),
        valid_until: token.valid_until.map(rfc3339),
        hint: token.hint,
    }))
}

/// `token-status`: never the token or its hash.
pub fn status(
    environment_id: &str,
    token: Option<&TokenRecord>,
    runner_connected: bool,
    runner_token: Option<RunnerToken>,
    now: OffsetDateTime,
) -> TokenStatus {
    TokenStatus {
        environment_id: environment_id.to_owned(),
        has_token: token.is_some(),
        hint: token.map(|t| t.hint.clone()),
        created_at: token.map(|t| rfc3339(t.created_at)),
        age_days: token.map(|t| (now - t.created_at).whole_days()),
        last_used_at: token.and_then(|t| t.last_used_at.map(rfc3339)),
        days_until_expiry: token.map(|t| (expires_at(t) - now).whole_days().max(0)),
        runner_connected,
        runner_token,
    }
}
