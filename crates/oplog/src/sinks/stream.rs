//! stdout and stderr as sinks: each batch formatted into one buffer and
//! written under one lock of the stream, so lines from other writers of
//! the stream (a panic message, a library's print) never land inside a
//! batch's lines.

use std::io::{self, Write};
use std::sync::Arc;

use crate::entry::Entry;
use crate::format::{write_line, Format};
use crate::sink::Sink;

enum Out {
    Stdout,
    Stderr,
    /// Anything else that takes bytes: tests, or a caller's pipe.
    Writer {
        name: String,
        writer: Box<dyn Write + Send>,
    },
}

/// The stdout or stderr sink.
pub struct StreamSink {
    out: Out,
    format: Format,
    buf: Vec<u8>,
}

impl StreamSink {
    pub fn stdout(format: Format) -> StreamSink {
        StreamSink::new(Out::Stdout, format)
    }

    pub fn stderr(format: Format) -> StreamSink {
        StreamSink::new(Out::Stderr, format)
    }

    /// A sink writing to `writer`, called `name` in errors and metrics.
    pub fn writer(name: &str, writer: impl Write + Send + 'static, format: Format) -> StreamSink {
        StreamSink::new(
            Out::Writer {
                name: name.to_string(),
                writer: Box::new(writer),
            },
            format,
        )
    }

    fn new(out: Out, format: Format) -> StreamSink {
        StreamSink {
            out,
            format,
            buf: Vec::with_capacity(16 * 1024),
        }
    }

    fn name(&self) -> &str {
        match &self.out {
            Out::Stdout => "stdout",
            Out::Stderr => "stderr",
            Out::Writer { name, .. } => name,
        }
    }

    fn error(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: cannot write: {e}", self.name()))
    }
}

impl Sink for StreamSink {
    fn write(&mut self, batch: &[Arc<Entry>]) -> io::Result<()> {
        self.buf.clear();
        for entry in batch {
            write_line(entry, self.format, &mut self.buf);
        }
        // Flushed here, not in `flush`: std's stdout is line-buffered and
        // would otherwise keep a partial batch until the next one.
        let result = match &mut self.out {
            Out::Stdout => {
                let mut lock = io::stdout().lock();
                lock.write_all(&self.buf).and_then(|()| lock.flush())
            }
            Out::Stderr => io::stderr().lock().write_all(&self.buf),
            Out::Writer { writer, .. } => writer.write_all(&self.buf).and_then(|()| writer.flush()),
        };
        result.map_err(|e| self.error(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let result = match &mut self.out {
            Out::Stdout => io::stdout().flush(),
            Out::Stderr => Ok(()),
            Out::Writer { writer, .. } => writer.flush(),
        };
        result.map_err(|e| self.error(e))
    }

    fn describe(&self) -> String {
        self.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use joblog_core::Timestamp;
    use serde_json::Value;

    use super::*;
    use crate::entry::{Level, Log};

    /// A writer tests can read back, counting the writes it took.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let mut inner = self.0.lock().unwrap();
            inner.0.extend_from_slice(b);
            inner.1 += 1;
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Fails every write, as a closed pipe does.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn entry(i: i64) -> Arc<Entry> {
        Arc::new(Entry {
            log: Log::Error,
            level: Level::Warn,
            at: Timestamp(1_795_488_347_000_000 + i),
            kind: "joblog_api".into(),
            message: format!("warning {i}"),
            fields: Default::default(),
        })
    }

    #[test]
    fn a_batch_is_one_write_of_its_lines_in_order() {
        let shared = Shared::default();
        let mut sink = StreamSink::writer("test", shared.clone(), Format::Json);
        let batch: Vec<_> = (0..5).map(entry).collect();
        sink.write(&batch).unwrap();
        sink.flush().unwrap();
        let (bytes, writes) = shared.0.lock().unwrap().clone();
        assert_eq!(writes, 1);
        let msgs: Vec<String> = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["msg"].to_string())
            .collect();
        let want: Vec<String> = (0..5).map(|i| format!("\"warning {i}\"")).collect();
        assert_eq!(msgs, want);
    }

    #[test]
    fn human_text_is_written_as_format_makes_it() {
        let shared = Shared::default();
        let mut sink = StreamSink::writer("test", shared.clone(), Format::Human);
        sink.write(&[entry(1)]).unwrap();
        let text = String::from_utf8(shared.0.lock().unwrap().0.clone()).unwrap();
        let mut want = Vec::new();
        write_line(&entry(1), Format::Human, &mut want);
        assert_eq!(text.as_bytes(), want);
        assert!(text.contains("WARN  error joblog_api: warning 1"), "{text}");
    }

    #[test]
    fn a_failed_write_names_the_stream() {
        let mut sink = StreamSink::writer("stdout", Broken, Format::Json);
        let e = sink.write(&[entry(1)]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        assert!(e.to_string().starts_with("stdout: cannot write"), "{e}");
        assert_eq!(StreamSink::stderr(Format::Human).describe(), "stderr");
        assert_eq!(StreamSink::stdout(Format::Json).describe(), "stdout");
    }
}
