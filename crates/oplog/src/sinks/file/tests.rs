//! The file sink against a real directory: rotation by size and by day,
//! keep and compression, logrotate's move and SIGHUP, and failures.

use std::fs;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::*;
use crate::entry::{Level, Log};
use crate::sinks::clock::ManualClock;
use crate::sinks::rotation::{read_rotated, Compression};

/// 2026-11-24T23:59:00Z
const LATE: Timestamp = Timestamp(1_795_564_740_000_000);

fn entry(i: usize) -> Arc<Entry> {
    Arc::new(Entry {
        log: Log::Access,
        level: Level::Info,
        at: Timestamp(LATE.0 + i as i64),
        kind: "GET /api/v1/jobs/{id}".into(),
        message: format!("line {i:04}"),
        fields: Default::default(),
    })
}

fn entries(range: std::ops::Range<usize>) -> Vec<Arc<Entry>> {
    range.map(entry).collect()
}

/// Every line here is this long.
fn line_len() -> u64 {
    let mut out = Vec::new();
    write_line(&entry(0), Format::Json, &mut out);
    out.len() as u64
}

fn rotation(max_lines: Option<u64>, keep: usize, compress: Compression) -> Rotation {
    Rotation {
        max_bytes: max_lines.map(|n| n * line_len()),
        daily: false,
        keep,
        compress,
    }
}

fn open(dir: &Path, rotation: Rotation, clock: &Arc<ManualClock>) -> FileSink {
    let clock: Arc<dyn Clock> = clock.clone();
    FileSink::open(
        dir.join("logs/access.log"),
        rotation,
        false,
        Format::Json,
        clock,
    )
    .unwrap()
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(LATE))
}

/// The messages of a file's lines, each line checked to be whole JSON.
fn messages(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
            v["msg"].as_str().unwrap().to_string()
        })
        .collect()
}

fn names(range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("line {i:04}")).collect()
}

/// The files beside access.log, by name (which is time order).
fn rotated(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("logs"))
        .unwrap()
        .map(|d| d.unwrap().path())
        .filter(|p| p.file_name().unwrap() != "access.log")
        .collect();
    files.sort();
    files
}

fn current(dir: &Path) -> Vec<String> {
    messages(&fs::read(dir.join("logs/access.log")).unwrap())
}

#[test]
fn a_batch_that_would_overflow_starts_a_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(3), 5, Compression::None), &clock);
    sink.write(&entries(0..2)).unwrap();
    assert_eq!(rotated(dir.path()), Vec::<PathBuf>::new());
    // The third line fills the file to its limit exactly; the fourth
    // would take it past, so it starts the next file.
    sink.write(&entries(2..4)).unwrap();
    sink.settle().unwrap();
    let old = rotated(dir.path());
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(messages(&fs::read(&old[0]).unwrap()), names(0..3));
    assert_eq!(current(dir.path()), names(3..4));
    let name = old[0].file_name().unwrap().to_str().unwrap();
    assert_eq!(name, "access.2026-11-24T23-59-00.000000Z.log");
}

#[test]
fn a_line_longer_than_the_limit_still_gets_a_file_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut r = rotation(None, 5, Compression::None);
    r.max_bytes = Some(10);
    let mut sink = open(dir.path(), r, &clock);
    sink.write(&entries(0..3)).unwrap();
    sink.settle().unwrap();
    let old = rotated(dir.path());
    let got: Vec<Vec<String>> = old
        .iter()
        .map(|p| messages(&fs::read(p).unwrap()))
        .collect();
    assert_eq!(got, vec![names(0..1), names(1..2)]);
    assert_eq!(current(dir.path()), names(2..3));
}

