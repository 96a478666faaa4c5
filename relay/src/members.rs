//! Organisation members and their API keys: creation (admin commands, first
//! start) and the bootstrap admin key of an empty store.

use crate::clock::Clock;
use crate::secret::{Secret, API_KEY_PREFIX};
use crate::store::{Member, MemberKind, NewMember, Store, StoreError};

/// Errors creating a member.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("could not read OS randomness for a new API key: {0}")]
    Randomness(getrandom::Error),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why [`find`] found no one member.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no member {0:?} (give a member id or name)")]
    NotFound(String),
    #[error("{count} members are named {name:?}: give the member id")]
    Ambiguous { name: String, count: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A member by id, or by a name only one member has.
pub async fn find(store: &dyn Store, text: &str) -> Result<Member, FindError> {
    if let Some(member) = store.member(text).await? {
        return Ok(member);
    }
    let mut named = store.members_named(text).await?;
    match named.len() {
        0 => Err(FindError::NotFound(text.to_owned())),
        1 => Ok(named.remove(0)),
        count => Err(FindError::Ambiguous {
            name: text.to_owned(),
            count,
        }),
    }
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
        kind: MemberKind::Person,
    };
    let (member, key) = create_with_key(store, clock, &admin).await?;
    tracing::info!(member_id = %member.id, "created the first organisation admin");
    Ok(Some(key))
}
