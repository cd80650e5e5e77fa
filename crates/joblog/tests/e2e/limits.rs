//! The connection-level limits of the real server, over real sockets: what
//! the probe found held connections (and the server) hostage.

use std::time::{Duration, Instant};

use joblog_testkit::eventually;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Server;

/// Far above the 1-2 s timeouts these tests set, so a slow machine does
/// not fail them; a connection that is never closed does.
const CLOSED_WITHIN: Duration = Duration::from_secs(20);

fn addr(server: &Server) -> String {
    server.url.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection; returns what it sent.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(CLOSED_WITHIN, stream.read_to_end(&mut out))
        .await
        .expect("the server never closed the connection")
        .ok();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_slow_and_surplus_connections_are_closed_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &[
            "--http-header-read-timeout",
            "1s",
            "--http-max-connections",
            "3",
        ],
    )
    .await;
    // The start-up health check's pooled connection is idle: let the
    // server close it, so the three below are all there are.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // An idle socket that never sends a byte is closed.
    let started = Instant::now();
    let mut idle = TcpStream::connect(addr(&server)).await.unwrap();
    let said = read_until_closed(&mut idle).await;
    assert!(!said.contains("200 OK"), "{said}");
    assert!(started.elapsed() >= Duration::from_millis(900));

    // A slow-loris client, a byte now and then, never finishing its
    // headers: closed as well.
    let mut slow = TcpStream::connect(addr(&server)).await.unwrap();
    let mut writes = 0;
    let cut = tokio::time::timeout(CLOSED_WITHIN, async {
        for b in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaa" {
            if slow.write_all(&[*b]).await.is_err() {
                return true;
            }
            writes += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut buf = [0u8; 64];
        matches!(slow.read(&mut buf).await, Ok(0) | Err(_))
    })
    .await
    .expect("the slow client was never cut off");
    assert!(cut, "the slow client was answered");
    assert!(writes < 60, "it got to send all its bytes: {writes}");

    // Past max_connections: a clear 503, then the connection is closed.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(TcpStream::connect(addr(&server)).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut surplus = TcpStream::connect(addr(&server)).await.unwrap();
    let said = read_until_closed(&mut surplus).await;
    assert!(said.starts_with("HTTP/1.1 503"), "{said}");
    assert!(said.contains("too_many_connections"), "{said}");
    // Once those are gone (closed for idleness), the server answers again.
    drop(held);
    eventually("the server to have room again", CLOSED_WITHIN, || async {
        let reply = server
            .http
            .get(format!("{}/healthz", server.url))
            .send()
            .await;
        reply.is_ok_and(|r| r.status() == 200).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_heads_and_declared_bodies_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--http-max-header-bytes", "8KiB"]).await;

    let mut big_head = TcpStream::connect(addr(&server)).await.unwrap();
    let request = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    // The server may close before reading it all; what it said counts.
    let _ = big_head.write_all(request.as_bytes()).await;
    let said = read_until_closed(&mut big_head).await;
    assert!(said.starts_with("HTTP/1.1 431"), "{said}");

    // A body declared far too large is refused from its header: the
    // answer comes without a byte of the body being sent.
    let mut huge = TcpStream::connect(addr(&server)).await.unwrap();
    huge.write_all(
        b"POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n",
    )
    .await
    .unwrap();
    let said = read_until_closed(&mut huge).await;
    assert!(said.starts_with("HTTP/1.1 413"), "{said}");
    assert!(said.contains("body_too_large"), "{said}");
}
