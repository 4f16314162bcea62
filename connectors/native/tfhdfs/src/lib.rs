//! TensorFlow filesystem plugin for `hdfs://` on hdfs-native (pure Rust: no JVM, no libhdfs).
//!
//! TensorFlow loads this library with `tf.experimental.register_filesystem_plugin` (see
//! `tfhadoop/tfhdfs.py`) and calls `TF_InitPlugin`, which hands over the op tables below. Every op
//! reports through `TF_Status` with the codes the modular filesystem API asks for and a message
//! naming the URI.

mod ffi;
mod hdfs;
mod status;
mod tokens;

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, RwLock};

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use hdfs_native::client::FileStatus;
use hdfs_native::file::{FileReader, FileWriter};
use hdfs_native::{HdfsError, WriteOptions};

use ffi::*;
use hdfs::{block_on, target, Target};
use status::{Error, Result};

const FILE_PERMISSION: u32 = 0o644;
const DIR_PERMISSION: u32 = 0o755;

// ---------------------------------------------------------------------------------------------
// Helpers

unsafe fn string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Runs an op: its result goes to `status`; a panic becomes INTERNAL instead of unwinding into C++.
fn run<T>(status: *mut TF_Status, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => {
            status::ok(status);
            v
        }
        Ok(Err(e)) => {
            e.report(status);
            fallback
        }
        Err(p) => {
            let what = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            status::set(status, code::INTERNAL, &format!("tfhdfs: internal error: {what}"));
            fallback
        }
    }
}

