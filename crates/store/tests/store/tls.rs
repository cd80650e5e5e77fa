//! PostgreSQL over TLS: a private server that refuses every connection
//! without TLS, with a CA of the test's own. Each `sslmode` does what
//! libpq's does, a refused certificate is reported at once (not waited for
//! as an outage), and every connection of the store — reads, the writer,
//! the listener — goes over TLS (plain ones would be refused).

use std::path::{Path, PathBuf};

use joblog_store::testing::{PrivateCluster, TestDatabase};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};

use super::*;

/// PEM files of the test's PKI.
struct Pki {
    ca: PathBuf,
    other_ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
    server_cert: String,
    server_key: String,
    ca_pem: String,
}

fn make_pki(dir: &Path) -> Pki {
    let ca = |name: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), Issuer::new(params, key))
    };
    let signed = |issuer: &Issuer<KeyPair>, names: Vec<String>, cn: &str| {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        let cert = params.signed_by(&key, issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (ca_pem, issuer) = ca("joblog test CA");
    let (other_pem, _) = ca("someone else's CA");
    // The server's certificate names localhost only, not 127.0.0.1.
    let (server_cert, server_key) = signed(&issuer, vec!["localhost".into()], "localhost");
    let (client_cert, client_key) = signed(&issuer, vec![], "joblog_cert");
    let write = |name: &str, pem: &str| {
        let path = dir.join(name);
        std::fs::write(&path, pem).unwrap();
        path
    };
    Pki {
        ca: write("ca.pem", &ca_pem),
        other_ca: write("other-ca.pem", &other_pem),
        client_cert: write("client.pem", &client_cert),
        client_key: write("client-key.pem", &client_key),
        server_cert,
        server_key,
        ca_pem,
    }
}

/// Without TLS nothing gets in; `joblog_cert` gets in only with a client
/// certificate the CA signed.
const HBA: &str = "local all all trust
hostssl all joblog_cert 127.0.0.1/32 cert
hostssl all all 127.0.0.1/32 trust
host all all all reject
";

fn start_tls_cluster(pki: &Pki) -> PrivateCluster {
    let mut cluster = PrivateCluster::init();
    cluster.write_file("server.crt", pki.server_cert.as_bytes());
    cluster.write_file("server.key", pki.server_key.as_bytes());
    cluster.write_file("root.crt", pki.ca_pem.as_bytes());
    cluster.write_file("pg_hba.conf", HBA.as_bytes());
    for (name, value) in [
        ("ssl", "on"),
        ("ssl_cert_file", "server.crt"),
        ("ssl_key_file", "server.key"),
        ("ssl_ca_file", "root.crt"),
    ] {
        cluster.set(name, value);
    }
    cluster.pg_ctl("start");
    cluster.sql("CREATE ROLE joblog_cert LOGIN SUPERUSER");
    cluster
}

/// Writes through the store's writer and reads back through its pool.
async fn writes_and_reads(url: &str) {
    let (store, mut writer) = open_node(url, "tls");
    let out = writer.apply(&[insert_op(Some("over-tls"))]).unwrap();
    let Outcome::Job(job) = &out[0] else {
        panic!("{out:?}")
    };
    let read = store.get_job(job.id).await.unwrap().expect("the job");
    assert_eq!(read.name.as_deref(), Some("over-tls"));
}

fn refused(url: &str) -> StoreError {
    match joblog_store::open(url, &StoreOptions::default()) {
        Ok(_) => panic!("{url} was accepted"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_over_tls_each_sslmode_as_libpq_and_refusals_at_once() {
    // Needs PostgreSQL's server binaries, which the variable vouches for.
    if TestDatabase::postgres().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pki = make_pki(dir.path());
    let cluster = start_tls_cluster(&pki);
    let port = cluster.port();
    let url = |host: &str, user: &str, query: String| {
        format!("postgres://{user}@{host}:{port}/postgres?{query}")
    };
    let ca = pki.ca.display().to_string();
    let other_ca = pki.other_ca.display().to_string();

    // verify-full: the CA and the name checked. Writer, reads and the
    // listener all connect (the listener hears another node's commit).
    let full = url(
        "localhost",
        "postgres",
        format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let (listening, _own) = open_node(&full, "b");
    let (tx, mut rx) = tokio::sync::broadcast::channel(64);
    listening.start_listener(tx);
    assert!(next_notice(&mut rx).await.reset);
    writes_and_reads(&full).await;
    assert_eq!(next_notice(&mut rx).await.queued, 1);

    // Encrypted without checking (require, and prefer, the default), the
    // CA only (verify-ca, so 127.0.0.1 is fine), and a client certificate.
    for query in [
        "sslmode=require".to_string(),
        String::new(),
        format!("sslmode=verify-ca&sslrootcert={ca}"),
    ] {
        writes_and_reads(&url("127.0.0.1", "postgres", query)).await;
    }
    let client = format!(
        "sslmode=verify-full&sslrootcert={ca}&sslcert={}&sslkey={}",
        pki.client_cert.display(),
        pki.client_key.display()
    );
    writes_and_reads(&url("localhost", "joblog_cert", client)).await;

    // Refused certificates: reported as configuration errors, which the
    // server does not wait a minute for, naming what was wrong.
    for (query, host, expected) in [
        (
            format!("sslmode=verify-full&sslrootcert={ca}"),
            "127.0.0.1",
            "certificate not valid for name \"127.0.0.1\"",
        ),
        (
            format!("sslmode=verify-full&sslrootcert={other_ca}"),
            "localhost",
            "invalid peer certificate",
        ),
        // libpq's rule: require with a root certificate checks the chain.
        (
            format!("sslmode=require&sslrootcert={other_ca}"),
            "127.0.0.1",
            "invalid peer certificate",
        ),
    ] {
        let e = refused(&url(host, "postgres", query.clone()));
        let message = e.to_string();
        assert!(!e.is_transient(), "{query}: {message}");
        assert!(
            message.contains("TLS handshake") && message.contains(expected),
            "{query}: {message}"
        );
        assert!(message.contains("sslmode="), "the mode is named: {message}");
    }
    // No TLS: the server refuses; a client certificate is required of
    // joblog_cert.
    let message = refused(&url("127.0.0.1", "postgres", "sslmode=disable".into())).to_string();
    assert!(message.contains("no encryption"), "{message}");
    let message = refused(&url(
        "localhost",
        "joblog_cert",
        format!("sslmode=verify-full&sslrootcert={ca}"),
    ))
    .to_string();
    assert!(message.contains("certificate"), "{message}");
}
