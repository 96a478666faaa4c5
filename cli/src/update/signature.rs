//! The release trust root: the ed25519 public key built into `runner`, and
//! the check of `SHA256SUMS.sig` against it.
//!
//! `SHA256SUMS.sig` is the 64-byte ed25519 signature over the exact bytes of
//! `SHA256SUMS`, base64-encoded on one line (what `scripts/make-release.sh`
//! writes with `openssl pkeyutl -sign -rawin`). Verification uses
//! `verify_strict`, which also refuses small-order keys and non-canonical
//! signatures, so one signature cannot be massaged to fit another message.

use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};

use super::UpdateError;

/// The release public key (raw 32 bytes).
///
/// WARNING: THIS IS THE TEST KEY from `installers/test-keys/release-test.pub.pem`,
/// whose private half is in the repository. Anyone can sign a "release" that
/// this key accepts. A real release key, kept offline, must replace it before
/// any build is shipped to users (see installers/README.md).
pub const RELEASE_PUBLIC_KEY: [u8; 32] = [
    0x23, 0x0d, 0xe1, 0x0f, 0x63, 0xbf, 0x9e, 0xab, 0xdf, 0x99, 0x73, 0x37, 0xf9, 0x29, 0xc6, 0xbf,
    0x7f, 0x00, 0x69, 0xc1, 0x93, 0x48, 0x5a, 0xa6, 0x44, 0xaa, 0xba, 0xfe, 0x0b, 0x87, 0xfd, 0x20,
];

/// Environment variable that replaces the release key, read in debug builds
/// only: base64 of the raw 32-byte key. Release builds ignore it, so the
/// embedded key is their only trust root.
pub const PUBLIC_KEY_ENV: &str = crate::env_vars::RELEASE_PUBKEY;

/// The key releases must be signed with.
pub fn release_key() -> Result<VerifyingKey, UpdateError> {
    let bytes = if cfg!(debug_assertions) {
        match std::env::var(PUBLIC_KEY_ENV) {
            Ok(text) if !text.trim().is_empty() => decode_key(&text)?,
            _ => RELEASE_PUBLIC_KEY,
        }
    } else {
        RELEASE_PUBLIC_KEY
    };
    VerifyingKey::from_bytes(&bytes).map_err(|error| UpdateError::BadKey(error.to_string()))
}

fn decode_key(text: &str) -> Result<[u8; 32], UpdateError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| UpdateError::BadKey(format!("{PUBLIC_KEY_ENV} is not base64: {error}")))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        UpdateError::BadKey(format!(
            "{PUBLIC_KEY_ENV} decodes to {} bytes, not 32",
            bytes.len()
        ))
    })
}

/// Checks `signature_file` (the body of `SHA256SUMS.sig`) over `sums`.
pub fn verify(
    key: &VerifyingKey,
    sums: &[u8],
    signature_file: &[u8],
    version: &str,
) -> Result<(), UpdateError> {
    let bad = |reason: String| UpdateError::BadSignature {
        version: version.to_owned(),
        reason,
    };
    let text = std::str::from_utf8(signature_file)
        .map_err(|_| bad("SHA256SUMS.sig is not base64 text".into()))?;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| bad(format!("SHA256SUMS.sig is not base64: {error}")))?;
    let raw = <[u8; 64]>::try_from(raw.as_slice()).map_err(|_| {
        bad(format!(
            "SHA256SUMS.sig holds {} bytes, an ed25519 signature has 64",
            raw.len()
        ))
    })?;
    let signature = Signature::from_bytes(&raw);
    key.verify_strict(sums, &signature)
        .map_err(|_| bad("it was not made by the release key over this SHA256SUMS".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn sign(key: &SigningKey, message: &[u8]) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .encode(key.sign(message).to_bytes())
            .into_bytes()
    }

    #[test]
    fn a_good_signature_verifies_and_any_change_does_not() {
        let signing = SigningKey::from_bytes(&[7; 32]);
        let key = signing.verifying_key();
        let sums = b"abc  runner-linux-x86_64\n";
        let signature = sign(&signing, sums);
        verify(&key, sums, &signature, "1.0.0").expect("valid");

        let error = verify(&key, b"abd  runner-linux-x86_64\n", &signature, "1.0.0")
            .expect_err("other message");
        assert!(matches!(error, UpdateError::BadSignature { .. }), "{error}");

        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        assert!(verify(&other, sums, &signature, "1.0.0").is_err());
        assert!(verify(&key, sums, b"not base64!", "1.0.0").is_err());
        assert!(verify(&key, sums, b"AAAA", "1.0.0").is_err());
    }

    #[test]
    fn the_embedded_key_is_a_valid_point() {
        VerifyingKey::from_bytes(&RELEASE_PUBLIC_KEY).expect("embedded key decodes");
    }

    #[test]
    fn a_malformed_key_override_is_an_error() {
        assert!(decode_key("Iw3hD2O/nqvfmXM3+SnGv38AacGTSFqmRKq6/guH/SA=").is_ok());
        assert!(decode_key("AAAA").is_err());
        assert!(decode_key("***").is_err());
    }
}
