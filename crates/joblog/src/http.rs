//! The HTTP server around the API's router: accepts connections up to a
//! limit, times out clients that are slow to send their headers (or idle
//! between requests), bounds header sizes, and stops gracefully.
//!
//! One address holds at most `max_connections_per_address` of them, and
//! the last [`reserve`] connections serve only `/healthz` and admins
//! (`joblog_api::Reserved`), so one client that takes every connection
//! still leaves the operator a way in.
//!
//! Invariants: a connection past `max_connections` is answered with a
//! clear 503 and closed, never queued; a socket that sends nothing is
//! closed after `header_read_timeout`; nothing here knows about jobs.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use joblog_api::{ApiError, ErrorCode};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceExt;

/// The connection-level limits.
#[derive(Debug, Clone)]
pub struct HttpLimits {
    pub max_connections: usize,
    /// Connections one client address may hold at once.
    pub max_connections_per_address: usize,
    /// Request body bytes one connection may have buffered at once (all
    /// its HTTP/2 streams together): the largest body a route takes.
    pub max_body_bytes: usize,
    /// For a request's headers to arrive, and for the next request on an
    /// idle keep-alive connection.
    pub header_read_timeout: Duration,
    /// Request line and headers together (at least 8 KiB).
    pub max_header_bytes: usize,
}

/// How long a connection refused past the limit gets to take its answer.
const REFUSAL_WRITE: Duration = Duration::from_secs(1);

/// How long connections get to finish once the server stops.
const DRAIN: Duration = Duration::from_secs(2);

/// The connections kept for `/healthz` and admins: 16, or an eighth of a
/// smaller limit.
fn reserve(max_connections: usize) -> usize {
    16.min(max_connections / 8)
}

/// Connections open per client address.
#[derive(Default)]
struct Addresses(Mutex<HashMap<IpAddr, usize>>);

/// One connection's count in [`Addresses`], given back when it closes.
struct AddressSlot {
    addresses: Arc<Addresses>,
    ip: IpAddr,
}

