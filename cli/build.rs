//! Build-time settings of `runner`: two jobs, each in its own function.
//!
//! [`fast_spawn`] sets `cfg(fast_spawn)` where the runner starts a call's
//! process inside its cgroup with `clone3` (`src/exec/spawn/clone3.rs`): the
//! `clone3` feature (on by default) on x86_64 Linux, the one architecture its
//! trampoline is written for. Elsewhere, or built with
//! `--no-default-features`, only the plain `Command` path is compiled.
//!
//! [`release_key`] bakes in the release trust root:
//! `RUNNER_RELEASE_PUBKEY` at build time (base64 of the raw 32-byte Ed25519
//! public key; `scripts/make-release.sh` sets it from the signing key) becomes
//! the key `runner update` trusts. Without it the build trusts no key and
//! self-update is off. The repository's test key (its private half is in the
//! repository) is refused here unless the `test-release-key` feature is on,
//! so only a test build can trust it. See docs/self-update.md.

#![forbid(unsafe_code)]

use std::path::PathBuf;

use base64::Engine;

const KEY_ENV: &str = "RUNNER_RELEASE_PUBKEY";
const TEST_KEY_FILE: &str = "../installers/test-keys/release-test.pub.b64";

fn main() {
    fast_spawn();
    release_key();
}

fn fast_spawn() {
    println!("cargo::rustc-check-cfg=cfg(fast_spawn)");
    let target = |key: &str| std::env::var(key).unwrap_or_default();
    let feature = std::env::var_os("CARGO_FEATURE_CLONE3").is_some();
    if feature
        && target("CARGO_CFG_TARGET_OS") == "linux"
        && target("CARGO_CFG_TARGET_ARCH") == "x86_64"
    {
        println!("cargo::rustc-cfg=fast_spawn");
    }
}

fn release_key() {
    println!("cargo:rerun-if-env-changed={KEY_ENV}");
    println!("cargo:rerun-if-changed={TEST_KEY_FILE}");
    println!("cargo:rerun-if-changed=build.rs");

    let test_key = match std::fs::read_to_string(TEST_KEY_FILE) {
        Ok(text) => {
            decode(&text).unwrap_or_else(|reason| fail(&format!("{TEST_KEY_FILE}: {reason}")))
        }
        Err(error) => fail(&format!("cannot read {TEST_KEY_FILE}: {error}")),
    };
    let test_build = std::env::var_os("CARGO_FEATURE_TEST_RELEASE_KEY").is_some();
    let build_key = match std::env::var(KEY_ENV) {
        Ok(text) if !text.trim().is_empty() => {
            let key = decode(&text).unwrap_or_else(|reason| fail(&format!("{KEY_ENV}: {reason}")));
            if key == test_key && !test_build {
                fail(&format!(
                    "{KEY_ENV} is the repository's TEST key, whose private half anyone can read; \
                     only a test build (feature `test-release-key`) may trust it"
                ));
            }
            Some(key)
        }
        Ok(_) => None,
        Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => fail(&format!("{KEY_ENV} is not UTF-8")),
    };

    let source = format!(
        "/// `{KEY_ENV}` at build time, raw; `None` when the build was given no key.\n\
         pub const BUILD_KEY: Option<[u8; 32]> = {};\n\
         /// The repository's test key (`installers/test-keys/release-test.pub.b64`).\n\
         pub const TEST_KEY: [u8; 32] = {:?};\n",
        match build_key {
            Some(key) => format!("Some({key:?})"),
            None => "None".to_owned(),
        },
        test_key,
    );
    let out =
        PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_else(|| fail("OUT_DIR is not set")));
    if let Err(error) = std::fs::write(out.join("release_key.rs"), source) {
        fail(&format!(
            "cannot write {}: {error}",
            out.join("release_key.rs").display()
        ));
    }
}

fn decode(text: &str) -> Result<[u8; 32], String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|error| format!("not base64 of a raw Ed25519 public key: {error}"))?;
    <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
        format!(
            "decodes to {} bytes; a raw Ed25519 public key has 32",
            bytes.len()
        )
    })
}

fn fail(message: &str) -> ! {
    // A build script reports through its stderr and exit status.
    eprintln!("error: {message}");
    std::process::exit(1)
}
