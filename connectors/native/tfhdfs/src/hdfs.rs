//! `hdfs://` URIs to hdfs-native clients: one client per NameNode authority (the empty authority
//! of `hdfs:///x` is fs.defaultFS from HADOOP_CONF_DIR), all on one tokio runtime owned by the
//! plugin. TensorFlow calls us from its own threads, which block on that runtime.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, OnceLock};

use hdfs_native::{Client, ClientBuilder};
use tokio::runtime::Runtime;

use crate::ffi::code;
use crate::status::{Error, Result};
use crate::tokens;

pub const SCHEME: &str = "hdfs";

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static CLIENTS: OnceLock<Mutex<HashMap<String, Client>>> = OnceLock::new();

pub fn runtime() -> &'static Runtime {
    RUNTIME.get_or_init(|| {
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).clamp(2, 8);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("tfhdfs-io")
            .enable_all()
            .build()
            .expect("tfhdfs: cannot start the tokio runtime")
    })
}

pub fn block_on<F: Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// A parsed `hdfs://authority/path` (authority may be empty: fs.defaultFS).
pub struct Target {
    pub client: Client,
    pub path: String,
    pub uri: String,
}

/// Splits `hdfs://authority/path` into (authority, path); the path is `/` when absent.
pub fn split(uri: &str) -> Result<(&str, &str)> {
    let rest = uri
        .strip_prefix("hdfs://")
        .ok_or_else(|| Error::new(code::INVALID_ARGUMENT, format!("{uri}: not an hdfs:// URI")))?;
    Ok(match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    })
}