#[test]
fn keep_deletes_the_oldest_rotations_and_no_other_file() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    let strangers = [
        "access.log.1",
        "access.old.log",
        "access.2026-11-24T02-45-47.log",
        "access.2026-11-24T02-45-47.123456Z.txt",
        "error.2026-11-24T02-45-47.123456Z.log",
        "access.2026-11-24T02-45-47.123456Z.log.bak",
        "notes.txt",
    ];
    for name in strangers {
        fs::write(logs.join(name), "not ours\n").unwrap();
    }
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(1), 2, Compression::None), &clock);
    // One line per file: five rotations at the same instant, and again
    // in smaller batches.
    sink.write(&entries(0..6)).unwrap();
    for i in 6..9 {
        sink.write(&entries(i..i + 1)).unwrap();
    }
    sink.settle().unwrap();
    let ours: Vec<PathBuf> = rotated(dir.path())
        .into_iter()
        .filter(|p| !strangers.contains(&p.file_name().unwrap().to_str().unwrap()))
        .collect();
    let got: Vec<Vec<String>> = ours
        .iter()
        .map(|p| messages(&fs::read(p).unwrap()))
        .collect();
    assert_eq!(got, vec![names(6..7), names(7..8)], "{ours:?}");
    assert_eq!(current(dir.path()), names(8..9));
    for name in strangers {
        assert_eq!(fs::read_to_string(logs.join(name)).unwrap(), "not ours\n");
    }
}

fn compressed_rotations_read_back(compress: Compression, suffix: &str) {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(2), 10, compress), &clock);
    for range in [0..3, 3..4, 4..7, 7..8] {
        sink.write(&entries(range)).unwrap();
        clock.advance(Duration::from_millis(1));
    }
    sink.settle().unwrap();
    let old = rotated(dir.path());
    assert_eq!(old.len(), 3, "{old:?}");
    let mut all = Vec::new();
    for path in &old {
        let name = path.to_str().unwrap();
        assert!(name.ends_with(&format!(".log.{suffix}")), "{name}");
        all.extend(messages(&read_rotated(path).unwrap()));
    }
    all.extend(current(dir.path()));
    assert_eq!(all, names(0..8));
}

#[test]
fn zstd_rotations_decompress_to_the_original_lines() {
    compressed_rotations_read_back(Compression::Zstd, "zst");
}

#[test]
fn gzip_rotations_decompress_to_the_original_lines() {
    compressed_rotations_read_back(Compression::Gzip, "gz");
}

#[test]
fn what_a_crash_left_is_cleaned_and_finished_on_the_next_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    // Killed while compressing: a partial .tmp beside its source.
    fs::write(
        logs.join("access.2026-01-01T00-00-00.000000Z.log.zst.tmp"),
        "partial",
    )
    .unwrap();
    fs::write(
        logs.join("access.2026-01-01T00-00-00.000000Z.log"),
        "first\n",
    )
    .unwrap();
    // Killed between the rename and the removal: the .zst is whole.
    fs::write(
        logs.join("access.2026-01-02T00-00-00.000000Z.log"),
        "second\n",
    )
    .unwrap();
    let whole = zstd::stream::encode_all(&b"second\n"[..], 3).unwrap();
    fs::write(
        logs.join("access.2026-01-02T00-00-00.000000Z.log.zst"),
        whole,
    )
    .unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(1), 10, Compression::Zstd), &clock);
    sink.write(&entries(0..2)).unwrap();
    sink.settle().unwrap();
    let left: Vec<String> = rotated(dir.path())
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(
        left,
        [
            "access.2026-01-01T00-00-00.000000Z.log.zst",
            "access.2026-01-02T00-00-00.000000Z.log.zst",
            "access.2026-11-24T23-59-00.000000Z.log.zst",
        ]
    );
    let logs = dir.path().join("logs");
    let read = |name: &str| read_rotated(&logs.join(name)).unwrap();
    assert_eq!(read(&left[0]), b"first\n");
    assert_eq!(read(&left[1]), b"second\n");
    assert_eq!(messages(&read(&left[2])), names(0..1));
}

#[test]
fn daily_rotation_starts_a_file_on_the_first_write_of_a_day() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let daily = Rotation {
        daily: true,
        ..rotation(None, 7, Compression::None)
    };
    let mut sink = open(dir.path(), daily, &clock);
    sink.write(&entries(0..2)).unwrap();
    clock.advance(Duration::from_secs(30));
    sink.write(&entries(2..3)).unwrap();
    assert_eq!(rotated(dir.path()), Vec::<PathBuf>::new(), "same day");
    clock.advance(Duration::from_secs(31)); // 2026-11-25T00:00:01Z
    sink.write(&entries(3..5)).unwrap();
    sink.settle().unwrap();
    let old = rotated(dir.path());
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(
        old[0].file_name().unwrap(),
        "access.2026-11-25T00-00-01.000000Z.log"
    );
    assert_eq!(messages(&fs::read(&old[0]).unwrap()), names(0..3));
    assert_eq!(current(dir.path()), names(3..5));
    // A flush or a reopen on the same day changes nothing.
    sink.flush().unwrap();
    sink.reopen().unwrap();
    sink.write(&entries(5..6)).unwrap();
    assert_eq!(current(dir.path()), names(3..6));
    assert_eq!(rotated(dir.path()).len(), 1);
}

