//! The organisation's approval webhook (`serve --approval-webhook`): each
//! new approval is posted as JSON a chat tool can show as is, signed with
//! HMAC-SHA256 so the receiver knows it came from this relay, and retried
//! with backoff; the delivery state is kept on the approval
//! (docs/approvals.md).
//!
//! Signature: `X-Runner-Signature-256: sha256=<hex>` over
//! `<X-Runner-Timestamp>.<body>` with the shared secret, so a receiver can
//! refuse old deliveries replayed to it.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use hmac::{Hmac, Mac};
use runner_proto::approvals::{ApprovalWebhook, DeliveryState, Notification};
use runner_proto::sessions::MemberRef;
use sha2::Sha256;

use crate::approvals::{ApprovalRecord, ApprovalWaiters};
use crate::clock::rfc3339;
use crate::secret::Secret;
use crate::store::Store;

/// The event of a new approval.
pub const EVENT_REQUESTED: &str = "approval.requested";
/// Header naming the event.
pub const EVENT_HEADER: &str = "x-runner-event";
/// Header with the Unix time the signature covers.
pub const TIMESTAMP_HEADER: &str = "x-runner-timestamp";
/// Header with the signature.
pub const SIGNATURE_HEADER: &str = "x-runner-signature-256";
/// Attempts before a delivery is reported failed.
const ATTEMPTS: u32 = 6;
/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest error text kept on the approval.
const MAX_ERROR_CHARS: usize = 300;

/// Where approvals are announced, and the secret that signs them.
pub struct Webhook {
    url: reqwest::Url,
    secret: Secret,
    client: reqwest::Client,
    /// Wait before the second attempt; doubled for each one after.
    first_retry: Duration,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The origin only: chat webhooks carry their token in the path.
        f.debug_struct("Webhook")
            .field("origin", &self.origin())
            .finish_non_exhaustive()
    }
}

impl Webhook {
    /// Scheme, host and port: what may be shown of the URL (chat webhooks
    /// carry their token in the path).
    pub fn origin(&self) -> String {
        self.url.origin().ascii_serialization()
    }

    /// The webhook at `url`, signing with the secret in `secret_file` (only
    /// its owner may read it: it is a credential).
    pub fn load(url: &str, secret_file: &Path) -> anyhow::Result<Self> {
        let secret = read_secret(secret_file)?;
        Self::new(url, secret)
    }

    pub fn new(url: &str, secret: Secret) -> anyhow::Result<Self> {
        // Not echoed: the URL may hold the receiver's token.
        let url = reqwest::Url::parse(url).context("--approval-webhook is not a URL")?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("--approval-webhook must be an http:// or https:// URL");
        }
        if !url.username().is_empty() || url.password().is_some() {
            bail!("--approval-webhook must not carry credentials: the signature authenticates the relay");
        }
        if secret.expose().len() < 16 {
            bail!("the approval webhook secret must be at least 16 characters");
        }
        let client = reqwest::Client::builder()
            .timeout(ATTEMPT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("could not build the webhook's HTTP client")?;
        Ok(Self {
            url,
            secret,
            client,
            first_retry: Duration::from_secs(1),
        })
    }

    /// Retries start after `first_retry` (tests shorten it).
    pub fn with_first_retry(mut self, first_retry: Duration) -> Self {
        self.first_retry = first_retry;
        self
    }

    /// Posts a new approval from a task of its own, recording each
    /// attempt's outcome on the approval.
    pub fn announce(
        self: &Arc<Self>,
        store: Arc<dyn Store>,
        waiters: Arc<ApprovalWaiters>,
        approval: &ApprovalRecord,
        link: &str,
    ) {
        let payload = payload(approval, link);
        let webhook = self.clone();
        let id = approval.id.clone();
        tokio::spawn(async move {
            let body = serde_json::to_vec(&payload).unwrap_or_default();
            let mut notification = Notification {
                state: DeliveryState::Pending,
                attempts: 0,
                last_error: None,
            };
            let mut wait = webhook.first_retry;
            for attempt in 1..=ATTEMPTS {
                notification.attempts = attempt;
                match webhook.post(&body).await {
                    Ok(()) => {
                        notification.state = DeliveryState::Delivered;
                        notification.last_error = None;
                    }
                    Err(error) => {
                        tracing::warn!(approval_id = %id, attempt, %error, "approval webhook delivery failed");
                        notification.last_error =
                            Some(error.chars().take(MAX_ERROR_CHARS).collect());
                        if attempt == ATTEMPTS {
                            notification.state = DeliveryState::Failed;
                        }
                    }
                }
                if let Err(error) = store.set_approval_notification(&id, &notification).await {
                    tracing::warn!(approval_id = %id, %error, "could not record the webhook delivery");
                }
                waiters.notify();
                if notification.state != DeliveryState::Pending {
                    return;
                }
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
            }
        });
    }

