//! When volunteers come and go: session and downtime lengths drawn from the distributions
//! measured on deployed peer-to-peer networks, a stable core that stays for days, and bursts of
//! newcomers.
//!
//! The session lengths of peer-to-peer users are heavy-tailed: most sessions last minutes, a few
//! last days. Stutzbach and Rejaie ("Understanding Churn in Peer-to-Peer Networks", IMC 2006)
//! fit Weibull distributions to them in Gnutella, Kad and BitTorrent — shape 0.38 and scale
//! 42.4 minutes in the Debian BitTorrent swarm, 0.34 / 21.3 in Red Hat's, 0.59 / 41.9 in a game's
//! — and found downtimes heavy-tailed too. [`SessionModel::default`] takes Debian's swarm for the
//! members that come and go, and adds what a network of homelab volunteers has that a swarm of
//! downloaders does not: a core of always-on boxes whose sessions last days.

use crate::rng::Rng;

/// A Weibull distribution (`scale` in seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weibull {
    pub shape: f64,
    pub scale: f64,
}

impl Weibull {
    /// One draw, by inversion of the distribution function.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        // Uniform in (0, 1]: never ln(0).
        let u = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        self.scale * (-u.ln()).powf(1.0 / self.shape)
    }

    /// The mean: scale · Γ(1 + 1/shape).
    pub fn mean(&self) -> f64 {
        self.scale * gamma(1.0 + 1.0 / self.shape)
    }
}

/// Γ(x) for x > 0 (Lanczos, g = 7): the Weibull mean needs it for non-integer arguments.
fn gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return std::f64::consts::PI / ((std::f64::consts::PI * x).sin() * gamma(1.0 - x));
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let sum = G[0] + (1..9).map(|i| G[i] / (x + i as f64)).sum::<f64>();
    (2.0 * std::f64::consts::PI).sqrt() * t.powf(x + 0.5) * (-t).exp() * sum
}

/// Who is online when: the two kinds of member and the bursts.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionModel {
    /// Sessions of the members that come and go.
    pub session: Weibull,
    /// Their time away between sessions.
    pub downtime: Weibull,
    /// The share of the members online at any time that belong to the always-on core ...
    pub core_share: f64,
    /// ... whose sessions last this long on average (exponential), with this long away.
    pub core_session_secs: f64,
    pub core_downtime_secs: f64,
    /// A burst of newcomers (a post on a forum): this share of the network's size arrives
    /// within [`SessionModel::burst_secs`] at each of these fractions of the run.
    pub burst_share: f64,
    pub burst_secs: f64,
    pub bursts_at: Vec<f64>,
    /// The share of volunteers that leave with a last word (`weft stop`); the others vanish
    /// (power cut, crash, a laptop's lid).
    pub graceful: f64,
}

impl Default for SessionModel {
    fn default() -> Self {
        SessionModel {
            // Stutzbach & Rejaie 2006, the Debian BitTorrent swarm: median 16 minutes, mean 2.7 h.
            session: Weibull { shape: 0.38, scale: 42.4 * 60.0 },
            // Heavy-tailed downtimes as they found; median 1.4 h, mean 4 h.
            downtime: Weibull { shape: 0.5, scale: 2.0 * 3600.0 },
            core_share: 0.25,
            core_session_secs: 3.0 * 86_400.0,
            core_downtime_secs: 3600.0,
            burst_share: 0.05,
            burst_secs: 60.0,
            bursts_at: vec![0.5],
            graceful: 0.5,
        }
    }
}

/// One volunteer's identity and its sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Core,
    Regular,
    /// Arrives in a burst, for one session.
    Newcomer,
}

impl SessionModel {
    /// The share of its time a regular member is online.
    pub fn availability(&self) -> f64 {
        let (up, down) = (self.session.mean(), self.downtime.mean());
        up / (up + down)
    }

    /// The identities of a network with about `online` members online: how many of each kind.
    pub fn population(&self, online: usize) -> (usize, usize) {
        let core_avail = self.core_session_secs / (self.core_session_secs + self.core_downtime_secs);
        let core = (online as f64 * self.core_share / core_avail).round() as usize;
        let regular = (online as f64 * (1.0 - self.core_share) / self.availability()).round() as usize;
        (core, regular)
    }

