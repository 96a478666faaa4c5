//! The environment of a call's processes: the runner's own without its
//! secrets ([`crate::env_vars::SECRETS`]), the call's variables, and the
//! call marker and owner ([`crate::call::CALL_MARKER_VAR`],
//! [`crate::call::CALL_OWNER_VAR`]).

#[cfg(fast_spawn)]
use std::ffi::{CString, OsStr, OsString};
#[cfg(fast_spawn)]
use std::os::unix::ffi::OsStrExt;

#[cfg(fast_spawn)]
use super::spec::Spec;
#[cfg(fast_spawn)]
use crate::call::{CALL_MARKER_VAR, CALL_OWNER_VAR};

/// Takes the runner's own secrets ([`crate::env_vars::SECRETS`]) out of
/// the environment a tool's process would inherit: a command that may run
/// `env` must not learn the registration token (which lets anyone stand in
/// for this runner) or an API key the runner was started with, whatever
/// the permission file says about the credential files. Called before the
/// call's own variables are added, so a call that sets one in its `env`
/// argument still gets its value.
pub fn keep_secrets_from(command: &mut tokio::process::Command) {
    for name in crate::env_vars::SECRETS {
        command.env_remove(name);
    }
}

/// What `spawn_command` gives the process: the runner's environment
/// without its secrets ([`keep_secrets_from`]), the call's
/// variables, and the call marker.
///
/// Sorted by name, as std's `Command` passes a modified environment: the
/// runner's own entries (made once, [`inherited_environment`]) merged
/// with the call's, which win.
#[cfg(fast_spawn)]
pub(super) fn child_environment(
    spec: &Spec,
    call_id: &str,
) -> std::io::Result<Vec<std::borrow::Cow<'static, std::ffi::CStr>>> {
    use std::borrow::Cow;
    use std::cmp::Ordering;
    use std::collections::BTreeMap;
    let mut own: BTreeMap<&[u8], &str> = spec
        .env
        .iter()
        .map(|(name, value)| (name.as_bytes(), value.as_str()))
        .collect();
    own.insert(CALL_MARKER_VAR.as_bytes(), call_id);
    if let Some(owner) = super::owner::owner() {
        own.insert(CALL_OWNER_VAR.as_bytes(), owner);
    }
    let inherited = inherited_environment();
    let mut merged = Vec::with_capacity(inherited.len() + own.len());
    let mut inherited = inherited.iter().peekable();
    let mut own = own.into_iter().peekable();
    loop {
        let order = match (inherited.peek(), own.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((name, _)), Some((own_name, _))) => name.as_bytes().cmp(own_name),
        };
        if order != Ordering::Greater {
            // The runner's entry, unless the call sets the same name.
            let (_, entry) = inherited.next().expect("peeked");
            if order == Ordering::Less {
                merged.push(Cow::Borrowed(entry.as_c_str()));
                continue;
            }
        }
        let (name, value) = own.next().expect("peeked");
        merged.push(Cow::Owned(env_entry(
            std::ffi::OsStr::from_bytes(name),
            value.as_ref(),
        )?));
    }
    Ok(merged)
}

/// The runner's environment without its secrets ([`keep_secrets_from`]),
/// sorted by name, each variable with its `NAME=value` entry. Made on the
/// first call and kept: the runner never changes its own environment, so
/// a call does not copy it from `environ` again.
#[cfg(fast_spawn)]
fn inherited_environment() -> &'static [(OsString, std::ffi::CString)] {
    static INHERITED: std::sync::OnceLock<Vec<(OsString, std::ffi::CString)>> =
        std::sync::OnceLock::new();
    INHERITED.get_or_init(|| {
        let mut env: Vec<_> = std::env::vars_os()
            .filter(|(name, _)| !crate::env_vars::SECRETS.iter().any(|secret| name == secret))
            // The OS hands out no NUL inside a variable; one that could not
            // be passed on is left out rather than failing every call.
            .filter_map(|(name, value)| {
                let entry = env_entry(&name, &value).ok()?;
                Some((name, entry))
            })
            .collect();
        // A name set twice keeps its last value, as it did in a map.
        env.reverse();
        env.sort_by(|(a, _), (b, _)| a.as_bytes().cmp(b.as_bytes()));
        env.dedup_by(|(a, _), (b, _)| a == b);
        env
    })
}

/// `NAME=value`, as an `envp` entry holds it.
#[cfg(fast_spawn)]
pub(super) fn env_entry(name: &OsStr, value: &OsStr) -> std::io::Result<CString> {
    let mut entry = Vec::with_capacity(name.len() + 1 + value.len());
    entry.extend_from_slice(name.as_bytes());
    entry.push(b'=');
    entry.extend_from_slice(value.as_bytes());
    CString::new(entry).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a NUL byte in the program, an argument, the environment or the working directory",
        )
    })
}
