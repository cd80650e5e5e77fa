//! The syslog sink against test listeners (a unix datagram socket, UDP,
//! TCP), each message read back by a small RFC 5424 parser.

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use joblog_core::Timestamp;
use serde_json::{json, Value};

use super::*;
use crate::entry::{Level, Log};
use crate::format::human_line;

/// A guard against a test hanging for ever, not a timing assertion.
const RECV_GUARD: Duration = Duration::from_secs(30);

/// One message, split as RFC 5424 section 6 has it.
#[derive(Debug)]
struct Message {
    pri: u16,
    version: String,
    timestamp: String,
    hostname: String,
    app_name: String,
    procid: String,
    msgid: String,
    structured_data: String,
    msg: String,
}

fn parse(bytes: &[u8]) -> Message {
    let text = std::str::from_utf8(bytes).unwrap();
    let rest = text
        .strip_prefix('<')
        .unwrap_or_else(|| panic!("no PRI: {text}"));
    let (pri, rest) = rest.split_once('>').unwrap();
    assert!(
        (1..=3).contains(&pri.len()) && pri.bytes().all(|b| b.is_ascii_digit()),
        "PRI {pri:?}"
    );
    let parts: Vec<&str> = rest.splitn(8, ' ').collect();
    assert_eq!(parts.len(), 8, "{text}");
    for (field, max) in parts[..6].iter().zip([2, 32, 255, 48, 128, 32]) {
        assert!(
            !field.is_empty() && field.len() <= max && field.bytes().all(|b| b.is_ascii_graphic()),
            "header field {field:?} in {text}"
        );
    }
    Message {
        pri: pri.parse().unwrap(),
        version: parts[0].into(),
        timestamp: parts[1].into(),
        hostname: parts[2].into(),
        app_name: parts[3].into(),
        procid: parts[4].into(),
        msgid: parts[5].into(),
        structured_data: parts[6].into(),
        msg: parts[7].into(),
    }
}

fn entry(log: Log, level: Level, i: i64) -> Arc<Entry> {
    let mut fields = crate::entry::EntryFields::new();
    fields.insert("status", json!(200 + i));
    fields.insert("path", json!(format!("/api/v1/jobs/{i}")));
    Arc::new(Entry {
        log,
        level,
        at: Timestamp(1_795_488_347_123_456 + i),
        kind: "GET /api/v1/jobs/{id}".into(),
        message: format!("request {i}"),
        fields,
    })
}

fn mixed() -> Vec<Arc<Entry>> {
    vec![
        entry(Log::Error, Level::Error, 0),
        entry(Log::Error, Level::Warn, 1),
        entry(Log::Access, Level::Info, 2),
        entry(Log::Audit, Level::Info, 3),
        entry(Log::Slow, Level::Debug, 4),
        entry(Log::Server, Level::Trace, 5),
    ]
}

fn expected_hostname() -> String {
    let name = nix::unistd::gethostname().unwrap().into_string().unwrap();
    header_field(&name, 255)
}

/// Everything the header must say about `entry`, and the JSON message
/// parsed back to the entry's fields.
fn check_json(m: &Message, entry: &Entry, facility: u16) {
    assert_eq!(
        m.pri,
        facility * 8 + u16::from(severity(entry.level)),
        "{m:?}"
    );
    assert_eq!(m.version, "1");
    assert_eq!(m.timestamp, entry.at.to_rfc3339());
    assert_eq!(m.timestamp.len(), "2026-11-24T02:45:47.123456Z".len());
    assert_eq!(m.hostname, expected_hostname());
    assert_eq!(m.app_name, "joblog");
    assert_eq!(m.procid, std::process::id().to_string());
    assert_eq!(m.msgid, entry.log.as_str());
    assert_eq!(m.structured_data, "-");
    let v: Value = serde_json::from_str(&m.msg).unwrap();
    assert_eq!(v["ts"], entry.at.to_rfc3339());
    assert_eq!(v["log"], entry.log.as_str());
    assert_eq!(v["level"], entry.level.as_str());
    assert_eq!(v["type"], entry.kind.as_str());
    assert_eq!(v["msg"], entry.message.as_str());
    for (k, want) in entry.fields.iter() {
        assert_eq!(v[k], want.to_json(), "{k}");
    }
    assert!(v.get("truncated").is_none());
}

fn unix_listener(dir: &Path) -> (UnixDatagram, PathBuf) {
    let path = dir.join("log.sock");
    let socket = UnixDatagram::bind(&path).unwrap();
    socket.set_read_timeout(Some(RECV_GUARD)).unwrap();
    (socket, path)
}

fn recv(socket: &UnixDatagram) -> Vec<u8> {
    let mut buf = vec![0; 128 * 1024];
    let n = socket.recv(&mut buf).unwrap();
    buf.truncate(n);
    buf
}

