//! A real HTTP receiver for the notifications a test makes joblog send: it
//! listens on a loopback port, keeps every request it gets (method, path,
//! headers, body) and answers each with the status the test sets (200
//! unless told otherwise), or not at all while it is "down". HTTP/1.1 with
//! keep-alive and `Content-Length` bodies, which is what a web hook
//! client sends; anything else closes the connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::listener::{lock, Listening};

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Names in lower case, in the order sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body read as JSON; panics showing it when it is not.
    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "the body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

#[derive(Default)]
struct Shared {
    received: Vec<Received>,
    /// What the next requests are answered with, first first; once
    /// spent, `status`.
    queued: Vec<u16>,
    status: Option<u16>,
}

/// The receiver; it stops when dropped.
pub struct Receiver {
    listening: Listening<Shared>,
}

impl Receiver {
    /// Listens on a free loopback port, answering 200.
    pub async fn start() -> Receiver {
        let state = Shared {
            status: Some(200),
            ..Shared::default()
        };
        Receiver {
            listening: Listening::start("receiver", state, connection).await,
        }
    }

    pub fn port(&self) -> u16 {
        self.listening.port
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    /// Answers every request from now on with `status`.
    pub fn answer_with(&self, status: u16) {
        let mut s = self.lock();
        s.queued.clear();
        s.status = Some(status);
    }

    /// Answers the next requests with these statuses, in order, then as
    /// before.
    pub fn answer_next(&self, statuses: &[u16]) {
        self.lock().queued.extend_from_slice(statuses);
    }

    /// Down: connections are closed before an answer (the sender sees a
    /// failed request); `answer_with` brings it back.
    pub fn go_down(&self) {
        let mut s = self.lock();
        s.queued.clear();
        s.status = None;
    }

    /// Every request received so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// Waits until `n` requests were received (at most the kit's
    /// patience), and gives them.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let requests = "requests at the receiver";
        self.listening.wait_for(requests, n, |s| &s.received).await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.listening.lock()
    }
}

/// Requests on one connection until it closes or is not understood.
async fn connection(stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut reader = BufReader::new(stream);
    while let Some(request) = read_request(&mut reader).await {
        let status = {
            let mut s = lock(&shared);
            s.received.push(request);
            if s.queued.is_empty() {
                s.status
            } else {
                Some(s.queued.remove(0))
            }
        };
        let Some(status) = status else { return };
        let answer = format!(
            "HTTP/1.1 {status} Answer\r\ncontent-type: text/plain\r\ncontent-length: 8\r\n\r\nreceived"
        );
        if reader.get_mut().write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    // A request head is not read for ever.
    let patience = Duration::from_secs(60);
    tokio::time::timeout(patience, reader.read_line(&mut line))
        .await
        .ok()?
        .ok()?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next()?.to_owned(), words.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(Received {
        method,
        path,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn post(url: &str, body: &str) -> std::io::Result<String> {
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_once('/').unwrap();
        let mut stream = TcpStream::connect(host).await?;
        let request = format!(
            "POST /{path} HTTP/1.1\r\nHost: {host}\r\nX-Team: ops\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await?;
        let mut answer = String::new();
        let mut buf = [0u8; 256];
        let n = stream.read(&mut buf).await?;
        answer.push_str(&String::from_utf8_lossy(&buf[..n]));
        Ok(answer)
    }

    #[tokio::test]
    async fn it_keeps_requests_and_answers_as_told() {
        let r = Receiver::start().await;
        let first = post(&r.url("/hook"), "{\"a\":1}").await.unwrap();
        assert!(first.starts_with("HTTP/1.1 200"), "{first}");
        r.answer_next(&[503]);
        let second = post(&r.url("/hook"), "{}").await.unwrap();
        assert!(second.starts_with("HTTP/1.1 503"), "{second}");
        let third = post(&r.url("/hook"), "{}").await.unwrap();
        assert!(third.starts_with("HTTP/1.1 200"), "{third}");
        r.go_down();
        assert_eq!(post(&r.url("/hook"), "{}").await.unwrap_or_default(), "");
        let got = r.wait_for(4).await;
        assert_eq!(got[0].path, "/hook");
        assert_eq!(got[0].header("x-team"), Some("ops"));
        assert_eq!(got[0].json()["a"], 1);
    }
}
