//! `scripts/make-release.sh` and `installers/install.sh` against a real
//! local mirror over HTTP, installing into a throwaway ROOT.
//!
//! Also home of the release test helpers [`update`](super::update) uses: a
//! tiny static HTTP server and wrappers around the scripts.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use crate::support::runner_bin;

// ---------------------------------------------------------------------------
// Helpers shared with update.rs
// ---------------------------------------------------------------------------

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

/// TEST ONLY key pair checked in under installers/test-keys/.
pub fn test_private_key() -> PathBuf {
    repo_root().join("installers/test-keys/release-test.key")
}

pub fn test_public_pem() -> PathBuf {
    repo_root().join("installers/test-keys/release-test.pub.pem")
}

/// The version `runner --version` of this build prints.
pub const BUILT_VERSION: &str = env!("CARGO_PKG_VERSION");

pub fn asset_name() -> String {
    format!("runner-{}-{}", std::env::consts::OS, std::env::consts::ARCH)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

pub fn text(output: &Output) -> (Option<i32>, String, String) {
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `scripts/make-release.sh VERSION OUT --binary BINARY --key KEY`,
/// with `--test-key` when KEY is the repository's test key.
pub fn make_release(version: &str, out: &Path, binary: &Path, key: &Path) {
    let mut args = vec![];
    if key == test_private_key() {
        args.push("--test-key");
    }
    let (code, stdout, stderr) = run_make_release(version, out, binary, key, &args);
    assert_eq!(code, Some(0), "make-release.sh failed:\n{stdout}\n{stderr}");
}

/// `scripts/make-release.sh VERSION OUT --binary BINARY --key KEY EXTRA...`.
pub fn run_make_release(
    version: &str,
    out: &Path,
    binary: &Path,
    key: &Path,
    extra: &[&str],
) -> (Option<i32>, String, String) {
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/make-release.sh"))
        .arg(version)
        .arg(out)
        .arg("--binary")
        .arg(binary)
        .arg("--key")
        .arg(key)
        .args(extra)
        .output()
        .expect("run make-release.sh");
    text(&output)
}

/// A fresh Ed25519 key pair made with openssl: (private PEM, public PEM,
/// raw public key in base64).
pub fn other_key_pair(dir: &Path) -> (PathBuf, PathBuf, String) {
    let private = dir.join("other.key");
    let public = dir.join("other.pub.pem");
    let status = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&private)
        .status()
        .expect("openssl genpkey");
    assert!(status.success());
    let status = Command::new("openssl")
        .args(["pkey", "-pubout", "-in"])
        .arg(&private)
        .arg("-out")
        .arg(&public)
        .status()
        .expect("openssl pkey");
    assert!(status.success());
    let der = Command::new("openssl")
        .args(["pkey", "-pubin", "-outform", "DER", "-in"])
        .arg(&public)
        .output()
        .expect("openssl pkey der");
    assert!(der.status.success());
    // SubjectPublicKeyInfo for Ed25519 ends with the raw 32-byte key.
    let raw = &der.stdout[der.stdout.len() - 32..];
    use base64::Engine;
    (
        private,
        public,
        base64::engine::general_purpose::STANDARD.encode(raw),
    )
}

/// A static HTTP/1.1 file server over a directory on 127.0.0.1:0, on its
/// own threads so tests can run blocking child processes against it.
/// One request per connection (`Connection: close`), GET and HEAD.
pub struct MirrorServer {
    pub url: String,
    /// Path (without the leading '/') → Content-Length to announce instead
    /// of the real one, to simulate a connection cut mid-download.
    lies: Arc<Mutex<HashMap<String, u64>>>,
    stop: Arc<AtomicBool>,
    address: std::net::SocketAddr,
}

impl MirrorServer {
    pub fn start(root: &Path) -> MirrorServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let address = listener.local_addr().expect("addr");
        let lies: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (root, thread_lies, thread_stop) = (root.to_path_buf(), lies.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if thread_stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (root, lies) = (root.clone(), thread_lies.clone());
                std::thread::spawn(move || {
                    let _ = serve_one(stream, &root, &lies);
                });
            }
        });
        MirrorServer {
            url: format!("http://{address}"),
            lies,
            stop,
            address,
        }
    }

    /// Announce `length` bytes for `path` whatever the file holds.
    pub fn announce_length(&self, path: &str, length: u64) {
        self.lies
            .lock()
            .expect("lock")
            .insert(path.to_owned(), length);
    }
}

