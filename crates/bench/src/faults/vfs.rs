//! A SQLite VFS that cuts the power, for `bench faults`: a shim over the
//! operating system's VFS that remembers, for each write and truncate of
//! a database, its WAL or its journal, what it replaced, until that file
//! is synced. At a cut (the N-th write, truncate or sync, N chosen by the
//! caller) the machine is off: that call and every later one fails, so
//! nothing after it reaches a file or is acknowledged. [`PowerCut::crash`]
//! then leaves each file as a disk may after a power loss: what was
//! synced, and of each write that was not, all of it, none of it, or some
//! of its 512-byte sectors (a torn write), as SQLite's own crash tests do
//! (its `test6.c`). A sync is taken at its word and not passed on: the
//! files live in memory or the page cache, and a real sync would only
//! slow the cuts.
//!
//! The model's limits: creating and deleting a file count as durable at
//! once (SQLite syncs the directory where that matters, and deletes only
//! a WAL or journal that a checkpoint or commit no longer needs); a write
//! tears only within its own bytes (the VFS reports "powersafe
//! overwrite", which promises exactly that); the shared-memory index
//! (`-shm`) is not a file of the log and is deleted at the crash, as a
//! reboot may leave it anything.
//!
//! The one place outside process launching where joblog writes `unsafe`:
//! SQLite calls a VFS through C function pointers. Safety argument: the
//! shim's file struct is the first part of the memory SQLite allocates
//! for a file (`szOsFile` is the shim's size plus the wrapped VFS's), the
//! wrapped file lives right after it, and every method passes its
//! pointer on unchanged; SQLite serialises the calls on one file, and the
//! shim's own state is behind a mutex; the registered `sqlite3_vfs` and
//! its name are leaked, so they outlive every connection.

#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use rusqlite::ffi;

/// The name the shim is registered under ([`joblog_store::StoreOptions::vfs`]).
pub const NAME: &str = "joblog-power-cut";

/// Bytes a torn write is kept or lost by.
const SECTOR: usize = 512;

/// The shim, once registered.
pub struct PowerCut {
    os: OsVfs,
    dead: AtomicBool,
    state: Mutex<State>,
}

/// The operating system's VFS, which the shim passes every call to.
struct OsVfs(*mut ffi::sqlite3_vfs);
// SAFETY: SQLite's VFS objects are meant to be called from any thread
// (the default build is serialised); the pointer is never freed.
unsafe impl Send for OsVfs {}
unsafe impl Sync for OsVfs {}

#[derive(Default)]
struct State {
    /// Writes, truncates and syncs of the files followed, since the last
    /// [`PowerCut::arm`].
    events: u64,
    /// The event at which the power goes.
    cut_at: Option<u64>,
    /// The event of the last sync of a WAL: every commit before it is on
    /// disk whatever the `synchronous` setting.
    last_wal_sync: u64,
    /// Syncs of a WAL (with `synchronous=NORMAL`, one per checkpoint).
    wal_syncs: u64,
    /// What each followed file was given since its last sync.
    unsynced: HashMap<PathBuf, Vec<Unsynced>>,
}

enum Unsynced {
    Write {
        offset: u64,
        new: Vec<u8>,
        /// The bytes it overwrote (fewer than `new` past the end).
        old: Vec<u8>,
        size_before: u64,
    },
    Truncate {
        size: u64,
        /// The bytes it cut off.
        old_tail: Vec<u8>,
        size_before: u64,
    },
}

/// What a crash did to the writes that were not synced.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Crash {
    pub kept: u64,
    pub lost: u64,
    pub torn: u64,
}

static SHIM: OnceLock<PowerCut> = OnceLock::new();

/// The shim, registered with SQLite under [`NAME`] on first use.
pub fn install() -> anyhow::Result<&'static PowerCut> {
    if let Some(shim) = SHIM.get() {
        return Ok(shim);
    }
    // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS, which lives
    // as long as the process; it is only read here.
    let os = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if os.is_null() {
        anyhow::bail!("SQLite has no default VFS to wrap");
    }
    let shim = SHIM.get_or_init(|| PowerCut {
        os: OsVfs(os),
        dead: AtomicBool::new(false),
        state: Mutex::new(State::default()),
    });
    static REGISTERED: OnceLock<c_int> = OnceLock::new();
    let rc = *REGISTERED.get_or_init(|| {
        // SAFETY: `os` is a valid VFS (above); the copy keeps its
        // functions, which take the VFS they are called with only to
        // read what the copy shares (its app data); the leaked copy and
        // name outlive every connection.
        unsafe {
            let mut vfs: ffi::sqlite3_vfs = std::ptr::read(os);
            vfs.szOsFile = (REAL_OFFSET as c_int) + (*os).szOsFile;
            vfs.pNext = std::ptr::null_mut();
            vfs.zName = CString::new(NAME).expect("no NUL in the name").into_raw();
            vfs.xOpen = Some(x_open);
            vfs.xDelete = Some(x_delete);
            ffi::sqlite3_vfs_register(Box::into_raw(Box::new(vfs)), 0)
        }
    });
    if rc != ffi::SQLITE_OK {
        anyhow::bail!("SQLite refused to register the {NAME} VFS (code {rc})");
    }
    Ok(shim)
}

