//! Log records and the streams they belong to.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Timestamp;

/// The streams of a job log (PowerShell's, which the job-log world knows).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    Output,
    Error,
    Warning,
    Information,
    Verbose,
    Debug,
    Progress,
}

impl Stream {
    pub const ALL: [Stream; 7] = [
        Stream::Output,
        Stream::Error,
        Stream::Warning,
        Stream::Information,
        Stream::Verbose,
        Stream::Debug,
        Stream::Progress,
    ];

    /// Stable small integer stored in databases. Never renumber.
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: i64) -> Option<Stream> {
        Stream::ALL.get(usize::try_from(code).ok()?).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Stream::Output => "output",
            Stream::Error => "error",
            Stream::Warning => "warning",
            Stream::Information => "information",
            Stream::Verbose => "verbose",
            Stream::Debug => "debug",
            Stream::Progress => "progress",
        }
    }

    pub fn parse(s: &str) -> Option<Stream> {
        Stream::ALL.into_iter().find(|st| st.name() == s)
    }

    /// Parses a comma-separated list such as `warning,error`.
    pub fn parse_list(s: &str) -> Result<Vec<Stream>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                Stream::parse(p).ok_or_else(|| {
                    format!(
                        "unknown stream '{p}' (expected one of output, error, warning, information, verbose, debug, progress)"
                    )
                })
            })
            .collect()
    }
}

/// One line or event of a job's log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Record {
    /// Starts at 1, gapless per job.
    pub seq: u64,
    /// When joblog received it.
    pub ts: Timestamp,
    pub stream: Stream,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Map<String, Value>>,
}

impl Record {
    /// Heap bytes this record holds, roughly: what it costs the pipeline's
    /// memory budget. The struct and the allocator's share of a short
    /// message outweigh the text itself, so they are counted too.
    pub fn size(&self) -> usize {
        const STRUCT_AND_ALLOC: usize = 112;
        const PER_FIELD: usize = 96;
        STRUCT_AND_ALLOC
            + self.message.len()
            + self.fields.as_ref().map_or(0, |f| f.len() * PER_FIELD)
    }
}

/// Records per stream, as in the job JSON's `log.streams`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamCounts(pub [u64; 7]);

impl StreamCounts {
    pub fn add(&mut self, s: Stream, n: u64) {
        self.0[s as usize] += n;
    }
    pub fn get(&self, s: Stream) -> u64 {
        self.0[s as usize]
    }
}

impl Serialize for StreamCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        for st in Stream::ALL {
            let n = self.get(st);
            if n > 0 {
                m.serialize_entry(st.name(), &n)?;
            }
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_codes_round_trip() {
        for s in Stream::ALL {
            assert_eq!(Stream::from_code(s.code() as i64), Some(s));
            assert_eq!(Stream::parse(s.name()), Some(s));
        }
        assert_eq!(Stream::from_code(7), None);
        assert_eq!(Stream::from_code(-1), None);
    }

    #[test]
    fn parse_list_names_the_bad_stream() {
        assert_eq!(
            Stream::parse_list("warning, error").unwrap(),
            vec![Stream::Warning, Stream::Error]
        );
        let e = Stream::parse_list("warning,eror").unwrap_err();
        assert!(e.contains("'eror'"), "{e}");
    }
}
