//! Reporting to TensorFlow: `TF_SetStatus` and the mapping of HDFS errors to TF codes.
//!
//! `TF_SetStatus` is resolved with `dlsym` when the plugin is loaded instead of being linked
//! against `libtensorflow_framework.so.2`: the plugin then builds with no TensorFlow present
//! (`make setup` runs cargo on a fresh machine, in any order with the venv) and binds to the very
//! TensorFlow instance that loaded it, whatever venv or wheel that is.

use std::ffi::CString;
use std::io::ErrorKind;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::OnceLock;

use hdfs_native::HdfsError;

use crate::ffi::{code, TF_Status};

type SetStatusFn = unsafe extern "C" fn(*mut TF_Status, c_int, *const c_char);

static SET_STATUS: OnceLock<Option<SetStatusFn>> = OnceLock::new();

/// Finds `TF_SetStatus` in the process: globally visible symbols first, then the already loaded
/// `libtensorflow_framework.so.2` (Python loads TensorFlow's libraries with RTLD_LOCAL).
pub fn resolve() -> bool {
    SET_STATUS
        .get_or_init(|| unsafe {
            let name = c"TF_SetStatus";
            let mut sym: *mut c_void = libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr());
            if sym.is_null() {
                let lib = libc::dlopen(
                    c"libtensorflow_framework.so.2".as_ptr(),
                    libc::RTLD_NOW | libc::RTLD_NOLOAD,
                );
                if !lib.is_null() {
                    sym = libc::dlsym(lib, name.as_ptr());
                }
            }
            if sym.is_null() {
                None
            } else {
                Some(std::mem::transmute::<*mut c_void, SetStatusFn>(sym))
            }
        })
        .is_some()
}

pub fn set(status: *mut TF_Status, tf_code: i32, msg: &str) {
    if status.is_null() {
        return;
    }
    if let Some(Some(f)) = SET_STATUS.get() {
        let msg = CString::new(msg.replace('\0', " ")).unwrap_or_default();
        unsafe { f(status, tf_code, msg.as_ptr()) }
    }
}

pub fn ok(status: *mut TF_Status) {
    set(status, code::OK, "");
}

/// An error for TensorFlow: its code and a message that names the path.
#[derive(Debug)]
pub struct Error {
    pub code: i32,
    pub msg: String,
}

impl Error {
    pub fn new(code: i32, msg: impl Into<String>) -> Self {
        Error { code, msg: msg.into() }
    }

    /// `what` failed on `uri` because of `e`, with the TF code that `e` means.
    pub fn hdfs(what: &str, uri: &str, e: &HdfsError) -> Self {
        Error::new(code_of(e), format!("{uri}: {what} failed: {}", describe(e)))
    }

    pub fn report(&self, status: *mut TF_Status) {
        set(status, self.code, &self.msg);
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Java exception classes the NameNode sends back, and what they mean to TensorFlow.
fn code_of_java(class: &str) -> i32 {
    let simple = class.rsplit('.').next().unwrap_or(class);
    match simple {
        "FileNotFoundException" => code::NOT_FOUND,
        "AccessControlException" | "AuthorizationException" => code::PERMISSION_DENIED,
        "FileAlreadyExistsException" | "AlreadyBeingCreatedException" => code::ALREADY_EXISTS,
        "ParentNotDirectoryException"
        | "PathIsNotEmptyDirectoryException"
        | "PathIsNotDirectoryException"
        | "PathIsDirectoryException" => code::FAILED_PRECONDITION,
        "DSQuotaExceededException" | "NSQuotaExceededException" | "QuotaExceededException" => {
            code::RESOURCE_EXHAUSTED
        }
        "StandbyException" | "RetriableException" | "SafeModeException" | "ConnectException" => {
            code::UNAVAILABLE
        }
        "InvalidPathException" | "HadoopIllegalArgumentException" | "IllegalArgumentException" => {
            code::INVALID_ARGUMENT
        }
        _ => code::UNKNOWN,
    }
}

pub fn code_of(e: &HdfsError) -> i32 {
    match e {
        HdfsError::FileNotFound(_) => code::NOT_FOUND,
        HdfsError::AlreadyExists(_) => code::ALREADY_EXISTS,
        HdfsError::IsADirectoryError(_) => code::FAILED_PRECONDITION,
        HdfsError::RPCError(class, _) | HdfsError::FatalRPCError(class, _) => code_of_java(class),
        // Socket errors: the NameNode or a DataNode cannot be reached (after the bounded retry).
        HdfsError::IOError(io) if io.kind() != ErrorKind::InvalidData => code::UNAVAILABLE,
        // No DataNode could serve a block (all refused, or none known: a restarted NameNode
        // before the DataNodes report): an outage, not bad data.
        HdfsError::BlocksNotFound(_) | HdfsError::DataTransferError(_) => code::UNAVAILABLE,
        HdfsError::ChecksumError => code::DATA_LOSS,
        HdfsError::InvalidPath(_) | HdfsError::InvalidArgument(_) | HdfsError::UrlParseError(_) => {
            code::INVALID_ARGUMENT
        }
        HdfsError::SASLError(_) | HdfsError::GSSAPIError(..) | HdfsError::NoSASLMechanism => 16, // UNAUTHENTICATED
        HdfsError::UnsupportedFeature(_) | HdfsError::UnsupportedErasureCodingPolicy(_) => code::UNIMPLEMENTED,
        _ => code::UNKNOWN,
    }
}

/// The first line of the error: a NameNode RemoteException carries the Java stack trace.
fn describe(e: &HdfsError) -> String {
    match e {
        HdfsError::RPCError(class, msg) | HdfsError::FatalRPCError(class, msg) => {
            let first = msg.lines().next().unwrap_or("");
            format!("{class}: {first}")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rpc(class: &str) -> HdfsError {
        HdfsError::RPCError(class.into(), "msg\n\tat org.apache.Foo".into())
    }

    #[test]
    fn namenode_exceptions_map_to_tf_codes() {
        assert_eq!(code_of(&rpc("java.io.FileNotFoundException")), code::NOT_FOUND);
        assert_eq!(code_of(&rpc("org.apache.hadoop.security.AccessControlException")), code::PERMISSION_DENIED);
        assert_eq!(code_of(&rpc("org.apache.hadoop.fs.PathIsNotEmptyDirectoryException")), code::FAILED_PRECONDITION);
        assert_eq!(code_of(&rpc("org.apache.hadoop.hdfs.protocol.DSQuotaExceededException")), code::RESOURCE_EXHAUSTED);
        assert_eq!(code_of(&rpc("org.apache.hadoop.ipc.StandbyException")), code::UNAVAILABLE);
        assert_eq!(code_of(&HdfsError::AlreadyExists("x".into())), code::ALREADY_EXISTS);
        let refused = std::io::Error::from(ErrorKind::ConnectionRefused);
        assert_eq!(code_of(&HdfsError::IOError(refused)), code::UNAVAILABLE);
        assert_eq!(code_of(&HdfsError::DataTransferError("All DataNodes failed: []".into())), code::UNAVAILABLE);
    }

    #[test]
    fn message_names_the_path_and_drops_the_java_stack() {
        let e = Error::hdfs("stat", "hdfs://nn:1/a", &rpc("org.apache.hadoop.security.AccessControlException"));
        assert_eq!(e.msg, "hdfs://nn:1/a: stat failed: org.apache.hadoop.security.AccessControlException: msg");
    }
}
