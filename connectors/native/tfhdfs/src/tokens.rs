//! Which address to dial so that hdfs-native finds the container's HDFS delegation token.
//!
//! hdfs-native picks the `HDFS_DELEGATION_TOKEN` whose service equals the `host:port` it dials.
//! Hadoop names a token by the NameNode's IP (`127.0.0.1:8020`) unless
//! `hadoop.security.token.service.use_ip=false`, and that is the default: with it, dialing
//! `nn.example.com:8020` finds no token and a container without a Kerberos ticket cannot log in.
//! When the token file (`HADOOP_TOKEN_FILE_LOCATION`, written by the NodeManager) has a token for
//! one of the host's IPv4 addresses and none for the host name, the plugin dials that IP instead.

use std::net::{IpAddr, ToSocketAddrs};

pub const TOKEN_FILE_ENV: &str = "HADOOP_TOKEN_FILE_LOCATION";
const HDFS_TOKEN_KIND: &str = "HDFS_DELEGATION_TOKEN";
const MAGIC: &[u8] = b"HDTS";

/// Hadoop's `WritableUtils.readVLong`.
fn vlong(buf: &[u8], pos: &mut usize) -> Option<i64> {
    let first = *buf.get(*pos)? as i8;
    *pos += 1;
    if first >= -112 {
        return Some(first as i64);
    }
    let negative = first < -120;
    let len = if negative { -(first as i64 + 120) } else { -(first as i64 + 112) } as usize;
    let bytes = buf.get(*pos..*pos + len)?;
    *pos += len;
    let value = bytes.iter().fold(0i64, |acc, b| (acc << 8) | *b as i64);
    Some(if negative { !value } else { value })
}

fn chunk<'a>(buf: &'a [u8], pos: &mut usize, len: i64) -> Option<&'a [u8]> {
    let len = usize::try_from(len).ok()?;
    let bytes = buf.get(*pos..pos.checked_add(len)?)?;
    *pos += len;
    Some(bytes)
}

fn text(buf: &[u8], pos: &mut usize) -> Option<String> {
    let len = vlong(buf, pos)?;
    chunk(buf, pos, len).map(|b| String::from_utf8_lossy(b).into_owned())
}

/// (kind, service) of each token in the Writable format (version 0).
fn writable(buf: &[u8]) -> Option<Vec<(String, String)>> {
    let mut pos = 0;
    let count = vlong(buf, &mut pos)?;
    let mut out = Vec::new();
    for _ in 0..count {
        text(buf, &mut pos)?; // alias
        for _ in 0..2 {
            let len = vlong(buf, &mut pos)?; // identifier, password
            chunk(buf, &mut pos, len)?;
        }
        let kind = text(buf, &mut pos)?;
        out.push((kind, text(buf, &mut pos)?));
    }
    Some(out)
}

/// A protobuf varint.
fn varint(buf: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*pos)?;
        *pos += 1;
        value |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The length-delimited fields of a protobuf message, as (field number, bytes); other wire
/// types are skipped.
fn fields(buf: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut pos = 0;
    let mut out = Vec::new();
    while pos < buf.len() {
        let key = varint(buf, &mut pos)?;
        match key & 7 {
            0 => {
                varint(buf, &mut pos)?;
            }
            1 => pos += 8,
            2 => {
                let len = varint(buf, &mut pos)?;
                out.push((key >> 3, chunk(buf, &mut pos, i64::try_from(len).ok()?)?));
            }
            5 => pos += 4,
            _ => return None,
        }
    }
    (pos == buf.len()).then_some(out)
}

