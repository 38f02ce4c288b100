//! The frontier's side of second copies ([`crate::second`]): the notes this node writes for
//! its hosts' second holders, and the URLs it keeps for other owners.

use super::{store, Candidate, Frontier, Received, Result};
use crate::second::SecondCopy;
use crate::store::Store;
use std::collections::hash_map::{Entry, HashMap};

/// The frontier's second-copies state.
pub(super) struct Second {
    /// Whether each queue change writes a note for its host's second holder (in a network).
    pub(super) sending: bool,
    /// Notes waiting for their second holders.
    notes_waiting: u64,
    /// URLs kept for other owners, by host, only hosts with some (read whole at open;
    /// [`Frontier::keep`] caps them).
    kept: HashMap<String, usize>,
}

impl Second {
    pub(super) fn open(store: &Store) -> Result<Second> {
        Ok(Second { sending: false, notes_waiting: store.note_count()?, kept: store.kept_counts()? })
    }
}

/// What a node holds of second copies, for `/status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SecondCopiesCounts {
    /// Notes waiting for this node's hosts' second holders (a holder that is down, or a burst
    /// not sent yet).
    pub notes_waiting: u64,
    /// URLs kept for other members' hosts ...
    pub kept_urls: u64,
    /// ... on this many hosts.
    pub kept_hosts: u64,
}

impl Frontier {
    /// From now on every URL queued or done here writes a note for its host's second holder
    /// ([`Frontier::second_copies`]): a node in a network turns this on; a node alone has no
    /// one to tell.
    pub fn send_second_copies(&mut self, on: bool) {
        self.second.sending = on;
    }

    /// The notes waiting and the URLs kept, counted as they change.
    pub fn second_copies_counts(&self) -> SecondCopiesCounts {
        SecondCopiesCounts {
            notes_waiting: self.second.notes_waiting,
            kept_urls: self.second.kept.values().sum::<usize>() as u64,
            kept_hosts: self.second.kept.len() as u64,
        }
    }

    /// Writes `note` for its host's second holder in `batch`, with the next sequence number.
    pub(super) fn put_note(&mut self, batch: &mut store::Batch, note: &SecondCopy) -> Result<()> {
        let seq = self.take_seq(batch);
        self.store.put_note(batch, seq, note)?;
        self.second.notes_waiting += 1;
        Ok(())
    }

    /// The first `max` notes waiting for second holders from sequence number `from` on, oldest
    /// first, with their sequence numbers for [`Frontier::second_copies_sent`]. A sender reads
    /// on from past the last one (rather than from 0 again) to reach the notes behind those of
    /// a holder that is not answering.
    pub fn second_copies(&self, from: u64, max: usize) -> Result<Vec<(u64, SecondCopy)>> {
        self.store.notes(from, max)
    }

    /// The notes `seqs` reached their second holders (or are not needed): they go. Durable
    /// with the next flush.
    pub fn second_copies_sent(&mut self, seqs: &[u64]) -> Result<()> {
        let mut batch = self.store.batch();
        for seq in seqs {
            self.store.remove_note(&mut batch, *seq);
        }
        self.store.commit(batch)?;
        self.second.notes_waiting = self.second.notes_waiting.saturating_sub(seqs.len() as u64);
        Ok(())
    }

    /// Makes sure each host with URLs queued here has its whole queue written for its second
    /// holder now: `holder_of(host)` names it (opaque bytes: a peer id), or `None` when there is
    /// none. A host whose queue was last written for another holder (or for none: the network's
    /// founder, alone until now) gets a [`SecondCopy::Keep`] note for every URL queued, and the
    /// holder is remembered, durably, so a restart does not send it all again. Returns how
    /// many notes were written.
    pub fn send_queues_to(&mut self, mut holder_of: impl FnMut(&str) -> Option<Vec<u8>>) -> Result<usize> {
        let mut batch = self.store.batch();
        let mut n = 0;
        for (name, record) in self.store.host_records()? {
            if record.queued == 0 {
                continue;
            }
            let Some(holder) = holder_of(&name) else { continue };
            if self.store.second_holder(&name)?.as_deref() == Some(holder.as_slice()) {
                continue;
            }
            for (_, entry) in self.store.entries_of_host(record.id)? {
                let note = SecondCopy::Keep {
                    url: entry.url(&name),
                    host: name.clone(),
                    depth: entry.depth,
                    kind: entry.kind,
                };
                self.put_note(&mut batch, &note)?;
                n += 1;
            }
            self.store.put_second_holder(&mut batch, &name, &holder);
        }
        self.store.commit(batch)?;
        Ok(n)
    }

