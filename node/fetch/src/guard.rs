//! SSRF guard: a crawler follows links written by strangers, so it must never be steered into
//! the volunteer's own network (router admin pages, cloud metadata at 169.254.169.254, local
//! services on 127.0.0.1).
//!
//! The check runs on the *resolved* IP inside the HTTP client's resolver, so a hostname that
//! resolves to a public address once and a private one later (DNS rebinding) is caught at the
//! moment of connecting. URLs with IP-literal hosts never reach a resolver, so the fetcher
//! checks those with [`check_literal`] before every request, redirects included.
//!
//! The same check keeps a node without a contact for site owners (`fetch.contact_url`) off the
//! public web: a crawler there must say who runs it ([`Reach`]).

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Why an address is not public: the table the URL batches of other members are checked
/// against too (see [`weft_url::address`]).
pub use weft_url::address::non_public_reason;

/// [`Blocked::reason`] of a public address refused because no contact is set.
pub const NO_CONTACT: &str = "public";

/// An address the guard refuses: a non-public one (`reason` names its kind), or a public one
/// while the node has no contact for site owners ([`NO_CONTACT`]).
#[derive(Debug, Clone)]
pub struct Blocked {
    pub ip: IpAddr,
    pub reason: &'static str,
}

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reason == NO_CONTACT {
            write!(
                f,
                "refusing to connect to {} (public address) without a contact for site owners; set fetch.contact_url",
                self.ip
            )
        } else {
            write!(
                f,
                "refusing to connect to {} ({} address); set fetch.allow_private_networks to allow it",
                self.ip, self.reason
            )
        }
    }
}

impl std::error::Error for Blocked {}

/// Which addresses the fetcher may connect to: non-public ones only with
/// `fetch.allow_private_networks`, public ones only with a `fetch.contact_url`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    pub private: bool,
    pub public: bool,
}

impl Reach {
    pub fn of(cfg: &weft_config::FetchConfig) -> Reach {
        Reach { private: cfg.allow_private_networks, public: cfg.public_web_allowed() }
    }

    /// Whether `ip` may be connected to.
    pub fn check(self, ip: IpAddr) -> Result<(), Blocked> {
        match non_public_reason(ip) {
            Some(reason) if !self.private => Err(Blocked { ip, reason }),
            None if !self.public => Err(Blocked { ip, reason: NO_CONTACT }),
            _ => Ok(()),
        }
    }
}

/// Checks a URL whose host may be an IP literal.
pub fn check_literal(url: &url::Url, reach: Reach) -> Result<(), Blocked> {
    match url.host() {
        Some(url::Host::Ipv4(v4)) => reach.check(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => reach.check(IpAddr::V6(v6)),
        _ => Ok(()),
    }
}

/// The resolver given to reqwest: overrides first, then the system resolver; the SSRF check
/// on every answer.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    overrides: Arc<BTreeMap<String, IpAddr>>,
    reach: Reach,
}

impl GuardedResolver {
    pub fn new(overrides: BTreeMap<String, IpAddr>, reach: Reach) -> GuardedResolver {
        let overrides = overrides.into_iter().map(|(h, ip)| (h.to_ascii_lowercase(), ip)).collect();
        GuardedResolver { overrides: Arc::new(overrides), reach }
    }

    /// Resolves `host` to addresses the guard allows (port 0; the client sets the real port).
    pub async fn resolve_host(&self, host: &str) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let candidates: Vec<SocketAddr> = match self.overrides.get(&host) {
            Some(ip) => vec![SocketAddr::new(*ip, 0)],
            None => tokio::net::lookup_host((host.as_str(), 0)).await?.collect(),
        };
        let mut refused = None;
        let allowed: Vec<SocketAddr> = candidates
            .into_iter()
            .filter(|a| match self.reach.check(a.ip()) {
                Err(blocked) => {
                    refused = Some(blocked);
                    false
                }
                Ok(()) => true,
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

    const CLOSED: Reach = Reach { private: false, public: true };
    const OPEN: Reach = Reach { private: true, public: true };

    #[test]
    fn literal_hosts_are_checked() {
        let u = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        assert!(check_literal(&u, CLOSED).is_err());
        assert!(check_literal(&u, OPEN).is_ok());
        assert!(check_literal(&url::Url::parse("http://[::1]/").unwrap(), CLOSED).is_err());
        let sixtofour = check_literal(&url::Url::parse("http://[2002:a00:1::]/").unwrap(), CLOSED).unwrap_err();
        assert_eq!(sixtofour.reason, "private", "6to4 around 10.0.0.1");
        assert!(check_literal(&url::Url::parse("http://example.com/").unwrap(), CLOSED).is_ok());
    }

    /// Without a contact, public addresses are refused (literal or resolved) and say why;
    /// loopback and private networks stay reachable when allowed.
    #[tokio::test]
    async fn without_a_contact_only_private_networks_are_reached() {
        let private_only = Reach { private: true, public: false };
        let public = url::Url::parse("http://93.184.215.14/").unwrap();
        let refused = check_literal(&public, private_only).unwrap_err();
        assert_eq!(refused.reason, NO_CONTACT);
        assert!(refused.to_string().contains("fetch.contact_url"), "{refused}");
        assert!(check_literal(&url::Url::parse("http://127.0.0.1/").unwrap(), private_only).is_ok());
        assert!(check_literal(&url::Url::parse("http://192.168.1.20/").unwrap(), private_only).is_ok());
        let map: BTreeMap<String, IpAddr> = [
            ("public.test".to_string(), "93.184.215.14".parse().unwrap()),
            ("lan.test".to_string(), "10.1.2.3".parse().unwrap()),
        ]
        .into();
        let guarded = GuardedResolver::new(map, private_only);
        let err = guarded.resolve_host("public.test").await.unwrap_err();
        assert!(err.to_string().contains("without a contact"), "{err}");
        assert_eq!(guarded.resolve_host("lan.test").await.unwrap()[0].ip().to_string(), "10.1.2.3");
        let nothing = Reach { private: false, public: false };
        assert!(check_literal(&url::Url::parse("http://127.0.0.1/").unwrap(), nothing).is_err());
        assert!(check_literal(&public, nothing).is_err());
    }

    #[tokio::test]
    async fn overrides_are_guarded_too() {
        let map: BTreeMap<String, IpAddr> = [("site.test".to_string(), "127.0.0.1".parse().unwrap())].into();
        let guarded = GuardedResolver::new(map.clone(), CLOSED);
        let err = guarded.resolve_host("site.test").await.unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        let open = GuardedResolver::new(map, OPEN);
        assert_eq!(open.resolve_host("SITE.test.").await.unwrap()[0].ip().to_string(), "127.0.0.1");
    }
}