/// A copy of `s` in memory that TensorFlow frees with `plugin_memory_free` (libc free).
fn c_string(s: &str) -> *mut c_char {
    unsafe {
        let p = libc::malloc(s.len() + 1) as *mut u8;
        if p.is_null() {
            return std::ptr::null_mut();
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
        *p.add(s.len()) = 0;
        p as *mut c_char
    }
}

fn stat_of(t: &Target) -> Result<FileStatus> {
    block_on(t.client.get_file_info(&t.path)).map_err(|e| Error::hdfs("stat", &t.uri, &e))
}

fn is_not_found(e: &Error) -> bool {
    e.code == code::NOT_FOUND
}

// ---------------------------------------------------------------------------------------------
// Random-access files: positional reads, thread safe. Reads that continue where the previous
// one ended (TFRecordDataset, tf.data readers) are served from one open DataNode stream instead
// of a new block read per call; other reads, or reads racing with it, go directly.

struct Sequential {
    pos: u64,
    stream: BoxStream<'static, hdfs_native::Result<Bytes>>,
    pending: Bytes,
}

struct Reader {
    uri: String,
    target: Target,
    /// Replaced by a fresh open when a read is retried: new block locations from the NameNode and
    /// a new dead-DataNode set (hdfs-native never retries a DataNode a reader once marked dead).
    file: RwLock<FileReader>,
    len: u64,
    /// The open stream, and where the last direct read ended (a read starting there opens one).
    seq: Mutex<(Option<Sequential>, u64)>,
}

/// `op`, retried while it fails with Unavailable, in the patient roles (hdfs::read_retry_delays);
/// `before_retry` runs after each wait. Each retry is said on stderr (the container's log).
fn patiently<T>(op: impl FnMut() -> Result<T>, before_retry: impl FnMut()) -> Result<T> {
    retrying(hdfs::read_retry_delays(), op, before_retry)
}

fn retrying<T>(
    mut delays: impl Iterator<Item = std::time::Duration>,
    mut op: impl FnMut() -> Result<T>,
    mut before_retry: impl FnMut(),
) -> Result<T> {
    loop {
        let err = match op() {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        if err.code != code::UNAVAILABLE {
            return Err(err);
        }
        let Some(delay) = delays.next() else {
            return Err(err);
        };
        eprintln!("tfhdfs: {} (retrying in {:.1} s)", err.msg, delay.as_secs_f64());
        std::thread::sleep(delay);
        before_retry();
    }
}

/// Opens for read, waiting out (patient roles) a NameNode that is back but still in safe mode
/// without the DataNodes' block reports: its SafeModeException "Zero blocklocations" is not
/// among the exceptions hdfs-native retries.
fn open_for_read(t: &Target) -> Result<FileReader> {
    patiently(|| open_whole(t), || {})
}

/// How long a reader waits for a closed file's last block to become readable (see `open_whole`).
const LAST_BLOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Opens `t` for read over the length the NameNode lists for it. Where the NameNode lets a
/// writer close while its last block is only COMMITTED (`dfs.namenode.file.close.num-committed-allowed`,
/// HDFS-8999), the block locations leave that block out of the file's length until a DataNode
/// reports it (milliseconds later): a reader opened in between would see a shorter (often empty)
/// file with no error. Like Hadoop's own client, wait for the report and open again; give up
/// with an error naming the file rather than return bytes the file does not hold.
fn open_whole(t: &Target) -> Result<FileReader> {
    let start = std::time::Instant::now();
    let mut delay = std::time::Duration::from_millis(10);
    loop {
        let listed = stat_of(t)?.length as usize;
        let reader = block_on(t.client.read(&t.path)).map_err(|e| Error::hdfs("open for read", &t.uri, &e))?;
        let readable = reader.file_length();
        if readable >= listed {
            return Ok(reader);
        }
        if start.elapsed() >= LAST_BLOCK_WAIT {
            return Err(Error::new(
                code::UNAVAILABLE,
                format!(
                    "{}: the NameNode lists {listed} bytes but only {readable} are readable: no DataNode has reported \
                     its last block after {} s",
                    t.uri,
                    LAST_BLOCK_WAIT.as_secs()
                ),
            ));
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(std::time::Duration::from_millis(500));
    }
}

impl Reader {
    fn open(t: Target) -> Result<Reader> {
        let reader = open_for_read(&t)?;
        let len = reader.file_length() as u64;
        Ok(Reader { uri: t.uri.clone(), target: t, file: RwLock::new(reader), len, seq: Mutex::new((None, u64::MAX)) })
    }

    /// A read, retried through an HDFS outage in the patient roles: a DataNode that refused a
    /// read once is never asked again by the same hdfs-native reader, and block locations from
    /// before an outage may be stale, so each retry reopens the file.
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        patiently(
            || self.read_once(offset, buf),
            || {
                self.seq.lock().unwrap_or_else(|p| p.into_inner()).0 = None;
                if let Ok(fresh) = open_for_read(&self.target) {
                    *self.file.write().unwrap_or_else(|p| p.into_inner()) = fresh;
                }
            },
        )
    }

    fn direct(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let file = self.file.read().unwrap_or_else(|p| p.into_inner());
        block_on(file.read_range_buf(buf, offset as usize))
            .map_err(|e| Error::hdfs(&format!("read at offset {offset}"), &self.uri, &e))
    }

    fn read_once(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let Ok(mut guard) = self.seq.try_lock() else {
            return self.direct(offset, buf);
        };
        let (seq, last_end) = &mut *guard;
        if seq.as_ref().is_none_or(|s| s.pos != offset) {
            *seq = None;
            if offset != *last_end {
                *last_end = offset + buf.len() as u64;
                drop(guard);
                return self.direct(offset, buf);
            }
            let file = self.file.read().unwrap_or_else(|p| p.into_inner());
            let stream = file.read_range_stream(offset as usize, (self.len - offset) as usize).boxed();
            *seq = Some(Sequential { pos: offset, stream, pending: Bytes::new() });
        }
        let s = seq.as_mut().unwrap();
        let mut filled = 0;
        let result = block_on(async {
            while filled < buf.len() {
                if s.pending.is_empty() {
                    match s.stream.next().await {
                        Some(Ok(b)) => s.pending = b,
                        Some(Err(e)) => return Err(e),
                        None => return Err(HdfsError::InternalError("stream ended before the file length".into())),
                    }
                }
                let n = s.pending.len().min(buf.len() - filled);
                buf[filled..filled + n].copy_from_slice(&s.pending.split_to(n));
                filled += n;
            }
            Ok(())
        });
        match result {
            Ok(()) => {
                s.pos += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                *seq = None;
                Err(Error::hdfs(&format!("read at offset {offset}"), &self.uri, &e))
            }
        }
    }
}

unsafe extern "C" fn raf_cleanup(file: *mut TF_RandomAccessFile) {
    let f = &mut *file;
    if !f.plugin_file.is_null() {
        drop(Box::from_raw(f.plugin_file as *mut Reader));
        f.plugin_file = std::ptr::null_mut();
    }
}

unsafe extern "C" fn raf_read(
    file: *const TF_RandomAccessFile,
    offset: u64,
    n: usize,
    buffer: *mut c_char,
    status: *mut TF_Status,
) -> i64 {
    let r = &*((*file).plugin_file as *const Reader);
    let mut result = run(status, -1, || {
        if offset >= r.len || n == 0 {
            return Ok(0);
        }
        let want = (n as u64).min(r.len - offset) as usize;
        let buf = std::slice::from_raw_parts_mut(buffer as *mut u8, want);
        r.read(offset, buf)?;
        Ok(want as i64)
    });
    if result >= 0 && (result as usize) < n {
        // TensorFlow's contract: fewer bytes than asked because of EOF is OUT_OF_RANGE.
        status::set(status, code::OUT_OF_RANGE, &format!("{}: read past end of file (length {})", r.uri, r.len));
        result = result.max(0);
    }
    result
}

// ---------------------------------------------------------------------------------------------
// Writable files

struct WriterState {
    writer: Option<FileWriter>,
    pos: u64,
    unsynced: bool,
}

struct Writer {
    uri: String,
    state: Mutex<WriterState>,
}

impl Writer {
    fn with<T>(&self, what: &str, f: impl FnOnce(&mut WriterState, &mut FileWriter) -> hdfs_native::Result<T>) -> Result<T> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let st = &mut *st;
        let Some(mut w) = st.writer.take() else {
            return Err(Error::new(code::FAILED_PRECONDITION, format!("{}: {what} after close", self.uri)));
        };
        let r = f(st, &mut w);
        st.writer = Some(w);
        r.map_err(|e| Error::hdfs(what, &self.uri, &e))
    }

    fn sync(&self, what: &str) -> Result<()> {
        self.with(what, |st, w| {
            if st.unsynced {
                block_on(w.hsync())?;
                st.unsynced = false;
            }
            Ok(())
        })
    }

    fn close(&self) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match st.writer.take() {
            Some(mut w) => block_on(w.close()).map_err(|e| Error::hdfs("close", &self.uri, &e)),
            None => Ok(()),
        }
    }
}

