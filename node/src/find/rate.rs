//! The search page's rate limit on its own address: a token bucket per client — an IPv4
//! address, or an IPv6 /64 (one home's prefix holds many addresses). Bounded: past
//! [`MAX_CLIENTS`] the buckets that have filled up again (their clients idle) are forgotten,
//! then the longest idle ones.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Clients remembered at most.
pub const MAX_CLIENTS: usize = 10_000;

/// Who a bucket is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Client {
    V4(u32),
    V6Prefix(u64),
}

impl Client {
    fn of(ip: IpAddr) -> Client {
        match ip {
            IpAddr::V4(v4) => Client::V4(u32::from(v4)),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Client::V4(u32::from(v4)),
                None => Client::V6Prefix((u128::from(v6) >> 64) as u64),
            },
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Requests a minute per client, with a burst of a quarter of that (at least 10).
#[derive(Debug)]
pub struct RateLimit {
    per_sec: f64,
    burst: f64,
    buckets: HashMap<Client, Bucket>,
}

impl RateLimit {
    pub fn new(per_minute: u32) -> RateLimit {
        let per_minute = f64::from(per_minute.max(1));
        RateLimit { per_sec: per_minute / 60.0, burst: (per_minute / 4.0).max(10.0), buckets: HashMap::new() }
    }

    /// Takes one request of `ip`'s at `now`; `Err` with how long until it may ask again.
    pub fn take(&mut self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        let client = Client::of(ip);
        if !self.buckets.contains_key(&client) && self.buckets.len() >= MAX_CLIENTS {
            self.forget(now);
        }
        let (per_sec, burst) = (self.per_sec, self.burst);
        let bucket = self.buckets.entry(client).or_insert(Bucket { tokens: burst, at: now });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec))
        }
    }

    /// Makes room: the buckets full again go first, then the longest idle half.
    fn forget(&mut self, now: Instant) {
        let (per_sec, burst) = (self.per_sec, self.burst);
        self.buckets.retain(|_, b| b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec < burst);
        if self.buckets.len() >= MAX_CLIENTS {
            let mut ages: Vec<Instant> = self.buckets.values().map(|b| b.at).collect();
            ages.sort_unstable();
            let cut = ages[ages.len() / 2];
            self.buckets.retain(|_, b| b.at > cut);
        }
    }

    pub fn clients(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_gets_its_burst_then_its_rate_and_others_are_not_held_back() {
        let mut limit = RateLimit::new(60);
        let t0 = Instant::now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        for _ in 0..15 {
            assert!(limit.take(a, t0).is_ok());
        }
        let wait = limit.take(a, t0).unwrap_err();
        assert!(wait > Duration::from_millis(900) && wait <= Duration::from_secs(1), "{wait:?}");
        // One a second comes back.
        assert!(limit.take(a, t0 + Duration::from_secs(1)).is_ok());
        assert!(limit.take(a, t0 + Duration::from_secs(1)).is_err());
        assert!(limit.take("192.0.2.2".parse().unwrap(), t0).is_ok());
    }

    #[test]
    fn an_ipv6_home_is_one_client_and_a_mapped_v4_address_is_its_v4_one() {
        let mut limit = RateLimit::new(4);
        let t0 = Instant::now();
        for i in 0..10 {
            assert!(limit.take(format!("2001:db8:1:2::{i:x}").parse().unwrap(), t0).is_ok());
        }
        assert!(limit.take("2001:db8:1:2:ffff::1".parse().unwrap(), t0).is_err());
        assert!(limit.take("2001:db8:1:3::1".parse().unwrap(), t0).is_ok());
        for _ in 0..10 {
            assert!(limit.take("198.51.100.7".parse().unwrap(), t0).is_ok());
        }
        assert!(limit.take("::ffff:198.51.100.7".parse().unwrap(), t0).is_err());
    }

    #[test]
    fn the_clients_remembered_stay_bounded() {
        let mut limit = RateLimit::new(60);
        let t0 = Instant::now();
        for i in 0..(MAX_CLIENTS as u32 + 500) {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let _ = limit.take(ip, t0 + Duration::from_millis(u64::from(i)));
        }
        assert!(limit.clients() <= MAX_CLIENTS, "{}", limit.clients());
    }
}
