//! The `joblog` binary: the server (`serve`), the command-line client and
//! the benchmarks, all in one executable; it parses the command line and
//! hands it to the `joblog` library.

use clap::Parser;

fn main() {
    let cli = match joblog::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap exits 2 on bad usage and 0 for --help/--version.
            e.exit();
        }
    };
    let code = match cli.run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("joblog: {e:#}");
            1
        }
    };
    std::process::exit(code);
}
