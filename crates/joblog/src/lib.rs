//! The `joblog` package's code: the server (`serve`), the command-line
//! client and the benchmarks. The binary only parses the command line and
//! dispatches here; being a library also lets the end-to-end tests share
//! the bench harness's helpers instead of keeping copies.

pub mod bench;
mod cli;
pub mod client;
pub mod config;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod progress;
pub mod serve;
mod tls;

pub use cli::Cli;