fn writer(uri: String, writer: FileWriter, pos: u64) -> *mut c_void {
    Box::into_raw(Box::new(Writer {
        uri,
        state: Mutex::new(WriterState { writer: Some(writer), pos, unsynced: false }),
    })) as *mut c_void
}

unsafe fn writer_of<'a>(file: *const TF_WritableFile) -> &'a Writer {
    &*((*file).plugin_file as *const Writer)
}

unsafe extern "C" fn wf_cleanup(file: *mut TF_WritableFile) {
    let f = &mut *file;
    if !f.plugin_file.is_null() {
        let w = Box::from_raw(f.plugin_file as *mut Writer);
        // Not closed by TensorFlow (an error path): finish the file so its lease is released.
        let _ = catch_unwind(AssertUnwindSafe(|| w.close()));
        f.plugin_file = std::ptr::null_mut();
    }
}

unsafe extern "C" fn wf_append(file: *const TF_WritableFile, buffer: *const c_char, n: usize, status: *mut TF_Status) {
    let w = writer_of(file);
    run(status, (), || {
        if n == 0 {
            return Ok(());
        }
        let data = Bytes::copy_from_slice(std::slice::from_raw_parts(buffer as *const u8, n));
        w.with("append", |st, fw| {
            block_on(fw.write_bytes(data))?;
            st.pos += n as u64;
            st.unsynced = true;
            Ok(())
        })
    })
}