impl Drop for MirrorServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.address);
    }
}

fn serve_one(
    stream: TcpStream,
    root: &Path,
    lies: &Mutex<HashMap<String, u64>>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("/");
    let relative = target
        .split('?')
        .next()
        .unwrap_or("")
        .trim_start_matches('/')
        .to_owned();
    let mut stream = stream;
    let safe = !relative
        .split('/')
        .any(|part| part == ".." || part.is_empty())
        && !relative.contains('%');
    let path = root.join(&relative);
    let body = if safe && path.is_file() {
        std::fs::read(&path).ok()
    } else {
        None
    };
    match body {
        Some(body) => {
            let length = lies
                .lock()
                .expect("lock")
                .get(&relative)
                .copied()
                .unwrap_or(body.len() as u64);
            write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
            )?;
            if method != "HEAD" {
                stream.write_all(&body)?;
            }
        }
        None => {
            stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n")?;
        }
    }
    stream.flush()?;
    // Drain what the client may still send so the close is clean.
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = reader.read(&mut [0u8; 64]);
    Ok(())
}

// ---------------------------------------------------------------------------
// install.sh fixture
// ---------------------------------------------------------------------------

/// A mirror with the current build published as its own version, a
/// throwaway ROOT, and the server.
struct Fixture {
    dir: tempfile::TempDir,
    server: MirrorServer,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("root")).expect("root");
        make_release(
            BUILT_VERSION,
            &dir.path().join("mirror"),
            &runner_bin(),
            &test_private_key(),
        );
        let server = MirrorServer::start(&dir.path().join("mirror"));
        Fixture { dir, server }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn mirror(&self) -> PathBuf {
        self.dir.path().join("mirror")
    }

    fn installed(&self) -> PathBuf {
        self.root().join("usr/local/bin/runner")
    }

    /// `bash install.sh ARGS` (the copy the mirror serves, as users get it)
    /// with ROOT and MIRROR set and nothing inherited that the script reads.
    fn install(&self, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String, String) {
        self.install_script(&self.mirror().join("install.sh"), args, env)
    }

    fn install_script(
        &self,
        script: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Option<i32>, String, String) {
        let mut command = Command::new("bash");
        command
            .arg(script)
            .args(args)
            .env("ROOT", self.root())
            .env("MIRROR", &self.server.url)
            .env("RUNNER_CONFIG_DIR", self.dir.path().join("config"))
            .env("RUNNER_STATE_DIR", self.dir.path().join("state"))
            .env("TMPDIR", self.dir.path());
        for name in [
            "URL",
            "TOKEN",
            "RUN_AS",
            "PREFIX",
            "VERSION",
            "INSTALL_PUBKEY_PEM",
            "INSTALL_PUBKEY",
            "OPENSSL",
            "RUNNER_URL",
            "RUNNER_TOKEN",
        ] {
            command.env_remove(name);
        }
        for (name, value) in env {
            command.env(name, value);
        }
        text(&command.output().expect("run install.sh"))
    }

    /// Publishes the current build with junk appended (so the bytes differ
    /// from what is installed) as `version`.
    fn publish_changed(&self, version: &str) -> Vec<u8> {
        let mut bytes = std::fs::read(runner_bin()).expect("read runner");
        bytes.extend_from_slice(format!("\0test release {version}\n").as_bytes());
        let path = self.dir.path().join("published");
        std::fs::write(&path, &bytes).expect("write");
        make_release(version, &self.mirror(), &path, &test_private_key());
        bytes
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok())
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

