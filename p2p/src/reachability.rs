//! Whether other members can reach this node, and what follows from it: which of its addresses
//! it tells the network (identify, hence the other members' address books), whether it offers
//! a relay, and whether it needs relay slots.
//!
//! Most volunteers sit behind a home router's NAT, often behind carrier-grade NAT too: their
//! boxes can dial out but nobody can dial in. AutoNAT (v2) tells a node which of its candidate
//! addresses another member could dial back; a node with none is *private*. A private node
//! reserves a slot on one or two *public* members' Circuit Relay v2 and advertises the
//! `/p2p-circuit` addresses it got there, so URL batches and queries still reach it; DCUtR then
//! turns relayed connections into direct ones where both NATs allow it.
//!
//! Private and loopback addresses are advertised only on a private network — when every peer
//! this node is connected to is reached over a private or loopback address (a LAN, a test on
//! 127.0.0.1) and it has no confirmed public address — or when `p2p.private_addrs` says so.
//! Everywhere else they are useless to others (and leak the volunteer's LAN). Received
//! addresses get the same rule: a peer's private address is used only when this node reaches
//! that peer over a private address itself.
//!
//! Pure state: the event loop feeds it swarm events and reads the decisions.

use libp2p::multiaddr::Protocol;
use libp2p::{Multiaddr, PeerId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

/// AutoNAT probes that must fail, with none succeeding, before a node calls itself private.
pub const FAILED_PROBES_FOR_PRIVATE: u32 = 1;

/// What this node knows of its own reachability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// No AutoNAT answer yet.
    #[default]
    Unknown,
    /// Another member dialled one of this node's addresses back: it is reachable from outside.
    Public,
    /// Every member is on one private network (or loopback), and this node is reachable on it.
    PrivateNetwork,
    /// Nobody could dial back: behind a NAT or firewall.
    BehindNat,
}

/// `/status`'s view of reachability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ReachabilityStatus {
    pub kind: Kind,
    /// `public`, `behind NAT (hole punched to N peers)`, `relayed via <peer>`, …: for people.
    pub summary: String,
    /// What this node advertises to the others (identify).
    pub advertised: Vec<String>,
    /// Relays holding a slot for this node.
    pub relays: Vec<String>,
    /// Peers connected directly / only through a relay.
    pub direct_peers: usize,
    pub relayed_peers: usize,
    /// The peers reached only through a relay now.
    pub relayed_only: Vec<String>,
    /// Relayed connections upgraded to direct ones by hole punching, and attempts that failed.
    pub hole_punches: u64,
    pub hole_punch_failures: u64,
    /// AutoNAT probes of this node's addresses that succeeded / failed.
    pub probes_ok: u64,
    pub probes_failed: u64,
    /// As a relay: reservations held for others now, circuits open now, and circuits served.
    pub relay_reservations: usize,
    pub relay_circuits: usize,
    pub relay_circuits_served: u64,
    /// Port mapping on the home router (UPnP IGD): `off`, `searching`, `mapped`, `no gateway`.
    pub upnp: String,
    /// Seconds from start until this node was reachable (public, or a relay slot), and until
    /// its first hole punch.
    pub reachable_after_secs: Option<f64>,
    pub direct_after_secs: Option<f64>,
}

/// Is this IP address useless outside its own network (private, loopback, link-local, CGNAT,
/// unspecified)?
pub fn is_private_ip(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V4(v4) => is_private_v4(v4),
        std::net::IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        // 100.64.0.0/10: carrier-grade NAT's shared space.
        || (a == 100 && (64..128).contains(&b))
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || (first & 0xfe00) == 0xfc00 // unique local
        || (first & 0xffc0) == 0xfe80 // link-local
        || ip.to_ipv4_mapped().is_some_and(is_private_v4)
}

