//! The owner id this process's calls carry ([`crate::call::CALL_OWNER_VAR`]
//! and the call cgroups' names): the id of the runner's state directory,
//! claimed once when `runner run` starts, so that its next run can find
//! what this one left ([`super::leftovers`]).

use std::sync::OnceLock;

/// The owner id of this process's calls, once [`claim`]ed.
static OWNER: OnceLock<String> = OnceLock::new();

/// Whether `id` may be an owner id: 16 to 64 lowercase hex digits, so it
/// fits in a cgroup name and matches nothing but itself.
pub fn valid(id: &str) -> bool {
    (16..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// Makes `id` the owner id of every call this process starts from now on.
/// Once per process: a second claim (or an invalid id) is refused.
pub fn claim(id: &str) -> Result<(), String> {
    if !valid(id) {
        return Err(format!("owner id {id:?} is not 16 to 64 hex digits"));
    }
    OWNER
        .set(id.to_owned())
        .map_err(|_| "this process has claimed an owner id already".to_owned())
}

/// The owner id calls carry, once [`claim`]ed.
pub(super) fn owner() -> Option<&'static str> {
    OWNER.get().map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_ids_are_hex_of_a_bounded_length() {
        assert!(valid("0123456789abcdef"));
        assert!(valid(&"a".repeat(64)));
        assert!(!valid("0123456789abcde"), "too short");
        assert!(!valid(&"a".repeat(65)), "too long");
        assert!(!valid("0123456789ABCDEF"), "upper case");
        assert!(!valid("0123456789abcde/"), "a path");
        assert!(!valid("0123456789abcde-"), "a separator");
    }
}