#[test]
fn make_release_lays_out_a_signed_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("mirror");
    make_release("1.2.3", &out, &runner_bin(), &test_private_key());

    assert_eq!(
        std::fs::read_to_string(out.join("releases/latest")).expect("latest"),
        "1.2.3\n"
    );
    // install.sh is the repository's, with the signing key's public half
    // written into its one `embedded_public_key=""` line.
    let public_b64 =
        std::fs::read_to_string(repo_root().join("installers/test-keys/release-test.pub.b64"))
            .expect("pub.b64");
    let source =
        std::fs::read_to_string(repo_root().join("installers/install.sh")).expect("source");
    assert_eq!(
        std::fs::read_to_string(out.join("install.sh")).expect("install.sh"),
        source.replace(
            "\nembedded_public_key=\"\"\n",
            &format!("\nembedded_public_key=\"{}\"\n", public_b64.trim())
        )
    );
    let release = out.join("releases/download/1.2.3");
    let binary = std::fs::read(release.join(asset_name())).expect("binary");
    assert_eq!(binary, std::fs::read(runner_bin()).expect("runner"));
    let sums = std::fs::read(release.join("SHA256SUMS")).expect("sums");
    assert_eq!(
        String::from_utf8_lossy(&sums),
        format!("{}  {}\n", sha256_hex(&binary), asset_name())
    );

    // The runner's own verifier (embedded key) accepts it...
    let signature = std::fs::read(release.join("SHA256SUMS.sig")).expect("sig");
    let key = runner_cli::update::signature::built_in()
        .key()
        .expect("test builds trust the test key");
    runner_cli::update::signature::verify(&key, &sums, &signature, "1.2.3")
        .expect("signature verifies");
    // ...and so does openssl with the public PEM.
    use base64::Engine;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(String::from_utf8_lossy(&signature).trim())
        .expect("base64");
    assert_eq!(raw.len(), 64);
    std::fs::write(dir.path().join("sig.raw"), raw).expect("write");
    let status = Command::new("openssl")
        .args(["pkeyutl", "-verify", "-pubin", "-rawin", "-inkey"])
        .arg(test_public_pem())
        .arg("-in")
        .arg(release.join("SHA256SUMS"))
        .arg("-sigfile")
        .arg(dir.path().join("sig.raw"))
        .output()
        .expect("openssl verify");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    // A second release of the same version re-signs over every binary there.
    assert!(
        runner_cli::update::signature::verify(&key, b"other bytes", &signature, "1.2.3").is_err()
    );
}

#[test]
fn install_verifies_the_checksum_then_skips_when_current_and_refuses_a_tampered_binary() {
    let fixture = Fixture::new();
    let (code, stdout, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("checksum verified"), "{stderr}");
    assert!(
        stderr.contains(&format!("installed runner {BUILT_VERSION}")),
        "{stderr}"
    );
    let original = std::fs::read(runner_bin()).expect("runner");
    assert_eq!(
        std::fs::read(fixture.installed()).expect("installed"),
        original
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(fixture.installed())
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    // --no-service writes no settings.
    assert!(!fixture.root().join("etc/runner/env").exists());

    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("already at {BUILT_VERSION}")),
        "{stderr}"
    );
    assert!(!stderr.contains("downloading"), "{stderr}");

    // A newer release whose binary was changed after signing.
    fixture.publish_changed("99.0.0");
    let binary = fixture
        .mirror()
        .join("releases/download/99.0.0")
        .join(asset_name());
    let mut bytes = std::fs::read(&binary).expect("read");
    bytes[1000] ^= 0xff;
    std::fs::write(&binary, bytes).expect("tamper");
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("checksum mismatch"), "{stderr}");
    assert_eq!(
        std::fs::read(fixture.installed()).expect("installed"),
        original,
        "old binary intact"
    );
    assert_eq!(
        leftovers(&fixture.root().join("usr/local/bin")),
        Vec::<String>::new()
    );
}

#[test]
fn install_upgrades_to_a_newer_release_and_keeps_the_previous_binary() {
    let fixture = Fixture::new();
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let published = fixture.publish_changed("99.0.0");
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    // The published bytes report the build's version, which the script notes.
    assert!(stderr.contains("upgraded runner"), "{stderr}");
    assert_eq!(
        std::fs::read(fixture.installed()).expect("installed"),
        published
    );
    assert_eq!(
        std::fs::read(fixture.root().join("usr/local/bin/runner.previous")).expect("previous"),
        std::fs::read(runner_bin()).expect("runner")
    );
}

