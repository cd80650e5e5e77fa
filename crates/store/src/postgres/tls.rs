//! TLS to PostgreSQL: libpq's `sslmode`, `sslrootcert`, `sslcert` and
//! `sslkey` URL parameters, carried out with rustls (ring provider).
//!
//! tokio-postgres knows `sslmode` only up to `require` and no certificate
//! files, while most managed services ask for `verify-full` with their CA.
//! So these parameters are taken out of the URL here, before tokio-postgres
//! parses it, and turned into the rustls configuration every connection of
//! the store (reads, writer, listener) is made with.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode as PgSslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode`, all six of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    /// libpq tries plain first; joblog tries TLS first, as `prefer` does:
    /// the difference is only which of two acceptable outcomes comes first.
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What tokio-postgres is told: whether TLS is tried, and required.
    pub(crate) fn for_driver(self) -> PgSslMode {
        match self {
            SslMode::Disable => PgSslMode::Disable,
            SslMode::Allow | SslMode::Prefer => PgSslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => PgSslMode::Require,
        }
    }
}

/// The TLS parameters of a database URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsParams {
    pub(crate) mode: SslMode,
    /// `sslrootcert`: a PEM file of CA certificates, or `system`.
    root_cert: Option<String>,
    /// `sslcert` and `sslkey`: a client certificate and its key.
    client_cert: Option<PathBuf>,
    client_key: Option<PathBuf>,
}

/// Splits libpq's TLS parameters off `url`: the URL for tokio-postgres to
/// parse, and the parameters. Values are percent-decoded, as libpq does.
pub(crate) fn split_url(url: &str) -> Result<(String, TlsParams), String> {
    let mut params = TlsParams {
        mode: SslMode::Prefer,
        root_cert: None,
        client_cert: None,
        client_key: None,
    };
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), params));
    };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decoded = || percent_decode(value).map_err(|e| format!("{key}: {e}"));
        match key {
            "sslmode" => params.mode = SslMode::parse(&decoded()?)?,
            "sslrootcert" => params.root_cert = Some(decoded()?),
            "sslcert" => params.client_cert = Some(PathBuf::from(decoded()?)),
            "sslkey" => params.client_key = Some(PathBuf::from(decoded()?)),
            _ => kept.push(pair),
        }
    }
    if params.client_cert.is_some() != params.client_key.is_some() {
        return Err("sslcert and sslkey must be given together".into());
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, params))
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("a % not followed by two hex digits")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "not UTF-8 once decoded".to_string())
}

/// The connector for `params`: rustls with the ring provider, the server's
/// certificate checked as the mode says.
///
/// - `disable`: never used for TLS (tokio-postgres does not ask for it).
/// - `allow`, `prefer`, `require`: encrypted, the certificate not checked —
///   unless `sslrootcert` is given, which makes them check it against that
///   CA as `verify-ca` does (libpq's rule).
/// - `verify-ca`: the certificate must chain to a trusted CA.
/// - `verify-full`: and name the host connected to.
///
/// Trusted CAs are those of `sslrootcert` (a PEM file), or the system's
/// when it is `system` or absent.
pub(crate) fn connector(params: &TlsParams) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let check = match params.mode {
        SslMode::Disable => None,
        SslMode::Allow | SslMode::Prefer | SslMode::Require => {
            params.root_cert.as_ref().map(|_| Check::Chain)
        }
        SslMode::VerifyCa => Some(Check::Chain),
        SslMode::VerifyFull => Some(Check::ChainAndName),
    };
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        None => Arc::new(Unchecked(provider)),
        Some(check) => {
            let roots = roots(params.root_cert.as_deref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("TLS: {e}"))?;
            match check {
                Check::ChainAndName => webpki,
                Check::Chain => Arc::new(AnyName(webpki)),
            }
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match (&params.client_cert, &params.client_key) {
        (Some(cert), Some(key)) => {
            let certs = read_certs(cert, "sslcert")?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("sslkey {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| format!("sslcert/sslkey: {e}"))?
        }
        _ => builder.with_no_client_auth(),
    };
    Ok(MakeRustlsConnect::new(config))
}

#[derive(Clone, Copy)]
enum Check {
    Chain,
    ChainAndName,
}

fn roots(root_cert: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match root_cert {
        Some(path) if path != "system" => {
            let certs = read_certs(Path::new(path), "sslrootcert")?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("sslrootcert {path}: no usable CA certificate"));
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "TLS: no system CA certificates found; name the server's CA with sslrootcert=FILE"
                        .into(),
                );
            }
        }
    }
    Ok(roots)
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{what} {}: no PEM certificate in the file",
            path.display()
        ));
    }
    Ok(certs)
}

/// `require` without a CA: encryption against eavesdroppers, the peer not
/// authenticated (libpq's meaning). Handshake signatures are still checked,
/// so the session is with whoever holds the presented certificate's key.
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
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
        verify_tls12_signature(
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
        verify_tls13_signature(
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

/// `verify-ca`: the chain is checked as usual, the host name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
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
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_of_the_url_and_the_rest_kept() {
        let (url, p) = split_url(
            "postgres://u:p@db.example:5432/joblog?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca%20dir%2Fca.pem",
        )
        .unwrap();
        assert_eq!(
            url,
            "postgres://u:p@db.example:5432/joblog?application_name=x"
        );
        assert_eq!(p.mode, SslMode::VerifyFull);
        assert_eq!(p.root_cert.as_deref(), Some("/etc/ca dir/ca.pem"));

        let (url, p) = split_url("postgres://h/db").unwrap();
        assert_eq!((url.as_str(), p.mode), ("postgres://h/db", SslMode::Prefer));
        let (url, p) = split_url("postgres://h/db?sslmode=require").unwrap();
        assert_eq!(
            (url.as_str(), p.mode),
            ("postgres://h/db", SslMode::Require)
        );
    }

    #[test]
    fn bad_tls_parameters_are_named() {
        for (url, expected) in [
            ("postgres://h/db?sslmode=on", "sslmode \"on\" is not one of"),
            ("postgres://h/db?sslcert=/c.pem", "sslcert and sslkey"),
            (
                "postgres://h/db?sslrootcert=%zz",
                "sslrootcert: a % not followed",
            ),
        ] {
            let err = split_url(url).unwrap_err();
            assert!(err.contains(expected), "{url}: {err}");
        }
        let missing = TlsParams {
            mode: SslMode::VerifyFull,
            root_cert: Some("/nonexistent/ca.pem".into()),
            client_cert: None,
            client_key: None,
        };
        let err = connector(&missing).map(|_| ()).unwrap_err();
        assert!(err.starts_with("sslrootcert /nonexistent/ca.pem:"), "{err}");
    }
}