unsafe extern "C" fn wf_tell(file: *const TF_WritableFile, status: *mut TF_Status) -> i64 {
    let w = writer_of(file);
    run(status, -1, || w.with("tell", |st, _| Ok(st.pos as i64)))
}

/// HDFS makes written data visible to readers with hflush/hsync; hdfs-native has hsync, which
/// TensorFlow's flush (summary writers, TFRecordWriter.flush) and sync both get.
unsafe extern "C" fn wf_flush(file: *const TF_WritableFile, status: *mut TF_Status) {
    let w = writer_of(file);
    run(status, (), || w.sync("flush"))
}

unsafe extern "C" fn wf_sync(file: *const TF_WritableFile, status: *mut TF_Status) {
    let w = writer_of(file);
    run(status, (), || w.sync("sync"))
}

unsafe extern "C" fn wf_close(file: *const TF_WritableFile, status: *mut TF_Status) {
    let w = writer_of(file);
    run(status, (), || w.close())
}

// ---------------------------------------------------------------------------------------------
// Filesystem ops

unsafe extern "C" fn fs_init(fs: *mut TF_Filesystem, status: *mut TF_Status) {
    (*fs).plugin_filesystem = std::ptr::null_mut();
    status::ok(status);
}

unsafe extern "C" fn fs_cleanup(_fs: *mut TF_Filesystem) {}

unsafe extern "C" fn fs_new_random_access_file(
    _fs: *const TF_Filesystem,
    path: *const c_char,
    file: *mut TF_RandomAccessFile,
    status: *mut TF_Status,
) {
    let uri = string(path);
    run(status, (), || {
        let t = target(&uri)?;
        let r = Reader::open(t)?;
        (*file).plugin_file = Box::into_raw(Box::new(r)) as *mut c_void;
        Ok(())
    })
}

unsafe extern "C" fn fs_new_writable_file(
    _fs: *const TF_Filesystem,
    path: *const c_char,
    file: *mut TF_WritableFile,
    status: *mut TF_Status,
) {
    let uri = string(path);
    run(status, (), || {
        let t = target(&uri)?;
        // TensorFlow's contract: a missing parent directory is NotFound, not created.
        let opts = WriteOptions::default().overwrite(true).create_parent(false).permission(FILE_PERMISSION);
        let w = block_on(t.client.create(&t.path, opts)).map_err(|e| Error::hdfs("create", &uri, &e))?;
        (*file).plugin_file = writer(uri.clone(), w, 0);
        Ok(())
    })
}

unsafe extern "C" fn fs_new_appendable_file(
    _fs: *const TF_Filesystem,
    path: *const c_char,
    file: *mut TF_WritableFile,
    status: *mut TF_Status,
) {
    let uri = string(path);
    run(status, (), || {
        let t = target(&uri)?;
        let (w, pos) = match stat_of(&t) {
            Ok(st) if st.isdir => {
                return Err(Error::new(code::FAILED_PRECONDITION, format!("{uri}: is a directory")));
            }
            Ok(st) => {
                let w = block_on(t.client.append(&t.path)).map_err(|e| Error::hdfs("open for append", &uri, &e))?;
                (w, st.length as u64)
            }
            Err(e) if is_not_found(&e) => {
                let opts = WriteOptions::default().create_parent(false).permission(FILE_PERMISSION);
                (block_on(t.client.create(&t.path, opts)).map_err(|e| Error::hdfs("create", &uri, &e))?, 0)
            }
            Err(e) => return Err(e),
        };
        (*file).plugin_file = writer(uri.clone(), w, pos);
        Ok(())
    })
}

