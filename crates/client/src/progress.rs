//! Progress bars on long runs (benchmarks, `joblog seal --all`). Drawn only
//! when stderr is a terminal: a log file or CI gets plain lines instead.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar of `len` steps of `what` (messages, jobs, rounds).
pub struct Progress {
    bar: ProgressBar,
    drawn: bool,
}

impl Progress {
    pub fn new(len: u64, what: &str) -> Progress {
        let drawn = std::io::stderr().is_terminal();
        let bar = if drawn {
            ProgressBar::new(len)
        } else {
            ProgressBar::hidden()
        };
        let template =
            format!("{{elapsed:>4}} [{{bar:32}}] {{human_pos}}/{{human_len}} {what} {{msg}}");
        if let Ok(style) = ProgressStyle::with_template(&template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Progress { bar, drawn }
    }

    pub fn set(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    pub fn inc(&self) {
        self.bar.inc(1);
    }

    /// A progress line: beside the bar when it is drawn, else on its own
    /// line of stderr.
    pub fn note(&self, line: String) {
        if self.drawn {
            self.bar.set_message(line);
        } else {
            eprintln!("{line}");
        }
    }

    /// A line that must stay (a checkpoint's figures): printed above the
    /// bar, which goes on.
    pub fn keep(&self, line: String) {
        if self.drawn {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}