impl PowerCut {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts counting events from zero, the power on; it goes at event
    /// `cut_at` (`None`: not by itself).
    pub fn arm(&self, cut_at: Option<u64>) {
        let mut st = self.lock();
        *st = State {
            cut_at,
            ..State::default()
        };
        self.dead.store(false, Ordering::SeqCst);
    }

    /// Events so far (writes, truncates and syncs of the files followed).
    pub fn events(&self) -> u64 {
        self.lock().events
    }

    /// The event of the last sync of a WAL (0: none since [`arm`]).
    ///
    /// [`arm`]: PowerCut::arm
    pub fn last_wal_sync(&self) -> u64 {
        self.lock().last_wal_sync
    }

    /// Syncs of a WAL since [`arm`](PowerCut::arm).
    pub fn wal_syncs(&self) -> u64 {
        self.lock().wal_syncs
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    /// Cuts the power now.
    pub fn cut(&self) {
        let _st = self.lock();
        self.dead.store(true, Ordering::SeqCst);
    }

    /// After the cut and once every connection is closed: leaves each
    /// file with what was synced and, of each later write, all, none or
    /// some sectors (`pick(n)` returns a number below `n`); then the power
    /// is back on and nothing is followed.
    pub fn crash(&self, mut pick: impl FnMut(u64) -> u64) -> std::io::Result<Crash> {
        let mut st = self.lock();
        let unsynced = std::mem::take(&mut st.unsynced);
        let mut crash = Crash::default();
        for (path, ops) in unsynced {
            if ops.is_empty() {
                continue;
            }
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)?;
            // Back to what was synced, newest first...
            for op in ops.iter().rev() {
                match op {
                    Unsynced::Write {
                        offset,
                        old,
                        size_before,
                        ..
                    } => {
                        file.write_all_at(old, *offset)?;
                        file.set_len(*size_before)?;
                    }
                    Unsynced::Truncate {
                        size,
                        old_tail,
                        size_before,
                    } => {
                        file.set_len(*size_before)?;
                        file.write_all_at(old_tail, *size)?;
                    }
                }
            }
            // ...then what the disk may have kept, oldest first.
            for op in &ops {
                match op {
                    Unsynced::Write { offset, new, .. } => match pick(3) {
                        0 => {
                            file.write_all_at(new, *offset)?;
                            crash.kept += 1;
                        }
                        1 => crash.lost += 1,
                        _ => {
                            for (i, sector) in new.chunks(SECTOR).enumerate() {
                                if pick(2) == 0 {
                                    file.write_all_at(sector, offset + (i * SECTOR) as u64)?;
                                }
                            }
                            crash.torn += 1;
                        }
                    },
                    Unsynced::Truncate { size, .. } => {
                        if pick(2) == 0 {
                            file.set_len(*size)?;
                            crash.kept += 1;
                        } else {
                            crash.lost += 1;
                        }
                    }
                }
            }
        }
        *st = State::default();
        self.dead.store(false, Ordering::SeqCst);
        Ok(crash)
    }
}

impl State {
    /// Counts an event of a followed file: true when the power goes at it
    /// (the call then fails and changes nothing).
    fn tick(&mut self, dead: &AtomicBool) -> bool {
        self.events += 1;
        if self.cut_at.is_some_and(|at| self.events >= at) {
            dead.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }
}

fn shim() -> &'static PowerCut {
    SHIM.get().expect("the VFS is called only once installed")
}

/// The shim's part of a file's memory; the wrapped file follows it.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// The file's path when its writes are followed, else null. Owned
    /// (a leaked `Box`), freed at close.
    path: *mut PathBuf,
}

const REAL_OFFSET: usize = std::mem::size_of::<ShimFile>().next_multiple_of(16);

/// SAFETY (for every method below): `file` is a `ShimFile` that `x_open`
/// initialised, and its `real` a file the wrapped VFS opened.
unsafe fn parts<'a>(file: *mut ffi::sqlite3_file) -> (&'a ShimFile, &'a ffi::sqlite3_io_methods) {
    let f = &*(file as *const ShimFile);
    (f, &*(*f.real).pMethods)
}

const FOLLOWED: c_int =
    ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_WAL | ffi::SQLITE_OPEN_MAIN_JOURNAL;