unsafe extern "C" fn fs_create_dir(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || {
        let t = target(&uri)?;
        match stat_of(&t) {
            Ok(_) => Err(Error::new(code::ALREADY_EXISTS, format!("{uri}: already exists"))),
            Err(e) if is_not_found(&e) => block_on(t.client.mkdirs(&t.path, DIR_PERMISSION, false))
                .map_err(|e| Error::hdfs("mkdir", &uri, &e)),
            Err(e) => Err(e),
        }
    })
}

unsafe extern "C" fn fs_recursively_create_dir(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || {
        let t = target(&uri)?;
        match stat_of(&t) {
            Ok(st) if st.isdir => Ok(()),
            Ok(_) => Err(Error::new(code::FAILED_PRECONDITION, format!("{uri}: exists and is not a directory"))),
            Err(e) if is_not_found(&e) => block_on(t.client.mkdirs(&t.path, DIR_PERMISSION, true))
                .map_err(|e| Error::hdfs("mkdirs", &uri, &e)),
            Err(e) => Err(e),
        }
    })
}

fn delete(t: &Target, want_dir: bool) -> Result<()> {
    let st = stat_of(t)?;
    if st.isdir != want_dir {
        let what = if want_dir { "not a directory" } else { "is a directory" };
        return Err(Error::new(code::FAILED_PRECONDITION, format!("{}: {what}", t.uri)));
    }
    match block_on(t.client.delete(&t.path, false)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::new(code::NOT_FOUND, format!("{}: no such file or directory", t.uri))),
        Err(e) => Err(Error::hdfs("delete", &t.uri, &e)),
    }
}

unsafe extern "C" fn fs_delete_file(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || delete(&target(&uri)?, false))
}

unsafe extern "C" fn fs_delete_dir(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || delete(&target(&uri)?, true))
}

/// One recursive delete RPC (TensorFlow's default would list and delete entry by entry).
unsafe extern "C" fn fs_delete_recursively(
    _fs: *const TF_Filesystem,
    path: *const c_char,
    undeleted_files: *mut u64,
    undeleted_dirs: *mut u64,
    status: *mut TF_Status,
) {
    let uri = string(path);
    let (files, dirs) = run(status, (0, 1), || {
        let t = target(&uri)?;
        stat_of(&t)?; // missing: NotFound, with the path counted as an undeleted directory
        match block_on(t.client.delete(&t.path, true)) {
            Ok(true) => Ok((0, 0)),
            Ok(false) => Err(Error::new(code::NOT_FOUND, format!("{uri}: no such file or directory"))),
            Err(e) => Err(Error::hdfs("delete recursively", &uri, &e)),
        }
    });
    if !undeleted_files.is_null() {
        *undeleted_files = files;
    }
    if !undeleted_dirs.is_null() {
        *undeleted_dirs = dirs;
    }
}

/// Replaces an existing destination file (HDFS rename2 with OVERWRITE), as TensorFlow's
/// checkpoint saver expects when it moves its temporary files into place.
unsafe extern "C" fn fs_rename_file(_fs: *const TF_Filesystem, src: *const c_char, dst: *const c_char, status: *mut TF_Status) {
    let (src, dst) = (string(src), string(dst));
    run(status, (), || {
        let (s, d) = (target(&src)?, target(&dst)?);
        if hdfs::split(&src)?.0 != hdfs::split(&dst)?.0 {
            return Err(Error::new(
                code::INVALID_ARGUMENT,
                format!("rename {src} -> {dst}: source and destination name different NameNodes"),
            ));
        }
        block_on(s.client.rename(&s.path, &d.path, true))
            .map_err(|e| Error::hdfs(&format!("rename to {dst}"), &src, &e))
    })
}

unsafe extern "C" fn fs_path_exists(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || stat_of(&target(&uri)?).map(|_| ()))
}

unsafe extern "C" fn fs_stat(_fs: *const TF_Filesystem, path: *const c_char, stats: *mut TF_FileStatistics, status: *mut TF_Status) {
    let uri = string(path);
    run(status, (), || {
        let st = stat_of(&target(&uri)?)?;
        *stats = TF_FileStatistics {
            length: st.length as i64,
            mtime_nsec: st.modification_time as i64 * 1_000_000,
            is_directory: st.isdir,
        };
        Ok(())
    })
}

