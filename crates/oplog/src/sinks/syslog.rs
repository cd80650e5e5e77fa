//! Syslog as a sink: one RFC 5424 message per entry, over the local
//! socket (`/dev/log`), a unix socket path, UDP (one datagram each) or
//! TCP (octet-counted frames, RFC 6587).
//!
//! Sizes: a message is at most 64 KiB over a unix socket or TCP and
//! 8 KiB over UDP (more would be sent as many IP fragments, and lose
//! the whole message with any one of them); [`SyslogSink::max_message`]
//! changes it. A longer message is cut as [`message`] says, so a JSON
//! message always parses.

mod message;
mod target;

use std::io::{self, Write};
use std::net::{TcpStream, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::time::Duration;

pub use message::{header_field, severity};
pub use target::{Facility, SyslogTarget, DEFAULT_PORT};

use self::message::Header;
use crate::entry::Entry;
use crate::format::Format;
use crate::sink::Sink;

/// The default largest message over a unix socket or TCP.
pub const STREAM_MAX_MESSAGE: usize = 64 * 1024;
/// The default largest message over UDP.
pub const UDP_MAX_MESSAGE: usize = 8 * 1024;
/// The least [`SyslogSink::max_message`] takes: what RFC 5424 says
/// receivers should accept.
pub const MIN_MAX_MESSAGE: usize = 2048;
/// The most: the largest UDP payload over IPv4.
pub const MAX_MAX_MESSAGE: usize = 65_507;

/// How long a send may wait for a syslog daemon that does not read:
/// after that it fails (and is counted) instead of holding the sink.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

enum Conn {
    Unix(UnixDatagram),
    Udp(UdpSocket),
    Tcp(TcpStream),
}

/// A syslog sink. See the module documentation.
pub struct SyslogSink {
    target: SyslogTarget,
    header: Header,
    format: Format,
    max_message: usize,
    /// `None` after a failure: the next write connects again.
    conn: Option<Conn>,
    buf: Vec<u8>,
    frames: Vec<u8>,
}

impl SyslogSink {
    /// Connects to `target`; messages name `app_name` (`joblog`) and this
    /// process. A unix socket that is not there fails here; UDP cannot
    /// tell, so an absent UDP listener shows as failed sends, if at all.
    pub fn connect(
        target: SyslogTarget,
        facility: Facility,
        app_name: &str,
        format: Format,
    ) -> io::Result<SyslogSink> {
        let max_message = match target {
            SyslogTarget::Udp { .. } => UDP_MAX_MESSAGE,
            _ => STREAM_MAX_MESSAGE,
        };
        let mut sink = SyslogSink {
            header: Header::new(facility, &hostname(), app_name, std::process::id()),
            target,
            format,
            max_message,
            conn: None,
            buf: Vec::with_capacity(max_message),
            frames: Vec::new(),
        };
        sink.conn = Some(sink.open()?);
        Ok(sink)
    }

    /// Sets the largest message, header included, within
    /// [`MIN_MAX_MESSAGE`]..=[`MAX_MAX_MESSAGE`].
    pub fn max_message(mut self, bytes: usize) -> SyslogSink {
        self.max_message = bytes.clamp(MIN_MAX_MESSAGE, MAX_MAX_MESSAGE);
        self
    }

    pub fn target(&self) -> &SyslogTarget {
        &self.target
    }

    fn error(&self, what: &str, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("syslog {}: {what}: {e}", self.target))
    }

    fn open(&self) -> io::Result<Conn> {
        match &self.target {
            SyslogTarget::Unix(path) => {
                let socket =
                    UnixDatagram::unbound().map_err(|e| self.error("cannot create a socket", e))?;
                socket
                    .connect(path)
                    .map_err(|e| self.error("cannot connect", e))?;
                socket.set_write_timeout(Some(SEND_TIMEOUT))?;
                Ok(Conn::Unix(socket))
            }
            SyslogTarget::Udp { host, port } => {
                let mut last = None;
                for addr in self.resolve(host, *port)? {
                    let local = if addr.is_ipv4() {
                        "0.0.0.0:0"
                    } else {
                        "[::]:0"
                    };
                    match UdpSocket::bind(local).and_then(|s| s.connect(addr).map(|()| s)) {
                        Ok(socket) => {
                            socket.set_write_timeout(Some(SEND_TIMEOUT))?;
                            return Ok(Conn::Udp(socket));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(self.error("cannot connect", last.unwrap_or_else(no_address)))
            }
            SyslogTarget::Tcp { host, port } => {
                let mut last = None;
                for addr in self.resolve(host, *port)? {
                    match TcpStream::connect_timeout(&addr, SEND_TIMEOUT) {
                        Ok(stream) => {
                            stream.set_write_timeout(Some(SEND_TIMEOUT))?;
                            return Ok(Conn::Tcp(stream));
                        }
                        Err(e) => last = Some(e),
                    }
                }
                Err(self.error("cannot connect", last.unwrap_or_else(no_address)))
            }
        }
    }

    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<std::net::SocketAddr>> {
        (host, port)
            .to_socket_addrs()
            .map(Iterator::collect)
            .map_err(|e| self.error("cannot resolve its host", e))
    }

    fn send(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        if self.conn.is_none() {
            self.conn = Some(self.open()?);
        }
        let (header, format, limit) = (&self.header, self.format, self.max_message);
        let (buf, frames) = (&mut self.buf, &mut self.frames);
        let sent = match self.conn.as_mut() {
            Some(Conn::Tcp(stream)) => {
                // Frames of a batch go in one write: `LEN SP MSG` each.
                frames.clear();
                for entry in batch {
                    buf.clear();
                    header.write(entry, format, limit, buf);
                    frames.extend_from_slice(format!("{} ", buf.len()).as_bytes());
                    frames.extend_from_slice(buf);
                }
                stream.write_all(frames)
            }
            Some(Conn::Unix(socket)) => batch.iter().try_for_each(|entry| {
                buf.clear();
                header.write(entry, format, limit, buf);
                whole(socket.send(buf)?, buf.len())
            }),
            Some(Conn::Udp(socket)) => batch.iter().try_for_each(|entry| {
                buf.clear();
                header.write(entry, format, limit, buf);
                whole(socket.send(buf)?, buf.len())
            }),
            None => Ok(()),
        };
        sent.map_err(|e| {
            // A broken TCP stream may hold half a frame, a unix socket
            // a dead daemon's inode: the next write connects afresh.
            self.conn = None;
            self.error("cannot send", e)
        })
    }
}

fn no_address() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "the host has no address")
}

/// A datagram goes whole or not at all; anything else is an error.
fn whole(sent: usize, len: usize) -> io::Result<()> {
    if sent == len {
        Ok(())
    } else {
        Err(io::Error::other(format!("sent {sent} of {len} bytes")))
    }
}

/// This machine's name, or `-` (RFC 5424's "unknown").
fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}

impl Sink for SyslogSink {
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        self.send(batch)
    }

    fn flush(&mut self) -> io::Result<()> {
        // Every message was sent by `write`; nothing is buffered here.
        Ok(())
    }

    /// Connects again: the syslog daemon was restarted, or its socket
    /// replaced.
    fn reopen(&mut self) -> io::Result<()> {
        self.conn = None;
        self.header.set_hostname(&hostname());
        self.conn = Some(self.open()?);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("syslog {}", self.target)
    }
}

#[cfg(test)]
mod tests;