#[test]
fn a_file_opened_on_a_quiet_day_belongs_to_the_day_of_its_first_line() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let daily = Rotation {
        daily: true,
        ..rotation(None, 7, Compression::None)
    };
    let mut sink = open(dir.path(), daily, &clock);
    clock.advance(Duration::from_secs(3600)); // the next day, nothing written yet
    sink.write(&entries(0..1)).unwrap();
    sink.write(&entries(1..2)).unwrap();
    sink.settle().unwrap();
    assert_eq!(rotated(dir.path()), Vec::<PathBuf>::new());
    assert_eq!(current(dir.path()), names(0..2));
}

#[test]
fn a_file_left_from_an_earlier_day_is_rotated_by_the_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    fs::write(logs.join("access.log"), "yesterday\n").unwrap();
    let file = fs::File::options()
        .write(true)
        .open(logs.join("access.log"))
        .unwrap();
    file.set_modified(Timestamp(LATE.0 - 86_400_000_000).to_system_time())
        .unwrap();
    drop(file);
    let clock = clock();
    let daily = Rotation {
        daily: true,
        ..rotation(None, 7, Compression::None)
    };
    let mut sink = open(dir.path(), daily, &clock);
    sink.write(&entries(0..1)).unwrap();
    sink.settle().unwrap();
    let old = rotated(dir.path());
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(fs::read_to_string(&old[0]).unwrap(), "yesterday\n");
    assert_eq!(current(dir.path()), names(0..1));
}

#[test]
fn reopen_after_logrotate_moved_the_file_starts_a_new_one_at_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), Rotation::NEVER, &clock);
    sink.write(&entries(0..2)).unwrap();
    let logs = dir.path().join("logs");
    fs::rename(logs.join("access.log"), logs.join("access.log.1")).unwrap();
    // Until the SIGHUP, lines follow the file where it went.
    sink.write(&entries(2..3)).unwrap();
    assert!(!logs.join("access.log").exists());
    sink.reopen().unwrap();
    sink.write(&entries(3..5)).unwrap();
    assert_eq!(current(dir.path()), names(3..5));
    assert_eq!(
        messages(&fs::read(logs.join("access.log.1")).unwrap()),
        names(0..3)
    );
}

#[test]
fn a_new_file_is_readable_by_its_owner_and_group_only() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(1), 3, Compression::Gzip), &clock);
    sink.write(&entries(0..2)).unwrap();
    sink.settle().unwrap();
    let mut files = rotated(dir.path());
    files.push(dir.path().join("logs/access.log"));
    for path in files {
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o600, 0o600, "{path:?} {mode:o}");
        assert_eq!(mode & 0o037, 0, "{path:?} {mode:o}");
    }
    let dir_mode = fs::metadata(dir.path().join("logs"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o007, 0, "{dir_mode:o}");
}

#[test]
fn a_path_that_is_a_directory_fails_naming_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logs/access.log");
    fs::create_dir_all(&path).unwrap();
    let clock: Arc<dyn Clock> = clock();
    let e = FileSink::open(
        path.clone(),
        Rotation::NEVER,
        false,
        Format::Json,
        clock.clone(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains(path.to_str().unwrap()), "{e}");
    // A parent that is a file fails the same way.
    let under_file = dir.path().join("logs/access.log/x/y.log");
    fs::remove_dir(&path).unwrap();
    fs::write(&path, "").unwrap();
    let e = FileSink::open(
        under_file.clone(),
        Rotation::NEVER,
        false,
        Format::Json,
        clock,
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains(under_file.to_str().unwrap()), "{e}");
}

