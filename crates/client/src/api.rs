//! The HTTP side of the client: one [`Api`] per invocation that adds the
//! token header, turns transport failures and the server's error envelope
//! into errors a user can act on, and never shows a password in a message.

use std::fmt;
use std::time::Duration;

use anyhow::Context;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use reqwest::{StatusCode, Url};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::render::escape_display;
use super::wire::{JobView, LogPage};
use super::UsageError;

/// An error the server answered with (`{"error":{"code","message"}}`).
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    server: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if self.message.is_empty() {
            format!("HTTP {} ({})", self.status, self.code)
        } else {
            self.message.clone()
        };
        let msg = escape_display(&text, false);
        if self.status == StatusCode::UNAUTHORIZED {
            write!(
                f,
                "{msg} (HTTP 401 from {}; give the API token with --token-file, JOBLOG_TOKEN or --token)",
                self.server
            )
        } else if self.status.is_server_error() {
            write!(f, "server error at {}: {msg}", self.server)
        } else {
            f.write_str(&msg)
        }
    }
}

impl std::error::Error for ApiError {}

#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// One HTTP client for every call, so the connection stays warm.
pub struct Api {
    http: reqwest::Client,
    /// The server URL without a trailing slash; paths are appended to it.
    base: String,
    /// The server URL as shown in messages (no password).
    shown: String,
}

/// The timeout of an ordinary request; a long poll adds its wait to it.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

impl Api {
    pub fn new(server: &str, token: Option<&str>) -> anyhow::Result<Api> {
        Self::with_ca(server, token, None)
    }

    /// [`Api::new`], trusting the CA certificates of a PEM file (for a
    /// server whose certificate the system does not know: a private CA,
    /// a self-signed one) besides the system's.
    pub fn with_ca(
        server: &str,
        token: Option<&str>,
        cacert: Option<&std::path::Path>,
    ) -> anyhow::Result<Api> {
        let url = Url::parse(server.trim())
            .map_err(|e| UsageError(format!("invalid --server URL {server:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(UsageError(format!(
                "invalid --server URL {:?}: expected http://HOST:PORT",
                redact_url(server)
            ))
            .into());
        }
        let mut headers = HeaderMap::new();
        if let Some(t) = token {
            let mut v = HeaderValue::from_str(&format!("Bearer {}", t.trim())).map_err(|_| {
                UsageError("the API token contains characters not allowed in a header".into())
            })?;
            // Keeps the token out of reqwest's debug output.
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        super::install_tls_provider();
        let mut builder = reqwest::Client::builder();
        if let Some(path) = cacert {
            let pem = std::fs::read(path).map_err(|e| {
                UsageError(format!("--cacert: cannot read {}: {e}", path.display()))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                UsageError(format!(
                    "--cacert: {} is not PEM certificates: {e}",
                    path.display()
                ))
            })?;
            if certs.is_empty() {
                return Err(UsageError(format!(
                    "--cacert: {} holds no certificate",
                    path.display()
                ))
                .into());
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder
            .user_agent(concat!("joblog/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Api {
            http,
            base: url.as_str().trim_end_matches('/').to_string(),
            shown: redact_url(url.as_str().trim_end_matches('/')),
        })
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// `path` is relative to the server root, e.g. `/api/v1/jobs`.
    pub fn url(&self, path: &str, query: &[(&str, String)]) -> anyhow::Result<Url> {
        let mut url = Url::parse(&format!("{}{path}", self.base))
            .with_context(|| format!("invalid URL for {path}"))?;
        if !query.is_empty() {
            let mut q = url.query_pairs_mut();
            for (k, v) in query {
                q.append_pair(k, v);
            }
        }
        Ok(url)
    }

    fn transport_error(&self, e: reqwest::Error) -> anyhow::Error {
        let what = if e.is_connect() {
            "cannot connect to"
        } else if e.is_timeout() {
            "timed out talking to"
        } else {
            "lost the connection to"
        };
        // The innermost cause ("Connection refused") is what tells the user
        // what to fix; reqwest's own text repeats the URL.
        let e = e.without_url();
        let mut cause: &dyn std::error::Error = &e;
        while let Some(next) = cause.source() {
            cause = next;
        }
        anyhow::Error::new(TransportError {
            message: format!("{what} joblog server at {}: {cause}", self.shown),
        })
    }

    /// Sends and turns a non-2xx answer into an [`ApiError`].
    async fn send(
        &self,
        req: reqwest::RequestBuilder,
        timeout: Option<Duration>,
    ) -> anyhow::Result<reqwest::Response> {
        let req = match timeout {
            Some(t) => req.timeout(t),
            None => req,
        };
        let resp = req.send().await.map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        let (code, message) = match serde_json::from_str::<ErrorEnvelope>(&body) {
            Ok(env) => (env.error.code, env.error.message),
            Err(_) => {
                let snippet: String = body.trim().chars().take(200).collect();
                (
                    String::new(),
                    format!("HTTP {status} from {}: {snippet}", self.shown),
                )
            }
        };
        Err(ApiError {
            status,
            code,
            message,
            server: self.shown.clone(),
        }
        .into())
    }

    async fn read_body(&self, resp: reqwest::Response) -> anyhow::Result<Vec<u8>> {
        let bytes = resp.bytes().await.map_err(|e| self.transport_error(e))?;
        Ok(bytes.to_vec())
    }

    pub(super) fn decode<T: DeserializeOwned>(&self, body: &[u8]) -> anyhow::Result<T> {
        serde_json::from_slice(body)
            .with_context(|| format!("unexpected answer from {}", self.shown))
    }

    /// Every item of a listing paged by `after_id` (`GET path`, items
    /// under `key`, the next page at `next_after_id`). A server that names
    /// no later page start is not followed round in a circle.
    pub(super) async fn every_page(
        &self,
        path: &str,
        key: &'static str,
        timeout: Duration,
    ) -> anyhow::Result<Vec<Value>> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            next_after_id: Option<i64>,
            #[serde(flatten)]
            rest: serde_json::Map<String, Value>,
        }
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let q = [
                ("limit", "1000".to_string()),
                ("after_id", after.to_string()),
            ];
            let raw = self.get_raw(self.url(path, &q)?, timeout).await?;
            let mut page: Page = self.decode(&raw)?;
            match page.rest.remove(key) {
                Some(Value::Array(items)) => all.extend(items),
                _ => anyhow::bail!("the server's page of {path} has no {key:?} list"),
            }
            match page.next_after_id {
                Some(next) if next > after => after = next,
                _ => return Ok(all),
            }
        }
    }

