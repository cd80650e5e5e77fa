//! The test kit the workspace's suites share, so that each is written once:
//! a free port ([`free_port`]), waiting for what comes in its own time
//! ([`eventually`] and its blocking twin), the property tests' settings
//! ([`proptest_config`]), typed views of the API's answers ([`views`]) and
//! a real HTTP receiver and SMTP server for the notifications joblog sends
//! ([`receiver`], [`smtp`]).
//!
//! Dev-only: a dev-dependency of the crates whose tests use it, never a
//! dependency of a shipped crate. It depends on no workspace crate, so
//! every crate, `joblog-core` included, can use it. The server harness of
//! the end-to-end tests stays in `joblog/tests/e2e.rs`: it needs the
//! binary's path (`CARGO_BIN_EXE_joblog`), which only that crate's tests
//! have, and an HTTP client and SQLite this kit does without.

mod listener;
mod port;
mod properties;
pub mod receiver;
pub mod smtp;
pub mod views;
mod wait;

pub use port::free_port;
pub use properties::proptest_config;
pub use views::view;
pub use wait::{eventually, eventually_blocking, within_blocking, Outcome, PATIENCE};