unsafe extern "C" fn x_open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let shim = shim();
    let real = (file as *mut u8).add(REAL_OFFSET) as *mut ffi::sqlite3_file;
    std::ptr::write(
        file as *mut ShimFile,
        ShimFile {
            base: ffi::sqlite3_file {
                pMethods: std::ptr::null(),
            },
            real,
            path: std::ptr::null_mut(),
        },
    );
    if shim.is_dead() {
        return ffi::SQLITE_CANTOPEN;
    }
    let os = shim.os.0;
    let rc = ((*os).xOpen.expect("the OS VFS opens files"))(os, name, real, flags, out_flags);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let f = &mut *(file as *mut ShimFile);
    if flags & FOLLOWED != 0 && !name.is_null() {
        let path = PathBuf::from(OsStr::from_bytes(CStr::from_ptr(name).to_bytes()));
        f.path = Box::into_raw(Box::new(path));
    }
    f.base.pMethods = &METHODS;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_delete(
    _vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    let shim = shim();
    let mut st = shim.lock();
    if shim.is_dead() {
        return ffi::SQLITE_IOERR_DELETE;
    }
    if !name.is_null() {
        st.unsynced.remove(Path::new(OsStr::from_bytes(
            CStr::from_ptr(name).to_bytes(),
        )));
    }
    let os = shim.os.0;
    ((*os).xDelete.expect("the OS VFS deletes files"))(os, name, sync_dir)
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    let (f, m) = parts(file);
    let rc = (m.xClose.expect("xClose"))(f.real);
    if !f.path.is_null() {
        drop(Box::from_raw(f.path));
        (*(file as *mut ShimFile)).path = std::ptr::null_mut();
    }
    rc
}

unsafe extern "C" fn x_read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let (f, m) = parts(file);
    if shim().is_dead() {
        return ffi::SQLITE_IOERR_READ;
    }
    (m.xRead.expect("xRead"))(f.real, buf, amount, offset)
}

/// The file's size, or SQLite's error.
unsafe fn size_of(f: &ShimFile, m: &ffi::sqlite3_io_methods) -> Result<i64, c_int> {
    let mut size: i64 = 0;
    match (m.xFileSize.expect("xFileSize"))(f.real, &mut size) {
        ffi::SQLITE_OK => Ok(size),
        rc => Err(rc),
    }
}

/// `len` bytes from `offset`, or fewer where the file ends.
unsafe fn read_up_to(
    f: &ShimFile,
    m: &ffi::sqlite3_io_methods,
    offset: i64,
    len: i64,
    size: i64,
) -> Result<Vec<u8>, c_int> {
    let n = (size.min(offset + len) - offset).max(0) as usize;
    let mut old = vec![0u8; n];
    if n > 0 {
        let rc = (m.xRead.expect("xRead"))(f.real, old.as_mut_ptr().cast(), n as c_int, offset);
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
    }
    Ok(old)
}

unsafe extern "C" fn x_write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let (f, m) = parts(file);
    let shim = shim();
    let mut st = shim.lock();
    if shim.is_dead() {
        return ffi::SQLITE_IOERR_WRITE;
    }
    if !f.path.is_null() {
        if st.tick(&shim.dead) {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let size = match size_of(f, m) {
            Ok(s) => s,
            Err(rc) => return rc,
        };
        let old = match read_up_to(f, m, offset, i64::from(amount), size) {
            Ok(o) => o,
            Err(rc) => return rc,
        };
        let new = std::slice::from_raw_parts(buf.cast::<u8>(), amount as usize).to_vec();
        st.unsynced
            .entry((*f.path).clone())
            .or_default()
            .push(Unsynced::Write {
                offset: offset as u64,
                new,
                old,
                size_before: size as u64,
            });
    }
    (m.xWrite.expect("xWrite"))(f.real, buf, amount, offset)
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    let (f, m) = parts(file);
    let shim = shim();
    let mut st = shim.lock();
    if shim.is_dead() {
        return ffi::SQLITE_IOERR_TRUNCATE;
    }
    if !f.path.is_null() {
        if st.tick(&shim.dead) {
            return ffi::SQLITE_IOERR_TRUNCATE;
        }
        let before = match size_of(f, m) {
            Ok(s) => s,
            Err(rc) => return rc,
        };
        let old_tail = match read_up_to(f, m, size, before - size, before) {
            Ok(o) => o,
            Err(rc) => return rc,
        };
        st.unsynced
            .entry((*f.path).clone())
            .or_default()
            .push(Unsynced::Truncate {
                size: size as u64,
                old_tail,
                size_before: before as u64,
            });
    }
    (m.xTruncate.expect("xTruncate"))(f.real, size)
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    let (f, _) = parts(file);
    let shim = shim();
    let mut st = shim.lock();
    if shim.is_dead() {
        return ffi::SQLITE_IOERR_FSYNC;
    }
    if !f.path.is_null() {
        if st.tick(&shim.dead) {
            return ffi::SQLITE_IOERR_FSYNC;
        }
        let path = &*f.path;
        st.unsynced.remove(path);
        if path.as_os_str().as_bytes().ends_with(b"-wal") {
            st.last_wal_sync = st.events;
            st.wal_syncs += 1;
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    let (f, m) = parts(file);
    if shim().is_dead() {
        return ffi::SQLITE_IOERR_FSTAT;
    }
    (m.xFileSize.expect("xFileSize"))(f.real, size)
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (f, m) = parts(file);
    (m.xLock.expect("xLock"))(f.real, level)
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    let (f, m) = parts(file);
    (m.xUnlock.expect("xUnlock"))(f.real, level)
}

unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    let (f, m) = parts(file);
    (m.xCheckReservedLock.expect("xCheckReservedLock"))(f.real, out)
}

unsafe extern "C" fn x_file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    let (f, m) = parts(file);
    (m.xFileControl.expect("xFileControl"))(f.real, op, arg)
}

