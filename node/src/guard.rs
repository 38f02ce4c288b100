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
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// Why an address is not public: the table the URL batches of other members are checked
/// against too (see [`weft_url::address`]).
pub use weft_url::address::non_public_reason;

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

    #[test]
    fn literal_hosts_are_checked() {
        let u = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        assert!(check_literal(&u, false).is_err());
        assert!(check_literal(&u, true).is_ok());
        assert!(check_literal(&url::Url::parse("http://[::1]/").unwrap(), false).is_err());
        let sixtofour = check_literal(&url::Url::parse("http://[2002:a00:1::]/").unwrap(), false).unwrap_err();
        assert_eq!(sixtofour.reason, "private", "6to4 around 10.0.0.1");
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