    /// Every identity's kind, in order: the core, the regular members, then the newcomers of
    /// every burst.
    pub fn kinds(&self, online: usize) -> Vec<Kind> {
        let (core, regular) = self.population(online);
        let bursts = (online as f64 * self.burst_share).round() as usize * self.bursts_at.len();
        let kinds = std::iter::repeat_n(Kind::Core, core).chain(std::iter::repeat_n(Kind::Regular, regular));
        kinds.chain(std::iter::repeat_n(Kind::Newcomer, bursts)).collect()
    }

    /// A session's length for a member of `kind`, in seconds (at least one).
    pub fn session_secs(&self, kind: Kind, rng: &mut Rng) -> f64 {
        let s = match kind {
            Kind::Core => exponential(self.core_session_secs, rng),
            Kind::Regular | Kind::Newcomer => self.session.sample(rng),
        };
        s.max(1.0)
    }

    /// Time away after a session, in seconds.
    pub fn downtime_secs(&self, kind: Kind, rng: &mut Rng) -> f64 {
        let s = match kind {
            Kind::Core => exponential(self.core_downtime_secs, rng),
            Kind::Regular | Kind::Newcomer => self.downtime.sample(rng),
        };
        s.max(1.0)
    }

    /// When a member of `kind` first comes online in a network that forms over its first minute,
    /// and when that session ends if it was running as the network formed (`None`: it comes
    /// back later from time away).
    pub fn first_arrival(&self, kind: Kind, rng: &mut Rng) -> (f64, Option<f64>) {
        let (up, left) = self.start_state(kind, rng);
        if up {
            let at = 1.0 + rng.below(60_000) as f64 / 1000.0;
            (at, Some(at + left))
        } else {
            (60.0 + left, None)
        }
    }

    /// The newcomers' arrivals: for each burst, [`SessionModel::burst_share`] of `members`
    /// within [`SessionModel::burst_secs`], at its fraction of `churn_secs`.
    pub fn bursts(&self, members: usize, churn_secs: f64, rng: &mut Rng) -> Vec<f64> {
        let per_burst = (members as f64 * self.burst_share).round() as usize;
        let mut arrivals = Vec::new();
        for at in &self.bursts_at {
            for _ in 0..per_burst {
                arrivals.push(at * churn_secs + rng.below((self.burst_secs * 1000.0) as usize) as f64 / 1000.0);
            }
        }
        arrivals
    }

    /// Whether a member of `kind` is online at a random moment (the network's starting state),
    /// and, if so, how long its session still runs; if not, how long until it comes back.
    /// Residual times of a renewal process are length-biased: a long session is more likely
    /// to be the one running at a random moment. Drawn by walking a few sessions forward from a
    /// random phase, which samples that bias without its closed form.
    pub fn start_state(&self, kind: Kind, rng: &mut Rng) -> (bool, f64) {
        let horizon = 30.0 * 86_400.0;
        let mut t = -(rng.below_u64(horizon as u64) as f64);
        loop {
            let up = self.session_secs(kind, rng);
            if t + up > 0.0 {
                return (true, t + up);
            }
            t += up;
            let down = self.downtime_secs(kind, rng);
            if t + down > 0.0 {
                return (false, t + down);
            }
            t += down;
        }
    }
}

fn exponential(mean: f64, rng: &mut Rng) -> f64 {
    let u = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    -mean * u.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weibull_draws_have_the_distributions_median_and_mean() {
        let w = Weibull { shape: 0.38, scale: 42.4 * 60.0 };
        let mut rng = Rng(7);
        let mut draws: Vec<f64> = (0..200_000).map(|_| w.sample(&mut rng)).collect();
        draws.sort_by(f64::total_cmp);
        let median = draws[draws.len() / 2];
        // Median = scale · ln(2)^(1/shape).
        let expected = w.scale * std::f64::consts::LN_2.powf(1.0 / w.shape);
        assert!((median / expected - 1.0).abs() < 0.03, "median {median} against {expected}");
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean / w.mean() - 1.0).abs() < 0.1, "mean {mean} against {}", w.mean());
        assert!((gamma(5.0) - 24.0).abs() < 1e-9 && (gamma(0.5) - std::f64::consts::PI.sqrt()).abs() < 1e-9);
    }

    #[test]
    fn the_population_puts_the_asked_number_online() {
        let model = SessionModel::default();
        let (core, regular) = model.population(1000);
        let mut rng = Rng(3);
        let online = (0..core).filter(|_| model.start_state(Kind::Core, &mut rng).0).count()
            + (0..regular).filter(|_| model.start_state(Kind::Regular, &mut rng).0).count();
        assert!((900..1100).contains(&online), "{online} online of {} identities", core + regular);
    }
}