unsafe extern "C" fn x_sector_size(file: *mut ffi::sqlite3_file) -> c_int {
    let (f, m) = parts(file);
    (m.xSectorSize.expect("xSectorSize"))(f.real)
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    let (f, m) = parts(file);
    (m.xDeviceCharacteristics.expect("xDeviceCharacteristics"))(f.real)
}

unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    page: c_int,
    page_size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    let (f, m) = parts(file);
    (m.xShmMap.expect("xShmMap"))(f.real, page, page_size, extend, out)
}

unsafe extern "C" fn x_shm_lock(
    file: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    let (f, m) = parts(file);
    (m.xShmLock.expect("xShmLock"))(f.real, offset, n, flags)
}

unsafe extern "C" fn x_shm_barrier(file: *mut ffi::sqlite3_file) {
    let (f, m) = parts(file);
    (m.xShmBarrier.expect("xShmBarrier"))(f.real)
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    let (f, m) = parts(file);
    (m.xShmUnmap.expect("xShmUnmap"))(f.real, delete)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes through the shim with `synchronous`, cuts the power after
    /// the last commit, and returns the rows a reopened database holds.
    fn rows_after_a_cut(synchronous: &str, pick: impl FnMut(u64) -> u64) -> (i64, String) {
        let (n, last, check) = rows_and_last_after_a_cut(synchronous, pick);
        assert_eq!(last, n - 1, "the rows are not a prefix of the commits");
        (n, check)
    }

    fn rows_and_last_after_a_cut(
        synchronous: &str,
        pick: impl FnMut(u64) -> u64,
    ) -> (i64, i64, String) {
        let shim = install().unwrap();
        // The tests of this module take turns: the VFS is global.
        static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        shim.arm(None);
        {
            let c = rusqlite::Connection::open_with_flags_and_vfs(
                &path,
                rusqlite::OpenFlags::default(),
                NAME,
            )
            .unwrap();
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.pragma_update(None, "synchronous", synchronous).unwrap();
            c.execute_batch("CREATE TABLE t(x); PRAGMA wal_checkpoint(TRUNCATE);")
                .unwrap();
            for i in 0..50 {
                c.execute("INSERT INTO t VALUES (?1)", [i]).unwrap();
            }
            shim.cut();
            // The machine is off: nothing more reaches the files.
            assert!(c.execute("INSERT INTO t VALUES (99)", []).is_err());
        }
        shim.crash(pick).unwrap();
        let _ = std::fs::remove_file(dir.path().join("t.db-shm"));
        let c = rusqlite::Connection::open(&path).unwrap();
        let (n, last) = c
            .query_row("SELECT count(*), coalesce(max(x), -1) FROM t", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        let check: String = c
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        (n, last, check)
    }

    #[test]
    fn synced_commits_survive_and_unsynced_ones_go_when_every_write_is_lost() {
        // pick always 1: every write not synced is lost.
        let (n, check) = rows_after_a_cut("FULL", |_| 1);
        assert_eq!((n, check.as_str()), (50, "ok"));
        // With NORMAL the WAL was never synced after the table was made.
        let (n, check) = rows_after_a_cut("NORMAL", |_| 1);
        assert_eq!((n, check.as_str()), (0, "ok"));
    }

    #[test]
    fn unsynced_writes_that_all_reached_the_disk_are_all_there() {
        let (n, check) = rows_after_a_cut("NORMAL", |_| 0);
        assert_eq!((n, check.as_str()), (50, "ok"));
    }

    #[test]
    fn torn_writes_leave_a_prefix_of_the_commits() {
        let mut seed = 7u64;
        for _ in 0..20 {
            let (n, check) = rows_after_a_cut("NORMAL", |k| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) % k
            });
            assert!((0..=50).contains(&n), "{n}");
            assert_eq!(check, "ok");
        }
    }
}
