//! Release version strings: which characters are allowed (they become URL
//! path segments) and which of two versions is newer.
//!
//! The ordering is semver's for the forms releases use (`1.2.3`,
//! `1.2.3-rc.1`, build metadata after `+` ignored), lenient about the number
//! of numeric parts (`1.2` = `1.2.0`). The runner decides with it whether to
//! update, the relay whether to offer a release to a runner: one rule for
//! both.

use std::cmp::Ordering;

/// A version from a mirror must be short and safe as one URL path segment.
pub fn is_valid(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 64
        && !version.starts_with('.')
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'+'))
}

/// `Some(ordering)` of `a` against `b`, or `None` when either is not of the
/// `N.N.N[-pre][+build]` form.
pub fn compare(a: &str, b: &str) -> Option<Ordering> {
    let (a_core, a_pre) = split(a)?;
    let (b_core, b_pre) = split(b)?;
    let length = a_core.len().max(b_core.len());
    for index in 0..length {
        let x = a_core.get(index).copied().unwrap_or(0);
        let y = b_core.get(index).copied().unwrap_or(0);
        match x.cmp(&y) {
            Ordering::Equal => {}
            other => return Some(other),
        }
    }
    Some(match (a_pre, b_pre) {
        (None, None) => Ordering::Equal,
        // A pre-release sorts before its release.
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(x), Some(y)) => compare_pre(x, y),
    })
}

/// True when `candidate` is strictly newer than `current`.
pub fn is_newer(candidate: &str, current: &str) -> bool {
    compare(candidate, current) == Some(Ordering::Greater)
}

fn split(version: &str) -> Option<(Vec<u64>, Option<&str>)> {
    let version = version.trim().trim_start_matches('v');
    let version = version.split_once('+').map_or(version, |(v, _)| v);
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (version, None),
    };
    let numbers = core
        .split('.')
        .map(|part| part.parse::<u64>().ok())
        .collect::<Option<Vec<_>>>()?;
    if numbers.is_empty() {
        return None;
    }
    Some((numbers, pre))
}

/// semver §11: dot-separated identifiers, numeric ones compared as numbers
/// and below alphanumeric ones, a shorter list first when all else is equal.
fn compare_pre(a: &str, b: &str) -> Ordering {
    let mut left = a.split('.');
    let mut right = b.split('.');
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => {
                let ordering = match (x.parse::<u64>(), y.parse::<u64>()) {
                    (Ok(x), Ok(y)) => x.cmp(&y),
                    (Ok(_), Err(_)) => Ordering::Less,
                    (Err(_), Ok(_)) => Ordering::Greater,
                    (Err(_), Err(_)) => x.cmp(y),
                };
                if ordering != Ordering::Equal {
                    return ordering;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_like_semver() {
        let ascending = [
            "0.1.0",
            "0.1.1",
            "0.2.0-alpha",
            "0.2.0-alpha.1",
            "0.2.0-alpha.beta",
            "0.2.0-beta.2",
            "0.2.0-beta.11",
            "0.2.0-rc.1",
            "0.2.0",
            "0.10.0",
            "1.0.0",
        ];
        for pair in ascending.windows(2) {
            assert!(is_newer(pair[1], pair[0]), "{} > {}", pair[1], pair[0]);
            assert!(!is_newer(pair[0], pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(compare("1.2", "1.2.0"), Some(Ordering::Equal));
        assert_eq!(compare("1.2.0+build.5", "1.2.0"), Some(Ordering::Equal));
        assert!(!is_newer("0.1.0", "0.1.0"));
    }

    #[test]
    fn odd_versions_are_not_comparable_and_unsafe_ones_invalid() {
        assert_eq!(compare("latest", "0.1.0"), None);
        assert_eq!(compare("1..2", "0.1.0"), None);
        assert!(is_valid("0.2.0-rc.1+abc"));
        for bad in ["", "../0.1.0", ".1", "0.1.0/x", "0.1.0 ", "0.1.0\n", "a%2f"] {
            assert!(!is_valid(bad), "{bad:?}");
        }
    }
}
