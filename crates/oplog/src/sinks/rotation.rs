//! What a file sink does with its old files: when to rotate
//! ([`Rotation`]), how rotated files are named, and the tidying that runs
//! off the write path after each rotation — compressing old files
//! crash-safely and keeping only the newest `keep`.
//!
//! A rotated file of `access.log` is `access.2026-11-24T02-45-47.123456Z.log`
//! (the UTC time it was rotated), then `….log.zst` or `….log.gz` once
//! compressed. The time is fixed width, so names sort as times do. Only
//! names of exactly this form are ever touched here: any other file in the
//! directory is left alone.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader};
use std::path::Path;

use serde::{Deserialize, Serialize};

mod naming;

pub use naming::Naming;
use naming::{with_suffix, Found};

/// When a file sink starts a new file, and what becomes of the old ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Start a new file before a write would take the current one past
    /// this size (a file always takes at least one line, however long).
    pub max_bytes: Option<u64>,
    /// Start a new file on the first write of each UTC day.
    pub daily: bool,
    /// How many rotated files to keep; older ones are deleted.
    pub keep: usize,
    pub compress: Compression,
}

impl Rotation {
    /// One file that grows for ever (logrotate may still move it away).
    pub const NEVER: Rotation = Rotation {
        max_bytes: None,
        daily: false,
        keep: 0,
        compress: Compression::None,
    };
}

/// How rotated files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    #[default]
    None,
    Zstd,
    Gzip,
}

impl Compression {
    /// `none`, `zstd` or `gzip`, as a configuration names them.
    pub fn parse(s: &str) -> Result<Compression, String> {
        match s {
            "none" => Ok(Compression::None),
            "zstd" => Ok(Compression::Zstd),
            "gzip" => Ok(Compression::Gzip),
            other => Err(format!(
                "unknown compression '{other}' (expected none, zstd or gzip)"
            )),
        }
    }

    /// The suffix a compressed file gets after the log's own name.
    pub(super) fn suffix(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Zstd => Some("zst"),
            Compression::Gzip => Some("gz"),
        }
    }
}

/// After a rotation, off the write path: removes what a crash left
/// half-compressed, deletes all but the newest `keep` rotations, then
/// compresses the ones left uncompressed. Only one tidy of a sink runs at
/// a time, so any `.tmp` it finds is a crash's leftover.
pub fn tidy(naming: &Naming, keep: usize, compress: Compression) -> io::Result<()> {
    let context = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!("log directory {}: {e}", naming.dir().display()),
        )
    };
    let found = naming.find().map_err(context)?;
    let mut rotations: BTreeMap<String, Vec<Found>> = BTreeMap::new();
    for f in found {
        if f.tmp {
            remove(&f.path)?;
        } else {
            rotations.entry(f.time.clone()).or_default().push(f);
        }
    }
    // The map is in time order: the first `old` are the oldest.
    let old = rotations.len().saturating_sub(keep);
    let mut kept = Vec::new();
    for (i, files) in rotations.into_values().enumerate() {
        if i < old {
            for f in &files {
                remove(&f.path)?;
            }
        } else {
            kept.push(files);
        }
    }
    if compress != Compression::None {
        compress_all(&kept, compress)?;
    }
    // The rotation's rename, and this tidy's, made durable.
    sync_dir(naming.dir())
}

fn compress_all(rotations: &[Vec<Found>], how: Compression) -> io::Result<()> {
    for files in rotations {
        let Some(plain) = files.iter().find(|f| f.compressed.is_none()) else {
            continue;
        };
        if files.iter().any(|f| f.compressed.is_some()) {
            // A crash came between the rename and the removal: the
            // compressed file is whole.
            remove(&plain.path)?;
            continue;
        }
        compress_file(&plain.path, how)?;
    }
    Ok(())
}

/// `path` → `path.{suffix}` through `path.{suffix}.tmp`, fsynced before
/// the rename, so a crash leaves either the whole compressed file or the
/// uncompressed one (and a `.tmp` the next tidy removes).
fn compress_file(path: &Path, how: Compression) -> io::Result<()> {
    let Some(suffix) = how.suffix() else {
        return Ok(());
    };
    let done = with_suffix(path, suffix);
    let tmp = with_suffix(&done, "tmp");
    let context = |what: &str, p: &Path, e: io::Error| {
        io::Error::new(e.kind(), format!("{what} {}: {e}", p.display()))
    };
    let source = File::open(path).map_err(|e| context("cannot read rotated log", path, e))?;
    let mut source = BufReader::with_capacity(256 * 1024, source);
    let out = create_private(&tmp).map_err(|e| context("cannot create", &tmp, e))?;
    let out = match how {
        Compression::Zstd => zstd::stream::Encoder::new(out, 3).and_then(|mut enc| {
            io::copy(&mut source, &mut enc)?;
            enc.finish()
        }),
        Compression::Gzip => {
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            io::copy(&mut source, &mut enc).and_then(|_| enc.finish())
        }
        Compression::None => Ok(out),
    }
    .map_err(|e| context("cannot compress", path, e))?;
    out.sync_all()
        .map_err(|e| context("cannot sync", &tmp, e))?;
    drop(out);
    fs::rename(&tmp, &done).map_err(|e| context("cannot rename", &tmp, e))?;
    remove(path)
}

/// A new file only its owner writes and its group reads: logs hold paths
/// and names operators consider private.
pub fn create_private(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o640)
        .open(path)
}

fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("cannot remove old log {}: {e}", path.display()),
        )),
        _ => Ok(()),
    }
}

/// Makes renames in `dir` durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot sync directory {}: {e}", dir.display()),
        )
    })
}

/// A rotated file's lines, decompressed (tests read back what tidy made).
#[cfg(test)]
pub(crate) fn read_rotated(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    match path.extension().and_then(|e| e.to_str()) {
        Some("zst") => {
            zstd::stream::Decoder::new(File::open(path)?)?.read_to_end(&mut out)?;
        }
        Some("gz") => {
            flate2::read::GzDecoder::new(File::open(path)?).read_to_end(&mut out)?;
        }
        _ => out = fs::read(path)?,
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_is_named_as_the_configuration_names_it() {
        assert_eq!(Compression::parse("none"), Ok(Compression::None));
        assert_eq!(Compression::parse("zstd"), Ok(Compression::Zstd));
        assert_eq!(Compression::parse("gzip"), Ok(Compression::Gzip));
        let e = Compression::parse("xz").unwrap_err();
        assert!(
            e.contains("'xz'") && e.contains("none, zstd or gzip"),
            "{e}"
        );
    }
}