#[test]
fn messages_over_a_unix_socket_parse_as_rfc_5424() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, path) = unix_listener(dir.path());
    let target = SyslogTarget::parse(path.to_str().unwrap()).unwrap();
    let local3 = Facility::parse("local3").unwrap();
    let mut sink = SyslogSink::connect(target, local3, "joblog", Format::Json).unwrap();
    assert_eq!(sink.describe(), format!("syslog unix://{}", path.display()));
    let batch = mixed();
    sink.write(&batch).unwrap();
    sink.flush().unwrap();
    let mut severities = Vec::new();
    for entry in &batch {
        let m = parse(&recv(&listener));
        check_json(&m, entry, 19);
        severities.push(m.pri % 8);
    }
    assert_eq!(severities, [3, 4, 6, 6, 7, 7]);
}

#[test]
fn udp_datagrams_carry_human_text_under_the_daemon_facility() {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(RECV_GUARD)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = SyslogTarget::parse(&format!("udp://127.0.0.1:{port}")).unwrap();
    let mut sink =
        SyslogSink::connect(target, Facility::default(), "joblog", Format::Human).unwrap();
    let batch = mixed();
    sink.write(&batch).unwrap();
    for entry in &batch {
        let mut buf = vec![0; 65_536];
        let n = listener.recv(&mut buf).unwrap();
        let m = parse(&buf[..n]);
        assert_eq!(m.pri, 3 * 8 + u16::from(severity(entry.level)));
        assert_eq!(
            (m.msgid.as_str(), m.app_name.as_str()),
            (entry.log.as_str(), "joblog")
        );
        assert_eq!(m.timestamp, entry.at.to_rfc3339());
        let mut text = Vec::new();
        human_line(entry, &mut text);
        assert_eq!(m.msg.as_bytes(), text);
    }
}

#[test]
fn tcp_frames_are_octet_counted() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = SyslogTarget::parse(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let mut sink = SyslogSink::connect(target, Facility::Auth, "joblog", Format::Json).unwrap();
    let (stream, _) = listener.accept().unwrap();
    stream.set_read_timeout(Some(RECV_GUARD)).unwrap();
    let mut reader = BufReader::new(stream);
    // A timeline makes a message of several lines: only the count
    // frames it.
    let mut slow = (*entry(Log::Slow, Level::Warn, 9)).clone();
    slow.fields
        .insert("events", json!([{"msg": "a\nb"}, {"msg": "c"}]));
    let batch = vec![entry(Log::Audit, Level::Info, 1), Arc::new(slow)];
    sink.write(&batch).unwrap();
    for entry in &batch {
        let mut len = Vec::new();
        reader.read_until(b' ', &mut len).unwrap();
        let len: usize = std::str::from_utf8(&len[..len.len() - 1])
            .unwrap()
            .parse()
            .unwrap();
        let mut frame = vec![0; len];
        reader.read_exact(&mut frame).unwrap();
        check_json(&parse(&frame), entry, 4);
    }
}

#[test]
fn a_long_timeline_is_cut_to_fit_a_udp_datagram_and_stays_json() {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(RECV_GUARD)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let target = SyslogTarget::parse(&format!("udp://127.0.0.1:{port}")).unwrap();
    let mut sink = SyslogSink::connect(target, Facility::Daemon, "joblog", Format::Json).unwrap();
    let events: Vec<Value> = (0..500)
        .map(|i| json!({"offset_ms": i, "level": "debug", "target": "joblog_store", "msg": format!("step {i} of the slow operation")}))
        .collect();
    let mut slow = (*entry(Log::Slow, Level::Warn, 1)).clone();
    slow.fields.insert("events", Value::Array(events.clone()));
    let mut original = Vec::new();
    crate::format::json_line(&slow, &mut original);
    sink.write(&[Arc::new(slow)]).unwrap();
    let mut buf = vec![0; 65_536];
    let n = listener.recv(&mut buf).unwrap();
    assert!(n <= UDP_MAX_MESSAGE && n > UDP_MAX_MESSAGE - 200, "{n}");
    let m = parse(&buf[..n]);
    let v: Value = serde_json::from_str(&m.msg).unwrap();
    let kept = v["events"].as_array().unwrap();
    assert!(!kept.is_empty());
    assert_eq!(
        kept[..],
        events[..kept.len()],
        "the timeline's beginning is kept"
    );
    assert_eq!(v["truncated"]["bytes"], original.len());
    assert_eq!(v["truncated"]["events_dropped"], 500 - kept.len());
    assert!(v["truncated"].get("fields_dropped").is_none());
    assert_eq!(
        (v["msg"].as_str(), v["status"].as_i64()),
        (Some("request 1"), Some(201))
    );
}