#[test]
fn make_release_needs_a_key_and_refuses_the_test_key_unless_told() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("mirror");
    let output = Command::new("bash")
        .arg(repo_root().join("scripts/make-release.sh"))
        .arg("1.2.3")
        .arg(&out)
        .arg("--binary")
        .arg(runner_bin())
        .output()
        .expect("run make-release.sh");
    let (code, _, stderr) = text(&output);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--key PRIVATE_KEY_PEM is required"),
        "{stderr}"
    );

    let (code, _, stderr) =
        run_make_release("1.2.3", &out, &runner_bin(), &test_private_key(), &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("TEST key"), "{stderr}");
    assert!(stderr.contains("--test-key"), "{stderr}");
    assert!(!out.join("releases").exists(), "nothing published");

    // Another key is fine, and the binary not trusting it is said.
    let (other_private, _, other_public_b64) = other_key_pair(dir.path());
    let (code, _, stderr) = run_make_release("1.2.3", &out, &runner_bin(), &other_private, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("does not trust this signing key"),
        "{stderr}"
    );
    let script = std::fs::read_to_string(out.join("install.sh")).expect("install.sh");
    assert!(
        script.contains(&format!("\nembedded_public_key=\"{other_public_b64}\"\n")),
        "the published install.sh trusts the signing key"
    );
}

#[test]
fn install_refuses_a_release_not_signed_by_the_key_it_was_published_with() {
    let fixture = Fixture::new();
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "signature over SHA256SUMS verified (the key this script was published with)"
        ),
        "{stderr}"
    );
    std::fs::remove_file(fixture.installed()).expect("remove");

    // The mirror's binary and SHA256SUMS swapped for a consistent pair
    // (the checksum alone would pass) that nobody signed.
    let release = fixture
        .mirror()
        .join(format!("releases/download/{BUILT_VERSION}"));
    let mut forged = std::fs::read(runner_bin()).expect("runner");
    forged.extend_from_slice(b"\0forged\n");
    std::fs::write(release.join(asset_name()), &forged).expect("write");
    std::fs::write(
        release.join("SHA256SUMS"),
        format!("{}  {}\n", sha256_hex(&forged), asset_name()),
    )
    .expect("write");
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("does not verify"), "{stderr}");
    assert!(
        !stderr.contains("downloading"),
        "the binary is not even fetched: {stderr}"
    );
    assert!(!fixture.installed().exists());

    // Unsigned: refused.
    std::fs::remove_file(release.join("SHA256SUMS.sig")).expect("remove");
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("refusing an unsigned release"), "{stderr}");
    assert!(!fixture.installed().exists());
}