impl Addresses {
    /// A place for a connection from `ip`, or the number it holds already.
    fn admit(self: &Arc<Self>, ip: IpAddr, max: usize) -> Result<AddressSlot, usize> {
        let mut open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return Err(*n);
        }
        *n += 1;
        Ok(AddressSlot {
            addresses: self.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.addresses.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Serves `app` on `listener` until `stop` resolves, then lets open
/// connections finish for a moment and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    tls: Option<crate::tls::Acceptor>,
    stop: impl std::future::Future<Output = ()>,
) {
    let builder = Arc::new(Builders {
        auto: connection_builder(&limits),
        h1: connection_builder(&limits).http1_only(),
        h2: connection_builder(&limits).http2_only(),
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let addresses = Arc::new(Addresses::default());
    let reserved = reserve(limits.max_connections);
    let graceful = GracefulShutdown::new();
    let mut backoff = joblog_core::Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors, say: wait for some to close
                    // rather than spin.
                    let delay = backoff.next_delay();
                    tracing::error!(error = %e, "accepting a connection failed; retrying in {delay:?}");
                    tokio::time::sleep(delay).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        backoff = joblog_core::Backoff::new(Duration::from_millis(10), Duration::from_secs(1));
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            let why = format!(
                "the server has {} connections open, its limit (http.max_connections); retry shortly",
                limits.max_connections
            );
            tokio::spawn(refuse(stream, peer, why, tls.is_some()));
            continue;
        };
        let address = match addresses.admit(peer.ip(), limits.max_connections_per_address) {
            Ok(address) => address,
            Err(held) => {
                let why = format!(
                    "{} has {held} connections open, the limit of one address (http.max_connections_per_address); close some",
                    peer.ip()
                );
                tokio::spawn(refuse(stream, peer, why, tls.is_some()));
                continue;
            }
        };
        // Among the last few: this connection serves /healthz and admins.
        let reserve_only = slots.available_permits() < reserved;
        // Its request bodies in all, HTTP/2's many streams together: as
        // much as one HTTP/1.1 request's.
        let budget = joblog_api::limits::body::ConnectionBudget::of(limits.max_body_bytes);
        let _ = stream.set_nodelay(true);
        // The peer goes with each request, for the access and audit logs.
        let service = TowerToHyperService::new(app.clone().map_request(
            move |mut req: axum::http::Request<_>| {
                req.extensions_mut()
                    .insert(axum::extract::ConnectInfo(peer));
                req.extensions_mut().insert(budget.clone());
                if reserve_only {
                    req.extensions_mut().insert(joblog_api::Reserved);
                }
                req
            },
        ));
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let header_timeout = limits.header_read_timeout;
        tokio::spawn(async move {
            let _slot = (slot, address);
            match tls {
                None => {
                    // Until a first byte comes, hyper does not know the
                    // protocol and runs no header timer of its own: a
                    // socket that stays silent is closed here.
                    let mut first = [0u8; 1];
                    if !matches!(
                        tokio::time::timeout(header_timeout, stream.peek(&mut first)).await,
                        Ok(Ok(1..))
                    ) {
                        tracing::debug!(%peer, "closed a connection that sent nothing");
                        return;
                    }
                    let conn = builder
                        .auto
                        .serve_connection_with_upgrades(TokioIo::new(stream), service);
                    if let Err(e) = watcher.watch(conn).await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                Some(acceptor) => {
                    // The handshake is bounded like headers are: a client
                    // that opens a socket and says nothing holds nothing.
                    let stream =
                        match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                            Ok(Ok(s)) => s,
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                tracing::debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        };
                    // ALPN has told the protocol: hyper starts its header
                    // timer at once (an auto-detecting connection would
                    // first wait, untimed, for bytes to sniff).
                    let builder = if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
                        &builder.h2
                    } else {
                        &builder.h1
                    };
                    let conn =
                        builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    if let Err(e) = watcher.watch(conn).await {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::info!("closing connections still open after {DRAIN:?} (long polls, live tails)");
    }
}

/// One way to serve a connection per way its protocol is known: sniffed
/// from its first bytes (plain TCP), or told by TLS's ALPN.
struct Builders {
    auto: auto::Builder<TokioExecutor>,
    h1: auto::Builder<TokioExecutor>,
    h2: auto::Builder<TokioExecutor>,
}

fn connection_builder(limits: &HttpLimits) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_headers(100)
        // The read buffer bounds a request's head: one that does not fit
        // is answered 431. (hyper needs at least 8 KiB.)
        .max_buf_size(limits.max_header_bytes.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(limits.header_read_timeout)
        .max_concurrent_streams(100);
    builder
}

/// Answers a connection past the limit with a 503 and closes it. Over TLS
/// there is no cheap way to answer (a handshake is the expensive part), so
/// the connection is just closed.
async fn refuse(mut stream: TcpStream, peer: SocketAddr, why: String, tls: bool) {
    tracing::warn!(%peer, "refused a connection: {why}");
    if tls {
        return;
    }
    let body = refusal_body(why);
    let _ = tokio::time::timeout(REFUSAL_WRITE, write_refusal(&mut stream, &body)).await;
}

fn refusal_body(why: String) -> String {
    let e = ApiError::new(ErrorCode::TooManyConnections, why);
    serde_json::json!({"error": {"code": e.code.as_str(), "message": e.message}}).to_string()
}

async fn write_refusal<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut S,
    body: &str,
) -> std::io::Result<()> {
    // Written by hand, outside the router: the security headers every
    // answer carries are added here as well.
    let security: String = joblog_api::headers::SECURITY_HEADERS
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n{security}\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// Raises the soft limit on open files to the hard limit, so that the
/// connection limit, not the file table, decides when connections are
/// refused; returns the limit now in force.
pub fn raise_open_files_limit() -> u64 {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(_) => soft,
        },
        Ok((soft, _)) => soft,
        Err(_) => 1024,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refused_connection_gets_a_whole_json_503() {
        let (mut client, mut server) = tokio::io::duplex(4096);
        write_refusal(&mut server, &refusal_body("7 connections".into()))
            .await
            .unwrap();
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut client, &mut text)
            .await
            .unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(
            head.contains("\r\nx-content-type-options: nosniff\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\ncontent-security-policy: default-src 'none';"),
            "{head}"
        );
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "too_many_connections");
        assert!(v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("7 connections"));
    }

    #[test]
    fn one_address_holds_at_most_its_share_and_gives_it_back() {
        let a = Arc::new(Addresses::default());
        let ip: IpAddr = [192, 0, 2, 1].into();
        let first = a.admit(ip, 2).unwrap();
        let _second = a.admit(ip, 2).unwrap();
        assert_eq!(a.admit(ip, 2).err(), Some(2));
        assert!(a.admit([192, 0, 2, 2].into(), 2).is_ok(), "another address");
        drop(first);
        assert!(a.admit(ip, 2).is_ok());
        assert_eq!(reserve(1024), 16);
        assert_eq!(reserve(16), 2);
    }
}
