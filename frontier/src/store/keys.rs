//! How the store's keys are laid out: a queue entry's [`QKey`] (host, priority, age), a URL
//! without its scheme and host, and the `urls`, `done` and `meta` keys built from them.

/// A queue entry's key: host id, priority order, sequence number (all big-endian).
pub type QKey = [u8; 16];

/// Where a host's keys begin (its floor when nothing was taken yet).
pub fn host_start(id: u32) -> QKey {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&id.to_be_bytes());
    k
}

pub(super) fn host_end(id: u32) -> QKey {
    let mut k = [0xffu8; 16];
    k[..4].copy_from_slice(&id.to_be_bytes());
    k
}

/// The key of an entry of host `id` with priority `score`: higher scores sort first, ties by
/// age (smaller seq first). The order is exact: f32 bits mapped to an order-preserving u32.
pub fn qkey(id: u32, score: f32, seq: u64) -> QKey {
    let bits = score.to_bits();
    let ascending = if bits & 0x8000_0000 != 0 { !bits } else { bits | 0x8000_0000 };
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&id.to_be_bytes());
    k[4..8].copy_from_slice(&(!ascending).to_be_bytes());
    k[8..].copy_from_slice(&seq.to_be_bytes());
    k
}

/// The host id of a key.
#[cfg(test)]
fn key_host(k: &QKey) -> u32 {
    u32::from_be_bytes([k[0], k[1], k[2], k[3]])
}

/// The priority a key was written with.
pub fn key_score(k: &QKey) -> f32 {
    let ascending = !u32::from_be_bytes([k[4], k[5], k[6], k[7]]);
    let bits = if ascending & 0x8000_0000 != 0 { ascending & 0x7fff_ffff } else { !ascending };
    f32::from_bits(bits)
}

pub(super) fn to_qkey(bytes: &[u8]) -> Option<QKey> {
    bytes.try_into().ok()
}

/// The smallest key after `k` (the floor once `k` is gone).
pub fn after(k: &QKey) -> QKey {
    let mut next = *k;
    for b in next.iter_mut().rev() {
        let (v, overflow) = b.overflowing_add(1);
        *b = v;
        if !overflow {
            break;
        }
    }
    next
}

/// A URL as stored: without its scheme and host where they are the host key's (almost
/// always), so a stored entry is little more than the path.
pub(super) fn url_tail(url: &str, host: &str) -> Vec<u8> {
    for (tag, scheme) in [(b's', "https://"), (b'h', "http://")] {
        if let Some(rest) = url.strip_prefix(scheme).and_then(|r| r.strip_prefix(host)) {
            if rest.starts_with('/') || rest.is_empty() {
                let mut v = Vec::with_capacity(rest.len() + 1);
                v.push(tag);
                v.extend_from_slice(rest.as_bytes());
                return v;
            }
        }
    }
    let mut v = Vec::with_capacity(url.len() + 1);
    v.push(b'f');
    v.extend_from_slice(url.as_bytes());
    v
}

pub(super) fn url_from_tail(tail: &[u8], host: &str) -> String {
    let rest = String::from_utf8_lossy(tail.get(1..).unwrap_or_default());
    match tail.first() {
        Some(b's') => format!("https://{host}{rest}"),
        Some(b'h') => format!("http://{host}{rest}"),
        _ => rest.into_owned(),
    }
}

pub(super) fn url_hash(url: &str) -> [u8; 8] {
    xxhash_rust::xxh3::xxh3_64(url.as_bytes()).to_be_bytes()
}

pub(super) fn done_key(id: u32, url: &str, host: &str) -> Vec<u8> {
    let mut k = id.to_be_bytes().to_vec();
    k.extend_from_slice(&url_tail(url, host));
    k
}

pub(super) fn blocked_key(host: &str) -> Vec<u8> {
    let mut k = b"b".to_vec();
    k.extend_from_slice(host.as_bytes());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_host_then_higher_score_then_age() {
        let mut keys =
            [qkey(2, 1.0, 1), qkey(1, -0.5, 3), qkey(1, 10.0, 9), qkey(1, 1.2, 5), qkey(1, 1.2, 4), qkey(1, 0.0, 2)];
        keys.sort();
        let got: Vec<(u32, f32, u64)> =
            keys.iter().map(|k| (key_host(k), key_score(k), u64::from_be_bytes(k[8..].try_into().unwrap()))).collect();
        assert_eq!(got, vec![(1, 10.0, 9), (1, 1.2, 4), (1, 1.2, 5), (1, 0.0, 2), (1, -0.5, 3), (2, 1.0, 1)]);
        for s in [0.0f32, -0.0, 1.7, -3.25, 1e9, -1e-9] {
            assert_eq!(key_score(&qkey(7, s, 1)).to_bits(), s.to_bits());
        }
        let k = qkey(1, 1.0, u64::MAX);
        assert!(after(&k) > k && key_host(&after(&k)) == 1);
    }

    #[test]
    fn urls_are_stored_without_their_origin_and_read_back() {
        for (url, host) in [
            ("http://a.test/x?y=1", "a.test"),
            ("https://a.test:8080/", "a.test:8080"),
            ("https://a.test", "a.test"),
            ("http://a.test.evil/x", "a.test"),
            ("http://b.test/x", "a.test"),
        ] {
            let tail = url_tail(url, host);
            assert_eq!(url_from_tail(&tail, host), url);
        }
        assert_eq!(url_tail("https://a.test/p", "a.test"), b"s/p");
    }
}