/// Is `addr` a private, loopback or link-local address (its first IP component)? DNS names
/// and relayed addresses are not.
pub fn is_private(addr: &Multiaddr) -> bool {
    if is_relayed(addr) {
        return false;
    }
    addr.iter().find_map(|p| match p {
        Protocol::Ip4(ip) => Some(is_private_v4(ip)),
        Protocol::Ip6(ip) => Some(is_private_v6(ip)),
        _ => None,
    }) == Some(true)
}

/// Is `addr` a loopback address?
pub fn is_loopback(addr: &Multiaddr) -> bool {
    addr.iter().any(|p| match p {
        Protocol::Ip4(ip) => ip.is_loopback(),
        Protocol::Ip6(ip) => ip.is_loopback(),
        _ => false,
    })
}

/// Does `addr` go through a relay (`…/p2p-circuit…`)?
pub fn is_relayed(addr: &Multiaddr) -> bool {
    addr.iter().any(|p| matches!(p, Protocol::P2pCircuit))
}

/// Does a connection accepted on `local` from `remote` prove this node reachable at `local`?
/// Yes when both are public (not private, not relayed): nothing but reachability lets a peer
/// from outside in on a public address. (A hole-punched connection is never accepted by the
/// listener: both ends dial.)
pub fn proves_reachable(local: &Multiaddr, remote: &Multiaddr) -> bool {
    !is_private(local) && !is_relayed(local) && !is_private(remote) && !is_relayed(remote)
}

/// Should a peer's advertised `addr` be used (dialled, put in the address book), given the address this
/// node reaches that peer at (`via`, when connected) and the `p2p.private_addrs` setting?
pub fn usable(addr: &Multiaddr, via: Option<&Multiaddr>, allow_private: bool) -> bool {
    !is_private(addr) || allow_private || via.is_some_and(is_private)
}

/// The reachability state machine.
#[derive(Debug)]
pub struct Reachability {
    started: Instant,
    /// `p2p.private_addrs`: advertise private addresses whatever the network looks like.
    allow_private: bool,
    /// Confirmed external addresses (AutoNAT, UPnP, relay reservations), as the swarm has them.
    confirmed: BTreeSet<Multiaddr>,
    /// This node's listen addresses.
    listen: BTreeSet<Multiaddr>,
    probes_ok: u64,
    probes_failed: u64,
    /// Open connections: id → (peer, remote address).
    connections: HashMap<libp2p::swarm::ConnectionId, (PeerId, Multiaddr)>,
    /// Of `connections`: how many go to a private address, and how many to a private or a
    /// relayed one. Kept as they open and close: [`Reachability::kind`] is asked after every
    /// event, and walking fifty connections' addresses each time is among an idle node's
    /// hottest work at fifty members.
    private_connections: usize,
    private_or_relayed_connections: usize,
    /// Relay peer → when its reservation was accepted.
    relays: BTreeMap<PeerId, Instant>,
    hole_punched: BTreeSet<PeerId>,
    hole_punches: u64,
    hole_punch_failures: u64,
    upnp: String,
    reachable_at: Option<Instant>,
    direct_at: Option<Instant>,
    /// Counts the calls that may change it: its status can be kept until this changes.
    generation: u64,
}

impl Reachability {
    pub fn new(allow_private: bool, upnp: bool, now: Instant) -> Reachability {
        Reachability {
            started: now,
            allow_private,
            confirmed: BTreeSet::new(),
            listen: BTreeSet::new(),
            probes_ok: 0,
            probes_failed: 0,
            connections: HashMap::new(),
            private_connections: 0,
            private_or_relayed_connections: 0,
            relays: BTreeMap::new(),
            hole_punched: BTreeSet::new(),
            hole_punches: 0,
            hole_punch_failures: 0,
            upnp: if upnp { "searching" } else { "off" }.into(),
            reachable_at: None,
            direct_at: None,
            generation: 0,
        }
    }

