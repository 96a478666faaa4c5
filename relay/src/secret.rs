//! Secrets (API keys, registration tokens): generation, hashing for storage,
//! constant-time comparison, and a newtype that never prints its content.

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Prefix of organisation API keys.
pub const API_KEY_PREFIX: &str = "rnrk_";
/// Prefix of environment registration tokens.
pub const REGISTRATION_TOKEN_PREFIX: &str = "rnrt_";

/// Random bytes in a freshly generated secret.
const SECRET_BYTES: usize = 32;

/// A secret value. `Debug` and `Display` redact it, so it cannot leak into
/// logs by accident; [`Secret::expose`] is the one explicit way out.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a plaintext secret.
    pub fn new(plaintext: impl Into<String>) -> Self {
        Self(plaintext.into())
    }

    /// A new random secret: `prefix` + base64url(32 random bytes).
    pub fn generate(prefix: &str) -> Result<Self, getrandom::Error> {
        let mut bytes = [0u8; SECRET_BYTES];
        getrandom::fill(&mut bytes)?;
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        Ok(Self(format!("{prefix}{encoded}")))
    }

    /// The plaintext, for the one place that must show or send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Hex SHA-256 of the plaintext: the only form the store keeps.
    pub fn hash(&self) -> String {
        hash_secret(&self.0)
    }

    /// Prefix and last 4 characters, enough to recognise a secret, e.g.
    /// `rnrt_…9f3a`.
    pub fn hint(&self) -> String {
        let prefix = [API_KEY_PREFIX, REGISTRATION_TOKEN_PREFIX]
            .into_iter()
            .find(|prefix| self.0.starts_with(prefix))
            .unwrap_or("");
        let tail: String = {
            let chars: Vec<char> = self.0.chars().collect();
            chars[chars.len().saturating_sub(4)..].iter().collect()
        };
        format!("{prefix}…{tail}")
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Hex SHA-256 of a presented secret.
pub fn hash_secret(plaintext: &str) -> String {
    hex::encode(Sha256::digest(plaintext.as_bytes()))
}

/// Compares two stored-form hashes without leaking where they differ.
pub fn hashes_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_redact() {
        let secret = Secret::new("rnrk_supersecretvalue");
        assert!(!format!("{secret:?}").contains("supersecret"));
        assert!(!format!("{secret}").contains("supersecret"));
        assert!(format!("{secret:?}").contains("redacted"));
    }

    #[test]
    fn generated_secrets_have_prefix_and_length() {
        let secret = Secret::generate(REGISTRATION_TOKEN_PREFIX).expect("os randomness");
        assert!(secret.expose().starts_with("rnrt_"));
        assert_eq!(secret.expose().len(), 5 + 43);
        assert_ne!(
            secret,
            Secret::generate(REGISTRATION_TOKEN_PREFIX).expect("os randomness")
        );
    }

    #[test]
    fn hint_shows_prefix_and_last_four_only() {
        let secret = Secret::new("rnrt_abcdefgh9f3a");
        assert_eq!(secret.hint(), "rnrt_…9f3a");
    }

    #[test]
    fn hashes_compare() {
        let hash = hash_secret("x");
        assert!(hashes_match(&hash, &hash_secret("x")));
        assert!(!hashes_match(&hash, &hash_secret("y")));
        assert_eq!(hash.len(), 64);
    }
}