    /// GET returning the body bytes (for `--json`, printed as the API sent them).
    pub async fn get_raw(&self, url: Url, timeout: Duration) -> anyhow::Result<Vec<u8>> {
        let resp = self.send(self.http.get(url), Some(timeout)).await?;
        self.read_body(resp).await
    }

    /// GET returning the status and body whatever the status, for an
    /// answer whose 503 carries the same document as its 200 (`/healthz`).
    pub async fn get_any(
        &self,
        url: Url,
        timeout: Duration,
    ) -> anyhow::Result<(StatusCode, Vec<u8>)> {
        let resp = self
            .http
            .get(url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = resp.status();
        Ok((status, self.read_body(resp).await?))
    }

    /// GET whose body the caller reads as it comes ([`Api::next_chunk`]),
    /// with no overall timeout: a download takes as long as it is large.
    pub async fn get_streaming(&self, url: Url) -> anyhow::Result<reqwest::Response> {
        self.send(self.http.get(url), None).await
    }

    /// The next piece of a streamed body; `None` at its end.
    pub async fn next_chunk(
        &self,
        resp: &mut reqwest::Response,
    ) -> anyhow::Result<Option<bytes::Bytes>> {
        resp.chunk().await.map_err(|e| self.transport_error(e))
    }

    pub async fn get_json<T: DeserializeOwned>(&self, url: Url) -> anyhow::Result<T> {
        let body = self.get_raw(url, REQUEST_TIMEOUT).await?;
        self.decode(&body)
    }

    pub async fn post_raw(&self, url: Url, body: &Value) -> anyhow::Result<Vec<u8>> {
        let resp = self
            .send(self.http.post(url).json(body), Some(REQUEST_TIMEOUT))
            .await?;
        self.read_body(resp).await
    }

    pub async fn patch_raw(&self, url: Url, body: &Value) -> anyhow::Result<Vec<u8>> {
        let resp = self
            .send(self.http.patch(url).json(body), Some(REQUEST_TIMEOUT))
            .await?;
        self.read_body(resp).await
    }

    pub async fn delete_raw(&self, url: Url) -> anyhow::Result<Vec<u8>> {
        let resp = self
            .send(self.http.delete(url), Some(REQUEST_TIMEOUT))
            .await?;
        self.read_body(resp).await
    }

    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: Url,
        body: &Value,
    ) -> anyhow::Result<T> {
        let raw = self.post_raw(url, body).await?;
        self.decode(&raw)
    }

