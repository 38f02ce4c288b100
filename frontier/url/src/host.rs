//! The one definition of a host, shared by the frontier, the network and the node.
//!
//! A [`HostKey`] is host plus explicit port (`example.com`, `site-a.test:8080`): the unit of
//! politeness and of the robots.txt cache. robots.txt is defined per scheme, host and port
//! (RFC 9309); we key by host and port and treat http and https of one host as one server,
//! which is the polite choice since they almost always are. Its [`HostKey::name`] — the host
//! without the port — is what the hash ring assigns to a member: every port of one machine
//! belongs to the same node, so politeness towards the machine stays in one place.

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt;
use url::Url;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct HostKey(String);

impl HostKey {
    /// The host of a URL (empty for a URL without one, which the normalizer never lets in).
    pub fn of(url: &Url) -> HostKey {
        let host = url.host_str().unwrap_or_default();
        HostKey(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        })
    }

    /// A key as the frontier stores it (`host` or `host:port`), taken as it is.
    pub fn from_stored(key: impl Into<String>) -> HostKey {
        HostKey(key.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    /// The host without the port: the hash ring's unit (`[::1]:8080` → `[::1]`).
    pub fn name(&self) -> &str {
        let s = self.0.as_str();
        if s.starts_with('[') {
            return s.find(']').map_or(s, |end| &s[..=end]);
        }
        match s.rsplit_once(':') {
            Some((name, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => s,
        }
    }

    /// The site the host belongs to: its registrable domain by the Public Suffix List
    /// (`news.example.co.uk` → `example.co.uk`; each `*.github.io` blog is its own site), or
    /// the name itself for an IP address, a public suffix or a name the list cannot place.
    /// One owner's hosts share a site, so caps meant for one source count them together.
    pub fn site(&self) -> &str {
        let name = self.name();
        if name.starts_with('[') || name.parse::<std::net::Ipv4Addr>().is_ok() {
            return name;
        }
        psl::domain_str(name).unwrap_or(name)
    }
}

impl fmt::Display for HostKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for HostKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for HostKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for HostKey {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for HostKey {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(u: &str) -> HostKey {
        HostKey::of(&Url::parse(u).unwrap())
    }

    #[test]
    fn the_key_keeps_an_explicit_port_and_the_name_drops_it() {
        assert_eq!(key("http://a.test:8080/x"), "a.test:8080");
        assert_eq!(key("https://A.Test/x"), "a.test");
        assert_eq!(key("http://a.test:80/x"), "a.test", "the default port is no port");
        assert_eq!(key("http://a.test:8080/x").name(), "a.test");
        assert_eq!(key("http://a.test/").name(), "a.test");
        assert_eq!(key("http://[::1]:8080/").as_str(), "[::1]:8080");
        assert_eq!(key("http://[::1]:8080/").name(), "[::1]");
        assert_eq!(key("http://127.0.0.1:9/").name(), "127.0.0.1");
    }

    #[test]
    fn a_host_belongs_to_its_registrable_domain() {
        for (url, site) in [
            ("http://news.example.co.uk/", "example.co.uk"),
            ("http://example.co.uk:8080/", "example.co.uk"),
            ("http://a.b.c.example.com/", "example.com"),
            ("https://alice.github.io/", "alice.github.io"),
            ("http://s3.spam.test:9/", "spam.test"),
            ("http://spam.test/", "spam.test"),
            ("http://co.uk/", "co.uk"),
            ("http://localhost:7700/", "localhost"),
            ("http://127.0.0.1:9/", "127.0.0.1"),
            ("http://10.1.2.3/", "10.1.2.3"),
            ("http://[::1]:8080/", "[::1]"),
        ] {
            assert_eq!(key(url).site(), site, "{url}");
        }
    }

    #[test]
    fn a_stored_key_reads_the_same() {
        let k = HostKey::from_stored("site-a.test:8081");
        assert_eq!((k.as_str(), k.name()), ("site-a.test:8081", "site-a.test"));
        assert_eq!(HostKey::from_stored("").name(), "");
    }
}
