//! Organisation members and their API keys: creation (admin commands, first
//! start) and the bootstrap admin key of an empty store.

use crate::clock::Clock;
use crate::secret::{Secret, API_KEY_PREFIX};
use crate::store::{Member, NewMember, Store, StoreError};

/// Errors creating a member.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("could not read OS randomness for a new API key: {0}")]
    Randomness(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Creates a member with a fresh API key; the key's plaintext exists only in
/// the returned [`Secret`].
pub async fn create_with_key(
    store: &dyn Store,
    clock: &dyn Clock,
    member: &NewMember,
) -> Result<(Member, Secret), MemberError> {
    let key = Secret::generate(API_KEY_PREFIX).map_err(MemberError::Randomness)?;
    let created = store
        .create_member(member, &key.hash(), &key.hint(), clock.now())
        .await?;
    Ok((created, key))
}

/// On an empty store, creates the first organisation admin and returns its
/// key (to be shown once); otherwise `None`.
pub async fn bootstrap_admin(
    store: &dyn Store,
    clock: &dyn Clock,
) -> Result<Option<Secret>, MemberError> {
    if store.count_members().await? > 0 {
        return Ok(None);
    }
    let admin = NewMember {
        name: "admin".to_owned(),
        is_admin: true,
        teams: Vec::new(),
    };
    let (member, key) = create_with_key(store, clock, &admin).await?;
    tracing::info!(member_id = %member.id, "created the first organisation admin");
    Ok(Some(key))
}
