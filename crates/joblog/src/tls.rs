//! HTTPS: the server's certificate and key, loaded with rustls (the ring
//! provider) and loaded again on SIGHUP, so a renewed certificate is taken
//! without a restart. A reload that fails keeps the certificate in use.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::ServerConfig;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

/// The crypto provider of every TLS connection joblog makes or takes.
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Takes TLS connections with whatever certificate was loaded last.
#[derive(Clone)]
pub struct Acceptor {
    cert: PathBuf,
    key: PathBuf,
    config: Arc<RwLock<Arc<ServerConfig>>>,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("cert", &self.cert)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    pub fn load(cert: &Path, key: &Path) -> anyhow::Result<Acceptor> {
        let config = server_config(cert, key)?;
        Ok(Acceptor {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            config: Arc::new(RwLock::new(Arc::new(config))),
        })
    }

    /// Reads the certificate and key files again; on error the old ones
    /// stay.
    pub fn reload(&self) -> anyhow::Result<()> {
        let config = server_config(&self.cert, &self.key)?;
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(config);
        Ok(())
    }

    pub async fn accept(&self, stream: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        let config = self
            .config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        tokio_rustls::TlsAcceptor::from(config).accept(stream).await
    }

    /// Reloads on every SIGHUP, for as long as the server runs.
    pub fn reload_on_sighup(&self) -> anyhow::Result<()> {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
        let acceptor = self.clone();
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match acceptor.reload() {
                    Ok(()) => {
                        tracing::info!(cert = %acceptor.cert.display(), "SIGHUP: TLS certificate reloaded")
                    }
                    Err(e) => tracing::error!(
                        error = format!("{e:#}"),
                        "SIGHUP: TLS certificate not reloaded; the old one stays"
                    ),
                }
            }
        });
        Ok(())
    }
}

fn server_config(cert: &Path, key: &Path) -> anyhow::Result<ServerConfig> {
    let certs = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("tls_cert: cannot read {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("tls_cert: {} is not PEM", cert.display()))?;
    if certs.is_empty() {
        bail!("tls_cert: {} holds no certificate", cert.display());
    }
    // The key's own text never appears in an error.
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        anyhow::anyhow!(
            "tls_key: {} holds no usable private key ({})",
            key.display(),
            match e {
                rustls::pki_types::pem::Error::NoItemsFound => "no PEM private key found",
                rustls::pki_types::pem::Error::Io(_) => "cannot read it",
                _ => "malformed PEM",
            }
        )
    })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("tls_cert and tls_key do not make a usable pair")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