    /// One page of a job's log. `wait` asks the server to hold the request
    /// until records arrive or the job ends (long poll).
    pub async fn log_page(
        &self,
        id: i64,
        after: u64,
        limit: u32,
        streams: Option<&str>,
        wait: Option<Duration>,
    ) -> anyhow::Result<LogPage> {
        let mut q = vec![
            ("after_seq", after.to_string()),
            ("limit", limit.to_string()),
        ];
        if let Some(s) = streams {
            q.push(("streams", s.to_string()));
        }
        let timeout = match wait {
            Some(w) => {
                q.push(("wait_ms", w.as_millis().to_string()));
                REQUEST_TIMEOUT + w
            }
            None => REQUEST_TIMEOUT,
        };
        let url = self.url(&format!("/api/v1/jobs/{id}/log"), &q)?;
        let body = self.get_raw(url, timeout).await?;
        self.decode(&body)
    }

    pub async fn job(&self, id: i64) -> anyhow::Result<JobView> {
        self.get_json(self.url(&format!("/api/v1/jobs/{id}"), &[])?)
            .await
    }
}

/// The request never got an HTTP answer (refused, timed out, reset).
#[derive(Debug)]
pub struct TransportError {
    message: String,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TransportError {}

/// A URL fit for messages and reports: any password replaced by `***`.
pub fn redact_url(s: &str) -> String {
    let Ok(mut url) = Url::parse(s) else {
        return s.to_string();
    };
    let mut changed = false;
    if url.password().is_some() {
        changed = url.set_password(Some("***")).is_ok();
    }
    if url.query_pairs().any(|(k, _)| k == "password") {
        let pairs: Vec<(String, String)> = url
            .query_pairs()
            .map(|(k, v)| {
                let v = if k == "password" {
                    "***".to_string()
                } else {
                    v.into_owned()
                };
                (k.into_owned(), v)
            })
            .collect();
        url.query_pairs_mut().clear().extend_pairs(pairs);
        changed = true;
    }
    if changed {
        url.to_string()
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_redacted() {
        assert_eq!(
            redact_url("postgres://joe:secret@db/joblog"),
            "postgres://joe:***@db/joblog"
        );
        assert_eq!(
            redact_url("postgres://db/joblog?user=joe&password=secret"),
            "postgres://db/joblog?user=joe&password=***"
        );
        assert_eq!(redact_url("http://127.0.0.1:7878"), "http://127.0.0.1:7878");
    }

    #[test]
    fn api_urls() {
        let api = Api::new("http://127.0.0.1:7878/", None).unwrap();
        let u = api
            .url("/api/v1/jobs", &[("name", "a b&c".to_string())])
            .unwrap();
        assert_eq!(u.as_str(), "http://127.0.0.1:7878/api/v1/jobs?name=a+b%26c");
        let api = Api::new("http://proxy/joblog", None).unwrap();
        assert_eq!(
            api.url("/healthz", &[]).unwrap().as_str(),
            "http://proxy/joblog/healthz"
        );
        let e = Api::new("127.0.0.1:7878", None).err().unwrap();
        assert!(e.downcast_ref::<UsageError>().is_some());
        let e = Api::new("http://x", Some("bad\ntoken")).err().unwrap();
        assert!(!e.to_string().contains("bad"));
    }
}
