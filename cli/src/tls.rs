//! The one TLS trust configuration of this process (SPEC §5 "TLS").
//!
//! Certificate chain and hostname are verified by default against the
//! system's roots plus an optional `--ca-file`. `--insecure-skip-tls-verify`
//! turns verification off for the relay connection only, with a loud
//! warning. The same `rustls::ClientConfig` serves the HTTP client (admin
//! commands, register) and the runner's WebSocket, so they can never
//! disagree about whom to trust.
//!
//! It is set once in `main` from the flags ([`configure`]) and read where
//! connections are made ([`client_config`]): passing it through every
//! command would thread one immutable value through every signature.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;

use crate::exit::{self, ExitError};

pub mod peer;

/// The trust settings from the command line / environment.
#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub ca_file: Option<PathBuf>,
    pub insecure_skip_verify: bool,
}

static CONFIG: OnceLock<(TlsOptions, Arc<rustls::ClientConfig>)> = OnceLock::new();

/// Builds the configuration from `options` and installs it for the process.
pub fn configure(options: TlsOptions) -> Result<()> {
    let config = build(&options)?;
    if options.insecure_skip_verify {
        tracing::warn!(
            "TLS VERIFICATION IS OFF for the relay connection (--insecure-skip-tls-verify): \
             anyone on the network path can impersonate the relay. Use only inside a trusted network."
        );
    }
    let _ = CONFIG.set((options, config));
    Ok(())
}

/// The configuration installed by [`configure`], or the verified default.
pub fn client_config() -> Arc<rustls::ClientConfig> {
    match CONFIG.get() {
        Some((_, config)) => Arc::clone(config),
        None => {
            let config = build(&TlsOptions::default()).unwrap_or_else(|_| Arc::new(empty_roots()));
            let _ = CONFIG.set((TlsOptions::default(), Arc::clone(&config)));
            config
        }
    }
}

/// The options in force.
pub fn options() -> TlsOptions {
    CONFIG
        .get()
        .map(|(options, _)| options.clone())
        .unwrap_or_default()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn empty_roots() -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map(|b| {
            b.with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        })
        .unwrap_or_else(|_| {
            // The ring provider supports the default protocol versions; this
            // branch exists only so a misbuilt provider cannot panic.
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        })
}

/// Builds a client config: system roots (+ CA file), or no verification.
pub fn build(options: &TlsOptions) -> Result<Arc<rustls::ClientConfig>> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    // A CA file that cannot be used is an error now, at start; the system
    // roots are loaded at the first TLS handshake (see [`LazyVerifier`]).
    if let Some(path) = options.ca_file.as_deref() {
        if !options.insecure_skip_verify {
            ca_file_roots(path)?;
        }
    }
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(LazyVerifier {
            options: options.clone(),
            provider: provider(),
            verifier: OnceLock::new(),
        }))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The certificate verifier `options` ask for. [`build`] installs it, and
/// `runner doctor`'s own handshake ([`peer::handshake`]) judges with it, so
/// doctor's verdict is the runner's.
fn verifier(options: &TlsOptions) -> Result<Arc<dyn ServerCertVerifier>> {
    if options.insecure_skip_verify {
        return Ok(Arc::new(FixedVerdict {
            provider: provider(),
            accept: true,
        }));
    }
    let roots = root_store(options.ca_file.as_deref())?;
    if roots.is_empty() {
        // webpki's builder refuses an empty store; with nothing to trust,
        // every chain is from an unknown issuer, which is what this says.
        return Ok(Arc::new(FixedVerdict {
            provider: provider(),
            accept: false,
        }));
    }
    let verifier =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .context("building the certificate verifier")?;
    Ok(verifier)
}

/// System roots plus the CA file. A CA file that can't be read or holds no
/// certificate is an error (silently trusting only the system would hide a
/// typo until the first connection fails).
pub fn root_store(ca_file: Option<&Path>) -> Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::debug!(%error, "some system certificates could not be loaded");
    }
    let (_added, _ignored) = roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        roots.roots.extend(ca_file_roots(path)?.roots);
    }
    Ok(roots)
}

/// The roots of a CA file alone.
fn ca_file_roots(path: &Path) -> Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in load_pem_certs(path)? {
        roots.add(cert).map_err(|error| {
            ExitError::new(
                exit::CONFIG,
                format!(
                    "CA file {} holds a certificate rustls rejects: {error}",
                    path.display()
                ),
            )
        })?;
    }
    Ok(roots)
}

/// Reads every certificate of a PEM file.
pub fn load_pem_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let bytes = fs_err::read(path).map_err(|error| {
        ExitError::new(exit::CONFIG, format!("cannot read CA file: {error}"))
            .with_hint("--ca-file / RUNNER_CA_FILE must name a PEM file of CA certificates")
    })?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|error| {
            ExitError::new(
                exit::CONFIG,
                format!("CA file {} is not valid PEM: {error}", path.display()),
            )
        })?;
    if certs.is_empty() {
        return Err(ExitError::new(
            exit::CONFIG,
            format!("CA file {} contains no certificate", path.display()),
        )
        .into());
    }
    Ok(certs)
}

/// The verifier [`build`] installs: it reads the system's roots (a
/// directory of PEM files; parsing them topped the profile of a short
/// `runner invoke`) only when a certificate is first to be verified, so
/// commands that talk plain HTTP to a relay on loopback, or nothing at all,
/// never pay for them.
#[derive(Debug)]
struct LazyVerifier {
    options: TlsOptions,
    provider: Arc<rustls::crypto::CryptoProvider>,
    verifier: OnceLock<Result<Arc<dyn ServerCertVerifier>, String>>,
}

impl LazyVerifier {
    fn get(&self) -> Result<&Arc<dyn ServerCertVerifier>, rustls::Error> {
        self.verifier
            .get_or_init(|| verifier(&self.options).map_err(|error| format!("{error:#}")))
            .as_ref()
            .map_err(|error| rustls::Error::General(error.clone()))
    }
}

impl ServerCertVerifier for LazyVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.get()?
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    // The certificate was verified first, so the verifier is built by now.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.get()?.verify_tls13_signature(message, cert, dss)
    }

    /// Asked before any certificate arrives: answered from the provider,
    /// without loading the roots.
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Accepts any certificate (`accept`: `--insecure-skip-tls-verify` only),
/// or none (no trust anchor at all). Signatures are still checked, so the
/// handshake itself is sound; only *who* the peer is goes unverified.
#[derive(Debug)]
struct FixedVerdict {
    provider: Arc<rustls::crypto::CryptoProvider>,
    accept: bool,
}

impl ServerCertVerifier for FixedVerdict {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.accept {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_empty_ca_file_is_a_config_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("nope.pem");
        let error = root_store(Some(&missing)).expect_err("missing");
        assert_eq!(
            error.downcast_ref::<ExitError>().map(|e| e.code),
            Some(exit::CONFIG)
        );
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").expect("write");
        let error = root_store(Some(&empty)).expect_err("empty");
        assert!(format!("{error}").contains("no certificate"), "{error}");
    }

    #[test]
    fn both_modes_build() {
        assert!(build(&TlsOptions::default()).is_ok());
        assert!(build(&TlsOptions {
            ca_file: None,
            insecure_skip_verify: true
        })
        .is_ok());
    }
}