    /// Changes whenever something that [`Reachability::status`] shows may have changed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn listen_addr(&mut self, addr: Multiaddr, added: bool) {
        self.generation += 1;
        if added {
            self.listen.insert(addr);
        } else {
            self.listen.remove(&addr);
        }
    }

    /// An external address was confirmed (AutoNAT dial-back, UPnP mapping, relay reservation)
    /// or expired.
    pub fn external(&mut self, addr: Multiaddr, confirmed: bool, now: Instant) {
        self.generation += 1;
        if confirmed {
            self.confirmed.insert(addr);
            if self.reachable_at.is_none() && self.kind() != Kind::BehindNat {
                self.reachable_at = Some(now);
            }
        } else {
            self.confirmed.remove(&addr);
        }
    }

    /// An AutoNAT probe of one of this node's addresses answered.
    pub fn probe(&mut self, ok: bool) {
        self.generation += 1;
        if ok {
            self.probes_ok += 1;
        } else {
            self.probes_failed += 1;
        }
    }

    pub fn connected(&mut self, id: libp2p::swarm::ConnectionId, peer: PeerId, remote: Multiaddr) {
        self.generation += 1;
        if let Some((_, old)) = self.connections.insert(id, (peer, remote.clone())) {
            self.count(&old, false);
        }
        self.count(&remote, true);
    }

    fn count(&mut self, remote: &Multiaddr, opened: bool) {
        let (private, relayed) = (is_private(remote), is_relayed(remote));
        let step = |n: usize| if opened { n + 1 } else { n.saturating_sub(1) };
        if private {
            self.private_connections = step(self.private_connections);
        }
        if private || relayed {
            self.private_or_relayed_connections = step(self.private_or_relayed_connections);
        }
    }

    /// The address this node reaches `peer` at (a direct connection's, if it has one).
    pub fn remote_of(&self, peer: &PeerId) -> Option<Multiaddr> {
        let mut remotes: Vec<&Multiaddr> =
            self.connections.values().filter(|(p, _)| p == peer).map(|(_, remote)| remote).collect();
        remotes.sort_by_key(|a| is_relayed(a));
        remotes.first().map(|a| (*a).clone())
    }

    pub fn disconnected(&mut self, id: libp2p::swarm::ConnectionId) {
        self.generation += 1;
        if let Some((_, remote)) = self.connections.remove(&id) {
            self.count(&remote, false);
        }
    }

    pub fn reservation(&mut self, relay: PeerId, accepted: bool, now: Instant) {
        self.generation += 1;
        if accepted {
            self.relays.entry(relay).or_insert(now);
            self.reachable_at.get_or_insert(now);
        } else {
            self.relays.remove(&relay);
        }
    }

    pub fn hole_punch(&mut self, peer: PeerId, ok: bool, now: Instant) {
        self.generation += 1;
        if ok {
            self.hole_punches += 1;
            self.hole_punched.insert(peer);
            self.direct_at.get_or_insert(now);
        } else {
            self.hole_punch_failures += 1;
        }
    }

    pub fn upnp(&mut self, state: &str) {
        self.generation += 1;
        self.upnp = state.to_string();
    }

    /// The confirmed addresses that are not relayed.
    fn confirmed_direct(&self) -> impl Iterator<Item = &Multiaddr> {
        self.confirmed.iter().filter(|a| !is_relayed(a))
    }

    /// Every connection goes over a private or loopback address (and there is one).
    fn on_private_network(&self) -> bool {
        !self.connections.is_empty()
            && self.private_or_relayed_connections == self.connections.len()
            && self.private_connections > 0
    }

    pub fn kind(&self) -> Kind {
        if self.confirmed_direct().any(|a| !is_private(a)) {
            Kind::Public
        } else if self.on_private_network() && (self.probes_ok > 0 || self.confirmed_direct().next().is_some()) {
            Kind::PrivateNetwork
        } else if self.probes_failed >= u64::from(FAILED_PROBES_FOR_PRIVATE) || !self.relays.is_empty() {
            Kind::BehindNat
        } else if self.on_private_network() {
            // Connected on a LAN and not yet probed: behave as a LAN member meanwhile.
            Kind::PrivateNetwork
        } else {
            Kind::Unknown
        }
    }

    /// Called when `timeout` passed since the start with no AutoNAT verdict: a node nobody
    /// could probe (no server among its peers) is treated as behind a NAT.
    pub fn give_up_waiting(&mut self, timeout: Duration, now: Instant) {
        self.generation += 1;
        if self.kind() == Kind::Unknown && now.duration_since(self.started) >= timeout {
            self.probes_failed = self.probes_failed.max(u64::from(FAILED_PROBES_FOR_PRIVATE));
        }
    }

    /// Does this node offer a relay? Only when it is publicly reachable.
    pub fn relay_server(&self) -> bool {
        self.kind() == Kind::Public
    }

    /// Does this node need relay slots?
    pub fn needs_relay(&self) -> bool {
        self.kind() == Kind::BehindNat
    }

    /// Whether private addresses may be advertised right now.
    fn private_ok(&self) -> bool {
        self.allow_private || self.kind() == Kind::PrivateNetwork
    }

    /// The addresses this node tells the others: confirmed public ones, relay circuits, and
    /// private ones only on a private network.
    pub fn advertised(&self) -> Vec<Multiaddr> {
        let private_ok = self.private_ok();
        let mut out: BTreeSet<Multiaddr> =
            self.confirmed.iter().filter(|a| private_ok || !is_private(a)).cloned().collect();
        if private_ok {
            out.extend(self.listen.iter().filter(|a| is_private(a)).cloned());
        }
        out.into_iter().collect()
    }

    /// The relays holding a slot for this node.
    pub fn relays(&self) -> Vec<PeerId> {
        self.relays.keys().copied().collect()
    }

    pub fn status(&self, relay_reservations: usize, relay_circuits: usize, circuits_served: u64) -> ReachabilityStatus {
        let mut direct = BTreeSet::new();
        let mut relayed = BTreeSet::new();
        for (peer, remote) in self.connections.values() {
            if is_relayed(remote) {
                relayed.insert(*peer);
            } else {
                direct.insert(*peer);
            }
        }
        let relayed_only: Vec<String> = relayed.difference(&direct).map(ToString::to_string).collect();
        let kind = self.kind();
        let summary = match kind {
            Kind::Public => "public".to_string(),
            Kind::PrivateNetwork => "private network (every peer on this LAN)".to_string(),
            Kind::Unknown => "checking reachability".to_string(),
            Kind::BehindNat => {
                let punched = self.hole_punched.iter().filter(|p| direct.contains(*p)).count();
                let via: Vec<String> = self.relays.keys().map(short).collect();
                match (punched, via.is_empty()) {
                    (0, true) => "behind NAT, no relay yet".to_string(),
                    (0, false) => format!("relayed via {}", via.join(", ")),
                    (n, _) => format!("behind NAT (hole punched to {n} peers)"),
                }
            }
        };
        let secs = |t: Option<Instant>| t.map(|t| t.duration_since(self.started).as_secs_f64());
        ReachabilityStatus {
            kind,
            summary,
            advertised: self.advertised().iter().map(ToString::to_string).collect(),
            relays: self.relays.keys().map(ToString::to_string).collect(),
            direct_peers: direct.len(),
            relayed_peers: relayed_only.len(),
            relayed_only,
            hole_punches: self.hole_punches,
            hole_punch_failures: self.hole_punch_failures,
            probes_ok: self.probes_ok,
            probes_failed: self.probes_failed,
            relay_reservations,
            relay_circuits,
            relay_circuits_served: circuits_served,
            upnp: self.upnp.clone(),
            reachable_after_secs: secs(self.reachable_at),
            direct_after_secs: secs(self.direct_at),
        }
    }
}