unsafe extern "C" fn fs_is_directory(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) -> bool {
    let uri = string(path);
    run(status, false, || {
        if stat_of(&target(&uri)?)?.isdir {
            Ok(true)
        } else {
            Err(Error::new(code::FAILED_PRECONDITION, format!("{uri}: not a directory")))
        }
    })
}

unsafe extern "C" fn fs_get_file_size(_fs: *const TF_Filesystem, path: *const c_char, status: *mut TF_Status) -> i64 {
    let uri = string(path);
    run(status, -1, || {
        let st = stat_of(&target(&uri)?)?;
        if st.isdir {
            Err(Error::new(code::FAILED_PRECONDITION, format!("{uri}: is a directory")))
        } else {
            Ok(st.length as i64)
        }
    })
}

unsafe extern "C" fn fs_translate_name(_fs: *const TF_Filesystem, uri: *const c_char) -> *mut c_char {
    c_string(&hdfs::clean(&string(uri)))
}

unsafe extern "C" fn fs_get_children(
    _fs: *const TF_Filesystem,
    path: *const c_char,
    entries: *mut *mut *mut c_char,
    status: *mut TF_Status,
) -> c_int {
    let uri = string(path);
    let names = run(status, None, || {
        let t = target(&uri)?;
        if !stat_of(&t)?.isdir {
            return Err(Error::new(code::FAILED_PRECONDITION, format!("{uri}: not a directory")));
        }
        let list = block_on(t.client.list_status(&t.path, false)).map_err(|e| Error::hdfs("list", &uri, &e))?;
        Ok(Some(
            list.iter()
                .map(|s| s.path.rsplit('/').next().unwrap_or("").to_string())
                .collect::<Vec<_>>(),
        ))
    });
    let Some(names) = names else { return -1 };
    let array = libc::malloc(names.len().max(1) * std::mem::size_of::<*mut c_char>()) as *mut *mut c_char;
    for (i, name) in names.iter().enumerate() {
        *array.add(i) = c_string(name);
    }
    *entries = array;
    names.len() as c_int
}

// ---------------------------------------------------------------------------------------------
// Registration

unsafe extern "C" fn plugin_malloc(size: usize) -> *mut c_void {
    libc::malloc(size)
}

unsafe extern "C" fn plugin_free(p: *mut c_void) {
    libc::free(p)
}

/// A zeroed table of `T` in TensorFlow-owned memory (all ops absent until set).
unsafe fn table<T>() -> *mut T {
    libc::calloc(1, std::mem::size_of::<T>()) as *mut T
}