/// (kind, service) of each token in the protobuf format (version 1): a length-delimited
/// CredentialsProto {tokens = 1: CredentialsKVProto {token = 2: TokenProto {kind = 3, service = 4}}}.
fn protobuf(buf: &[u8]) -> Option<Vec<(String, String)>> {
    let mut pos = 0;
    let len = varint(buf, &mut pos)?;
    let creds = chunk(buf, &mut pos, i64::try_from(len).ok()?)?;
    let mut out = Vec::new();
    for (_, kv) in fields(creds)?.into_iter().filter(|(n, _)| *n == 1) {
        for (_, token) in fields(kv)?.into_iter().filter(|(n, _)| *n == 2) {
            let (mut kind, mut service) = (String::new(), String::new());
            for (n, value) in fields(token)? {
                match n {
                    3 => kind = String::from_utf8_lossy(value).into_owned(),
                    4 => service = String::from_utf8_lossy(value).into_owned(),
                    _ => {}
                }
            }
            out.push((kind, service));
        }
    }
    Some(out)
}

/// The services of the HDFS delegation tokens in a Hadoop token storage file (`Credentials`
/// written by `writeTokenStorageToStream`, either format); empty when it is not one.
pub fn hdfs_token_services(content: &[u8]) -> Vec<String> {
    let (Some(magic), Some(&version)) = (content.get(..4), content.get(4)) else { return Vec::new() };
    if magic != MAGIC {
        return Vec::new();
    }
    let body = &content[5..];
    let tokens = match version {
        0 => writable(body),
        1 => protobuf(body),
        _ => None,
    };
    tokens
        .unwrap_or_default()
        .into_iter()
        .filter(|(kind, _)| kind == HDFS_TOKEN_KIND)
        .map(|(_, service)| service)
        .collect()
}

/// The address to dial for NameNode `authority` (`host:port`) given the token services: None
/// (dial the authority itself) unless only an IP-named token matches, then `ip:port`.
pub fn dial_address(authority: &str, services: &[String], resolve: impl Fn(&str) -> Vec<IpAddr>) -> Option<String> {
    if services.is_empty() || services.iter().any(|s| s == authority) {
        return None;
    }
    let (host, port) = authority.rsplit_once(':')?;
    if host.is_empty() || host.starts_with('[') || port.parse::<u16>().is_err() {
        return None;
    }
    resolve(authority)
        .into_iter()
        .filter(IpAddr::is_ipv4) // hdfs-native names the service by the dialed string; [v6]:p never matches Java's form
        .map(|ip| format!("{ip}:{port}"))
        .find(|candidate| services.contains(candidate))
}

/// The IP addresses `host:port` resolves to.
pub fn resolve(authority: &str) -> Vec<IpAddr> {
    authority.to_socket_addrs().map(|addrs| addrs.map(|a| a.ip()).collect()).unwrap_or_default()
}

