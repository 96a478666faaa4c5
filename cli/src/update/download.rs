//! HTTP access to a release mirror: small text files into memory, the
//! binary streamed to a file while it is hashed, with the announced length
//! checked against what arrived.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::{Progress, UpdateError};

/// Time to establish a TCP/TLS connection to the mirror.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request limit for the small files (`latest`, `SHA256SUMS`, `.sig`).
pub const SMALL_FILE_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest silence while a binary downloads before it is given up; a slow
/// but moving download is never cut off.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest small file accepted: a hostile mirror cannot fill memory.
pub const SMALL_FILE_LIMIT: usize = 64 * 1024;
/// Largest binary accepted.
pub const BINARY_LIMIT: u64 = 1024 * 1024 * 1024;

/// A mirror's base URL and the client that talks to it.
#[derive(Debug, Clone)]
pub struct Mirror {
    http: reqwest::Client,
    base: String,
}

/// What arrived when a binary was streamed to disk.
pub struct Downloaded {
    pub bytes: u64,
    pub sha256: String,
}

impl Mirror {
    /// `base` is the URL under which `releases/latest` lives, e.g. the relay's.
    pub fn new(base: &str) -> Result<Mirror, UpdateError> {
        let parsed = reqwest::Url::parse(base.trim())
            .map_err(|_| UpdateError::BadMirror(base.to_owned()))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(UpdateError::BadMirror(base.to_owned()));
        }
        // The process's one TLS trust configuration (system roots plus
        // --ca-file), so a relay with a private CA serves updates too. Even
        // with verification off, a forged download fails the signature check.
        let http = reqwest::Client::builder()
            .use_preconfigured_tls(crate::tls::client_config().as_ref().clone())
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|source| UpdateError::Http {
                url: base.to_owned(),
                source,
            })?;
        Ok(Mirror {
            http,
            base: parsed.as_str().trim_end_matches('/').to_owned(),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }

    /// Fetches a small file; `Ok(None)` when the mirror answers 404.
    pub async fn small_file(&self, path: &str) -> Result<Option<Vec<u8>>, UpdateError> {
        let url = self.url(path);
        let http_error = |source| UpdateError::Http {
            url: url.clone(),
            source,
        };
        let response = self
            .http
            .get(&url)
            .timeout(SMALL_FILE_TIMEOUT)
            .send()
            .await
            .map_err(http_error)?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !response.status().is_success() {
            return Err(UpdateError::Status {
                url,
                status: response.status().as_u16(),
            });
        }
        let expected = response.content_length();
        if expected.is_some_and(|length| length > SMALL_FILE_LIMIT as u64) {
            return Err(UpdateError::TooLarge {
                url,
                limit: SMALL_FILE_LIMIT as u64,
            });
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|source| truncated_or(&url, expected, body.len() as u64, source))?
        {
            body.extend_from_slice(&chunk);
            if body.len() > SMALL_FILE_LIMIT {
                return Err(UpdateError::TooLarge {
                    url,
                    limit: SMALL_FILE_LIMIT as u64,
                });
            }
        }
        check_length(&url, expected, body.len() as u64)?;
        Ok(Some(body))
    }

    /// Streams `path` into `file` (already open), hashing as it goes.
    pub async fn binary_to_file(
        &self,
        path: &str,
        file: &mut tokio::fs::File,
        file_path: &Path,
        progress: Progress,
    ) -> Result<Downloaded, UpdateError> {
        let url = self.url(path);
        let response = self
            .http
            .get(&url)
            .send()
            .await
            .map_err(|source| UpdateError::Http {
                url: url.clone(),
                source,
            })?;
        if !response.status().is_success() {
            return Err(UpdateError::Status {
                url,
                status: response.status().as_u16(),
            });
        }
        let expected = response.content_length();
        if expected.is_some_and(|length| length > BINARY_LIMIT) {
            return Err(UpdateError::TooLarge {
                url,
                limit: BINARY_LIMIT,
            });
        }
        let bar = progress_bar(progress, expected);
        let mut hasher = Sha256::new();
        let mut received: u64 = 0;
        let mut response = response;
        loop {
            let next = tokio::time::timeout(STALL_TIMEOUT, response.chunk())
                .await
                .map_err(|_| UpdateError::Stalled {
                    url: url.clone(),
                    seconds: STALL_TIMEOUT.as_secs(),
                    received,
                })?;
            let chunk = next.map_err(|source| truncated_or(&url, expected, received, source))?;
            let Some(chunk) = chunk else { break };
            received += chunk.len() as u64;
            if received > BINARY_LIMIT {
                return Err(UpdateError::TooLarge {
                    url,
                    limit: BINARY_LIMIT,
                });
            }
            hasher.update(&chunk);
            file.write_all(&chunk)
                .await
                .map_err(|source| UpdateError::Io {
                    path: file_path.to_path_buf(),
                    source,
                })?;
            if let Some(bar) = &bar {
                bar.set_position(received);
            }
        }
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        check_length(&url, expected, received)?;
        Ok(Downloaded {
            bytes: received,
            sha256: hex::encode(hasher.finalize()),
        })
    }
}

fn check_length(url: &str, expected: Option<u64>, received: u64) -> Result<(), UpdateError> {
    match expected {
        Some(expected) if expected != received => Err(UpdateError::Truncated {
            url: url.to_owned(),
            expected,
            received,
        }),
        _ => Ok(()),
    }
}

/// A body error before the announced length arrived is a truncation: say so
/// rather than pass on the transport's vaguer wording.
fn truncated_or(
    url: &str,
    expected: Option<u64>,
    received: u64,
    source: reqwest::Error,
) -> UpdateError {
    match expected {
        Some(expected) if received < expected => UpdateError::Truncated {
            url: url.to_owned(),
            expected,
            received,
        },
        _ => UpdateError::Http {
            url: url.to_owned(),
            source,
        },
    }
}

fn progress_bar(progress: Progress, length: Option<u64>) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    let show = match progress {
        Progress::Hidden => false,
        Progress::OnTerminal => std::io::stderr().is_terminal(),
    };
    if !show {
        return None;
    }
    let bar = match length {
        Some(length) => indicatif::ProgressBar::new(length),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    let template = if length.is_some() {
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
    } else {
        "{spinner} {bytes} {bytes_per_sec}"
    };
    // The templates are constants; a bad one falls back to the default style.
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}