/// # Safety
/// Called by TensorFlow's plugin loader with a valid `TF_FilesystemPluginInfo`.
#[no_mangle]
pub unsafe extern "C" fn TF_InitPlugin(info: *mut TF_FilesystemPluginInfo) {
    if !status::resolve() {
        eprintln!("tfhdfs: TF_SetStatus not found: load this plugin from TensorFlow (import tfhadoop.tfhdfs)");
    }
    let info = &mut *info;
    info.plugin_memory_allocate = Some(plugin_malloc);
    info.plugin_memory_free = Some(plugin_free);
    info.num_schemes = 1;
    info.ops = table::<TF_FilesystemPluginOps>();
    let ops = &mut *info.ops;

    ops.scheme = c_string(hdfs::SCHEME);
    ops.filesystem_ops_size = std::mem::size_of::<TF_FilesystemOps>();
    ops.random_access_file_ops_size = std::mem::size_of::<TF_RandomAccessFileOps>();
    ops.writable_file_ops_size = std::mem::size_of::<TF_WritableFileOps>();
    ops.read_only_memory_region_ops_size = std::mem::size_of::<TF_ReadOnlyMemoryRegionOps>();
    // API/ABI numbers are 0 (calloc) as in TF 2.21; no read-only memory region (TF then reports
    // Unimplemented for NewReadOnlyMemoryRegionFromFile, used only by memmapped graphs).

    let raf = table::<TF_RandomAccessFileOps>();
    (*raf).cleanup = Some(raf_cleanup);
    (*raf).read = Some(raf_read);
    ops.random_access_file_ops = raf;

    let wf = table::<TF_WritableFileOps>();
    (*wf).cleanup = Some(wf_cleanup);
    (*wf).append = Some(wf_append);
    (*wf).tell = Some(wf_tell);
    (*wf).flush = Some(wf_flush);
    (*wf).sync = Some(wf_sync);
    (*wf).close = Some(wf_close);
    ops.writable_file_ops = wf;

    let fs = table::<TF_FilesystemOps>();
    let f = &mut *fs;
    f.init = Some(fs_init);
    f.cleanup = Some(fs_cleanup);
    f.new_random_access_file = Some(fs_new_random_access_file);
    f.new_writable_file = Some(fs_new_writable_file);
    f.new_appendable_file = Some(fs_new_appendable_file);
    f.create_dir = Some(fs_create_dir);
    f.recursively_create_dir = Some(fs_recursively_create_dir);
    f.delete_file = Some(fs_delete_file);
    f.delete_dir = Some(fs_delete_dir);
    f.delete_recursively = Some(fs_delete_recursively);
    f.rename_file = Some(fs_rename_file);
    f.path_exists = Some(fs_path_exists);
    f.stat = Some(fs_stat);
    f.is_directory = Some(fs_is_directory);
    f.get_file_size = Some(fs_get_file_size);
    f.translate_name = Some(fs_translate_name);
    f.get_children = Some(fs_get_children);
    // copy_file, get_matching_paths: TensorFlow's defaults (read + write, list + match).
    ops.filesystem_ops = fs;
}

/// For tfhadoop's Python HDFS client (hdfs-native's own Python package), which must dial the same
/// address as the plugin (`tokens::dial_for`): writes `ip:port` (NUL-terminated) into `out` and
/// returns its length, or 0 when `authority` is to be dialed as it is (or `out` is too small).
///
/// # Safety
/// `authority` is a NUL-terminated string; `out` has room for `out_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn tfhdfs_token_dial_address(authority: *const c_char, out: *mut c_char, out_len: usize) -> usize {
    let authority = string(authority);
    let Ok(Some(dial)) = catch_unwind(|| tokens::dial_for(&authority)) else { return 0 };
    if out.is_null() || dial.len() + 1 > out_len {
        return 0;
    }
    std::ptr::copy_nonoverlapping(dial.as_ptr(), out as *mut u8, dial.len());
    *out.add(dial.len()) = 0;
    dial.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(n: usize) -> impl Iterator<Item = Duration> {
        std::iter::repeat_n(Duration::from_millis(1), n)
    }

    #[test]
    fn unavailable_is_retried_until_it_succeeds() {
        let (mut calls, mut reopened) = (0, 0);
        let got = retrying(
            ms(5),
            || {
                calls += 1;
                if calls < 3 { Err(Error::new(code::UNAVAILABLE, "safe mode")) } else { Ok(7) }
            },
            || reopened += 1,
        );
        assert_eq!((got.unwrap(), calls, reopened), (7, 3, 2));
    }

    #[test]
    fn other_errors_and_an_outage_longer_than_the_budget_are_returned() {
        let mut calls = 0;
        let missing = retrying(ms(5), || { calls += 1; Err::<(), _>(Error::new(code::NOT_FOUND, "gone")) }, || {});
        assert_eq!((missing.unwrap_err().code, calls), (code::NOT_FOUND, 1));
        calls = 0;
        let down = retrying(ms(2), || { calls += 1; Err::<(), _>(Error::new(code::UNAVAILABLE, "down")) }, || {});
        assert_eq!((down.unwrap_err().code, calls), (code::UNAVAILABLE, 3));
    }
}
