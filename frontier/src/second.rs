//! Second copies of a host's queue: what survives its owner's crash.
//!
//! A host's URLs wait in its owner's frontier until they are fetched. An owner that vanishes
//! (a crash, a power cut, a volunteer who never comes back) takes them along: its hosts pass
//! to the next member on the ring once its death is signed, but their queues stay on its disk.
//! So the owner keeps its hosts' second holders (the next member on the ring for each host,
//! the one that owns the host when the owner is gone) told: every URL it queues goes to the
//! second holder as a [`SecondCopy::Keep`] note, and every URL it is done with as a
//! [`SecondCopy::Forget`]. The notes are written in the same atomic batch as the queue change
//! they follow, and leave the store only when the second holder has them, so a crash of the
//! owner delays a note but does not lose it. The second holder keeps the URLs aside (not
//! queued, not crawled) and queues them the moment it owns the host.
//!
//! What this costs: each queued URL is sent once more and stored twice, and each fetched one
//! sends a note (the scale simulator prices it at 10,000 members: 172 KB/s up against 162,
//! the same peers, `weft-simnet data-plane --url-holders 2`).

use crate::score::UrlKind;
use serde::{Deserialize, Serialize};

/// A note from a host's owner to its second holder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SecondCopy {
    /// `url` of `host` is queued at its owner.
    Keep { host: String, url: String, depth: u32, kind: UrlKind },
    /// Its owner is done with `url` (fetched or given up on): nothing to keep.
    Forget { host: String, url: String },
}

impl SecondCopy {
    /// The host the note is about: its second holder is whom it goes to.
    pub fn host(&self) -> &str {
        match self {
            SecondCopy::Keep { host, .. } | SecondCopy::Forget { host, .. } => host,
        }
    }

    pub fn url(&self) -> &str {
        match self {
            SecondCopy::Keep { url, .. } | SecondCopy::Forget { url, .. } => url,
        }
    }
}
