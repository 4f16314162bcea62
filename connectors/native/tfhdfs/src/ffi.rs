//! `#[repr(C)]` mirror of `tensorflow/c/experimental/filesystem/filesystem_interface.h` (API/ABI
//! version 0, TensorFlow 2.21), written by hand: the header is stable (TF checks the table sizes
//! we report against its own) and bindgen would add libclang and minutes to a fresh build.
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_void};

/// Opaque `TF_Status` (owned by TensorFlow).
#[repr(C)]
pub struct TF_Status {
    _private: [u8; 0],
}

/// TSL/gRPC status codes (`tsl/c/tsl_status.h`).
pub mod code {
    pub const OK: i32 = 0;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const NOT_FOUND: i32 = 5;
    pub const ALREADY_EXISTS: i32 = 6;
    pub const PERMISSION_DENIED: i32 = 7;
    pub const RESOURCE_EXHAUSTED: i32 = 8;
    pub const FAILED_PRECONDITION: i32 = 9;
    pub const OUT_OF_RANGE: i32 = 11;
    pub const UNIMPLEMENTED: i32 = 12;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const DATA_LOSS: i32 = 15;
    pub const UNKNOWN: i32 = 2;
}

#[repr(C)]
pub struct TF_FileStatistics {
    pub length: i64,
    pub mtime_nsec: i64,
    pub is_directory: bool,
}

#[repr(C)]
pub struct TF_RandomAccessFile {
    pub plugin_file: *mut c_void,
}

#[repr(C)]
pub struct TF_WritableFile {
    pub plugin_file: *mut c_void,
}

#[repr(C)]
pub struct TF_ReadOnlyMemoryRegion {
    pub plugin_memory_region: *mut c_void,
}

#[repr(C)]
pub struct TF_Filesystem {
    pub plugin_filesystem: *mut c_void,
}

/// Only passed through by pointer; its layout does not matter to us.
#[repr(C)]
pub struct TF_TransactionToken {
    _private: [u8; 0],
}

#[repr(C)]
pub struct TF_Filesystem_Option {
    _private: [u8; 0],
}

type St = *mut TF_Status;
type Fs = *const TF_Filesystem;
type Path = *const c_char;

#[repr(C)]
pub struct TF_RandomAccessFileOps {
    pub cleanup: Option<unsafe extern "C" fn(*mut TF_RandomAccessFile)>,
    pub read: Option<unsafe extern "C" fn(*const TF_RandomAccessFile, u64, usize, *mut c_char, St) -> i64>,
}

#[repr(C)]
pub struct TF_WritableFileOps {
    pub cleanup: Option<unsafe extern "C" fn(*mut TF_WritableFile)>,
    pub append: Option<unsafe extern "C" fn(*const TF_WritableFile, *const c_char, usize, St)>,
    pub tell: Option<unsafe extern "C" fn(*const TF_WritableFile, St) -> i64>,
    pub flush: Option<unsafe extern "C" fn(*const TF_WritableFile, St)>,
    pub sync: Option<unsafe extern "C" fn(*const TF_WritableFile, St)>,
    pub close: Option<unsafe extern "C" fn(*const TF_WritableFile, St)>,
}

#[repr(C)]
pub struct TF_ReadOnlyMemoryRegionOps {
    pub cleanup: Option<unsafe extern "C" fn(*mut TF_ReadOnlyMemoryRegion)>,
    pub data: Option<unsafe extern "C" fn(*const TF_ReadOnlyMemoryRegion) -> *const c_void>,
    pub length: Option<unsafe extern "C" fn(*const TF_ReadOnlyMemoryRegion) -> u64>,
}

type Tok = *mut TF_TransactionToken;

