//! The `joblog` binary: the server (`serve`), the command-line client and
//! the benchmarks, all in one executable; it parses the command line and
//! hands it to the `joblog` library.

use clap::{Parser, Subcommand};
use joblog::{bench, client, config, serve};

#[derive(Parser, Debug)]
#[command(
    name = "joblog",
    version,
    about = "Run jobs and keep every line they write"
)]
struct Cli {
    #[command(flatten)]
    global: client::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a joblog node: job engine, HTTP API and log pipeline.
    Serve(config::ServeArgs),
    #[command(flatten)]
    Client(client::ClientCommand),
    /// Run a benchmark scenario and print a Markdown table.
    Bench(bench::BenchArgs),
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap exits 2 on bad usage and 0 for --help/--version.
            e.exit();
        }
    };
    let code = match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("joblog: {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        match cli.command {
            Command::Serve(args) => serve::run(args, cli.global.token).await,
            Command::Client(cmd) => client::run(cmd, cli.global).await,
            Command::Bench(args) => bench::run(args, cli.global).await,
        }
    })
}
