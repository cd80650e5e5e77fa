//! A real SMTP server for the e-mail a test makes joblog send: plain SMTP
//! on a loopback port (EHLO, MAIL, RCPT, DATA, RSET, NOOP, QUIT), keeping
//! each message's envelope and data, and answering the data with the code
//! the test sets (250 unless told otherwise), so a refusal (550) or a
//! temporary failure (451) can be tried.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::listener::{lock, Listening};

/// One message as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    /// The message as sent after DATA (headers and body), dot-unstuffed.
    pub data: String,
}

impl Mail {
    /// The value of header `name` (any case), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next()?;
        let mut value: Option<String> = None;
        for line in head.split("\r\n") {
            if line.starts_with([' ', '\t']) {
                if let Some(v) = value.as_mut() {
                    v.push_str(line.trim_start());
                    continue;
                }
            } else if value.is_some() {
                break;
            }
            if let Some((n, v)) = line.split_once(':') {
                if n.eq_ignore_ascii_case(name) {
                    value = Some(v.trim().to_owned());
                }
            }
        }
        value
    }

    /// The text of the first MIME part of `content_type` (`text/html`),
    /// decoded from 7bit, 8bit or quoted-printable (a base64 part gives
    /// `None`, so a test relying on it fails plainly).
    pub fn part(&self, content_type: &str) -> Option<String> {
        for part in self.data.split("\r\n--").skip(1) {
            let (head, body) = part.split_once("\r\n\r\n")?;
            let head = head.to_ascii_lowercase();
            if !head.contains(&format!("content-type: {content_type}")) {
                continue;
            }
            if head.contains("content-transfer-encoding: quoted-printable") {
                return quoted_printable(body);
            }
            if head.contains("content-transfer-encoding: base64") {
                return None;
            }
            return Some(body.to_owned());
        }
        None
    }
}

fn quoted_printable(text: &str) -> Option<String> {
    let bytes = text.replace("=\r\n", "").into_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[derive(Default)]
struct Shared {
    mails: Vec<Mail>,
    /// The answers to the next messages' data, first first; then 250.
    queued: Vec<u16>,
}

/// The server; it stops when dropped.
pub struct SmtpServer {
    listening: Listening<Shared>,
}

impl SmtpServer {
    pub async fn start() -> SmtpServer {
        SmtpServer {
            listening: Listening::start("SMTP server", Shared::default(), session).await,
        }
    }

    /// `smtp://127.0.0.1:PORT` (plain SMTP: the tests' own server).
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.listening.port)
    }

    /// Answers the next messages' data with these codes, then 250.
    pub fn answer_next(&self, codes: &[u16]) {
        self.lock().queued.extend_from_slice(codes);
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.lock().mails.clone()
    }

    /// Waits until `n` messages were accepted (at most the kit's patience).
    pub async fn wait_for(&self, n: usize) -> Vec<Mail> {
        let messages = "messages at the SMTP server";
        self.listening.wait_for(messages, n, |s| &s.mails).await
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.listening.lock()
    }
}

async fn session(stream: TcpStream, shared: Arc<Mutex<Shared>>) {
    let mut conn = BufReader::new(stream);
    if say(&mut conn, "220 testkit ESMTP").await.is_err() {
        return;
    }
    let (mut from, mut to) = (String::new(), Vec::new());
    loop {
        let mut line = String::new();
        match conn.read_line(&mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let command = line.trim_end().to_owned();
        let verb = command
            .split([' ', ':'])
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let reply = match verb.as_str() {
            "EHLO" => "250-testkit\r\n250 8BITMIME".to_owned(),
            "HELO" | "NOOP" => "250 OK".to_owned(),
            "MAIL" => {
                from = address(&command);
                to.clear();
                "250 OK".to_owned()
            }
            "RCPT" => {
                to.push(address(&command));
                "250 OK".to_owned()
            }
            "RSET" => {
                from.clear();
                to.clear();
                "250 OK".to_owned()
            }
            "DATA" => {
                if say(&mut conn, "354 go on").await.is_err() {
                    return;
                }
                let Some(data) = read_data(&mut conn).await else {
                    return;
                };
                let mut s = lock(&shared);
                let code = if s.queued.is_empty() {
                    250
                } else {
                    s.queued.remove(0)
                };
                if code == 250 {
                    s.mails.push(Mail {
                        from: from.clone(),
                        to: to.clone(),
                        data,
                    });
                }
                format!("{code} {}", if code == 250 { "queued" } else { "not now" })
            }
            "QUIT" => {
                let _ = say(&mut conn, "221 bye").await;
                return;
            }
            _ => "502 not implemented".to_owned(),
        };
        if say(&mut conn, &reply).await.is_err() {
            return;
        }
    }
}

async fn say(conn: &mut BufReader<TcpStream>, reply: &str) -> std::io::Result<()> {
    conn.get_mut()
        .write_all(format!("{reply}\r\n").as_bytes())
        .await
}

/// `MAIL FROM:<a@b> SIZE=1` → `a@b`.
fn address(command: &str) -> String {
    command
        .split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(a, _)| a.to_owned())
        .unwrap_or_default()
}

/// The data up to the line holding a lone `.`, dot-unstuffed.
async fn read_data(conn: &mut BufReader<TcpStream>) -> Option<String> {
    let mut data = String::new();
    loop {
        let mut line = String::new();
        if conn.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if line == ".\r\n" || line == ".\n" {
            return Some(data);
        }
        data.push_str(line.strip_prefix('.').unwrap_or(&line));
    }
}