    async fn post(&self, body: &[u8]) -> Result<(), String> {
        let timestamp = time::OffsetDateTime::now_utc().unix_timestamp().to_string();
        let response = self
            .client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(EVENT_HEADER, EVENT_REQUESTED)
            .header(TIMESTAMP_HEADER, &timestamp)
            .header(SIGNATURE_HEADER, signature(&self.secret, &timestamp, body))
            .body(body.to_vec())
            .send()
            .await
            // Without the URL: it may carry a token of the receiver's.
            .map_err(|error| format!("could not reach the receiver: {}", error.without_url()))?;
        let status = response.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("the receiver answered {status}"))
        }
    }
}

/// `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
pub fn signature(secret: &Secret, timestamp: &str, body: &[u8]) -> String {
    // HMAC takes a key of any length: `new_from_slice` cannot fail.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
        .expect("HMAC accepts any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// What a receiver gets: the facts an approver needs, and a line to post.
fn payload(approval: &ApprovalRecord, link: &str) -> ApprovalWebhook {
    let command = (approval.tool == runner_proto::tools::SHELL)
        .then(|| approval.args.get("command").and_then(|c| c.as_str()))
        .flatten()
        .map(str::to_owned);
    let what = command.as_deref().map_or_else(
        || format!("tool `{}`", approval.tool),
        |command| format!("`{command}`"),
    );
    ApprovalWebhook {
        event: EVENT_REQUESTED.to_owned(),
        text: format!(
            "{} asks to run {what} on {} ({}). Approve or deny before {}: {link}",
            approval.requested_by.name,
            approval.environment_name,
            approval.rule,
            rfc3339(approval.expires_at)
        ),
        approval_id: approval.id.clone(),
        environment_id: approval.environment_id.clone(),
        environment_name: approval.environment_name.clone(),
        tool: approval.tool.clone(),
        command,
        rule: approval.rule.clone(),
        requested_by: MemberRef {
            id: approval.requested_by.id.clone(),
            name: approval.requested_by.name.clone(),
        },
        expires_at: rfc3339(approval.expires_at),
        link: link.to_owned(),
    }
}

/// The secret in `path`: refused when others may read the file.
fn read_secret(path: &Path) -> anyhow::Result<Secret> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = fs_err::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            bail!(
                "{} holds a secret but others may read it (mode {:o}): chmod 600 it",
                path.display(),
                mode & 0o777
            );
        }
    }
    let text = fs_err::read_to_string(path)?;
    Ok(Secret::new(text.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_covers_timestamp_and_body() {
        let secret = Secret::new("0123456789abcdef");
        let signed = signature(&secret, "1700000000", b"{\"a\":1}");
        assert!(signed.starts_with("sha256="));
        assert_eq!(signed.len(), "sha256=".len() + 64);
        assert_eq!(signed, signature(&secret, "1700000000", b"{\"a\":1}"));
        assert_ne!(signed, signature(&secret, "1700000001", b"{\"a\":1}"));
        assert_ne!(signed, signature(&secret, "1700000000", b"{\"a\":2}"));
        assert_ne!(
            signed,
            signature(&Secret::new("another secret!!"), "1700000000", b"{\"a\":1}")
        );
    }

    #[test]
    fn bad_configuration_is_refused_and_debug_hides_the_secret() {
        let secret = || Secret::new("0123456789abcdef-secret");
        assert!(Webhook::new("ftp://x", secret()).is_err());
        assert!(Webhook::new("http://u:p@127.0.0.1/", secret()).is_err());
        assert!(Webhook::new("http://127.0.0.1/", Secret::new("short")).is_err());
        let webhook = Webhook::new("http://127.0.0.1:9/hook", secret()).expect("valid");
        assert!(!format!("{webhook:?}").contains("0123456789abcdef"));
        // Chat webhooks carry a token in the path: neither Debug nor an
        // error shows it.
        let token = "T000/B000/XXXXsecretpath";
        let webhook =
            Webhook::new(&format!("https://hooks.example.test/{token}"), secret()).expect("valid");
        let shown = format!("{webhook:?}");
        assert!(
            shown.contains("hooks.example.test") && !shown.contains(token),
            "{shown}"
        );
        let error = Webhook::new(&format!("not a url {token}"), secret()).expect_err("bad");
        assert!(!format!("{error:#}").contains(token), "{error:#}");
    }

    #[cfg(unix)]
    #[test]
    fn a_secret_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("secret");
        std::fs::write(&path, "0123456789abcdef-secret\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = Webhook::load("http://127.0.0.1:9/", &path).expect_err("readable");
        assert!(error.to_string().contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        Webhook::load("http://127.0.0.1:9/", &path).expect("private");
    }
}
