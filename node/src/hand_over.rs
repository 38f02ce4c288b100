//! Hand-overs go out in pieces. When the ring changes, a node hands the postings of cells it
//! no longer owns alone to their new owners, and documents' copies to their new holders. A node
//! a month old holds hundreds of thousands of them: read all at once and queued at once, they
//! would take hundreds of MiB for as long as the new owners take to store them — and the
//! outbox's byte bound would drop what does not fit. So a hand-over reads a piece, queues it,
//! and waits for the outbox to hold less than [`HAND_OVER_ROOM`] before the next: under a
//! loaded network every ring change starts hand-overs of whole cells, and queued at once they
//! grow a node's heap by a hundred MiB in minutes.

use std::time::Duration;
use weft_p2p::publishing::HAND_OVER_ROOM;

/// Documents read from a store and queued per piece.
pub const PIECE_DOCS: usize = 128;
/// How often the outbox is looked at while waiting for room.
const POLL: Duration = Duration::from_millis(200);
/// The longest wait for room. Past it the piece is queued anyway: an owner that takes nothing
/// for this long must not stall every later hand-over. The outbox's own bound then drops what
/// does not fit, counted, and its publisher's periodic announcement brings it back.
const MAX_WAIT: Duration = Duration::from_secs(300);

/// Waits until the network's postings outbox has room for another piece of a hand-over.
pub async fn room(network: &weft_p2p::NetworkHandle) {
    let started = tokio::time::Instant::now();
    while network.postings_backlog_bytes() >= HAND_OVER_ROOM as u64 && started.elapsed() < MAX_WAIT {
        tokio::time::sleep(POLL).await;
    }
}
