//! The `joblog` package's code: the server (`serve`) and the command line
//! that dispatches to it, to the client and to the benchmarks. The binary
//! (`main.rs`) only parses the command line and calls `Cli::run`.
//!
//! Where things are:
//! - `cli`: the command line as a whole, and the runtime every command
//!   runs on (at most 32 blocking threads: each is a stack that a job's
//!   `fork` copies). For `serve` the server's secrets leave the
//!   environment before that runtime starts.
//! - `config`: every setting of `joblog serve` declared once
//!   (`settings.rs`, through `declare.rs`'s `settings!`), read from
//!   `joblog.toml` < `JOBLOG_*` < flags and kept as text until the
//!   setting's type parses it (`layers.rs`, `value.rs`), so an error names
//!   the layer; `args.rs` the flags made from the declarations;
//!   `sources.rs` where the settings came from, for the first log line
//!   (names, never values); `reference.rs` the table of
//!   docs/configuration.md, which a test keeps equal to it.
//! - `serve`: `resolve` (settings checked against each other, defaults
//!   derived, paths made absolute), `secrets`, `lock`, `perms`, `run_as`
//!   and `logs` (the server's own logs, through `joblog_oplog`); `mod.rs`
//!   starts store, pipeline, engine and API, and stops them in order:
//!   engine, HTTP, logs flushed, pipeline closed and its writer joined,
//!   logs stopped.
//! - `http`: the HTTP server around the API's router (connection limits
//!   with a reserve for admins, header timeouts, graceful stop); `tls`:
//!   rustls certificates, reloaded on SIGHUP.
//! - `manual`: man pages and shell completions made from `Cli`'s
//!   declaration (`joblog man DIR`, `joblog completions SHELL`).
//! - `fuzzing`: hidden entry points for the targets in `fuzz/`.
//!
//! The command-line client is `joblog-client` (crates/client) and
//! `joblog bench` is `joblog-bench` (crates/bench); `cli` dispatches to
//! them.
//!
//! Invariants:
//! - `anyhow` is used in the application crates only (this one, the
//!   client, the benchmarks); the libraries below have `thiserror` enums.
//! - A setting exists once: its declaration gives it a file key, a
//!   variable, a flag and its row in docs/configuration.md.
//! - One server per data directory and per SQLite file: the locks are
//!   taken before anything is opened or recovered.
//! - Commands never print while they compute; rendering is separate.
//! - Every TLS connection, served or made, uses rustls's ring provider;
//!   nothing pulls in aws-lc.

mod cli;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod manual;
pub mod serve;
mod tls;

pub use cli::Cli;
