//! SSRF guard: a crawler follows links written by strangers, so it must never be steered into
//! the volunteer's own network (router admin pages, cloud metadata at 169.254.169.254, local
//! services on 127.0.0.1).
//!
//! The check runs on the *resolved* IP inside the HTTP client's resolver, so a hostname that
//! resolves to a public address once and a private one later (DNS rebinding) is caught at the
//! moment of connecting. URLs with IP-literal hosts never reach a resolver, so the fetcher
//! checks those with [`check_literal`] before every request, redirects included.

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

/// Why an address is not public.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_reason(v4);
            }
            let seg0 = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if seg0 & 0xfe00 == 0xfc00 {
                Some("unique-local")
            } else if seg0 & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if seg0 == 0x0064 && v6.segments()[1] == 0xff9b {
                // NAT64 (64:ff9b::/96) embeds an IPv4 address: judge that address.
                let s = v6.segments();
                v4_reason(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8))
            } else if seg0 == 0x2001 && v6.segments()[1] == 0x0db8 {
                Some("documentation")
            } else {
                None
            }
        }
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let o = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        Some("CGNAT")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_unspecified() || o[0] == 0 {
        Some("unspecified")
    } else if ip.is_broadcast() || o[0] >= 240 {
        Some("reserved")
    } else if ip.is_documentation() || (o[0] == 198 && (o[1] & 0xfe) == 18) || (o[0] == 192 && o[1] == 0 && o[2] == 0) {
        Some("special-purpose")
    } else {
        None
    }
}

/// The URL's host is an IP literal that the guard refuses.
#[derive(Debug, Clone, thiserror::Error)]
#[error("refusing to connect to {ip} ({reason} address); set fetch.allow_private_networks to allow it")]
pub struct Blocked {
    pub ip: IpAddr,
    pub reason: &'static str,
}

/// Checks a URL whose host may be an IP literal.
pub fn check_literal(url: &url::Url, allow_private: bool) -> Result<(), Blocked> {
    if allow_private {
        return Ok(());
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(v4)) => IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => IpAddr::V6(v6),
        _ => return Ok(()),
    };
    match non_public_reason(ip) {
        Some(reason) => Err(Blocked { ip, reason }),
        None => Ok(()),
    }
}

/// The resolver given to reqwest: overrides first, then the system resolver; the SSRF check
/// on every answer.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    overrides: Arc<BTreeMap<String, IpAddr>>,
    allow_private: bool,
}

impl GuardedResolver {
    pub fn new(overrides: BTreeMap<String, IpAddr>, allow_private: bool) -> GuardedResolver {
        let overrides = overrides.into_iter().map(|(h, ip)| (h.to_ascii_lowercase(), ip)).collect();
        GuardedResolver { overrides: Arc::new(overrides), allow_private }
    }

    /// Resolves `host` to addresses the guard allows (port 0; the client sets the real port).
    pub async fn resolve_host(&self, host: &str) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let candidates: Vec<SocketAddr> = match self.overrides.get(&host) {
            Some(ip) => vec![SocketAddr::new(*ip, 0)],
            None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
        };
        if self.allow_private {
            return Ok(candidates);
        }
        let mut refused = None;
        let allowed: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|a| match non_public_reason(a.ip()) {
                Some(reason) => {
                    refused = Some(Blocked { ip: a.ip(), reason });
                    false
                }
                None => true,
            })
            .collect();
        match (allowed.is_empty(), refused) {
            (true, Some(blocked)) => Err(Box::new(blocked)),
            (true, None) => Err(format!("{host} has no addresses").into()),
            (false, _) => Ok(allowed),
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let this = self.clone();
        Box::pin(async move {
            let addrs = this.resolve_host(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(s: &str) -> Option<&'static str> {
        non_public_reason(s.parse().unwrap())
    }

    #[test]
    fn classifies_addresses() {
        for (ip, want) in [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.16.0.1", Some("private")),
            ("192.168.1.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("100.64.0.1", Some("CGNAT")),
            ("100.127.255.255", Some("CGNAT")),
            ("224.0.0.1", Some("multicast")),
            ("0.0.0.0", Some("unspecified")),
            ("255.255.255.255", Some("reserved")),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fd00::1", Some("unique-local")),
            ("fe80::1", Some("link-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.0.0.1", Some("private")),
            ("64:ff9b::a00:1", Some("private")),
        ] {
            assert_eq!(reason(ip), want, "{ip}");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "100.128.0.1", "2606:4700::1111", "172.32.0.1"] {
            assert_eq!(reason(ip), None, "{ip}");
        }
    }

    #[test]
    fn literal_hosts_are_checked() {
        let u = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        assert!(check_literal(&u, false).is_err());
        assert!(check_literal(&u, true).is_ok());
        assert!(check_literal(&url::Url::parse("http://[::1]/").unwrap(), false).is_err());
        assert!(check_literal(&url::Url::parse("http://example.com/").unwrap(), false).is_ok());
    }

    #[tokio::test]
    async fn overrides_are_guarded_too() {
        let map: BTreeMap<String, IpAddr> = [("site.test".to_string(), "127.0.0.1".parse().unwrap())].into();
        let guarded = GuardedResolver::new(map.clone(), false);
        let err = guarded.resolve_host("site.test").await.unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        let open = GuardedResolver::new(map, true);
        assert_eq!(open.resolve_host("SITE.test.").await.unwrap()[0].ip().to_string(), "127.0.0.1");
    }
}
