//! TLS for `https` targets, as curl, oha and k6 take it: the platform's
//! roots (on Linux `SSL_CERT_FILE` and `SSL_CERT_DIR` are honoured), plus a
//! private CA given with `--cacert FILE`, or no verification at all with
//! `--insecure`. One rustls [`ClientConfig`] per run, shared by reqwest and
//! the HTTP/1.1 lane (so both trust the same, and a resumed session serves
//! either), with HTTP/1.1 offered by ALPN.
//!
//! [`explain`] turns a failed handshake into what failed and which flag or
//! variable fixes it: an unknown issuer, a name mismatch, an expired
//! certificate, a CA certificate served as the server's own, or plain HTTP
//! on the port. A target that refused its certificate was reachable; the
//! callers say so rather than "unreachable".

use rustls::ClientConfig;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// The trust every client of this process uses (see [`install`]).
static SHARED: RwLock<Option<(TlsOptions, Arc<ClientConfig>)>> = RwLock::new(None);

/// Makes `options` the trust of every client this process builds after it
/// (reqwest's, the HTTP/1.1 lanes): a command calls it from its flags
/// before it connects. Until then the platform's roots.
pub fn install(options: &TlsOptions) -> Result<(), TlsError> {
    let config = options.client_config()?;
    *SHARED.write().unwrap_or_else(|p| p.into_inner()) = Some((options.clone(), config));
    Ok(())
}

/// The options [`install`]ed (the defaults when none were), for what a
/// run writes down to be re-run the same way (a finding's `repro.sh`).
pub fn installed() -> TlsOptions {
    let slot = SHARED.read().unwrap_or_else(|p| p.into_inner());
    slot.as_ref().map(|(o, _)| o.clone()).unwrap_or_default()
}

/// The rustls configuration every client of this process shares.
pub fn shared() -> Arc<ClientConfig> {
    if let Some((_, c)) = SHARED.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
        return c.clone();
    }
    let mut slot = SHARED.write().unwrap_or_else(|p| p.into_inner());
    let (_, config) = slot.get_or_insert_with(|| {
        let defaults = TlsOptions::default();
        let config = defaults.client_config().unwrap_or_else(|_| fallback());
        (defaults, config)
    });
    config.clone()
}

/// With no platform verifier to be had (no roots on the machine): one that
/// trusts nothing, so an https target fails its handshake with a message
/// that names `--cacert`, not the process.
fn fallback() -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| {
            b.with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
    Arc::new(config.unwrap_or_else(|_| unreachable!("the default protocol versions are safe")))
}

/// A reqwest client builder that trusts what [`shared`] trusts.
pub fn reqwest_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder().tls_backend_preconfigured(ClientConfig::clone(&shared()))
}

/// How an `https` target's certificate is checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Also trust the certificates in this PEM file (a private CA).
    pub cacert: Option<PathBuf>,
    /// Trust any certificate (no verification: testing only).
    pub insecure: bool,
}

/// Why a TLS setting cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The `--cacert` file cannot be read as PEM certificates.
    #[error("--cacert {path}: {why}")]
    CaFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// The platform's verifier could not be set up.
    #[error("cannot set up TLS: {0}")]
    Setup(String),
}

