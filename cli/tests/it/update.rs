//! `runner update` against a real local mirror: a COPY of the built runner
//! updates itself (the build output is never modified), every way a release
//! can be bad leaves the copy untouched with its own message, and
//! `--rollback` puts the old binary back.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::{
    asset_name, make_release, other_key_pair, sha256_hex, test_private_key, text, MirrorServer,
    BUILT_VERSION,
};
use crate::support::{retry_while_busy, runner_bin};

/// The version published as "newer" (the bytes are this build's, plus junk).
const NEWER: &str = "99.1.0";
/// `exit::UPDATE_AVAILABLE` and `exit::UPDATE_FAILED`.
const UPDATE_AVAILABLE: i32 = 11;
const UPDATE_FAILED: i32 = 12;

fn runnable(original: &[u8]) -> Vec<u8> {
    let mut bytes = original.to_vec();
    bytes.extend_from_slice(format!("\0runner test release {NEWER}\n").as_bytes());
    bytes
}

struct Fixture {
    dir: tempfile::TempDir,
    /// The runner copy that updates itself.
    exe: PathBuf,
    /// Its bytes before any update.
    original: Vec<u8>,
    /// The bytes published as NEWER.
    published: Vec<u8>,
    server: MirrorServer,
}

impl Fixture {
    /// Publishes NEWER: `make(original)` gives the bytes, signed with `key`.
    fn new(make: impl FnOnce(&[u8]) -> Vec<u8>, key: &Path) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let exe = bin.join("runner");
        std::fs::copy(runner_bin(), &exe).expect("copy runner");
        let original = std::fs::read(&exe).expect("read");

        let published = make(&original);
        let staged = dir.path().join("to-publish");
        std::fs::write(&staged, &published).expect("write");
        make_release(NEWER, &dir.path().join("mirror"), &staged, key);
        let server = MirrorServer::start(&dir.path().join("mirror"));
        Fixture {
            dir,
            exe,
            original,
            published,
            server,
        }
    }

    /// A runnable release: this build with junk appended. The junk after
    /// the ELF/Mach-O image does not stop it from running, and makes
    /// "replaced" distinguishable from "untouched".
    fn signed() -> Fixture {
        Fixture::new(runnable, &test_private_key())
    }

    /// A release never meant to run: the first 256 KiB of this build (a
    /// real header, so only the check under test fails) plus junk. Keeps
    /// the many failure cases from hashing and serving a full debug build.
    fn stub(tweak: impl FnOnce(&mut Vec<u8>), key: &Path) -> Fixture {
        Fixture::new(
            |original| {
                let mut bytes = original[..original.len().min(256 * 1024)].to_vec();
                bytes.extend_from_slice(format!("\0runner test stub {NEWER}\n").as_bytes());
                tweak(&mut bytes);
                bytes
            },
            key,
        )
    }

    fn signed_stub() -> Fixture {
        Fixture::stub(|_| {}, &test_private_key())
    }

    fn release_dir(&self) -> PathBuf {
        self.dir.path().join("mirror/releases/download").join(NEWER)
    }

    fn previous(&self) -> PathBuf {
        self.dir.path().join("bin/runner.previous")
    }

    /// Runs the copy: `bin/runner ARGS`, isolated from the caller's config.
    fn runner(&self, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
        let mut command = Command::new(&self.exe);
        command
            .args(args)
            .env("RUNNER_CONFIG_DIR", self.dir.path().join("config"))
            .env("RUNNER_STATE_DIR", self.dir.path().join("state"))
            .env("NO_COLOR", "1")
            .env_remove("RUNNER_TEST_RELEASE_PUBKEY")
            .env_remove("RUNNER_UPDATE_MIRROR")
            .env_remove("RUNNER_URL");
        for (name, value) in env {
            command.env(name, value);
        }
        // The copy was written by this process (see `retry_while_busy`).
        text(&retry_while_busy(|| command.output()).expect("run the runner copy"))
    }

    fn update(&self, extra: &[&str]) -> (Option<i32>, String, String) {
        let mut args = vec!["update", "--yes", "--mirror", self.server.url.as_str()];
        args.extend_from_slice(extra);
        self.runner(&args, &[])
    }

    /// The copy is byte-for-byte what it was, with nothing left beside it.
    fn assert_untouched(&self, stderr: &str) {
        assert_eq!(
            std::fs::read(&self.exe).expect("read"),
            self.original,
            "binary changed: {stderr}"
        );
        assert!(
            !self.previous().exists(),
            "no runner.previous after a failed update"
        );
        let names: Vec<String> = std::fs::read_dir(self.dir.path().join("bin"))
            .expect("read bin")
            .filter_map(|entry| entry.ok())
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["runner".to_owned()], "staged files left behind");
    }

    fn assert_rejected(
        &self,
        (code, stdout, stderr): (Option<i32>, String, String),
        message: &str,
    ) {
        assert_eq!(code, Some(UPDATE_FAILED), "{stdout}\n{stderr}");
        assert!(stderr.contains(message), "wanted {message:?} in:\n{stderr}");
        assert!(stderr.contains("was left unchanged"), "{stderr}");
        self.assert_untouched(&stderr);
    }
}