#[repr(C)]
pub struct TF_FilesystemOps {
    pub init: Option<unsafe extern "C" fn(*mut TF_Filesystem, St)>,
    pub cleanup: Option<unsafe extern "C" fn(*mut TF_Filesystem)>,
    pub new_random_access_file: Option<unsafe extern "C" fn(Fs, Path, *mut TF_RandomAccessFile, St)>,
    pub new_writable_file: Option<unsafe extern "C" fn(Fs, Path, *mut TF_WritableFile, St)>,
    pub new_appendable_file: Option<unsafe extern "C" fn(Fs, Path, *mut TF_WritableFile, St)>,
    pub new_read_only_memory_region_from_file:
        Option<unsafe extern "C" fn(Fs, Path, *mut TF_ReadOnlyMemoryRegion, St)>,
    pub create_dir: Option<unsafe extern "C" fn(Fs, Path, St)>,
    pub recursively_create_dir: Option<unsafe extern "C" fn(Fs, Path, St)>,
    pub delete_file: Option<unsafe extern "C" fn(Fs, Path, St)>,
    pub delete_dir: Option<unsafe extern "C" fn(Fs, Path, St)>,
    pub delete_recursively: Option<unsafe extern "C" fn(Fs, Path, *mut u64, *mut u64, St)>,
    pub rename_file: Option<unsafe extern "C" fn(Fs, Path, Path, St)>,
    pub copy_file: Option<unsafe extern "C" fn(Fs, Path, Path, St)>,
    pub path_exists: Option<unsafe extern "C" fn(Fs, Path, St)>,
    pub paths_exist: Option<unsafe extern "C" fn(Fs, *mut *mut c_char, c_int, *mut St) -> bool>,
    pub stat: Option<unsafe extern "C" fn(Fs, Path, *mut TF_FileStatistics, St)>,
    pub is_directory: Option<unsafe extern "C" fn(Fs, Path, St) -> bool>,
    pub get_file_size: Option<unsafe extern "C" fn(Fs, Path, St) -> i64>,
    pub translate_name: Option<unsafe extern "C" fn(Fs, *const c_char) -> *mut c_char>,
    pub get_children: Option<unsafe extern "C" fn(Fs, Path, *mut *mut *mut c_char, St) -> c_int>,
    pub get_matching_paths: Option<unsafe extern "C" fn(Fs, Path, *mut *mut *mut c_char, St) -> c_int>,
    pub flush_caches: Option<unsafe extern "C" fn(Fs)>,
    pub start_transaction: Option<unsafe extern "C" fn(Fs, *mut Tok, St) -> c_int>,
    pub end_transaction: Option<unsafe extern "C" fn(Fs, Tok, St) -> c_int>,
    pub add_to_transaction: Option<unsafe extern "C" fn(Fs, Path, Tok, St) -> c_int>,
    pub get_transaction_for_path: Option<unsafe extern "C" fn(Fs, Path, *mut Tok, St) -> c_int>,
    pub get_or_start_transaction_for_path: Option<unsafe extern "C" fn(Fs, Path, *mut Tok, St) -> c_int>,
    pub decode_transaction_token: Option<unsafe extern "C" fn(Fs, *const TF_TransactionToken) -> *mut c_char>,
    pub get_filesystem_configuration:
        Option<unsafe extern "C" fn(Fs, *mut *mut TF_Filesystem_Option, *mut c_int, St)>,
    pub set_filesystem_configuration: Option<unsafe extern "C" fn(Fs, *const TF_Filesystem_Option, c_int, St)>,
    pub get_filesystem_configuration_option:
        Option<unsafe extern "C" fn(Fs, *const c_char, *mut *mut TF_Filesystem_Option, St)>,
    pub set_filesystem_configuration_option: Option<unsafe extern "C" fn(Fs, *const TF_Filesystem_Option, St)>,
    pub get_filesystem_configuration_keys: Option<unsafe extern "C" fn(Fs, *mut *mut c_char, *mut c_int, St)>,
}

#[repr(C)]
pub struct TF_FilesystemPluginOps {
    pub scheme: *mut c_char,
    pub filesystem_ops_abi: c_int,
    pub filesystem_ops_api: c_int,
    pub filesystem_ops_size: usize,
    pub filesystem_ops: *mut TF_FilesystemOps,
    pub random_access_file_ops_abi: c_int,
    pub random_access_file_ops_api: c_int,
    pub random_access_file_ops_size: usize,
    pub random_access_file_ops: *mut TF_RandomAccessFileOps,
    pub writable_file_ops_abi: c_int,
    pub writable_file_ops_api: c_int,
    pub writable_file_ops_size: usize,
    pub writable_file_ops: *mut TF_WritableFileOps,
    pub read_only_memory_region_ops_abi: c_int,
    pub read_only_memory_region_ops_api: c_int,
    pub read_only_memory_region_ops_size: usize,
    pub read_only_memory_region_ops: *mut TF_ReadOnlyMemoryRegionOps,
}

#[repr(C)]
pub struct TF_FilesystemPluginInfo {
    pub num_schemes: usize,
    pub ops: *mut TF_FilesystemPluginOps,
    pub plugin_memory_allocate: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    pub plugin_memory_free: Option<unsafe extern "C" fn(*mut c_void)>,
}

// The sizes TensorFlow 2.21 expects (x86_64/aarch64): 2, 6, 3 and 33 function pointers.
const _: () = assert!(std::mem::size_of::<TF_RandomAccessFileOps>() == 2 * 8);
const _: () = assert!(std::mem::size_of::<TF_WritableFileOps>() == 6 * 8);
const _: () = assert!(std::mem::size_of::<TF_ReadOnlyMemoryRegionOps>() == 3 * 8);
const _: () = assert!(std::mem::size_of::<TF_FilesystemOps>() == 33 * 8);
const _: () = assert!(std::mem::size_of::<TF_FileStatistics>() == 24);