/// [`dial_address`] for this process's token file.
pub fn dial_for(authority: &str) -> Option<String> {
    let path = std::env::var_os(TOKEN_FILE_ENV)?;
    let content = std::fs::read(path).ok()?;
    dial_address(authority, &hdfs_token_services(&content), resolve)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put_vlong(out: &mut Vec<u8>, v: i64) {
        // Hadoop's WritableUtils.writeVLong.
        if (-112..=127).contains(&v) {
            out.push(v as u8);
            return;
        }
        let (mut len, mut w) = (-112i64, v);
        if v < 0 {
            w = !v;
            len = -120;
        }
        let mut tmp = w;
        while tmp != 0 {
            tmp >>= 8;
            len -= 1;
        }
        out.push(len as u8);
        let n = if len < -120 { -(len + 120) } else { -(len + 112) };
        for i in (0..n).rev() {
            out.push((w >> (i * 8)) as u8);
        }
    }

    fn put_text(out: &mut Vec<u8>, s: &[u8]) {
        put_vlong(out, s.len() as i64);
        out.extend_from_slice(s);
    }

    /// A version-0 token file as Hadoop's Credentials writes it (tokens, then secret keys).
    fn writable_file(tokens: &[(&str, &str)]) -> Vec<u8> {
        let mut out = b"HDTS\0".to_vec();
        put_vlong(&mut out, tokens.len() as i64);
        for (kind, service) in tokens {
            put_text(&mut out, service.as_bytes()); // alias: the service, as the RM does
            put_text(&mut out, &[7u8; 200]); // identifier (long enough for a 2-byte length)
            put_text(&mut out, &[9u8; 20]);
            put_text(&mut out, kind.as_bytes());
            put_text(&mut out, service.as_bytes());
        }
        put_vlong(&mut out, 0);
        out
    }

    fn put_field(out: &mut Vec<u8>, n: u64, bytes: &[u8]) {
        out.push(((n << 3) | 2) as u8);
        let mut len = bytes.len() as u64;
        loop {
            let b = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
        out.extend_from_slice(bytes);
    }

    fn protobuf_file(tokens: &[(&str, &str)]) -> Vec<u8> {
        let mut creds = Vec::new();
        for (kind, service) in tokens {
            let mut token = Vec::new();
            put_field(&mut token, 1, &[1u8; 150]);
            put_field(&mut token, 2, b"pw");
            put_field(&mut token, 3, kind.as_bytes());
            put_field(&mut token, 4, service.as_bytes());
            let mut kv = Vec::new();
            put_field(&mut kv, 1, service.as_bytes());
            put_field(&mut kv, 2, &token);
            put_field(&mut creds, 1, &kv);
        }
        let mut out = b"HDTS\x01".to_vec();
        put_field(&mut out, 0, &creds); // a length-delimited message: drop the key byte below
        out.remove(5);
        out
    }

    const TOKENS: [(&str, &str); 3] = [
        ("YARN_AM_RM_TOKEN", ""),
        ("HDFS_DELEGATION_TOKEN", "10.1.2.3:8020"),
        ("kms-dt", "kms://http@kms:9600/kms"),
    ];

    #[test]
    fn both_token_file_formats_give_the_hdfs_services() {
        assert_eq!(hdfs_token_services(&writable_file(&TOKENS)), vec!["10.1.2.3:8020"]);
        assert_eq!(hdfs_token_services(&protobuf_file(&TOKENS)), vec!["10.1.2.3:8020"]);
        assert!(hdfs_token_services(b"not a token file").is_empty());
        let mut cut = writable_file(&TOKENS);
        cut.truncate(60);
        assert!(hdfs_token_services(&cut).is_empty());
    }

    #[test]
    fn vlong_round_trips_hadoop_encoding() {
        for v in [0i64, 1, -1, 127, 128, -112, -113, 300, 65_536, -70_000, i64::MAX, i64::MIN] {
            let mut buf = Vec::new();
            put_vlong(&mut buf, v);
            let mut pos = 0;
            assert_eq!(vlong(&buf, &mut pos), Some(v), "{v}");
            assert_eq!(pos, buf.len());
        }
    }

    fn fake_dns(authority: &str) -> Vec<IpAddr> {
        match authority.split(':').next() {
            Some("nn.example.com") => vec!["fe80::1".parse().unwrap(), "10.1.2.3".parse().unwrap()],
            _ => Vec::new(),
        }
    }

    #[test]
    fn an_ip_named_token_makes_the_plugin_dial_the_ip() {
        let ip = vec!["10.1.2.3:8020".to_string()];
        assert_eq!(dial_address("nn.example.com:8020", &ip, fake_dns).as_deref(), Some("10.1.2.3:8020"));
        // use_ip=false: the token is named by host:port, which hdfs-native matches as it is.
        let host = vec!["nn.example.com:8020".to_string()];
        assert_eq!(dial_address("nn.example.com:8020", &host, fake_dns), None);
        // No token for this NameNode (another port, another host, no token file): unchanged.
        assert_eq!(dial_address("nn.example.com:9000", &ip, fake_dns), None);
        assert_eq!(dial_address("other:8020", &ip, fake_dns), None);
        assert_eq!(dial_address("nn.example.com:8020", &[], fake_dns), None);
        // An HA nameservice (no port) is matched by hdfs-native as ha-hdfs:<ns>.
        assert_eq!(dial_address("mycluster", &ip, fake_dns), None);
    }

    #[test]
    fn localhost_resolves_to_loopback() {
        let services = vec!["127.0.0.1:9000".to_string()];
        assert_eq!(dial_address("localhost:9000", &services, resolve).as_deref(), Some("127.0.0.1:9000"));
    }
}