#[test]
fn install_without_a_release_key_or_openssl_3_installs_nothing() {
    let fixture = Fixture::new();
    // The repository's own copy has no key written in.
    let (code, _, stderr) = fixture.install_script(
        &repo_root().join("installers/install.sh"),
        &["--no-service"],
        &[],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no release public key"), "{stderr}");
    assert!(!fixture.installed().exists());

    // Given the key in base64, it installs.
    let public_b64 =
        std::fs::read_to_string(repo_root().join("installers/test-keys/release-test.pub.b64"))
            .expect("pub.b64");
    let (code, _, stderr) = fixture.install_script(
        &repo_root().join("installers/install.sh"),
        &["--no-service"],
        &[("INSTALL_PUBKEY", public_b64.trim())],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("verified (INSTALL_PUBKEY)"), "{stderr}");
    std::fs::remove_file(fixture.installed()).expect("remove");

    // An openssl that cannot verify Ed25519 (here: one that says it is
    // LibreSSL) stops the install rather than skipping the check.
    let fake = fixture.dir.path().join("libressl");
    std::fs::write(&fake, "#!/bin/sh\necho 'LibreSSL 3.3.6'\n").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let (code, _, stderr) = fixture.install(
        &["--no-service"],
        &[("OPENSSL", fake.to_str().expect("utf-8 path"))],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("cannot verify Ed25519"), "{stderr}");
    assert!(!fixture.installed().exists());
}

#[test]
fn install_checks_the_signature_when_given_a_public_key() {
    let fixture = Fixture::new();
    let (code, _, stderr) = fixture.install(
        &["--no-service"],
        &[(
            "INSTALL_PUBKEY_PEM",
            test_public_pem().to_str().expect("utf-8 path"),
        )],
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("signature over SHA256SUMS verified (INSTALL_PUBKEY_PEM)"),
        "{stderr}"
    );

    let other = tempfile::tempdir().expect("tempdir");
    let (_, other_public, _) = other_key_pair(other.path());
    std::fs::remove_file(fixture.installed()).expect("remove");
    let (code, _, stderr) = fixture.install(
        &["--no-service"],
        &[(
            "INSTALL_PUBKEY_PEM",
            other_public.to_str().expect("utf-8 path"),
        )],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("does not verify"), "{stderr}");
    assert!(!fixture.installed().exists());
}

#[test]
fn uninstall_keeps_the_config_and_purge_removes_it() {
    let fixture = Fixture::new();
    let (code, _, stderr) = fixture.install(&["--no-service"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::create_dir_all(fixture.root().join("etc/runner")).expect("mkdir");
    std::fs::write(fixture.root().join("etc/runner/env"), "RUNNER_URL=x\n").expect("write");
    std::fs::create_dir_all(fixture.root().join("var/lib/runner/workspace")).expect("mkdir");

    let (code, _, stderr) = fixture.install(&["--uninstall"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!fixture.installed().exists());
    assert!(
        fixture.root().join("etc/runner/env").exists(),
        "--uninstall keeps the config"
    );
    assert!(
        fixture.root().join("var/lib/runner/workspace").exists(),
        "--uninstall keeps the data"
    );

    let (code, _, stderr) = fixture.install(&["--purge"], &[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!fixture.root().join("etc/runner").exists());
    assert!(!fixture.root().join("var/lib/runner").exists());
}

#[test]
fn install_with_the_service_writes_a_private_env_file_and_never_prints_the_token() {
    let fixture = Fixture::new();
    let token = "rt_test_token_do_not_print_7f3a9c";
    // No MIRROR: it defaults to URL, the relay serving the mirror.
    let mut command_env = vec![("TOKEN", token), ("URL", fixture.server.url.as_str())];
    command_env.push(("MIRROR", ""));
    let (code, stdout, stderr) = fixture.install(&[], &command_env);
    assert!(
        !stdout.contains(token) && !stderr.contains(token),
        "token printed:\n{stdout}\n{stderr}"
    );
    if stderr.contains("has no 'runner service install' command yet") {
        // The lead's `runner service install` is not in this build yet: the
        // script must stop with that message, before writing the token.
        assert_eq!(code, Some(1));
        return;
    }
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(fixture.installed().exists());
    let env_file = fixture.root().join("etc/runner/env");
    let contents = std::fs::read_to_string(&env_file).expect("env file");
    // `runner service install` rewrites the file in its own format (values
    // may be quoted); the settings are what matters.
    let setting = |name: &str| {
        contents
            .lines()
            .find_map(|line| line.strip_prefix(&format!("{name}=")))
            .map(|value| value.trim_matches('"').to_owned())
    };
    assert_eq!(
        setting("RUNNER_TOKEN").as_deref(),
        Some(token),
        "{contents}"
    );
    assert_eq!(
        setting("RUNNER_URL").as_deref(),
        Some(fixture.server.url.as_str()),
        "{contents}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&env_file)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn install_without_a_token_stops_before_downloading_unless_no_service() {
    let fixture = Fixture::new();
    let (code, _, stderr) = fixture.install(&[], &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("URL is not set"), "{stderr}");
    assert!(!fixture.installed().exists());
    let (code, _, stderr) = fixture.install(&[], &[("URL", "http://127.0.0.1:1")]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("TOKEN is not set"), "{stderr}");
    assert!(!fixture.installed().exists());
}

#[test]
fn shell_scripts_pass_shellcheck() {
    let found = Command::new("shellcheck").arg("--version").output();
    assert!(
        found.is_ok_and(|output| output.status.success()),
        "shellcheck is not installed: `apt-get install -y shellcheck` (.ci/run installs it); this test does not skip"
    );
    // The installer and every script of `scripts/`.
    let mut scripts = vec![repo_root().join("installers/install.sh")];
    let mut found: Vec<_> = std::fs::read_dir(repo_root().join("scripts"))
        .expect("scripts/")
        .map(|entry| entry.expect("an entry of scripts/").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sh"))
        .collect();
    found.sort();
    assert!(found.len() >= 5, "scripts/*.sh: {found:?}");
    scripts.extend(found);
    let output = Command::new("shellcheck")
        .args(&scripts)
        .output()
        .expect("run shellcheck");
    let (code, stdout, stderr) = text(&output);
    assert_eq!(code, Some(0), "shellcheck:\n{stdout}\n{stderr}");
}