/// Removes duplicate `/`, `.` and resolves `..` in the path part; keeps scheme and authority
/// (TensorFlow's default `translate_name` would drop the NameNode address).
pub fn clean(uri: &str) -> String {
    let Ok((authority, path)) = split(uri) else {
        return uri.to_string();
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("{SCHEME}://{authority}/{}", parts.join("/"))
}

/// Settings that are defaults only: a conf dir that sets them wins.
/// hdfs-native retries an unreachable NameNode for ~175 s by default (15 failovers with
/// exponential sleeps up to 15 s); TensorFlow users get Unavailable after a few seconds instead.
const FAST_FAIL: [(&str, &str); 3] = [
    ("dfs.client.failover.max.attempts", "3"),
    ("dfs.client.failover.sleep.base.millis", "200"),
    ("dfs.client.failover.sleep.max.millis", "2000"),
];

/// Set (to "1") by tfhadoop.tfhdfs.ride_out_outages in the trainer's long-running roles: the
/// FAST_FAIL defaults are left out, so hdfs-native's own NameNode retries (~165 s of backoff)
/// carry a worker's shard open through a NameNode restart instead of failing the closure.
const PATIENT_ENV: &str = "TFHADOOP_HDFS_PATIENT";

fn patient() -> bool {
    std::env::var(PATIENT_ENV).is_ok_and(|v| v == "1")
}

/// The waits between retries of a read that HDFS could not serve (Unavailable): none for
/// ordinary users (they get the error in seconds), and in the patient roles an exponential
/// backoff from 0.5 s to 8 s over about as long as hdfs-native waits for a NameNode (~170 s).
pub fn read_retry_delays() -> impl Iterator<Item = std::time::Duration> {
    let waits: &[u64] = if patient() { &[500, 1000, 2000, 4000, 8000] } else { &[] };
    let tail = if patient() { 19 } else { 0 };
    waits.iter().copied().chain(std::iter::repeat_n(8000, tail)).map(std::time::Duration::from_millis)
}

/// Set by tfhadoop.tfhdfs to the embedded cluster's conf dir when HADOOP_CONF_DIR is unset (so
/// the rest of the process still sees "no HADOOP_CONF_DIR" = embedded cluster).
const PLUGIN_CONF_DIR: &str = "TFHADOOP_HDFS_CONF_DIR";

fn conf_dir() -> Option<std::path::PathBuf> {
    for var in ["HADOOP_CONF_DIR", PLUGIN_CONF_DIR] {
        if let Ok(dir) = std::env::var(var) {
            return Some(dir.into());
        }
    }
    std::env::var("HADOOP_HOME").ok().map(|h| std::path::Path::new(&h).join("etc/hadoop"))
}

fn conf_sets(key: &str) -> bool {
    let Some(dir) = conf_dir() else { return false };
    ["core-site.xml", "hdfs-site.xml"].iter().any(|f| {
        std::fs::read_to_string(dir.join(f)).map(|text| text.contains(key)).unwrap_or(false)
    })
}

/// `key`'s value in the conf dir's core-site.xml or hdfs-site.xml (a plain text scan: enough
/// for fs.defaultFS; hdfs-native parses the files properly for everything else).
fn conf_value(key: &str) -> Option<String> {
    let dir = conf_dir()?;
    ["core-site.xml", "hdfs-site.xml"].iter().find_map(|f| {
        let text = std::fs::read_to_string(dir.join(f)).ok()?;
        let rest = &text[text.find(&format!("<name>{key}</name>"))?..];
        let value = &rest[rest.find("<value>")? + "<value>".len()..];
        Some(value[..value.find("</value>")?].trim().to_string())
    })
}

/// The NameNode `authority` (or fs.defaultFS's) names, as `host:port`.
fn namenode(authority: &str) -> Option<String> {
    if !authority.is_empty() {
        return Some(authority.to_string());
    }
    let default_fs = conf_value("fs.defaultFS")?;
    let rest = default_fs.strip_prefix("hdfs://")?;
    Some(rest.split('/').next().unwrap_or_default().to_string())
}

fn build(authority: &str, uri: &str) -> Result<Client> {
    let defaults: Vec<(&str, &str)> = if patient() {
        Vec::new()
    } else {
        FAST_FAIL.iter().copied().filter(|(k, _)| !conf_sets(k)).collect()
    };
    let mut builder = ClientBuilder::new().with_io_runtime(runtime().handle().clone()).with_config(defaults);
    if std::env::var_os("HADOOP_CONF_DIR").is_none() {
        if let Ok(dir) = std::env::var(PLUGIN_CONF_DIR) {
            builder = builder.with_config_dir(dir);
        }
    }
    // In a container with the NameNode's token named by IP (Hadoop's default), dial that IP.
    if let Some(dial) = namenode(authority).and_then(|nn| tokens::dial_for(&nn)) {
        builder = builder.with_url(format!("{SCHEME}://{dial}"));
    } else if !authority.is_empty() {
        builder = builder.with_url(format!("{SCHEME}://{authority}"));
    }
    builder.build().map_err(|e| {
        if authority.is_empty() {
            let dir = conf_dir().map(|d| d.display().to_string()).unwrap_or_else(|| "not set".into());
            Error::new(
                code::INVALID_ARGUMENT,
                format!(
                    "{uri}: no NameNode in the URI and no usable fs.defaultFS (HADOOP_CONF_DIR: {dir}): {e}"
                ),
            )
        } else {
            Error::new(code::INVALID_ARGUMENT, format!("{uri}: cannot create an HDFS client: {e}"))
        }
    })
}

/// The client for `uri`'s NameNode (created once) and the path on it.
pub fn target(uri: &str) -> Result<Target> {
    let (authority, path) = split(uri)?;
    let clients = CLIENTS.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = clients.lock().unwrap_or_else(|p| p.into_inner());
    let client = match map.get(authority) {
        Some(c) => c.clone(),
        None => {
            let c = build(authority, uri)?;
            map.insert(authority.to_string(), c.clone());
            c
        }
    };
    Ok(Target { client, path: path.to_string(), uri: uri.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_keeps_authority() {
        assert_eq!(clean("hdfs://nn:8020//a/./b/../c/"), "hdfs://nn:8020/a/c");
        assert_eq!(clean("hdfs:///x//y"), "hdfs:///x/y");
        assert_eq!(clean("hdfs://nn"), "hdfs://nn/");
    }

    #[test]
    fn reads_are_retried_only_in_patient_roles() {
        std::env::remove_var(PATIENT_ENV);
        assert_eq!(read_retry_delays().count(), 0);
        std::env::set_var(PATIENT_ENV, "1");
        let total: u64 = read_retry_delays().map(|d| d.as_millis() as u64).sum();
        std::env::remove_var(PATIENT_ENV);
        assert!((150_000..=200_000).contains(&total), "{total}");
    }

    #[test]
    fn split_defaults_to_root() {
        assert_eq!(split("hdfs://nn:1").unwrap(), ("nn:1", "/"));
        assert_eq!(split("hdfs:///a").unwrap(), ("", "/a"));
        assert!(split("file:///a").is_err());
    }
}
