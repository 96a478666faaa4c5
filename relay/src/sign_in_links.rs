//! One-time console sign-in links (`runner-relay serve` and `dev` print
//! one with the admin key they create): a random code, redeemable once
//! within [`LINK_TTL`], for the API key it was issued for.
//!
//! The code travels in the link's fragment (`/console/sign-in#code=…`),
//! which browsers never send to a server, so it stays out of access logs
//! and `Referer` headers; the page posts it. Codes are kept in this relay's
//! memory only, by their hash: a link works on the relay that printed it.

use std::collections::HashMap;
use std::sync::Mutex;

use time::{Duration, OffsetDateTime};

use crate::secret::{hash_secret, Secret};

/// How long a link stays valid.
pub const LINK_TTL: Duration = Duration::minutes(15);
/// Prefix of a link's code.
const CODE_PREFIX: &str = "rnrl_";

#[derive(Default)]
pub struct SignInLinks {
    codes: Mutex<HashMap<String, (Secret, OffsetDateTime)>>,
}

impl std::fmt::Debug for SignInLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SignInLinks(…)")
    }
}

impl SignInLinks {
    fn codes(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Secret, OffsetDateTime)>> {
        // Whole inserts and removals only: a poisoned map is consistent.
        self.codes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A new code that signs in with `key` once, until `now + LINK_TTL`.
    pub fn issue(&self, key: &Secret, now: OffsetDateTime) -> Result<Secret, getrandom::Error> {
        let code = Secret::generate(CODE_PREFIX)?;
        let mut codes = self.codes();
        codes.retain(|_, (_, expires)| *expires > now);
        codes.insert(code.hash(), (key.clone(), now + LINK_TTL));
        Ok(code)
    }

    /// The key a code was issued for, once: a used, expired or unknown
    /// code gives nothing.
    pub fn redeem(&self, code: &str, now: OffsetDateTime) -> Option<Secret> {
        let (key, expires) = self.codes().remove(&hash_secret(code))?;
        (expires > now).then_some(key)
    }
}

/// The link to print: `base` is the relay's URL as people reach it.
pub fn link(base: &str, code: &Secret) -> String {
    format!(
        "{}/console/sign-in#code={}",
        base.trim_end_matches('/'),
        code.expose()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_signs_in_once_and_not_after_it_expires() {
        let links = SignInLinks::default();
        let key = Secret::new("rnrk_key");
        let now = OffsetDateTime::UNIX_EPOCH + Duration::days(1);
        let code = links.issue(&key, now).expect("random bytes");
        assert_eq!(links.redeem(code.expose(), now), Some(key.clone()));
        assert_eq!(links.redeem(code.expose(), now), None);

        let late = links.issue(&key, now).expect("random bytes");
        assert_eq!(links.redeem(late.expose(), now + LINK_TTL), None);
        assert_eq!(links.redeem("rnrl_guess", now), None);
    }

    #[test]
    fn the_code_rides_in_the_fragment() {
        let code = Secret::new("rnrl_abc");
        assert_eq!(
            link("http://127.0.0.1:8080/", &code),
            "http://127.0.0.1:8080/console/sign-in#code=rnrl_abc"
        );
    }
}
