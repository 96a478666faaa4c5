//! The release trust root: the ed25519 public key this build of `runner`
//! trusts, and the check of `SHA256SUMS.sig` against it.
//!
//! The key comes from the build, never from the source: `build.rs` bakes in
//! `RUNNER_RELEASE_PUBKEY` as cargo saw it (`scripts/make-release.sh` sets it
//! from the signing key). A build given no key trusts none, and self-update
//! is off ([`TrustRoot::Off`]). The repository's test key, whose private
//! half anyone can read, is trusted only by test builds (the
//! `test-release-key` feature, which only the crate's own dev-dependency on
//! itself turns on).
//!
//! `SHA256SUMS.sig` is the 64-byte ed25519 signature over the exact bytes of
//! `SHA256SUMS`, base64-encoded on one line (what `scripts/make-release.sh`
//! writes with `openssl pkeyutl -sign -rawin`). Verification uses
//! `verify_strict`, which also refuses small-order keys and non-canonical
//! signatures, so one signature cannot be massaged to fit another message.

use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};

use super::UpdateError;

mod built {
    include!(concat!(env!("OUT_DIR"), "/release_key.rs"));
}

/// The repository's TEST release key (`installers/test-keys/`), raw. Its
/// private half is in the repository: outside a test build it is never
/// trusted; it is here so it can be recognised and refused.
pub const TEST_RELEASE_PUBLIC_KEY: [u8; 32] = built::TEST_KEY;

/// Whether this binary is a test build (trusts the test key).
pub const TEST_BUILD: bool = cfg!(feature = "test-release-key");

/// Test builds only: replaces the trusted key at run time (base64 of the
/// raw 32-byte key), or `off` to behave as a build without a key.
pub const TEST_KEY_ENV: &str = crate::env_vars::TEST_RELEASE_PUBKEY;

/// The key releases must be signed with, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustRoot {
    /// The key given to the build (`RUNNER_RELEASE_PUBKEY`).
    Release([u8; 32]),
    /// A test build's key: the repository's test key, or
    /// `RUNNER_TEST_RELEASE_PUBKEY`.
    Test([u8; 32]),
    /// No key: self-update is off.
    Off,
}

impl TrustRoot {
    /// The verifying key; [`UpdateError::NoReleaseKey`] when off.
    pub fn key(&self) -> Result<VerifyingKey, UpdateError> {
        match self {
            TrustRoot::Release(bytes) | TrustRoot::Test(bytes) => VerifyingKey::from_bytes(bytes)
                .map_err(|error| UpdateError::BadKey(error.to_string())),
            TrustRoot::Off => Err(UpdateError::NoReleaseKey),
        }
    }

    pub fn is_off(&self) -> bool {
        matches!(self, TrustRoot::Off)
    }

    /// One line for `runner doctor` and `runner update`.
    pub fn describe(&self) -> String {
        let encode = |bytes: &[u8; 32]| base64::engine::general_purpose::STANDARD.encode(bytes);
        match self {
            TrustRoot::Release(bytes) => format!(
                "on: releases must be signed by the release key {} (given to this build)",
                encode(bytes)
            ),
            TrustRoot::Test(bytes) if *bytes == TEST_RELEASE_PUBLIC_KEY => format!(
                "on, TEST BUILD: trusts the repository's test key {}, whose private half is public; never ship this binary",
                encode(bytes)
            ),
            TrustRoot::Test(bytes) => format!(
                "on, TEST BUILD: trusts the key {} from {TEST_KEY_ENV}; never ship this binary",
                encode(bytes)
            ),
            TrustRoot::Off => "off: this build trusts no release key (it was built without RUNNER_RELEASE_PUBKEY)".to_owned(),
        }
    }
}

/// The trust root of a build given `build_key` (`RUNNER_RELEASE_PUBKEY` at
/// build time), as a test build or not. The test key is no trust root
/// outside a test build, even when given as the build key (`build.rs`
/// refuses that build too).
pub fn decide(build_key: Option<[u8; 32]>, test_build: bool) -> TrustRoot {
    match build_key {
        Some(key) if key == TEST_RELEASE_PUBLIC_KEY && !test_build => TrustRoot::Off,
        Some(key) if key == TEST_RELEASE_PUBLIC_KEY => TrustRoot::Test(key),
        Some(key) => TrustRoot::Release(key),
        None if test_build => TrustRoot::Test(TEST_RELEASE_PUBLIC_KEY),
        None => TrustRoot::Off,
    }
}