/// A peer id short enough for a status line (its last 8 characters).
fn short(peer: &PeerId) -> String {
    let s = peer.to_string();
    format!("…{}", &s[s.len().saturating_sub(8)..])
}

/// Picks up to `n` relays for this node among `candidates` (public members offering one),
/// spread over the candidates by a hash of this node's id so private nodes do not all pick the
/// same relay.
pub fn pick_relays(me: &PeerId, candidates: &[PeerId], n: usize) -> Vec<PeerId> {
    let mut ranked: Vec<(blake3::Hash, PeerId)> = candidates
        .iter()
        .filter(|p| *p != me)
        .map(|p| {
            let mut h = blake3::Hasher::new();
            h.update(&me.to_bytes());
            h.update(&p.to_bytes());
            (h.finalize(), *p)
        })
        .collect();
    ranked.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    ranked.into_iter().take(n).map(|(_, p)| p).collect()
}

/// The public address block a connection came from (at most `membership::MAX_MEMBERS_PER_PREFIX`
/// members may come from one): an IPv4 /24 or an IPv6 /48, or `None`
/// for private, loopback and other non-public addresses and for relayed connections.
pub fn address_block(remote: &Multiaddr) -> Option<String> {
    if remote.iter().any(|p| matches!(p, Protocol::P2pCircuit)) {
        return None;
    }
    let ip: std::net::IpAddr = remote.iter().find_map(|p| match p {
        Protocol::Ip4(a) => Some(a.into()),
        Protocol::Ip6(a) => Some(a.into()),
        _ => None,
    })?;
    if weft_url::address::non_public_reason(ip).is_some() {
        return None;
    }
    Some(match ip {
        std::net::IpAddr::V4(a) => {
            let [x, y, z, _] = a.octets();
            format!("{x}.{y}.{z}.0/24")
        }
        std::net::IpAddr::V6(a) => {
            let s = a.segments();
            format!("{:x}:{:x}:{:x}::/48", s[0], s[1], s[2])
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use libp2p::swarm::ConnectionId;

    fn addr(s: &str) -> Multiaddr {
        s.parse().unwrap()
    }

    #[test]
    fn private_addresses_are_told_apart() {
        for a in [
            "/ip4/10.1.0.2/tcp/1",
            "/ip4/192.168.1.5/udp/1/quic-v1",
            "/ip4/127.0.0.1/tcp/7",
            "/ip4/100.64.3.1/tcp/1",
            "/ip4/169.254.0.9/tcp/1",
            "/ip6/::1/tcp/1",
            "/ip6/fd00::1/tcp/1",
            "/ip6/fe80::1/tcp/1",
        ] {
            assert!(is_private(&addr(a)), "{a}");
        }
        for a in ["/ip4/198.51.100.10/tcp/1", "/ip4/8.8.8.8/tcp/1", "/dns4/example.org/tcp/1", "/ip6/2001:db8::1/tcp/1"]
        {
            assert!(!is_private(&addr(a)), "{a}");
        }
        let circuit =
            addr("/ip4/198.51.100.10/tcp/1/p2p/12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN/p2p-circuit");
        assert!(is_relayed(&circuit) && !is_private(&circuit));
        assert!(is_loopback(&addr("/ip4/127.0.0.1/tcp/7")) && !is_loopback(&addr("/ip4/0.0.0.0/tcp/7")));
    }

    #[test]
    fn a_node_nobody_can_dial_back_is_behind_nat_and_advertises_only_its_relay_circuit() {
        let t0 = Instant::now();
        let mut r = Reachability::new(false, true, t0);
        r.listen_addr(addr("/ip4/10.1.0.2/tcp/7701"), true);
        r.connected(ConnectionId::new_unchecked(1), PeerId::random(), addr("/ip4/198.51.100.10/tcp/7701"));
        assert_eq!(r.kind(), Kind::Unknown);
        assert!(r.advertised().is_empty(), "no LAN address leaves a node connected over the internet");
        r.probe(false);
        assert_eq!(r.kind(), Kind::BehindNat);
        assert!(r.needs_relay() && !r.relay_server());
        let relay = PeerId::random();
        let circuit = addr(&format!("/ip4/198.51.100.10/tcp/7701/p2p/{relay}/p2p-circuit"));
        r.reservation(relay, true, t0 + Duration::from_secs(3));
        r.external(circuit.clone(), true, t0 + Duration::from_secs(3));
        assert_eq!(r.kind(), Kind::BehindNat, "a relay circuit does not make a node public");
        assert_eq!(r.advertised(), vec![circuit]);
        let s = r.status(0, 0, 0);
        assert!(s.summary.starts_with("relayed via …"), "{}", s.summary);
        assert_eq!(s.reachable_after_secs, Some(3.0));
        // A hole punch to a peer now connected directly.
        let peer = PeerId::random();
        r.connected(ConnectionId::new_unchecked(2), peer, addr("/ip4/198.51.100.22/tcp/40000"));
        r.hole_punch(peer, true, t0 + Duration::from_secs(9));
        let s = r.status(0, 0, 0);
        assert_eq!(s.summary, "behind NAT (hole punched to 1 peers)");
        assert_eq!(s.direct_after_secs, Some(9.0));
    }

    #[test]
    fn a_confirmed_public_address_makes_a_public_node_that_hides_its_private_ones() {
        let t0 = Instant::now();
        let mut r = Reachability::new(false, false, t0);
        r.listen_addr(addr("/ip4/127.0.0.1/tcp/7701"), true);
        r.listen_addr(addr("/ip4/198.51.100.10/tcp/7701"), true);
        r.connected(ConnectionId::new_unchecked(1), PeerId::random(), addr("/ip4/198.51.100.21/tcp/5000"));
        r.external(addr("/ip4/198.51.100.10/tcp/7701"), true, t0);
        assert_eq!(r.kind(), Kind::Public);
        assert!(r.relay_server() && !r.needs_relay());
        assert_eq!(r.advertised(), vec![addr("/ip4/198.51.100.10/tcp/7701")]);
        assert_eq!(r.status(1, 0, 0).summary, "public");
        // By configuration, private addresses go out too.
        let mut r = Reachability::new(true, false, t0);
        r.listen_addr(addr("/ip4/127.0.0.1/tcp/7701"), true);
        r.external(addr("/ip4/198.51.100.10/tcp/7701"), true, t0);
        assert_eq!(r.advertised().len(), 2);
    }

    #[test]
    fn on_a_private_network_private_addresses_are_advertised() {
        let mut r = Reachability::new(false, false, Instant::now());
        r.listen_addr(addr("/ip4/127.0.0.1/tcp/7701"), true);
        assert_eq!(r.kind(), Kind::Unknown);
        assert!(r.advertised().is_empty(), "nothing before the first connection says which network this is");
        r.connected(ConnectionId::new_unchecked(1), PeerId::random(), addr("/ip4/127.0.0.1/tcp/7702"));
        assert_eq!(r.kind(), Kind::PrivateNetwork);
        assert!(!r.relay_server() && !r.needs_relay());
        assert_eq!(r.advertised(), vec![addr("/ip4/127.0.0.1/tcp/7701")]);
        // A peer met over the internet: this is no private network any more.
        r.connected(ConnectionId::new_unchecked(2), PeerId::random(), addr("/ip4/198.51.100.10/tcp/1"));
        assert_eq!(r.kind(), Kind::Unknown);
        assert!(r.advertised().is_empty());
        // The counts behind it follow connections as they close (and a relayed one counts
        // with the private ones: it says nothing of which network this is).
        r.disconnected(ConnectionId::new_unchecked(2));
        assert_eq!(r.kind(), Kind::PrivateNetwork);
        let relay =
            addr("/ip4/198.51.100.10/tcp/1/p2p/12D3KooWFYqSFXRfhYavJZtcpkjsjWhBfq1d85Gp54zfXipLve6k/p2p-circuit");
        r.connected(ConnectionId::new_unchecked(3), PeerId::random(), relay);
        assert_eq!(r.kind(), Kind::PrivateNetwork);
        r.disconnected(ConnectionId::new_unchecked(1));
        assert_eq!(r.kind(), Kind::Unknown, "only a relayed connection left");
        r.disconnected(ConnectionId::new_unchecked(3));
        r.disconnected(ConnectionId::new_unchecked(3));
        assert_eq!(r.kind(), Kind::Unknown);
        r.connected(ConnectionId::new_unchecked(4), PeerId::random(), addr("/ip4/10.0.0.2/tcp/1"));
        assert_eq!(r.kind(), Kind::PrivateNetwork, "counts did not go below zero");
    }

    #[test]
    fn nobody_to_probe_with_ends_in_behind_nat() {
        let t0 = Instant::now();
        let mut r = Reachability::new(false, false, t0);
        r.connected(ConnectionId::new_unchecked(1), PeerId::random(), addr("/ip4/198.51.100.10/tcp/1"));
        r.give_up_waiting(Duration::from_secs(30), t0 + Duration::from_secs(10));
        assert_eq!(r.kind(), Kind::Unknown);
        r.give_up_waiting(Duration::from_secs(30), t0 + Duration::from_secs(31));
        assert_eq!(r.kind(), Kind::BehindNat);
    }

    #[test]
    fn only_a_connection_from_outside_on_a_public_address_proves_reachability() {
        let public = addr("/ip4/198.51.100.10/tcp/7701");
        assert!(proves_reachable(&public, &addr("/ip4/198.51.100.21/tcp/7701")));
        assert!(!proves_reachable(&public, &addr("/ip4/10.0.0.5/tcp/7701")), "a LAN peer proves nothing");
        assert!(!proves_reachable(&addr("/ip4/10.1.0.2/tcp/7701"), &addr("/ip4/198.51.100.21/tcp/1")));
    }

    #[test]
    fn received_private_addresses_are_used_only_from_the_same_network() {
        let lan = addr("/ip4/10.1.0.2/tcp/7701");
        assert!(!usable(&lan, Some(&addr("/ip4/198.51.100.21/tcp/7701")), false));
        assert!(usable(&lan, Some(&addr("/ip4/10.1.0.9/tcp/7701")), false));
        assert!(usable(&lan, None, true));
        assert!(usable(&addr("/ip4/198.51.100.21/tcp/7701"), None, false));
    }

    #[test]
    fn relays_are_spread_and_never_this_node() {
        let me = PeerId::random();
        let candidates: Vec<PeerId> = (0..5).map(|_| PeerId::random()).chain([me]).collect();
        let picked = pick_relays(&me, &candidates, 2);
        assert_eq!(picked.len(), 2);
        assert!(!picked.contains(&me));
        assert_eq!(picked, pick_relays(&me, &candidates, 2), "stable");
        assert_eq!(pick_relays(&me, &[me], 2), Vec::<PeerId>::new());
    }

    #[test]
    fn address_blocks_are_public_slash_24_and_slash_48() {
        let p = |a: &str| address_block(&a.parse().unwrap());
        assert_eq!(p("/ip4/8.8.4.4/tcp/1").as_deref(), Some("8.8.4.0/24"));
        assert_eq!(p("/ip6/2a01:4f8:1c1c:42::1/udp/1/quic-v1").as_deref(), Some("2a01:4f8:1c1c::/48"));
        for private in ["/ip4/127.0.0.1/tcp/1", "/ip4/10.1.2.3/tcp/1", "/ip6/::1/tcp/1", "/ip6/fd00::1/tcp/1"] {
            assert_eq!(p(private), None, "{private}");
        }
        assert_eq!(p("/dns4/example.com/tcp/1"), None);
    }
}
