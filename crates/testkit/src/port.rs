//! A loopback port for a server a test starts.

/// A loopback port nothing listens on right now. The port is free once the
/// probe's listener is dropped; another process could take it before the
/// server binds it, a race small enough for tests (a server that cannot
/// bind fails its start loudly, never silently).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

#[cfg(test)]
mod tests {
    use super::free_port;

    #[test]
    fn a_free_port_can_be_bound() {
        let port = free_port();
        assert_ne!(port, 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
    }
}
