//! A simulated member: its identity and address, its links (connections, mesh, relays), its
//! membership table — the real one on an observer, a compact one elsewhere — and what it sent
//! and received this minute.

use super::compact::Compact;
use super::heartbeats::{Heartbeat, Members};
use super::sessions::Kind;
use crate::rng::Rng;
use libp2p::{Multiaddr, PeerId};
use std::collections::BTreeMap;

/// `p2p.max_connections` and the inbound share of it (`weft_p2p::behaviour::reserved_outgoing`).
pub const MAX_CONNECTIONS: usize = 256;
pub const MAX_INBOUND: usize = 224;
/// rust-libp2p's idle connection timeout as Weft sets it.
pub const IDLE_SECS: f64 = 300.0;
/// Relay limits (`p2p.relay`): circuits at once, reservations; relays a NAT'd member holds.
pub const MAX_CIRCUITS: u32 = 64;
pub const MAX_RESERVATIONS: u32 = 128;
pub const RELAYS: usize = 2;
/// Bytes each way to set a connection up: multistream-select, the Noise XX handshake with its
/// signed identity payload, yamux, identify (key, addresses, ~14 protocols) and gossipsub's
/// subscriptions. Estimated from the messages' sizes, not captured.
pub const HANDSHAKE_BYTES: f64 = 1_100.0;
/// A ping and its answer on one connection, each way, every 15 s (libp2p-ping's defaults).
pub const PING_BYTES_PER_SEC: f64 = 2.0 * 60.0 / 15.0;

#[derive(Debug, Clone, Copy)]
pub struct Conn {
    pub dialer: u32,
    /// Held open: a mesh peer or a relay reservation.
    pub kept: bool,
    /// The relay a circuit runs through, while hole punching has not made it direct.
    pub relay: Option<u32>,
    pub opened: f64,
}

pub enum Table {
    Real(Box<Members>),
    Compact(Compact),
}

pub struct Node {
    pub id: PeerId,
    pub name: String,
    pub addr: Multiaddr,
    pub kind: Kind,
    pub public: bool,
    pub online: bool,
    pub session: u32,
    pub joined_unix: u64,
    pub conns: BTreeMap<u32, Conn>,
    pub inbound: usize,
    pub mesh: Vec<u32>,
    pub relays: Vec<u32>,
    pub reservations: u32,
    pub circuits: u32,
    pub table: Table,
    pub observer: Option<usize>,
    pub beat_at: f64,
    pub summary_at: f64,
    pub republish: bool,
    /// This minute's own bytes and messages, each way.
    pub up: f64,
    pub down: f64,
    pub msgs: f64,
    /// The network-wide per-member costs when this member came online this minute.
    pub joined_shared: Option<Shared>,
    pub dials: u64,
    pub refused: u64,
    /// Its session's end is scheduled.
    pub ending: bool,
}

/// Whether a member of `kind` is public: the always-on core is; any other is behind NAT with
/// the probability `nat_share`. One draw of `rng`, or none for the core.
pub fn draw_public(kind: Kind, nat_share: f64, rng: &mut Rng) -> bool {
    kind == Kind::Core || rng.below(1000) as f64 >= nat_share * 1000.0
}

/// What a member behind NAT needs of a simulated network to hold its relays: the members, a
/// random draw and a dial. Both designs hold relays alike ([`Relaying::reserve_relays`]).
pub trait Relaying {
    fn members(&mut self) -> &mut [Node];
    /// A uniform draw below `n`, from the simulation's random stream.
    fn draw(&mut self, n: usize) -> usize;
    /// `i` dials the relay `r`, the connection kept; whether it was made.
    fn dial_relay(&mut self, i: u32, r: u32) -> bool;

    /// A member behind NAT reserves circuits on public members until it holds [`RELAYS`]: up to
    /// 20 draws among all members, each taken if it is public, online, has a reservation slot
    /// free ([`MAX_RESERVATIONS`]), is not one of its relays yet, and the dial succeeds.
    fn reserve_relays(&mut self, i: u32) {
        let n = self.members().len();
        let mut tries = 0;
        while self.members()[i as usize].relays.len() < RELAYS && tries < 20 {
            tries += 1;
            let r = self.draw(n) as u32;
            let members = self.members();
            let relay = &members[r as usize];
            if r == i
                || !relay.online
                || !relay.public
                || relay.reservations >= MAX_RESERVATIONS
                || members[i as usize].relays.contains(&r)
            {
                continue;
            }
            if self.dial_relay(i, r) {
                let members = self.members();
                members[r as usize].reservations += 1;
                members[i as usize].relays.push(r);
            }
        }
    }
}