#[test]
fn update_replaces_a_copy_with_the_published_bytes_and_rollback_restores_it() {
    let fixture = Fixture::signed();
    let (code, stdout, stderr) = fixture.update(&[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("from {BUILT_VERSION} to {NEWER}")),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&fixture.exe).expect("read"),
        fixture.published
    );
    assert_eq!(
        std::fs::read(fixture.previous()).expect("previous"),
        fixture.original
    );
    // The real build output is never touched.
    assert_eq!(std::fs::read(runner_bin()).expect("read"), fixture.original);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&fixture.exe)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    // The replaced file runs. It reports the build's version: the test
    // published the same build under a higher number (verification is about
    // bytes, not the version string).
    let (code, stdout, _) = fixture.runner(&["--version"], &[]);
    assert_eq!(
        (code, stdout.trim()),
        (Some(0), format!("runner {BUILT_VERSION}").as_str())
    );

    let (code, stdout, stderr) = fixture.runner(&["update", "--rollback"], &[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_eq!(std::fs::read(&fixture.exe).expect("read"), fixture.original);
    assert!(!fixture.previous().exists());

    let (code, _, stderr) = fixture.runner(&["update", "--rollback"], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("no previous binary to roll back to"),
        "{stderr}"
    );
}

#[test]
fn update_json_reports_what_was_installed() {
    let fixture = Fixture::signed_stub();
    let (code, stdout, stderr) = fixture.update(&["--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(report["updated"], true);
    assert_eq!(report["to_version"], NEWER);
    assert_eq!(report["sha256"], sha256_hex(&fixture.published));
}

#[test]
fn check_reports_an_available_update_with_its_own_exit_code() {
    let fixture = Fixture::signed_stub();
    let (code, _, stderr) =
        fixture.runner(&["update", "--check", "--mirror", &fixture.server.url], &[]);
    assert_eq!(code, Some(UPDATE_AVAILABLE), "{stderr}");
    assert!(
        stderr.contains(&format!("{BUILT_VERSION} -> {NEWER}")),
        "{stderr}"
    );

    let (code, stdout, stderr) = fixture.runner(
        &[
            "update",
            "--check",
            "--json",
            "--mirror",
            &fixture.server.url,
        ],
        &[],
    );
    assert_eq!(code, Some(UPDATE_AVAILABLE), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(report["update_available"], true);
    assert_eq!(report["current_version"], BUILT_VERSION);
    assert_eq!(report["latest_version"], NEWER);
    fixture.assert_untouched(&stderr);

    // Up to date: the mirror's latest is this build's version.
    std::fs::write(
        fixture.dir.path().join("mirror/releases/latest"),
        format!("{BUILT_VERSION}\n"),
    )
    .expect("write");
    let (code, _, stderr) =
        fixture.runner(&["update", "--check", "--mirror", &fixture.server.url], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("is up to date"), "{stderr}");
    let (code, _, stderr) = fixture.update(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    fixture.assert_untouched(&stderr);
}

#[test]
fn the_mirror_defaults_to_the_registered_relay_and_is_required() {
    let fixture = Fixture::signed_stub();
    let (code, _, stderr) = fixture.runner(&["update", "--check"], &[]);
    assert_eq!(code, Some(78), "{stderr}");
    assert!(stderr.contains("no mirror to update from"), "{stderr}");

    let config = fixture.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("mkdir");
    std::fs::write(
        config.join("config.yaml"),
        format!(
            "registration:\n  url: {}\n  environment_id: env_1\n  token_location: file\n",
            fixture.server.url
        ),
    )
    .expect("write config");
    let (code, stdout, stderr) = fixture.runner(&["update", "--check", "--json"], &[]);
    assert_eq!(code, Some(UPDATE_AVAILABLE), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(report["mirror"], fixture.server.url);

    // RUNNER_UPDATE_MIRROR beats the registration.
    let (code, _, stderr) = fixture.runner(
        &["update", "--check"],
        &[("RUNNER_UPDATE_MIRROR", "http://127.0.0.1:1")],
    );
    assert_eq!(code, Some(76), "{stderr}");
}

#[test]
fn a_bad_checksum_leaves_the_old_binary() {
    let fixture = Fixture::signed_stub();
    let binary = fixture.release_dir().join(asset_name());
    let mut bytes = std::fs::read(&binary).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&binary, bytes).expect("tamper");
    fixture.assert_rejected(fixture.update(&[]), "checksum mismatch");
}

#[test]
fn a_signature_by_another_key_leaves_the_old_binary() {
    let keys = tempfile::tempdir().expect("tempdir");
    let (other_private, _, other_public_b64) = other_key_pair(keys.path());
    let fixture = Fixture::stub(|_| {}, &other_private);
    fixture.assert_rejected(fixture.update(&[]), "bad signature on SHA256SUMS");

    // Test builds (these tests) accept a replacement key from the
    // environment; every other build ignores it (update/signature.rs).
    let args = ["update", "--yes", "--mirror", fixture.server.url.as_str()];
    let (code, _, stderr) =
        fixture.runner(&args, &[("RUNNER_TEST_RELEASE_PUBKEY", &other_public_b64)]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(
        std::fs::read(&fixture.exe).expect("read"),
        fixture.published
    );
}

/// `exit::UPDATE_OFF`.
const UPDATE_OFF: i32 = 14;

#[test]
fn a_build_without_a_release_key_says_self_update_is_off() {
    // `RUNNER_TEST_RELEASE_PUBKEY=off` makes this test build behave as one
    // built without RUNNER_RELEASE_PUBKEY (the decision itself is tested
    // in update/signature.rs).
    let fixture = Fixture::signed_stub();
    let off = [("RUNNER_TEST_RELEASE_PUBKEY", "off")];
    let url = fixture.server.url.as_str();

    let (code, stdout, stderr) = fixture.runner(&["update", "--yes", "--mirror", url], &off);
    assert_eq!(code, Some(UPDATE_OFF), "{stdout}\n{stderr}");
    assert!(stderr.contains("self-update is off"), "{stderr}");
    assert!(stderr.contains("RUNNER_RELEASE_PUBKEY"), "{stderr}");
    fixture.assert_untouched(&stderr);

    // --check still compares versions, and says updating is off.
    let (code, _, stderr) = fixture.runner(&["update", "--check", "--mirror", url], &off);
    assert_eq!(code, Some(UPDATE_AVAILABLE), "{stderr}");
    assert!(stderr.contains("self-update is off"), "{stderr}");
    let (_, stdout, _) = fixture.runner(&["update", "--check", "--json", "--mirror", url], &off);
    let json: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(json["self_update"], false, "{json}");

    // The service's root step does nothing and never blocks the start.
    let (code, _, stderr) = fixture.runner(&["update", "--service-step"], &off);
    assert_eq!(code, Some(0), "{stderr}");
    fixture.assert_untouched(&stderr);

    // doctor names it.
    let (_, stdout, _) = fixture.runner(&["doctor", "--json"], &off);
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let check = crate::support::doctor_check(&report, "self-update");
    assert_eq!(check["outcome"], "warn", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("off: this build trusts no release key"),
        "{check}"
    );

    // And this test build, as built, says it is one.
    let (_, stdout, _) = fixture.runner(&["doctor", "--json"], &[]);
    assert!(stdout.contains("TEST BUILD"), "{stdout}");
}

#[test]
fn a_sums_file_changed_after_signing_leaves_the_old_binary() {
    let fixture = Fixture::signed_stub();
    // Re-point the checksum at tampered bytes: the signature no longer fits.
    let binary = fixture.release_dir().join(asset_name());
    let mut bytes = std::fs::read(&binary).expect("read");
    bytes.push(0);
    std::fs::write(&binary, &bytes).expect("tamper");
    std::fs::write(
        fixture.release_dir().join("SHA256SUMS"),
        format!("{}  {}\n", sha256_hex(&bytes), asset_name()),
    )
    .expect("rewrite sums");
    fixture.assert_rejected(fixture.update(&[]), "bad signature on SHA256SUMS");
}

#[test]
fn a_missing_signature_leaves_the_old_binary() {
    let fixture = Fixture::signed_stub();
    std::fs::remove_file(fixture.release_dir().join("SHA256SUMS.sig")).expect("remove sig");
    fixture.assert_rejected(fixture.update(&[]), "has no signature");
}

#[test]
fn a_truncated_download_leaves_the_old_binary() {
    let fixture = Fixture::signed_stub();
    let binary = fixture.release_dir().join(asset_name());
    let full = std::fs::read(&binary).expect("read");
    std::fs::write(&binary, &full[..full.len() / 2]).expect("truncate");
    // The server announces the full length, then the connection ends early.
    fixture.server.announce_length(
        &format!("releases/download/{NEWER}/{}", asset_name()),
        full.len() as u64,
    );
    fixture.assert_rejected(fixture.update(&[]), "was truncated");
}

#[test]
fn a_binary_for_another_architecture_leaves_the_old_binary() {
    // Patch the ELF e_machine field (offset 18, little-endian) to another
    // architecture; the release is otherwise correctly signed.
    if std::env::consts::OS != "linux" {
        return;
    }
    let other: u16 = if std::env::consts::ARCH == "x86_64" {
        183
    } else {
        62
    };
    let fixture = Fixture::stub(
        |bytes| bytes[18..20].copy_from_slice(&other.to_le_bytes()),
        &test_private_key(),
    );
    fixture.assert_rejected(fixture.update(&[]), "is not an executable for this machine");
}

#[test]
fn a_release_without_a_build_for_this_machine_leaves_the_old_binary() {
    let fixture = Fixture::signed_stub();
    // A properly signed release that only has a build for another platform.
    let release = fixture.release_dir();
    std::fs::remove_dir_all(&release).expect("clean");
    std::fs::create_dir_all(&release).expect("mkdir");
    std::fs::write(release.join("runner-plan9-mips"), &fixture.published).expect("write");
    let sums = format!("{}  runner-plan9-mips\n", sha256_hex(&fixture.published));
    std::fs::write(release.join("SHA256SUMS"), &sums).expect("write sums");
    let signature = Command::new("openssl")
        .args(["pkeyutl", "-sign", "-rawin", "-inkey"])
        .arg(test_private_key())
        .arg("-in")
        .arg(release.join("SHA256SUMS"))
        .output()
        .expect("openssl sign");
    assert!(signature.status.success());
    use base64::Engine;
    std::fs::write(
        release.join("SHA256SUMS.sig"),
        base64::engine::general_purpose::STANDARD.encode(&signature.stdout),
    )
    .expect("write sig");
    fixture.assert_rejected(fixture.update(&[]), "has no line for");
}
