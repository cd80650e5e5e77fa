//! Sending a web hook: one HTTP client for the node (rustls, no redirects,
//! a timeout), the guard that keeps notifications off the server's own
//! network, the `Joblog-Delivery` and `Joblog-Signature-256` headers, and
//! what an answer means for the delivery (delivered, try again, refused
//! for good).
//!
//! The guard sits in the client's resolver, so the addresses checked are
//! the ones connected to: a name that resolves to a public address at save
//! and to 127.0.0.1 at send (DNS rebinding) is refused at send. An address
//! written in the URL is checked before the request.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use joblog_core::notify::{Rendered, TryOutcome, Webhook};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use sha2::Sha256;

/// Most of an answer's body kept with a delivery.
const KEPT_BODY: usize = 1024;

/// Whether an address is one a notification may reach without
/// `notify.allow_private_targets`: not loopback, private, link-local,
/// shared (CGNAT), unique-local, unspecified, multicast or documentation.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

/// The node's resolver, refusing a name any of whose addresses is not
/// public (unless private targets are allowed).
struct Guarded {
    allow_private: bool,
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if !allow_private {
                if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
                    return Err(format!(
                        "{host} resolves to {}, a private address (notify.allow_private_targets is off)",
                        bad.ip()
                    )
                    .into());
                }
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// The node's web-hook client.
#[derive(Clone)]
pub(crate) struct Sender {
    client: reqwest::Client,
    allow_private: bool,
}

impl Sender {
    pub(crate) fn new(timeout: Duration, allow_private: bool) -> Result<Sender, String> {
        // The process's TLS is rustls on ring, as everywhere in joblog.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("joblog/", env!("CARGO_PKG_VERSION")))
            .dns_resolver(Arc::new(Guarded { allow_private }))
            .build()
            .map_err(|e| format!("cannot build the notification client: {e}"))?;
        Ok(Sender {
            client,
            allow_private,
        })
    }

    /// Refuses a URL whose host is an address written out that is not
    /// public (a name is checked when it is resolved, at every send).
    pub(crate) fn check_target(&self, url: &str) -> Result<(), String> {
        let parsed = reqwest::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let ip = match parsed.host() {
            Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
            Some(url::Host::Domain(_)) => return Ok(()),
            None => return Err("no host".into()),
        };
        if self.allow_private || is_public(ip) {
            Ok(())
        } else {
            Err(format!(
                "{ip} is a private address (notify.allow_private_targets is off)"
            ))
        }
    }

    /// Sends `body` to the hook: headers of the rule, then joblog's own
    /// (the delivery's id, the same on every retry; the signature when the
    /// rule names a secret this node holds).
    pub(crate) async fn send(
        &self,
        hook: &Webhook,
        body: &Rendered,
        delivery: Option<i64>,
        secret: Option<&str>,
    ) -> TryOutcome {
        if let Err(error) = self.check_target(&hook.url) {
            return TryOutcome::Refused {
                status: None,
                error,
            };
        }
        let mut request = self.client.post(&hook.url);
        for (name, value) in &hook.headers {
            request = request.header(name, value);
        }
        request = request.header(reqwest::header::CONTENT_TYPE, body.content_type);
        if let Some(id) = delivery {
            request = request.header("Joblog-Delivery", id.to_string());
        }
        if let Some(key) = secret {
            request = request.header("Joblog-Signature-256", signature(key, &body.body));
        }
        match request.body(body.body.clone()).send().await {
            Ok(answer) => outcome_of(answer).await,
            Err(e) => {
                // Never the URL: a hook's path is often its credential, and
                // a delivery's error is shown to whoever may read the job.
                let error = describe(&e.without_url());
                // A refused target stays refused; anything else (a
                // timeout, a refused connection) may pass later.
                if error.contains("private address") {
                    TryOutcome::Refused {
                        status: None,
                        error,
                    }
                } else {
                    TryOutcome::Retry {
                        status: None,
                        error,
                    }
                }
            }
        }
    }
}

/// `sha256=<hex HMAC-SHA256 of the body>`, as GitHub signs its web hooks.
pub(crate) fn signature(key: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key.as_bytes()) else {
        // HMAC takes a key of any length; this arm is never taken.
        return String::new();
    };
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256=");
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}

async fn outcome_of(answer: reqwest::Response) -> TryOutcome {
    let status = answer.status();
    let code = Some(status.as_u16());
    if status.is_success() {
        return TryOutcome::Delivered { status: code };
    }
    let body = answer.bytes().await.unwrap_or_default();
    let cut = &body[..body.len().min(KEPT_BODY)];
    let text = String::from_utf8_lossy(cut);
    let error = if text.trim().is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {}", text.trim())
    };
    // A 4xx will answer the same next time, except these two.
    let retry = status.is_server_error()
        || status == reqwest::StatusCode::REQUEST_TIMEOUT
        || status == reqwest::StatusCode::TOO_MANY_REQUESTS;
    if retry {
        TryOutcome::Retry {
            status: code,
            error,
        }
    } else {
        // Redirects are not followed: the rule's URL must be the hook's.
        TryOutcome::Refused {
            status: code,
            error: if status.is_redirection() {
                format!("{error} (redirects are not followed: set the URL it points to)")
            } else {
                error
            },
        }
    }
}

/// The error and its causes in one line (reqwest's own message says
/// only "error sending request").
fn describe(e: &reqwest::Error) -> String {
    let mut text = if e.is_timeout() {
        "timed out".to_owned()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text.chars().take(KEPT_BODY).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn the_signature_is_githubs_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn an_address_in_the_url_is_checked_before_sending() {
        let strict = Sender::new(Duration::from_secs(1), false).unwrap();
        assert!(strict.check_target("http://127.0.0.1:9/x").is_err());
        assert!(strict.check_target("http://[::1]:9/x").is_err());
        assert!(strict.check_target("https://93.184.216.34/x").is_ok());
        assert!(strict.check_target("https://hooks.example.com/x").is_ok());
        let open = Sender::new(Duration::from_secs(1), true).unwrap();
        assert!(open.check_target("http://127.0.0.1:9/x").is_ok());
    }
}
