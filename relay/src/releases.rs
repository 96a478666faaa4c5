//! The release mirror the relay can serve (`--releases-dir DIR`), so that
//! `install.sh` and `runner update` need nothing but the relay's URL.
//!
//! Layout of `DIR`, as `scripts/make-release.sh` writes it:
//!
//! ```text
//! install.sh
//! releases/latest                              one line: the version
//! releases/download/<version>/runner-<os>-<arch>
//! releases/download/<version>/SHA256SUMS
//! releases/download/<version>/SHA256SUMS.sig   base64 ed25519 signature
//! ```
//!
//! Only those names are served: each path segment from the URL must be a
//! plain file or version name (no `..`, no `/` once decoded, no leading dot),
//! and the resolved file must lie inside `DIR` after symlinks are followed.
//! Anything else is 400 (a malformed name) or 404. The relay does not need to
//! be trusted for integrity: runners verify the signature themselves.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use runner_proto::version;
use tokio::io::AsyncReadExt;

/// Size of the pieces a file is streamed in.
const CHUNK: usize = 64 * 1024;

/// Routes `/install.sh`, `/releases/latest` and
/// `/releases/download/{version}/{file}` over the mirror in `dir`. Merge it
/// into the relay's router at the root.
pub fn router(dir: PathBuf) -> Router {
    Router::new()
        .route("/install.sh", get(install_script))
        .route("/releases/latest", get(latest))
        .route("/releases/download/{version}/{file}", get(download))
        .with_state(Arc::new(dir))
}

/// The version in `dir/releases/latest`, when it exists and is a valid
/// version: what the relay puts in `HeartbeatAck.latest_version` (when newer
/// than the runner's, see [`is_newer`]). A small synchronous read; callers
/// on a hot path should cache it for a few seconds.
/// How long [`LatestVersion`] trusts what it read.
const LATEST_CACHE: std::time::Duration = std::time::Duration::from_secs(30);

/// [`latest_version`] behind a short cache: heartbeats ask for it often.
#[derive(Debug)]
pub struct LatestVersion {
    dir: PathBuf,
    cached: std::sync::Mutex<Option<(std::time::Instant, Option<String>)>>,
}

impl LatestVersion {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            cached: std::sync::Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The newest published version, re-read at most every 30 s.
    pub fn get(&self) -> Option<String> {
        // A poisoned lock only means a reader panicked; the cache is a hint.
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        match &*cached {
            Some((read_at, version)) if read_at.elapsed() < LATEST_CACHE => version.clone(),
            _ => {
                let version = latest_version(&self.dir);
                *cached = Some((std::time::Instant::now(), version.clone()));
                version
            }
        }
    }

    /// The version to offer a runner at `current`, if newer.
    pub fn offer(&self, current: &str) -> Option<String> {
        self.get().filter(|latest| is_newer(latest, current))
    }
}

pub fn latest_version(dir: &Path) -> Option<String> {
    let path = dir.join("releases").join("latest");
    let text = std::fs::read_to_string(&path).ok()?;
    let version = text.trim();
    if version::is_valid(version) {
        Some(version.to_owned())
    } else {
        tracing::warn!(path = %path.display(), "releases/latest does not hold a valid version; ignoring it");
        None
    }
}

pub use runner_proto::version::is_newer;

async fn install_script(State(dir): State<Arc<PathBuf>>) -> Response {
    serve(
        &dir,
        &["install.sh"],
        "text/x-shellscript; charset=utf-8",
        "no-cache",
    )
    .await
}

async fn latest(State(dir): State<Arc<PathBuf>>) -> Response {
    // Changes with every release: clients must always ask again.
    serve(
        &dir,
        &["releases", "latest"],
        "text/plain; charset=utf-8",
        "no-cache",
    )
    .await
}

async fn download(
    State(dir): State<Arc<PathBuf>>,
    UrlPath((version, file)): UrlPath<(String, String)>,
) -> Response {
    if !version::is_valid(&version) || !is_safe_segment(&file) {
        return (StatusCode::BAD_REQUEST, "not a release file name\n").into_response();
    }
    let content_type = match file.as_str() {
        "SHA256SUMS" | "SHA256SUMS.sig" => "text/plain; charset=utf-8",
        name if name.starts_with("runner-") => "application/octet-stream",
        _ => return (StatusCode::NOT_FOUND, "no such release file\n").into_response(),
    };
    serve(
        &dir,
        &["releases", "download", &version, &file],
        content_type,
        "no-cache",
    )
    .await
}

