//! The certificate chain a TLS server actually presents, recorded for
//! `runner doctor`.
//!
//! A TLS-intercepting proxy answers the handshake itself, with a certificate
//! from its own CA: the only way to see that is to look at the certificate
//! that arrived. So doctor makes its own handshake over the same path the
//! WebSocket takes and this module records the chain whether or not it
//! verifies, judged by the very verifier the runner uses
//! ([`super::verifier`]), then names the leaf's issuer and subject.

use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use x509_cert::der::Decode;

/// What the server presented, and what this process's trust settings made
/// of it.
#[derive(Debug)]
pub struct PeerCertificates {
    /// Leaf first, then the intermediates, as sent.
    pub chain: Vec<CertificateDer<'static>>,
    /// `Ok` when the chain verified and the handshake completed (always
    /// verified with `--insecure-skip-tls-verify`).
    pub verdict: Result<(), rustls::Error>,
}

/// The names on one certificate, as RFC 4514 strings (`CN=…,O=…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub subject: String,
    pub issuer: String,
}

/// Handshakes with `host` over `stream` and returns the chain it presented.
/// An error means no certificate arrived (the peer does not speak TLS, or
/// hung up first); a certificate that does not verify is a `verdict`.
pub async fn handshake<S>(stream: S, host: &str) -> Result<PeerCertificates>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let recorder = Arc::new(Recorder {
        inner: super::verifier(&super::options())?,
        seen: Mutex::new(None),
    });
    let mut config = rustls::ClientConfig::builder_with_provider(super::provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .dangerous()
        .with_custom_certificate_verifier(recorder.clone())
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(host.to_owned())
        .with_context(|| format!("{host:?} is not a valid TLS server name"))?;
    let outcome = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, stream)
        .await;
    let seen = recorder
        .seen
        .lock()
        .map(|mut seen| seen.take())
        .unwrap_or_default();
    match (outcome, seen) {
        (Ok(mut stream), Some(seen)) => {
            // Polite close; the answer does not matter.
            let _ = stream.shutdown().await;
            Ok(PeerCertificates {
                chain: seen.chain,
                verdict: seen.verdict,
            })
        }
        (Err(error), Some(seen)) => {
            // The verifier's own verdict explains a rejected chain best; a
            // handshake that failed after a good chain has its own error.
            let verdict = match seen.verdict {
                Err(rejected) => Err(rejected),
                Ok(()) => Err(error
                    .get_ref()
                    .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                    .cloned()
                    .unwrap_or_else(|| rustls::Error::General(error.to_string()))),
            };
            Ok(PeerCertificates {
                chain: seen.chain,
                verdict,
            })
        }
        (Err(error), None) => {
            Err(anyhow::Error::from(error).context(format!("TLS handshake with {host}")))
        }
        // rustls cannot complete a client handshake without asking the
        // verifier, which records what it was shown.
        (Ok(_), None) => anyhow::bail!("TLS handshake with {host} completed without a certificate"),
    }
}

/// The subject and issuer of a DER certificate; `None` if it is not X.509.
pub fn names(certificate: &CertificateDer<'_>) -> Option<Names> {
    let parsed = x509_cert::Certificate::from_der(certificate.as_ref()).ok()?;
    Some(Names {
        subject: parsed.tbs_certificate.subject.to_string(),
        issuer: parsed.tbs_certificate.issuer.to_string(),
    })
}

struct Seen {
    chain: Vec<CertificateDer<'static>>,
    verdict: Result<(), rustls::Error>,
}

/// Delegates every decision to the real verifier and keeps a copy of the
/// chain and of the verdict.
struct Recorder {
    inner: Arc<dyn ServerCertVerifier>,
    seen: Mutex<Option<Seen>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for Recorder {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        let chain = std::iter::once(end_entity)
            .chain(intermediates)
            .map(|certificate| certificate.clone().into_owned())
            .collect();
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Some(Seen {
                chain,
                verdict: verdict.as_ref().map(|_| ()).map_err(Clone::clone),
            });
        }
        verdict
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }

    fn requires_raw_public_keys(&self) -> bool {
        self.inner.requires_raw_public_keys()
    }

    fn root_hint_subjects(&self) -> Option<&[rustls::DistinguishedName]> {
        self.inner.root_hint_subjects()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn something_that_is_not_a_certificate_has_no_names() {
        assert_eq!(
            names(&CertificateDer::from(vec![0x30, 0x03, 1, 2, 3])),
            None
        );
    }
}