    /// Takes notes from the owner of their hosts: a kept URL for each `Keep`, none for each
    /// `Forget`. The caller has checked that the sender owns the hosts and that this node is
    /// their second holder. A host keeps at most `max_pages_per_host` URLs, as many as its
    /// owner may queue: an owner that sends more is not believed, and what it sends past that
    /// is not kept. Returns how many `Keep`s went over that. Durable with the next flush.
    pub fn keep(&mut self, notes: &[SecondCopy]) -> Result<usize> {
        let mut batch = self.store.batch();
        // Each host's count as this batch leaves it, and whether each URL it names is kept.
        let mut counts: HashMap<&str, usize> = HashMap::new();
        let mut kept: HashMap<(&str, &str), bool> = HashMap::new();
        let mut over = 0;
        for note in notes {
            let (host, url) = (note.host(), note.url());
            let n = match counts.entry(host) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => e.insert(self.second.kept.get(host).copied().unwrap_or(0)),
            };
            let was = match kept.get(&(host, url)) {
                Some(k) => *k,
                None => self.store.is_kept(host, url)?,
            };
            match note {
                SecondCopy::Keep { depth, kind, .. } => {
                    if !was && *n as u64 >= self.settings.max_pages_per_host {
                        over += 1;
                        continue;
                    }
                    *n += usize::from(!was);
                    self.store.put_kept(&mut batch, host, url, *depth, *kind)?;
                    kept.insert((host, url), true);
                }
                SecondCopy::Forget { .. } => {
                    self.store.remove_kept(&mut batch, host, url);
                    *n = n.saturating_sub(usize::from(was));
                    kept.insert((host, url), false);
                }
            }
        }
        self.store.commit(batch)?;
        self.second.kept.extend(counts.into_iter().map(|(host, n)| (host.to_string(), n)));
        self.second.kept.retain(|_, n| *n > 0);
        Ok(over)
    }

    /// The hosts this node keeps URLs for.
    pub fn kept_hosts(&self) -> Result<Vec<String>> {
        self.store.kept_hosts()
    }

    /// The URLs kept for `host`'s owner: (URL, depth).
    pub fn kept_of(&self, host: &str) -> Result<Vec<(String, u32)>> {
        Ok(self.store.kept_of(host)?.into_iter().map(|(url, depth, _)| (url, depth)).collect())
    }

    /// This node owns `host` now (its owner is gone): the URLs kept for it are queued here as
    /// if its owner had handed them over ([`Frontier::push_received`]: one queued or done here
    /// already stays as it is) and are kept no longer. Returns how many were queued.
    pub fn adopt_kept(&mut self, host: &str) -> Result<usize> {
        let kept = self.store.kept_of(host)?;
        let mut queued = 0;
        for (url, depth, kind) in &kept {
            let Ok(parsed) = url::Url::parse(url) else { continue };
            if self.push_received(Candidate::of(parsed, *kind, *depth))? == Received::Queued {
                queued += 1;
            }
        }
        self.forget_kept(host, kept.iter().map(|(url, _, _)| url.as_str()))?;
        Ok(queued)
    }

    /// This node is no longer `host`'s second holder: what it kept for the host goes. Returns
    /// how many URLs.
    pub fn drop_kept(&mut self, host: &str) -> Result<usize> {
        let kept = self.store.kept_of(host)?;
        self.forget_kept(host, kept.iter().map(|(url, _, _)| url.as_str()))?;
        Ok(kept.len())
    }

    /// Forgets every URL kept for `host` (`urls`).
    fn forget_kept<'a>(&mut self, host: &str, urls: impl Iterator<Item = &'a str>) -> Result<()> {
        let mut batch = self.store.batch();
        for url in urls {
            self.store.remove_kept(&mut batch, host, url);
        }
        self.store.commit(batch)?;
        self.second.kept.remove(host);
        Ok(())
    }
}
