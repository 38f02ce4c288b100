//! What the connections a member opens cost: each pair's messages taken as a Poisson stream at
//! the rate its window saw, the connections they open a second at the design's linger, and
//! their handshakes, hole punches and the circuits relays open for them.

use super::mean_p99;
use super::nat::Nat;
use super::traffic::{Design, Traffic};
use std::collections::HashMap;

/// Bytes each side of a new connection sends to set it up, estimated from the protocols: the
/// transport's own (TCP's handshake and close, or QUIC's padded first packets), multistream's
/// negotiation, Noise's three messages with the identity key and its signature, and identify's
/// answer (the public key, ~4 listen addresses, the ~20 protocols a node speaks, the observed
/// address and the agent).
pub const HANDSHAKE_BYTES: u64 = 1_600;

/// Bytes each side sends on top of a handshake to punch a hole: the relayed connection's own
/// handshake and identify, the relay's HOP and STOP messages, and DCUtR's CONNECT and SYNC with
/// the observed addresses.
pub const PUNCH_BYTES: u64 = 2_400;

/// What a window's openings cost, as [`super::Figures`] reports them.
pub(super) struct Handshakes {
    pub opens_per_sec: (f64, f64),
    pub handshake_kb: (f64, f64),
    pub circuit_opens_per_sec: (f64, f64),
    pub punches_per_sec: f64,
    pub failed_punches_per_sec: f64,
}

/// Prices the connections opened among `members` from `events`: for each pair that exchanged
/// something straight, the pages that sent it URLs and the pages that sent it anything else.
pub(super) fn price(
    events: &HashMap<u64, [u32; 2]>,
    design: Design,
    traffic: &Traffic,
    nat: &Nat,
    members: usize,
) -> Handshakes {
    let linger = match design {
        Design::Direct | Design::Grid { .. } => traffic.window_secs,
        Design::Brief { secs, .. } => secs,
        Design::Hybrid { bulk_secs, .. } => bulk_secs,
    };
    let url_linger = match design {
        Design::Brief { url_linger, .. } => url_linger,
        _ => None,
    };
    let opens_of = |[urls, other]: [u32; 2]| {
        let rate = |n: u32| f64::from(n) / traffic.window_secs;
        let held = |rate: f64| rate * (-rate * linger).exp();
        match url_linger {
            Some(l) => held(rate(other)) + (1.0 - (-rate(urls) * l).exp()) / l,
            None => held(rate(urls + other)),
        }
    };
    let mut opens = vec![0.0f64; members];
    let mut handshakes = vec![0.0f64; members];
    let mut circuit_opens = vec![0.0f64; members];
    let (mut punched, mut failed) = (0.0f64, 0.0f64);
    for (p, e) in events {
        let (a, b) = ((p >> 32) as u32, (p & 0xffff_ffff) as u32);
        let o = opens_of(*e);
        let punch = nat.behind[a as usize] && nat.behind[b as usize];
        let bytes = o * (HANDSHAKE_BYTES + if punch { PUNCH_BYTES } else { 0 }) as f64;
        for end in [a, b] {
            opens[end as usize] += o;
            handshakes[end as usize] += bytes;
        }
        if punch {
            punched += o;
            if !nat.punches(*p) {
                failed += o;
            }
            if let Some(relay) = nat.relay_of(a.max(b)) {
                circuit_opens[relay as usize] += o;
            }
        }
    }
    let opens_per_sec = mean_p99(opens);
    let handshake_kb = mean_p99(handshakes.iter().map(|b| b / 1000.0).collect());
    let circuit_opens_per_sec = {
        let public: Vec<f64> = (0..members).filter(|i| !nat.behind[*i]).map(|i| circuit_opens[i]).collect();
        (crate::scale::mean(&public), public.iter().copied().fold(0.0, f64::max))
    };
    let punches_per_sec = 2.0 * punched / members as f64;
    let failed_punches_per_sec = 2.0 * failed / members as f64;
    Handshakes { opens_per_sec, handshake_kb, circuit_opens_per_sec, punches_per_sec, failed_punches_per_sec }
}
