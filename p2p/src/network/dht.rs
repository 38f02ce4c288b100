//! The event loop's part of the DHT: near-duplicate lookups answered from record queries, and
//! stores from other peers taken only for Weft's records at a bounded rate.

use super::{EventLoop, DHT_FLOOD};
use crate::records::{self, DupEntry};
use libp2p::kad;

impl EventLoop {
    pub(super) fn on_records(&mut self, query: kad::QueryId, found: Vec<DupEntry>, done: bool) {
        if let Some(&id) = self.lookup_queries.get(&query) {
            if let Some(lookup) = self.lookups.get_mut(&id) {
                lookup.entries.extend(found);
                if done {
                    lookup.left -= 1;
                }
            }
            if done {
                self.lookup_queries.remove(&query);
                if self.lookups.get(&id).is_some_and(|l| l.left == 0) {
                    let l = self.lookups.remove(&id).expect("lookup present");
                    let best = records::nearest(&l.entries, l.hash, l.max_distance, &l.url);
                    if best.is_some() {
                        self.counts.dht_found += 1;
                    }
                    self.latencies.push(l.started.elapsed().as_secs_f64() * 1e3);
                    let _ = l.reply.send(best);
                }
            }
        } else if let Some((_, _, entries)) = self.publishing.get_mut(&query) {
            entries.extend(found);
            if done {
                let (key, entry, entries) = self.publishing.remove(&query).expect("publication present");
                let value = records::encode(&records::merge(entries, entry));
                let record = kad::Record::new(kad::RecordKey::new(&key), value);
                if let Err(e) = self.swarm.behaviour_mut().kad.put_record(record, kad::Quorum::One) {
                    tracing::debug!("fingerprint record not stored: {e}");
                }
            }
        }
    }

    /// A peer asks this node to store a record or a provider announcement: only Weft's own
    /// record keys with values of their shape are stored, at most [`DHT_STORES_PER_SEC`] per
    /// peer. A record of anything else bans its sender (an honest node never sends it), as does
    /// a flood ([`DHT_FLOOD`] stores over the rate). Without this, 50,000 records of 8 KiB from
    /// one peer took 390 MB. Provider announcements are never stored: Weft provides nothing in
    /// the DHT (a question finds the owners of its cells on the ring); earlier nodes of this
    /// protocol version announced semantic buckets, so one is counted as refused and
    /// rate-limited, not banned.
    pub(super) fn on_dht_store(&mut self, request: kad::InboundRequest) {
        let (source, valid) = match &request {
            kad::InboundRequest::PutRecord { source, record: Some(r), .. } => {
                (*source, records::decode_strict(r.key.as_ref(), &r.value).map(|_| ()).map_err(|e| e.to_string()))
            }
            kad::InboundRequest::AddProvider { record: Some(p) } => (p.provider, Ok(())),
            _ => return,
        };
        if let Err(why) = valid {
            self.counts.dht_refused += 1;
            self.ban(source, &format!("DHT store refused: {why}"));
            return;
        }
        if !self.dht_rate.allow(&source.to_string(), std::time::Instant::now()) {
            self.counts.dht_refused += 1;
            let over = self.dht_over.entry(source).or_insert(0);
            *over += 1;
            if *over >= DHT_FLOOD {
                self.dht_over.remove(&source);
                self.ban(source, "DHT store flood");
            }
            return;
        }
        use kad::store::RecordStore;
        let store = self.swarm.behaviour_mut().kad.store_mut();
        let stored = match request {
            kad::InboundRequest::PutRecord { record: Some(r), .. } => store.put(r),
            _ => {
                self.counts.dht_refused += 1;
                return;
            }
        };
        if let Err(e) = stored {
            // The store is full: the record is not kept (a missed duplicate at worst).
            self.counts.dht_refused += 1;
            tracing::debug!("DHT store: {e}");
        }
    }
}
