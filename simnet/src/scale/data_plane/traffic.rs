//! The model's inputs: what each member's crawl sends per page ([`Traffic`]), and how a message
//! reaches the member it is for ([`Design`]).

/// What each member's crawl sends, per page.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Traffic {
    /// Pages each member indexes per second. A 2-core volunteer embeds ~41 chunks/s, about 4
    /// pages of the modern web a second at most.
    pub pages_per_sec: f64,
    /// The window a connection stays open without traffic, in seconds.
    pub window_secs: f64,
    /// Distinct other hosts a page links to: 11.9 on average over the 720 pages of
    /// `extraction-devset-2` (median 10, 90th percentile 22; the crawler takes at most 100).
    pub foreign_hosts: usize,
    /// The hosts links go to, and the skew of their popularity (Zipf's exponent): a few hosts
    /// are linked from most pages (on that dev set, facebook.com from 62% of them, linkedin.com
    /// from 48%), most from one.
    pub hosts: usize,
    pub zipf: f64,
    /// Distinct cells a page's chunks are posted to beyond each chunk's best two or three
    /// ([`cells_per_chunk`]): a page keeps to a topic, so its ~8 chunks (median 1,268 words on
    /// that dev set, ~160 new words a chunk) share most of their cells. An assumption, not a
    /// measurement.
    pub extra_page_cells: usize,
    /// Cells postings are placed in: the codebook shipped (256) when `None`; more to look at a
    /// codebook that grows with the network (placement only: which cells a chunk's best are
    /// is drawn at random either way).
    pub cells: Option<usize>,
    /// Members each linked host's URLs go to: 1 today (its owner); 2 for a frontier kept on a
    /// second member too (the host's next owner on the ring), which no crash can strand.
    pub url_holders: usize,
    /// Owners of each cell (`search.replicas`) and copies of each document (`index.replicas`).
    pub cell_replicas: usize,
    pub doc_replicas: usize,
    /// Whether pages are posted to cells at all (off only to look at the rest alone).
    pub posting: bool,
    /// Chunks a page has: ~8 (1,268 words at the median of that dev set, ~160 new words a
    /// chunk of 254 tokens with 15% overlap).
    pub chunks: usize,
    /// The share of members behind NAT, as in `weft-simnet scale`: a connection opened between
    /// two of them is a hole punch (through a relay first).
    pub nat_share: f64,
    /// The share of hole punches that succeed: about 70% in libp2p's own measurement campaign
    /// (Trautwein et al., "Challenging Tunnels: Assessing the hole punching success of libp2p's
    /// DCUtR", 2024: 70% ± 7.1% over 4.4 million attempts from home and office networks in 167
    /// countries; TCP and QUIC alike). A pair whose punch fails talks through a relay — a
    /// public member holding one of the two's reservations — for as long as the connection lasts.
    pub punch_success: f64,
    /// Bytes on the wire, estimated from the messages' fields: the URLs sent for a linked host
    /// (two of ~90 bytes), a posting (the chunk's text ~1.1 KB, its f16 vector 768 bytes, the
    /// page's metadata, the publisher's key and signature), a record request (addressed to its
    /// owner: a lookup ~100 bytes, an entry with its publisher's key and signature ~360; a
    /// page's twelve and four ~300 on average), a copy (the page's text, ~10 KB at 1,703 words, and its first
    /// hundred links).
    pub url_bytes: u64,
    pub posting_bytes: u64,
    pub record_bytes: u64,
    pub copy_bytes: u64,
}

impl Default for Traffic {
    fn default() -> Traffic {
        Traffic {
            pages_per_sec: 1.0,
            window_secs: weft_p2p::keep_alive::LINGER.as_secs_f64(),
            foreign_hosts: 12,
            hosts: 1_000_000,
            zipf: 1.0,
            extra_page_cells: 1,
            cells: None,
            url_holders: 1,
            cell_replicas: 2,
            doc_replicas: 3,
            posting: true,
            chunks: 8,
            nat_share: 0.6,
            punch_success: 0.7,
            url_bytes: 180,
            posting_bytes: 2_300,
            record_bytes: 300,
            copy_bytes: 19_000,
        }
    }
}

/// How a message reaches the member it is for.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Design {
    /// Straight to it, over a connection kept while it carries something (today's).
    Direct,
    /// Straight to it, over a connection closed `secs` after its last use: what a member holds
    /// at a moment rather than over the idle timeout, with a handshake each time a pair talks
    /// again after that. With `url_linger`, a member sends each owner the URLs it has for it
    /// once every that many seconds (one batch a pair), so a pair's URL connection is open
    /// `secs` of every `url_linger`.
    Brief { secs: f64, url_linger: Option<f64> },
    /// Over a fixed overlay (the product's [`Grid`]) of `dims` coordinates with about `per_bucket` members in
    /// each bucket: a member keeps connections to the members that differ from it in one
    /// coordinate, and a message changes one coordinate a hop.
    Grid { dims: u32, per_bucket: f64 },
    /// The small messages (URLs, records) over the grid; the bulky ones (postings, copies)
    /// straight to their member over a connection closed `bulk_secs` after its last use — or,
    /// with `nat_over_grid`, over the grid too when both ends are behind NAT (no hole punch).
    /// Without `records_over_grid`, records go straight like the bulk (what runs while only URL
    /// batches are forwarded over the grid).
    Hybrid { dims: u32, per_bucket: f64, bulk_secs: f64, nat_over_grid: bool, records_over_grid: bool },
}

impl std::fmt::Display for Design {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Design::Direct => write!(f, "direct"),
            Design::Brief { secs, url_linger: None } => write!(f, "direct:{secs}"),
            Design::Brief { secs, url_linger: Some(l) } => write!(f, "direct:{secs}:{l}"),
            Design::Grid { dims, per_bucket } => write!(f, "grid{dims}:{per_bucket}"),
            Design::Hybrid { dims, per_bucket, bulk_secs, nat_over_grid, records_over_grid } => {
                write!(f, "hybrid{dims}:{per_bucket}:{bulk_secs}")?;
                if *nat_over_grid {
                    write!(f, ":nat-grid")?;
                }
                if !records_over_grid {
                    write!(f, ":urls-only")?;
                }
                Ok(())
            }
        }
    }
}