impl TlsOptions {
    /// The rustls configuration these options describe.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?;
        let mut config = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            let extra = match &self.cacert {
                Some(path) => read_certificates(path)?,
                None => Vec::new(),
            };
            let verifier =
                rustls_platform_verifier::Verifier::new_with_extra_roots(extra, provider)
                    .map_err(|e| TlsError::Setup(e.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// The certificates of a PEM file (at least one).
fn read_certificates(path: &PathBuf) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |why: String| TlsError::CaFile {
        path: path.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err(
            "no PEM certificate in it (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// `--insecure`: every certificate is taken; the handshake's signatures
/// are still checked (the peer holds the key of the certificate it sent).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What a failed TLS handshake means and how to fix it, read from an error
/// and its sources (a rustls error somewhere in the chain, or its words);
/// `None` when it is not a TLS failure.
pub fn explain(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut text = String::new();
    let mut e: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cur) = e {
        if let Some(r) = cur.downcast_ref::<rustls::Error>() {
            return Some(describe(&r.to_string()));
        }
        // An I/O error's source skips the error it wraps: look inside.
        let wrapped = cur
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref());
        if let Some(r) = wrapped.and_then(|w| w.downcast_ref::<rustls::Error>()) {
            return Some(describe(&r.to_string()));
        }
        text.push_str(&cur.to_string());
        text.push(' ');
        e = cur.source();
    }
    explain_text(&text)
}

/// [`explain`] for an error already in words (a message that carried a
/// rustls error's text); `None` when the words name no TLS failure.
pub fn explain_text(text: &str) -> Option<String> {
    let tls = [
        "invalid peer certificate",
        "InvalidContentType",
        "received corrupt message",
        "CaUsedAsEndEntity",
        "UnknownIssuer",
        "NotValidForName",
        "not valid for name",
        "certificate expired",
        "received fatal alert",
    ];
    tls.iter().any(|t| text.contains(t)).then(|| describe(text))
}

/// The message for a rustls error's text.
fn describe(text: &str) -> String {
    const FIX: &str = "give the CA that signed it with --cacert FILE (or SSL_CERT_FILE=FILE), or \
                       --insecure to skip verification (testing only)";
    let what = if text.contains("CaUsedAsEndEntity") {
        "the server presents a CA certificate as its own (a self-signed CA used as the \
         server's certificate; rustls refuses it even when trusted): give the server a leaf \
         certificate signed by that CA, or use --insecure (testing only)"
            .to_owned()
    } else if text.contains("UnknownIssuer") {
        format!("its certificate is signed by an issuer this machine does not trust: {FIX}")
    } else if text.contains("NotValidForName") || text.contains("not valid for name") {
        // rustls names what the certificate is valid for: say it.
        let names = text
            .find("is only valid for ")
            .map(|i| text[i + "is only valid for ".len()..].trim_end_matches([')', ' ']))
            .map(|n| format!(" (it is valid for {n})"))
            .unwrap_or_default();
        format!(
            "its certificate is not valid for the host name in the URL{names}: connect by a \
             name the certificate lists (its subjectAltName), or use --insecure (testing only)"
        )
    } else if text.contains("Expired") || text.contains("certificate expired") {
        "its certificate has expired (or this machine's clock is wrong): renew it, or use \
         --insecure (testing only)"
            .to_owned()
    } else if text.contains("NotValidYet") || text.contains("not valid yet") {
        "its certificate is not valid yet (or this machine's clock is wrong)".to_owned()
    } else if text.contains("InvalidContentType") || text.contains("received corrupt message") {
        "the port answered in plain HTTP, not TLS: use http:// for this port, or the port that \
         serves TLS"
            .to_owned()
    } else {
        format!("the TLS handshake failed ({}): {FIX}", text.trim())
    };
    format!("TLS: {what}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificate_failures_say_what_failed_and_what_fixes_it() {
        use rustls::{CertificateError, Error, InvalidMessage};
        let cases = [
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "issuer this machine does not trust: give the CA that signed it with --cacert",
            ),
            (
                Error::InvalidCertificate(CertificateError::NotValidForName),
                "not valid for the host name",
            ),
            (
                Error::InvalidCertificate(CertificateError::Expired),
                "has expired",
            ),
            (
                Error::InvalidMessage(InvalidMessage::InvalidContentType),
                "answered in plain HTTP, not TLS",
            ),
        ];
        for (e, says) in cases {
            let io = std::io::Error::other(e);
            let m = explain(&io).unwrap_or_default();
            assert!(m.starts_with("TLS: ") && m.contains(says), "{m}");
        }
        let ca =
            std::io::Error::other("invalid peer certificate: Other(OtherError(CaUsedAsEndEntity))");
        assert!(explain(&ca).unwrap().contains("CA certificate as its own"));
        assert_eq!(explain(&std::io::Error::other("connection refused")), None);
    }

    #[test]
    fn a_cacert_that_is_no_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let o = TlsOptions {
            cacert: Some(empty),
            insecure: false,
        };
        let e = o.client_config().unwrap_err().to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let o = TlsOptions {
            cacert: Some(dir.path().join("missing.pem")),
            insecure: false,
        };
        assert!(
            o.client_config()
                .unwrap_err()
                .to_string()
                .starts_with("--cacert")
        );
        assert!(TlsOptions::default().client_config().is_ok());
        let insecure = TlsOptions {
            insecure: true,
            ..Default::default()
        };
        assert_eq!(
            insecure.client_config().unwrap().alpn_protocols,
            [b"http/1.1".to_vec()]
        );
    }
}
