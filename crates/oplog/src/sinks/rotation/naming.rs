//! How one file sink's rotated files are named, and how its own are told
//! from every other file in the directory: `{stem}.{time}[.{ext}]`, then
//! `.zst`/`.gz` once compressed, with `.tmp` while being compressed.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use joblog_core::Timestamp;

use crate::sinks::clock::Utc;

/// How one sink's rotated files are named: `{stem}.{time}[.{ext}]` then
/// `.zst`/`.gz`, and `.tmp` while being compressed.
#[derive(Debug, Clone)]
pub struct Naming {
    dir: PathBuf,
    stem: String,
    ext: Option<String>,
}

/// One rotated file as found in the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub path: PathBuf,
    /// `2026-11-24T02-45-47.123456Z`: orders the rotations.
    pub time: String,
    pub compressed: Option<&'static str>,
    pub tmp: bool,
}

impl Naming {
    /// The naming of the sink writing `path`; `None` when `path` has no
    /// file name (`/`, `..`) or a name that is not UTF-8.
    pub fn of(path: &Path) -> Option<Naming> {
        let name = path.file_name()?.to_str()?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // `access.log` → (access, log); `.hidden` and `plain` keep their
        // whole name as the stem.
        let (stem, ext) = match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() && !ext.is_empty() => {
                (stem.to_string(), Some(ext.to_string()))
            }
            _ => (name.to_string(), None),
        };
        Some(Naming { dir, stem, ext })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The name of the file rotated at `at`, uncompressed.
    pub fn rotated(&self, at: Timestamp) -> PathBuf {
        let time = Utc::of(at).file_name_part();
        let name = match &self.ext {
            Some(ext) => format!("{}.{time}.{ext}", self.stem),
            None => format!("{}.{time}", self.stem),
        };
        self.dir.join(name)
    }

    /// Whether any file of the rotation at `at` exists, in any state.
    pub fn taken(&self, at: Timestamp) -> bool {
        let base = self.rotated(at);
        let mut names = vec![base.clone()];
        for suffix in ["zst", "gz"] {
            names.push(with_suffix(&base, suffix));
            names.push(with_suffix(&with_suffix(&base, suffix), "tmp"));
        }
        names.iter().any(|p| p.symlink_metadata().is_ok())
    }

    /// This sink's rotated files in its directory, whatever their state.
    pub(super) fn find(&self) -> io::Result<Vec<Found>> {
        let mut found = Vec::new();
        for dirent in fs::read_dir(&self.dir)? {
            let dirent = dirent?;
            // Only files: a directory that happens to have such a name is
            // not ours to compress or delete.
            if !dirent.file_type()?.is_file() {
                continue;
            }
            let Some(name) = dirent.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if let Some(f) = self.parse(&name) {
                found.push(Found {
                    path: dirent.path(),
                    ..f
                });
            }
        }
        Ok(found)
    }

    /// `name` as one of this sink's rotated files, or `None`.
    fn parse(&self, name: &str) -> Option<Found> {
        let rest = name.strip_prefix(&self.stem)?.strip_prefix('.')?;
        let (time, mut rest) = rest.split_at_checked(TIME_LEN)?;
        if !is_file_time(time) {
            return None;
        }
        if let Some(ext) = &self.ext {
            rest = rest.strip_prefix('.')?.strip_prefix(ext.as_str())?;
        }
        let (rest, tmp) = match rest.strip_suffix(".tmp") {
            Some(r) => (r, true),
            None => (rest, false),
        };
        let compressed = match rest {
            "" => None,
            ".zst" => Some("zst"),
            ".gz" => Some("gz"),
            _ => return None,
        };
        if tmp && compressed.is_none() {
            return None;
        }
        Some(Found {
            path: PathBuf::new(),
            time: time.to_string(),
            compressed,
            tmp,
        })
    }
}

const TIME_LEN: usize = "2026-11-24T02-45-47.123456Z".len();

/// `2026-11-24T02-45-47.123456Z`, digit for digit.
fn is_file_time(s: &str) -> bool {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd-dd-dd.ddddddZ";
    s.len() == SHAPE.len()
        && s.bytes().zip(SHAPE).all(|(b, &want)| match want {
            b'd' => b.is_ascii_digit(),
            _ => b == want,
        })
}

pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AT: Timestamp = Timestamp(1_795_488_347_123_456); // 2026-11-24T02:45:47.123456Z

    fn naming(path: &str) -> Naming {
        Naming::of(Path::new(path)).unwrap()
    }

    #[test]
    fn rotated_names_keep_the_extension_last() {
        let cases = [
            (
                "/var/log/joblog/access.log",
                "/var/log/joblog/access.2026-11-24T02-45-47.123456Z.log",
            ),
            (
                "logs/a.b.jsonl",
                "logs/a.b.2026-11-24T02-45-47.123456Z.jsonl",
            ),
            ("plain", "./plain.2026-11-24T02-45-47.123456Z"),
            ("/x/.hidden", "/x/.hidden.2026-11-24T02-45-47.123456Z"),
        ];
        for (path, want) in cases {
            assert_eq!(naming(path).rotated(AT), PathBuf::from(want), "{path}");
        }
        assert!(Naming::of(Path::new("/")).is_none());
        assert!(Naming::of(Path::new("logs/..")).is_none());
    }

    #[test]
    fn only_this_sinks_own_names_are_recognised() {
        let n = naming("/l/access.log");
        let t = "2026-11-24T02-45-47.123456Z";
        for (name, compressed, tmp) in [
            (format!("access.{t}.log"), None, false),
            (format!("access.{t}.log.zst"), Some("zst"), false),
            (format!("access.{t}.log.gz"), Some("gz"), false),
            (format!("access.{t}.log.zst.tmp"), Some("zst"), true),
            (format!("access.{t}.log.gz.tmp"), Some("gz"), true),
        ] {
            let found = n.parse(&name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(
                (found.time.as_str(), found.compressed, found.tmp),
                (t, compressed, tmp)
            );
        }
        for name in [
            "access.log".to_string(),
            "access.log.1".into(),
            format!("access.{t}.log.tmp"),
            format!("access.{t}.log.xz"),
            format!("access.{t}.log.zst.tmp.tmp"),
            format!("access.{t}.jsonl"),
            format!("access.{t}"),
            format!("accessx.{t}.log"),
            format!("error.{t}.log"),
            "access.2026-11-24T02-45-47.12345Z.log".into(),
            "access.2026-11-24T02:45:47.123456Z.log".into(),
            "access.2026-1a-24T02-45-47.123456Z.log".into(),
            "access.é026-11-24T02-45-47.123456Z.log".into(),
        ] {
            assert_eq!(n.parse(&name), None, "{name}");
        }
    }
}