/// One URL path segment that may name a file: no separators, no dot files
/// (so no `.` or `..`), a conservative character set.
fn is_safe_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= 128
        && !segment.starts_with('.')
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
}

async fn serve(
    dir: &Path,
    segments: &[&str],
    content_type: &'static str,
    cache: &'static str,
) -> Response {
    match open_inside(dir, segments).await {
        Ok(Some((file, length))) => {
            let stream = futures_util::stream::unfold(file, |mut file| async move {
                let mut buffer = vec![0u8; CHUNK];
                match file.read(&mut buffer).await {
                    Ok(0) => None,
                    Ok(read) => {
                        buffer.truncate(read);
                        Some((Ok(Bytes::from(buffer)), file))
                    }
                    Err(error) => Some((Err(error), file)),
                }
            });
            let mut response = Body::from_stream(stream).into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            response
        }
        Ok(None) => (StatusCode::NOT_FOUND, "not found\n").into_response(),
        Err(error) => {
            tracing::warn!(dir = %dir.display(), %error, "cannot serve a release file");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot read the release file\n",
            )
                .into_response()
        }
    }
}

/// Opens `dir/segments…` when it is a regular file whose real path (symlinks
/// resolved) is inside `dir`'s real path; `Ok(None)` for anything missing or
/// outside. Segments are already checked to be plain names.
async fn open_inside(
    dir: &Path,
    segments: &[&str],
) -> std::io::Result<Option<(tokio::fs::File, u64)>> {
    let root = match tokio::fs::canonicalize(dir).await {
        Ok(root) => root,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            tracing::warn!(dir = %dir.display(), "the releases directory does not exist");
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let mut path = root.clone();
    path.extend(segments);
    let real = match tokio::fs::canonicalize(&path).await {
        Ok(real) => real,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    if !real.starts_with(&root) {
        tracing::warn!(path = %path.display(), target = %real.display(), "refusing a release file that links outside the releases directory");
        return Ok(None);
    }
    // Opening the resolved path: no link is followed after the check.
    let file = tokio::fs::File::open(&real).await?;
    let meta = file.metadata().await?;
    if !meta.is_file() {
        return Ok(None);
    }
    Ok(Some((file, meta.len())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A mirror dir with one release, and the router serving it on 127.0.0.1:0.
    struct Served {
        dir: tempfile::TempDir,
        base: String,
    }

    async fn serve_mirror() -> Served {
        let dir = tempfile::tempdir().expect("tempdir");
        let release = dir.path().join("releases/download/0.2.0");
        std::fs::create_dir_all(&release).expect("mkdir");
        std::fs::write(dir.path().join("install.sh"), "#!/bin/sh\necho hi\n").expect("write");
        std::fs::write(dir.path().join("releases/latest"), "0.2.0\n").expect("write");
        std::fs::write(release.join("runner-linux-x86_64"), vec![7u8; 200_000]).expect("write");
        std::fs::write(release.join("SHA256SUMS"), "abc  runner-linux-x86_64\n").expect("write");
        std::fs::write(release.join("SHA256SUMS.sig"), "c2ln\n").expect("write");
        std::fs::write(dir.path().join("secret.txt"), "not for download").expect("write");

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let app = router(dir.path().to_path_buf());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Served { dir, base }
    }

    async fn get(url: &str) -> (u16, String, Vec<u8>) {
        let response = reqwest::get(url).await.expect("request");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let body = response.bytes().await.expect("body").to_vec();
        (status, content_type, body)
    }

    /// Sends `target` exactly as written (no client-side normalisation of
    /// `..`) and returns the status code.
    async fn raw_status(base: &str, target: &str) -> u16 {
        let address = base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(address)
            .await
            .expect("connect");
        let request =
            format!("GET {target} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        let text = String::from_utf8_lossy(&answer);
        text.split_whitespace()
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {text:?}"))
    }

    #[tokio::test]
    async fn serves_latest_install_script_and_downloads_with_content_types() {
        let served = serve_mirror().await;
        let (status, content_type, body) = get(&format!("{}/releases/latest", served.base)).await;
        assert_eq!((status, body.as_slice()), (200, b"0.2.0\n".as_slice()));
        assert!(content_type.starts_with("text/plain"), "{content_type}");

        let (status, content_type, body) = get(&format!("{}/install.sh", served.base)).await;
        assert_eq!(status, 200);
        assert_eq!(content_type, "text/x-shellscript; charset=utf-8");
        assert!(body.starts_with(b"#!/bin/sh"));

        let url = format!(
            "{}/releases/download/0.2.0/runner-linux-x86_64",
            served.base
        );
        let response = reqwest::get(&url).await.expect("request");
        assert_eq!(response.status(), 200);
        assert_eq!(response.content_length(), Some(200_000));
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/octet-stream"
        );
        assert_eq!(
            response.bytes().await.expect("body").as_ref(),
            vec![7u8; 200_000].as_slice()
        );

        let (status, content_type, _) = get(&format!(
            "{}/releases/download/0.2.0/SHA256SUMS",
            served.base
        ))
        .await;
        assert_eq!(status, 200);
        assert!(content_type.starts_with("text/plain"), "{content_type}");
        let (status, _, body) = get(&format!(
            "{}/releases/download/0.2.0/SHA256SUMS.sig",
            served.base
        ))
        .await;
        assert_eq!((status, body.as_slice()), (200, b"c2ln\n".as_slice()));

        assert_eq!(latest_version(served.dir.path()).as_deref(), Some("0.2.0"));
    }

    #[tokio::test]
    async fn missing_files_and_other_names_are_404() {
        let served = serve_mirror().await;
        for path in [
            "/releases/download/0.3.0/runner-linux-x86_64",
            "/releases/download/0.2.0/runner-macos-aarch64",
            "/releases/download/0.2.0/notes.txt",
            "/secret.txt",
            "/releases",
            "/releases/download/0.2.0",
        ] {
            let (status, _, _) = get(&format!("{}{path}", served.base)).await;
            assert_eq!(status, 404, "{path}");
        }
    }

    #[tokio::test]
    async fn traversal_plain_or_encoded_never_leaves_the_directory() {
        let served = serve_mirror().await;
        for target in [
            "/releases/download/../../secret.txt",
            "/releases/download/..%2f..%2f/secret.txt",
            "/releases/download/%2e%2e/secret.txt",
            "/releases/download/0.2.0/..%2f..%2f..%2fsecret.txt",
            "/releases/download/0.2.0/%2e%2e%2f%2e%2e%2f%2e%2e%2fsecret.txt",
            "/releases/download/0.2.0/.hidden",
            "/releases/download/%2Fetc/passwd",
            "/releases/download/0.2.0/%2Fetc%2Fpasswd",
            "/releases/download/0.2.0/runner-%00",
        ] {
            let status = raw_status(&served.base, target).await;
            assert!(status == 400 || status == 404, "{target}: {status}");
        }
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_symlink_out_of_the_directory_is_refused_and_one_inside_is_served() {
        let served = serve_mirror().await;
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("payload"), "outside").expect("write");
        let release = served.dir.path().join("releases/download/0.2.0");
        std::os::unix::fs::symlink(
            outside.path().join("payload"),
            release.join("runner-linux-aarch64"),
        )
        .expect("symlink");
        std::os::unix::fs::symlink(
            release.join("runner-linux-x86_64"),
            release.join("runner-linux-riscv64"),
        )
        .expect("symlink");
        let (status, _, _) = get(&format!(
            "{}/releases/download/0.2.0/runner-linux-aarch64",
            served.base
        ))
        .await;
        assert_eq!(status, 404);
        let (status, _, body) = get(&format!(
            "{}/releases/download/0.2.0/runner-linux-riscv64",
            served.base
        ))
        .await;
        assert_eq!((status, body.len()), (200, 200_000));
    }

    #[test]
    fn latest_version_ignores_missing_or_unsafe_contents() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(latest_version(dir.path()), None);
        std::fs::create_dir_all(dir.path().join("releases")).expect("mkdir");
        std::fs::write(dir.path().join("releases/latest"), "../../etc\n").expect("write");
        assert_eq!(latest_version(dir.path()), None);
        std::fs::write(dir.path().join("releases/latest"), " 1.4.0-rc.1\n").expect("write");
        assert_eq!(latest_version(dir.path()).as_deref(), Some("1.4.0-rc.1"));
    }
}
