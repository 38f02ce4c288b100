//! Which addresses a crawler must never be sent to: one table for the fetcher's SSRF guard
//! (every resolved address, every IP-literal URL) and for the URL batches other members send
//! (`weft_p2p::exchange::check_url`). Two tables drift apart, and the gap between them is
//! exactly where a hostile link or peer gets in.
//!
//! IPv6 forms that carry an IPv4 address (mapped, compatible, SIIT, NAT64, 6to4) are judged by
//! the address they carry: `::ffff:127.0.0.1` is loopback however it is spelled. Teredo hides
//! its client address (XORed) behind a relay, so it is refused as a whole.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address, or `None` when it is.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

/// Why a URL host is not public: an IP literal by [`non_public_reason`], `localhost` and its
/// subdomains as loopback (resolvers answer them locally). Other names are judged once
/// resolved.
pub fn host_reason(host: &url::Host<&str>) -> Option<&'static str> {
    match host {
        url::Host::Ipv4(v4) => v4_reason(*v4),
        url::Host::Ipv6(v6) => v6_reason(*v6),
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            (d == "localhost" || d.ends_with(".localhost")).then_some("loopback")
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
    } else if o[0] == 0 {
        Some("unspecified")
    } else if o[0] >= 240 {
        // 240.0.0.0/4 and the broadcast address.
        Some("reserved")
    } else if o[0] == 192 && o[1] == 88 && o[2] == 99 {
        Some("6to4-relay")
    } else if ip.is_documentation() || (o[0] == 198 && (o[1] & 0xfe) == 18) || (o[0] == 192 && o[1] == 0 && o[2] == 0) {
        Some("special-purpose")
    } else {
        None
    }
}

fn v4_at(s: &[u16; 8], i: usize) -> Ipv4Addr {
    Ipv4Addr::new((s[i] >> 8) as u8, s[i] as u8, (s[i + 1] >> 8) as u8, s[i + 1] as u8)
}

fn v6_reason(v6: Ipv6Addr) -> Option<&'static str> {
    let s = v6.segments();
    if v6.is_loopback() {
        return Some("loopback");
    }
    if v6.is_unspecified() {
        return Some("unspecified");
    }
    // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), ::ffff:0:a.b.c.d (SIIT).
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return v4_reason(v4_at(&s, 6));
    }
    if s[..4] == [0; 4] && s[4] == 0xffff && s[5] == 0 {
        return v4_reason(v4_at(&s, 6));
    }
    // NAT64: 64:ff9b::/96, and the local-use 64:ff9b:1::/48.
    if s[0] == 0x0064 && s[1] == 0xff9b {
        return v4_reason(v4_at(&s, 6));
    }
    // 6to4: 2002:a.b.c.d::/48.
    if s[0] == 0x2002 {
        return v4_reason(v4_at(&s, 1));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some("Teredo");
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some("documentation");
    }
    if s[0] == 0x0100 && s[1..4] == [0; 3] {
        return Some("discard-only");
    }
    if v6.is_multicast() {
        Some("multicast")
    } else if s[0] & 0xfe00 == 0xfc00 {
        Some("unique-local")
    } else if s[0] & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if s[0] & 0xffc0 == 0xfec0 {
        Some("site-local")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every class, in each spelling that reaches it.
    const TABLE: &[(&str, Option<&str>)] = &[
        ("127.0.0.1", Some("loopback")),
        ("127.255.0.9", Some("loopback")),
        ("10.1.2.3", Some("private")),
        ("172.16.0.1", Some("private")),
        ("192.168.1.1", Some("private")),
        ("169.254.169.254", Some("link-local")),
        ("100.64.0.1", Some("CGNAT")),
        ("100.127.255.255", Some("CGNAT")),
        ("224.0.0.1", Some("multicast")),
        ("239.255.255.250", Some("multicast")),
        ("0.0.0.0", Some("unspecified")),
        ("0.1.2.3", Some("unspecified")),
        ("240.0.0.1", Some("reserved")),
        ("255.255.255.255", Some("reserved")),
        ("192.88.99.1", Some("6to4-relay")),
        ("192.0.2.1", Some("special-purpose")),
        ("198.18.0.1", Some("special-purpose")),
        ("192.0.0.8", Some("special-purpose")),
        ("::1", Some("loopback")),
        ("::", Some("unspecified")),
        ("fd00::1", Some("unique-local")),
        ("fe80::1", Some("link-local")),
        ("fec0::1", Some("site-local")),
        ("ff02::1", Some("multicast")),
        ("100::1", Some("discard-only")),
        ("2001:db8::1", Some("documentation")),
        ("2001::1", Some("Teredo")),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("Teredo")),
        ("::ffff:127.0.0.1", Some("loopback")),
        ("::ffff:10.0.0.1", Some("private")),
        ("::127.0.0.1", Some("loopback")),
        ("::10.0.0.1", Some("private")),
        ("::ffff:0:127.0.0.1", Some("loopback")),
        ("::ffff:0:169.254.169.254", Some("link-local")),
        ("64:ff9b::a00:1", Some("private")),
        ("64:ff9b::7f00:1", Some("loopback")),
        ("64:ff9b:1::a9fe:a9fe", Some("link-local")),
        ("2002:7f00:1::", Some("loopback")),
        ("2002:c0a8:101::1", Some("private")),
        ("2002:6440:1::", Some("CGNAT")),
        // Public: the same forms around public IPv4 addresses, and plain public addresses.
        ("93.184.216.34", None),
        ("1.1.1.1", None),
        ("100.128.0.1", None),
        ("172.32.0.1", None),
        ("2606:4700::1111", None),
        ("::ffff:1.1.1.1", None),
        ("64:ff9b::101:101", None),
        ("2002:101:101::1", None),
    ];

    #[test]
    fn every_class_of_address_in_every_spelling() {
        for (ip, want) in TABLE {
            let parsed: IpAddr = ip.parse().unwrap();
            assert_eq!(non_public_reason(parsed), *want, "{ip}");
            // The same verdict for a URL host written with the literal.
            let literal = if parsed.is_ipv6() { format!("http://[{ip}]/") } else { format!("http://{ip}/") };
            let url = url::Url::parse(&literal).unwrap();
            assert_eq!(host_reason(&url.host().unwrap()), *want, "{literal}");
        }
    }

    #[test]
    fn localhost_names_are_loopback_and_other_names_wait_for_their_address() {
        for host in ["localhost", "LOCALHOST.", "app.localhost", "a.b.localhost"] {
            let url = url::Url::parse(&format!("http://{host}/")).unwrap();
            assert_eq!(host_reason(&url.host().unwrap()), Some("loopback"), "{host}");
        }
        for host in ["example.com", "localhost.example.com", "notlocalhost"] {
            let url = url::Url::parse(&format!("http://{host}/")).unwrap();
            assert_eq!(host_reason(&url.host().unwrap()), None, "{host}");
        }
    }

    #[test]
    fn url_spellings_of_loopback_are_caught_after_parsing() {
        // The URL parser turns decimal, octal and hex IPv4 spellings into the address itself.
        for u in ["http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://[::ffff:7f00:1]/"] {
            let url = url::Url::parse(u).unwrap();
            assert_eq!(host_reason(&url.host().unwrap()), Some("loopback"), "{u}");
        }
    }
}