#[test]
fn a_directory_that_went_away_fails_writes_naming_the_path_until_it_is_back() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(1), 3, Compression::None), &clock);
    sink.write(&entries(0..1)).unwrap();
    let logs = dir.path().join("logs");
    fs::remove_dir_all(&logs).unwrap();
    // Not even root can create a file under a regular file.
    fs::write(&logs, "in the way").unwrap();
    let path = dir.path().join("logs/access.log");
    let e = sink.reopen().unwrap_err();
    assert!(e.to_string().contains(path.to_str().unwrap()), "{e}");
    for range in [1..2, 2..3] {
        let e = sink.write(&entries(range)).unwrap_err();
        assert!(e.to_string().contains(path.to_str().unwrap()), "{e}");
    }
    fs::remove_file(&logs).unwrap();
    sink.write(&entries(3..4)).unwrap();
    assert_eq!(current(dir.path()), names(3..4));
}

#[test]
fn a_rotated_name_already_taken_is_never_reused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut sink = open(dir.path(), rotation(Some(1), 3, Compression::None), &clock);
    sink.write(&entries(0..1)).unwrap();
    // A directory squats the name the rotation would take.
    let squat = dir
        .path()
        .join("logs/access.2026-11-24T23-59-00.000000Z.log");
    fs::create_dir(&squat).unwrap();
    fs::write(squat.join("f"), "").unwrap();
    // `taken` sees it and moves on to the next microsecond.
    sink.write(&entries(1..2)).unwrap();
    sink.settle().unwrap();
    let old = rotated(dir.path());
    assert_eq!(old.len(), 2, "{old:?}");
    assert!(old[0].is_dir());
    assert_eq!(
        old[1].file_name().unwrap(),
        "access.2026-11-24T23-59-00.000001Z.log"
    );
    assert_eq!(messages(&fs::read(&old[1]).unwrap()), names(0..1));
}

#[test]
fn a_full_device_fails_the_write_naming_it_and_is_never_rotated() {
    let full = Path::new("/dev/full");
    if !full.exists() {
        eprintln!("skipped: no /dev/full on this system");
        return;
    }
    let clock: Arc<dyn Clock> = clock();
    let r = Rotation {
        max_bytes: Some(1),
        daily: true,
        keep: 0,
        compress: Compression::None,
    };
    let mut sink = FileSink::open(full.to_path_buf(), r, true, Format::Json, clock).unwrap();
    let e = sink.write(&entries(0..3)).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
    assert!(
        e.to_string()
            .starts_with("log file /dev/full: cannot write"),
        "{e}"
    );
    assert_eq!(sink.describe(), "file /dev/full");
    sink.reopen().unwrap();
    assert!(sink.write(&entries(3..4)).is_err());
    assert!(fs::metadata(full).unwrap().file_type().is_char_device());
}

/// A FIFO is refused unless the sink says `special_file`; allowed, it is
/// opened and written without ever waiting: no reader fails the open at
/// once, a full pipe fails the write at once (the runner counts it as
/// lost), and a reader that goes away fails it too.
#[test]
fn a_fifo_is_refused_unless_allowed_and_never_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pipe.log");
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let clock: Arc<dyn Clock> = clock();
    let e = FileSink::open(
        path.clone(),
        Rotation::NEVER,
        false,
        Format::Json,
        clock.clone(),
    )
    .err()
    .unwrap();
    assert!(
        e.to_string()
            .ends_with("pipe.log: is a FIFO; set `special_file = true` on the sink to write to it"),
        "{e}"
    );
    // No reader: an error now, not an open that waits for one.
    let e = FileSink::open(
        path.clone(),
        Rotation::NEVER,
        true,
        Format::Json,
        clock.clone(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("cannot open"), "{e}");
    let reader = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(&path)
        .unwrap();
    let mut sink =
        FileSink::open(path.clone(), Rotation::NEVER, true, Format::Json, clock).unwrap();
    sink.write(&entries(0..3)).unwrap();
    // Nobody reads: the pipe fills and a write fails instead of waiting.
    let full = (0..100_000).find_map(|i| sink.write(&entries(i..i + 100)).err());
    let e = full.expect("a pipe holds far less than 100,000 batches");
    assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    // The reader goes away: reopening fails at once (no reader).
    drop(reader);
    assert!(sink.reopen().is_err());
    assert!(fs::metadata(&path).unwrap().file_type().is_fifo());
}