#[test]
fn a_huge_message_is_cut_to_the_limit_in_either_format() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, path) = unix_listener(dir.path());
    let mut huge = (*entry(Log::Error, Level::Error, 1)).clone();
    huge.message = "é".repeat(50_000);
    huge.fields.insert("detail", json!("x".repeat(10_000)));
    let huge = Arc::new(huge);
    for format in [Format::Json, Format::Human] {
        let target = SyslogTarget::Unix(path.clone());
        let mut sink = SyslogSink::connect(target, Facility::User, "joblog", format)
            .unwrap()
            .max_message(4096);
        sink.write(std::slice::from_ref(&huge)).unwrap();
        let bytes = recv(&listener);
        assert!(bytes.len() <= 4096, "{}", bytes.len());
        let m = parse(&bytes);
        if format == Format::Json {
            let v: Value = serde_json::from_str(&m.msg).unwrap();
            assert!(
                bytes.len() > 3900,
                "cut no more than needed: {}",
                bytes.len()
            );
            let msg = v["msg"].as_str().unwrap();
            assert!(msg.ends_with('…') && msg.starts_with("éé"), "{msg}");
            assert_eq!(v["truncated"]["fields_dropped"], 1, "{v}");
            assert!(v.get("detail").is_none());
            assert_eq!(v["status"], 201);
        } else {
            assert!(m.msg.ends_with(" [truncated]"), "{}", m.msg);
            assert!(
                m.msg.contains("ERROR error GET /api/v1/jobs/{id}: éé"),
                "{}",
                m.msg
            );
        }
    }
}

#[test]
fn a_target_that_is_not_there_fails_to_connect_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing.sock");
    let e = SyslogSink::connect(
        SyslogTarget::Unix(path.clone()),
        Facility::Daemon,
        "joblog",
        Format::Json,
    )
    .err()
    .unwrap();
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "syslog unix://{}: cannot connect: ",
            path.display()
        )),
        "{text}"
    );
    assert_eq!(e.kind(), io::ErrorKind::NotFound);

    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let target = SyslogTarget::parse(&format!("tcp://127.0.0.1:{port}")).unwrap();
    let e = SyslogSink::connect(target, Facility::Daemon, "joblog", Format::Json)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .starts_with(&format!("syslog tcp://127.0.0.1:{port}: cannot connect")),
        "{e}"
    );
}

#[test]
fn after_syslog_restarts_a_failed_send_is_an_error_and_reopen_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let (listener, path) = unix_listener(dir.path());
    let mut sink = SyslogSink::connect(
        SyslogTarget::Unix(path.clone()),
        Facility::Daemon,
        "joblog",
        Format::Json,
    )
    .unwrap();
    sink.write(&[entry(Log::Audit, Level::Info, 1)]).unwrap();
    parse(&recv(&listener));
    // The daemon stops: its socket goes with it.
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    let e = sink
        .write(&[entry(Log::Audit, Level::Info, 2)])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("syslog unix://{}", path.display())),
        "{e}"
    );
    let e = sink.reopen().unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
    // It starts again at the same path.
    let (listener, _) = unix_listener(dir.path());
    sink.reopen().unwrap();
    sink.write(&[entry(Log::Audit, Level::Info, 3)]).unwrap();
    let v: Value = serde_json::from_str(&parse(&recv(&listener)).msg).unwrap();
    assert_eq!(v["msg"], "request 3");
    // A write after a failure connects by itself, reopen or not.
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    assert!(sink.write(&[entry(Log::Audit, Level::Info, 4)]).is_err());
    let (listener, _) = unix_listener(dir.path());
    sink.write(&[entry(Log::Audit, Level::Info, 5)]).unwrap();
    let v: Value = serde_json::from_str(&parse(&recv(&listener)).msg).unwrap();
    assert_eq!(v["msg"], "request 5");
}

#[test]
fn header_fields_are_printable_ascii_without_spaces() {
    assert_eq!(header_field("my app", 48), "my_app");
    assert_eq!(header_field("jöblog\t", 48), "j_blog_");
    assert_eq!(header_field("", 48), "-");
    assert_eq!(header_field(&"a".repeat(60), 48).len(), 48);
    let header = message::Header::new(Facility::Daemon, "host name", "", 42);
    assert_eq!(header.hostname(), "host_name");
    let mut out = Vec::new();
    header.write(
        &entry(Log::Access, Level::Info, 0),
        Format::Json,
        2048,
        &mut out,
    );
    let m = parse(&out);
    assert_eq!(
        (m.hostname.as_str(), m.app_name.as_str(), m.procid.as_str()),
        ("host_name", "-", "42")
    );
}

#[test]
fn max_message_stays_within_what_receivers_and_udp_take() {
    let dir = tempfile::tempdir().unwrap();
    let (_listener, path) = unix_listener(dir.path());
    let connect = || {
        SyslogSink::connect(
            SyslogTarget::Unix(path.clone()),
            Facility::Daemon,
            "joblog",
            Format::Json,
        )
        .unwrap()
    };
    assert_eq!(connect().max_message, STREAM_MAX_MESSAGE);
    assert_eq!(connect().max_message(10).max_message, MIN_MAX_MESSAGE);
    assert_eq!(connect().max_message(1 << 20).max_message, MAX_MAX_MESSAGE);
}
