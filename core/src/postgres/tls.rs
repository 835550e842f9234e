//! TLS to PostgreSQL as libpq's URL parameters ask for it, over rustls
//! (`tokio-postgres-rustls`): `sslmode` and `sslrootcert`, which tokio-postgres does not read
//! itself beyond `disable`/`prefer`/`require`.
//!
//! | `sslmode` | encrypted | server's certificate |
//! |---|---|---|
//! | not given, `disable` | no | — |
//! | `prefer` | when the server offers it | not checked (libpq's meaning) |
//! | `require` | yes | not checked, unless `sslrootcert` is given: then as `verify-ca` |
//! | `verify-ca` | yes | signed by a trusted root |
//! | `verify-full` | yes | signed by a trusted root and issued for the host |
//!
//! Trusted roots: `sslrootcert=PATH` (PEM), or `sslrootcert=system` and by default the
//! system's store. Client certificates (`sslcert`, `sslkey`) are refused with a clear
//! message rather than ignored.

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use std::sync::Arc;
use tokio_postgres::config::SslMode;
pub use tokio_postgres_rustls::MakeRustlsConnect;

/// How the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Not at all: encryption against a passive eavesdropper only.
    Nothing,
    /// Signed by a trusted root, for any host.
    Authority,
    /// Signed by a trusted root and issued for the host connected to.
    AuthorityAndHost,
}

/// What the URL asks of TLS, taken out of its query.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TlsParams {
    /// `sslmode`, as written.
    mode: Option<String>,
    /// `sslrootcert`, as written.
    root: Option<String>,
}

impl TlsParams {
    /// Takes a query parameter that is TLS's; `false` for one that is not.
    pub(crate) fn take(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match key {
            "sslmode" => self.mode = Some(value.to_string()),
            "sslrootcert" => self.root = Some(value.to_string()),
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(format!(
                    "{key}: client certificates are not supported; authenticate with a password \
                     over sslmode=verify-full instead"
                ));
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The mode tokio-postgres negotiates with, and the connector that does the TLS.
    pub(crate) fn connector(&self) -> Result<(SslMode, MakeRustlsConnect), String> {
        let given_root = self.root.is_some();
        let (mode, check) = match self.mode.as_deref() {
            None | Some("disable") => (SslMode::Disable, Check::Nothing),
            Some("allow") | Some("prefer") => (SslMode::Prefer, Check::Nothing),
            Some("require") if given_root => (SslMode::Require, Check::Authority),
            Some("require") => (SslMode::Require, Check::Nothing),
            Some("verify-ca") => (SslMode::Require, Check::Authority),
            Some("verify-full") => (SslMode::Require, Check::AuthorityAndHost),
            Some(other) => {
                return Err(format!(
                    "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                ));
            }
        };
        let unchecked = || {
            Arc::new(Lenient {
                chain: None,
                provider: provider(),
            })
        };
        let config = match (mode, check) {
            // Never used for a handshake; any configuration will do.
            (SslMode::Disable, _) | (_, Check::Nothing) => client_config(unchecked())?,
            (_, check) => {
                let roots = Arc::new(self.roots()?);
                let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider())
                    .build()
                    .map_err(|e| format!("sslrootcert: {e}"))?;
                let verifier: Arc<dyn ServerCertVerifier> = match check {
                    Check::AuthorityAndHost => webpki,
                    _ => Arc::new(Lenient {
                        chain: Some(webpki),
                        provider: provider(),
                    }),
                };
                client_config(verifier)?
            }
        };
        Ok((mode, MakeRustlsConnect::new(config)))
    }

    /// The roots a certificate must chain to.
    fn roots(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        match self.root.as_deref() {
            None | Some("system") => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
            }
            Some(path) => {
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
                for cert in certs {
                    roots
                        .add(cert)
                        .map_err(|e| format!("sslrootcert {path}: {e}"))?;
                }
            }
        }
        if roots.is_empty() {
            return Err(
                "no trusted root certificate found (sslrootcert names none, or the \
                        system has none)"
                    .into(),
            );
        }
        Ok(roots)
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client_config(verifier: Arc<dyn ServerCertVerifier>) -> Result<ClientConfig, String> {
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The certificate checks rustls's own verifier does not offer: none at all (`prefer`, and
/// `require` without a root, as libpq does), or the chain without the name (`verify-ca`).
/// The handshake's signatures are checked either way.
#[derive(Debug)]
struct Lenient {
    /// The chain's verifier, when the chain is checked.
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
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

    fn params(pairs: &[(&str, &str)]) -> Result<TlsParams, String> {
        let mut p = TlsParams::default();
        for (k, v) in pairs {
            assert!(p.take(k, v)?);
        }
        Ok(p)
    }

    #[test]
    fn modes_read_as_libpq_reads_them() {
        let mode = |pairs: &[(&str, &str)]| params(pairs).unwrap().connector().map(|c| c.0);
        assert_eq!(mode(&[]), Ok(SslMode::Disable));
        assert_eq!(mode(&[("sslmode", "prefer")]), Ok(SslMode::Prefer));
        assert_eq!(mode(&[("sslmode", "require")]), Ok(SslMode::Require));
        assert!(mode(&[("sslmode", "sometimes")]).is_err());
        assert!(params(&[("sslcert", "c.pem")]).is_err());
        let missing = params(&[("sslmode", "verify-full"), ("sslrootcert", "/no/such.pem")]);
        assert!(missing.unwrap().connector().is_err());
        assert!(!TlsParams::default().take("schema", "x").unwrap());
    }
}