/// Costs every online member bears alike (the mesh's forwards), accumulated per member.
#[derive(Debug, Clone, Copy, Default)]
pub struct Shared {
    pub up: f64,
    pub down: f64,
    pub msgs: f64,
}

impl Node {
    /// Identity `i` of a run under `seed`, of `kind`, reachable directly or not (`public`).
    pub fn new(seed: u64, i: usize, kind: Kind, public: bool) -> Node {
        let id = Node::key(seed, i).public().to_peer_id();
        let addr: Multiaddr =
            format!("/ip4/10.{}.{}.{}/tcp/7701", (i >> 16) & 255, (i >> 8) & 255, i & 255).parse().expect("an address");
        Node {
            name: id.to_string(),
            id,
            addr,
            kind,
            public,
            online: false,
            session: 0,
            joined_unix: 0,
            conns: BTreeMap::new(),
            inbound: 0,
            mesh: Vec::new(),
            relays: Vec::new(),
            reservations: 0,
            circuits: 0,
            table: Table::Compact(Compact::default()),
            observer: None,
            beat_at: f64::NEG_INFINITY,
            summary_at: f64::NEG_INFINITY,
            republish: false,
            up: 0.0,
            down: 0.0,
            msgs: 0.0,
            joined_shared: None,
            dials: 0,
            refused: 0,
            ending: false,
        }
    }

    /// The key of identity `i` under `seed`.
    pub fn key(seed: u64, i: usize) -> libp2p::identity::Keypair {
        libp2p::identity::Keypair::ed25519_from_bytes(key_seed(seed, i)).expect("32 bytes make a key")
    }

    /// It comes online for a new session at `unix`; `shared` is what the members online have
    /// borne so far this minute (its own minute starts from there).
    pub fn come_online(&mut self, unix: u64, shared: Shared) {
        self.online = true;
        self.session += 1;
        self.joined_unix = unix;
        self.beat_at = f64::NEG_INFINITY;
        self.summary_at = f64::NEG_INFINITY;
        self.joined_shared = Some(shared);
    }

    /// It goes offline: its links and its table go with it (its connections were closed).
    /// `stays_ending`: its next session's end is scheduled already (a run without churn).
    pub fn go_offline(&mut self, stays_ending: bool) {
        self.online = false;
        self.ending = stays_ending;
        self.mesh.clear();
        self.relays.clear();
        self.reservations = 0;
        self.circuits = 0;
        self.table = Table::Compact(Compact::default());
    }

    /// Its heartbeat as it would publish it now.
    pub fn heartbeat(&self, leaving: bool, every: u32) -> Heartbeat {
        Heartbeat {
            peer: self.name.clone(),
            addrs: vec![self.addr.to_string()],
            capacity: 10,
            leaving,
            relay: self.public,
            joined: self.joined_unix,
            left: Vec::new(),
            every,
        }
    }

    /// Its heartbeat period, as `Members::period` computes it from the members it counts.
    pub fn period(&self, heartbeat_secs: f64) -> f64 {
        match &self.table {
            Table::Real(m) => m.period().as_secs_f64(),
            Table::Compact(table) => stretched(table.members() + 1, heartbeat_secs),
        }
    }
}

/// `Members::period`'s stretch, for a compact table of `members` (itself included).
fn stretched(members: usize, heartbeat_secs: f64) -> f64 {
    let stretch = members.max(20) as f64 / 20.0;
    (heartbeat_secs * stretch).min(60.0_f64.max(heartbeat_secs))
}

/// The secret key of identity `i` under `seed`: the same members in every run of a seed.
fn key_seed(seed: u64, i: usize) -> [u8; 32] {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..].copy_from_slice(&(i as u64).to_le_bytes());
    *blake3::hash(&bytes).as_bytes()
}
