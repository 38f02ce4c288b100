//! The store's side of second copies ([`crate::second`]): the notes waiting for this node's
//! hosts' second holders, the URLs kept for other owners, and whom each host's queue was last
//! written for — the `second` keyspace.

use super::keys::{url_from_tail, url_tail};
use super::{Batch, Result, Store};
use crate::score::UrlKind;
use crate::second::SecondCopy;

fn note_key(seq: u64) -> Vec<u8> {
    let mut k = b"o".to_vec();
    k.extend_from_slice(&seq.to_be_bytes());
    k
}

fn holder_key(host: &str) -> Vec<u8> {
    [b"h", host.as_bytes()].concat()
}

/// Where the URLs kept for `host`'s owner start.
fn kept_prefix(host: &str) -> Vec<u8> {
    [b"k", host.as_bytes(), &[0u8][..]].concat()
}

fn kept_key(host: &str, url: &str) -> Vec<u8> {
    let mut k = kept_prefix(host);
    k.extend_from_slice(&url_tail(url, host));
    k
}

impl Store {
    /// Queues `note` for a host's second holder, in the batch of the write it follows.
    pub fn put_note(&self, b: &mut Batch, seq: u64, note: &SecondCopy) -> Result<()> {
        b.inner.insert(&self.second, note_key(seq), postcard::to_allocvec(note)?);
        Ok(())
    }

    /// The first `max` notes waiting to be sent from sequence number `from` on, oldest first,
    /// with their sequence numbers.
    pub fn notes(&self, from: u64, max: usize) -> Result<Vec<(u64, SecondCopy)>> {
        let mut v = Vec::new();
        for item in self.second.range(note_key(from)..b"p".to_vec()).take(max) {
            let (k, val) = item.into_inner()?;
            let Some(seq) = k.get(1..9).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes) else { continue };
            v.push((seq, postcard::from_bytes(&val)?));
        }
        Ok(v)
    }

    pub fn remove_note(&self, b: &mut Batch, seq: u64) {
        b.inner.remove(&self.second, note_key(seq));
    }

    /// Keeps `url` of `host` for the host's owner.
    pub fn put_kept(&self, b: &mut Batch, host: &str, url: &str, depth: u32, kind: UrlKind) -> Result<()> {
        b.inner.insert(&self.second, kept_key(host, url), postcard::to_allocvec(&(depth, kind))?);
        Ok(())
    }

    pub fn remove_kept(&self, b: &mut Batch, host: &str, url: &str) {
        b.inner.remove(&self.second, kept_key(host, url));
    }

    /// The URLs kept for `host`'s owner: (URL, depth, kind).
    pub fn kept_of(&self, host: &str) -> Result<Vec<(String, u32, UrlKind)>> {
        let prefix = kept_prefix(host);
        let mut v = Vec::new();
        for item in self.second.prefix(&prefix) {
            let (k, val) = item.into_inner()?;
            let (depth, kind): (u32, UrlKind) = postcard::from_bytes(&val)?;
            v.push((url_from_tail(&k[prefix.len()..], host), depth, kind));
        }
        Ok(v)
    }

    /// Whether `url` is kept for `host`'s owner.
    pub fn is_kept(&self, host: &str, url: &str) -> Result<bool> {
        Ok(self.second.contains_key(kept_key(host, url))?)
    }

    /// How many notes wait to be sent: a scan, for the frontier's count at open.
    pub fn note_count(&self) -> Result<u64> {
        let mut n = 0;
        for item in self.second.prefix(b"o") {
            item.key()?;
            n += 1;
        }
        Ok(n)
    }

    /// How many URLs are kept for each host's owner: a scan, for the frontier's counts at open.
    pub fn kept_counts(&self) -> Result<std::collections::HashMap<String, usize>> {
        let mut counts = std::collections::HashMap::new();
        for item in self.second.prefix(b"k") {
            let k = item.key()?;
            let Some(end) = k.iter().skip(1).position(|b| *b == 0) else { continue };
            *counts.entry(String::from_utf8_lossy(&k[1..1 + end]).into_owned()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    /// Whom `host`'s queue was last written for in full ([`crate::Frontier::send_queues_to`]).
    pub fn second_holder(&self, host: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.second.get(holder_key(host))?.map(|v| v.to_vec()))
    }

    pub fn put_second_holder(&self, b: &mut Batch, host: &str, holder: &[u8]) {
        b.inner.insert(&self.second, holder_key(host), holder);
    }

    pub fn forget_second_holder(&self, b: &mut Batch, host: &str) {
        b.inner.remove(&self.second, holder_key(host));
    }

    /// The hosts with URLs kept here, each read once however many it has: a seek past each
    /// host's keys.
    pub fn kept_hosts(&self) -> Result<Vec<String>> {
        let mut hosts = Vec::new();
        let mut from = b"k".to_vec();
        loop {
            let Some(item) = self.second.range(from.clone()..b"l".to_vec()).next() else { return Ok(hosts) };
            let k = item.key()?;
            let Some(end) = k.iter().skip(1).position(|b| *b == 0) else { return Ok(hosts) };
            let host = &k[1..1 + end];
            hosts.push(String::from_utf8_lossy(host).into_owned());
            from = [b"k", host, &[1u8][..]].concat();
        }
    }
}