/// This binary's trust root as built.
pub fn built_in() -> TrustRoot {
    decide(built::BUILD_KEY, TEST_BUILD)
}

/// The trust root in force: [`built_in`], which a test build lets
/// [`TEST_KEY_ENV`] replace. Every other build ignores the environment.
pub fn trust_root() -> Result<TrustRoot, UpdateError> {
    if TEST_BUILD {
        match std::env::var(TEST_KEY_ENV) {
            Ok(text) if text.trim() == "off" => return Ok(TrustRoot::Off),
            Ok(text) if !text.trim().is_empty() => return Ok(TrustRoot::Test(decode_key(&text)?)),
            _ => {}
        }
    }
    Ok(built_in())
}

/// The key releases must be signed with; [`UpdateError::NoReleaseKey`] when
/// this build has none.
pub fn release_key() -> Result<VerifyingKey, UpdateError> {
    trust_root()?.key()
}

fn decode_key(text: &str) -> Result<[u8; 32], UpdateError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| UpdateError::BadKey(format!("{TEST_KEY_ENV} is not base64: {error}")))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        UpdateError::BadKey(format!(
            "{TEST_KEY_ENV} decodes to {} bytes, not 32",
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

    /// The repository's test signing key, from its PKCS#8 PEM (a 16-byte
    /// header, then the 32-byte seed).
    fn repository_test_key() -> SigningKey {
        let pem = include_str!("../../../installers/test-keys/release-test.key");
        let body: String = pem
            .lines()
            .filter(|line| !line.starts_with("-----"))
            .collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .expect("PEM body is base64");
        assert_eq!(der.len(), 48, "an Ed25519 PKCS#8 key is 48 bytes");
        let seed = <[u8; 32]>::try_from(&der[16..]).expect("32-byte seed");
        SigningKey::from_bytes(&seed)
    }

    #[test]
    fn the_test_key_is_the_public_half_of_the_repository_key() {
        assert_eq!(
            repository_test_key().verifying_key().to_bytes(),
            TEST_RELEASE_PUBLIC_KEY
        );
        VerifyingKey::from_bytes(&TEST_RELEASE_PUBLIC_KEY).expect("a valid point");
    }

    #[test]
    fn a_release_signed_by_the_repository_test_key_is_refused_outside_test_builds() {
        let sums = b"abc  runner-linux-x86_64\n";
        let signature = sign(&repository_test_key(), sums);

        // Built without a key: self-update is off.
        let root = decide(None, false);
        assert_eq!(root, TrustRoot::Off);
        assert!(matches!(root.key(), Err(UpdateError::NoReleaseKey)));

        // Given the test key as if it were a release key: still off.
        assert_eq!(decide(Some(TEST_RELEASE_PUBLIC_KEY), false), TrustRoot::Off);

        // Built with a real release key: the test key's signature fails.
        let release = SigningKey::from_bytes(&[9; 32]).verifying_key().to_bytes();
        let root = decide(Some(release), false);
        assert_eq!(root, TrustRoot::Release(release));
        let error =
            verify(&root.key().expect("key"), sums, &signature, "9.9.9").expect_err("refused");
        assert!(matches!(error, UpdateError::BadSignature { .. }), "{error}");

        // Only a test build accepts it (so the refusals above are the key's doing).
        let root = decide(None, true);
        assert_eq!(root, TrustRoot::Test(TEST_RELEASE_PUBLIC_KEY));
        verify(&root.key().expect("key"), sums, &signature, "9.9.9").expect("test build");
    }

    #[test]
    fn these_unit_tests_run_as_a_test_build() {
        // The crate's dev-dependency on itself turns the feature on for tests.
        const { assert!(TEST_BUILD) };
        assert_eq!(built_in(), TrustRoot::Test(TEST_RELEASE_PUBLIC_KEY));
    }

    #[test]
    fn a_malformed_key_override_is_an_error() {
        assert!(decode_key("Iw3hD2O/nqvfmXM3+SnGv38AacGTSFqmRKq6/guH/SA=").is_ok());
        assert!(decode_key("AAAA").is_err());
        assert!(decode_key("***").is_err());
    }
}
