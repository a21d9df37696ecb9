//! The deny table (docs/src/security.md, "Outbound fetches: the guard"): which addresses a fetch
//! may connect to.
//!
//! Rust's std does not call `::127.0.0.1` loopback and `is_global` is unstable, so the table is
//! written out. IPv6 forms that embed an IPv4 address are unwrapped first and the IPv4 address is
//! judged by the IPv4 table:
//!
//! - IPv4-mapped `::ffff:a.b.c.d` (what `IpAddr::to_canonical` unwraps): a connection to it *is* an
//!   IPv4 connection, so a public embedded address is allowed;
//! - NAT64 `64:ff9b::/96` (RFC 6052) and `64:ff9b:1::/48` (RFC 8215, local-use; the IPv4 address
//!   is the last 32 bits): the NAT64 gateway connects to the embedded IPv4 address, so a public one
//!   is allowed (DNS64 networks answer this way for IPv4-only hosts) and a private one is denied;
//! - IPv4-compatible `::a.b.c.d` (deprecated): a private embedded address is reported as such; a
//!   public one is still denied, as everything outside 2000::/3 is;
//! - 6to4 `2002::/16` and Teredo `2001::/32` embed IPv4 addresses too; both prefixes are in the deny
//!   table whatever they embed, so they need no unwrapping.
//!
//! Everything outside `2000::/3` is denied (loopback, unspecified, link-local, unique-local,
//! multicast, the discard prefix, …); inside it `2001::/23` (IETF protocol assignments, Teredo
//! included), `2001:db8::/32` (documentation), `2002::/16` (6to4) and `3fff::/20` (documentation).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The IPv4 deny table.
pub const DENIED_V4: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
];

/// The IPv6 prefixes denied inside `2000::/3` (everything outside it is denied too).
pub const DENIED_V6: &[&str] = &["2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20"];

/// Why an address is denied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denial {
    /// In the built-in table (private, loopback, link-local, reserved, documentation, multicast).
    Reserved,
    /// In the operator's extra `deny` list.
    Operator,
    /// One of this process's own listening addresses (the gateway, its metrics).
    OwnListener,
}

/// An IPv6 address's embedded IPv4 address, for the forms judged by their IPv4 address.
fn embedded_v4(v6: Ipv6Addr) -> Option<(Ipv4Addr, bool)> {
    let s = v6.segments();
    let last32 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    // IPv4-mapped: ::ffff:a.b.c.d — a real IPv4 connection.
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some((v4, true));
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return Some((last32, true));
    }
    // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215); the address is in the last 32 bits.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return Some((last32, true));
    }
    // IPv4-compatible ::a.b.c.d (but not :: and ::1): judged, but never allowed.
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(s[6] == 0 && s[7] <= 1) {
        return Some((last32, false));
    }
    None
}

fn table_v4() -> impl Iterator<Item = Ipv4Net> {
    DENIED_V4.iter().filter_map(|s| s.parse().ok())
}

fn table_v6() -> impl Iterator<Item = Ipv6Net> {
    DENIED_V6.iter().filter_map(|s| s.parse().ok())
}

/// Whether the built-in table denies an IPv4 address.
pub fn reserved_v4(v4: Ipv4Addr) -> bool {
    table_v4().any(|n| n.contains(&v4))
}

/// Whether the built-in table denies an IPv6 address (after unwrapping embedded IPv4).
pub fn reserved_v6(v6: Ipv6Addr) -> bool {
    if let Some((v4, connectable)) = embedded_v4(v6) {
        return reserved_v4(v4) || !connectable;
    }
    let global_unicast: Ipv6Net = match "2000::/3".parse() {
        Ok(n) => n,
        Err(_) => return true,
    };
    !global_unicast.contains(&v6) || table_v6().any(|n| n.contains(&v6))
}

/// The form of an address the policy judges: IPv4-mapped and NAT64 addresses as their IPv4
/// address, others as they are.
pub fn effective(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some((v4, true)) => IpAddr::V4(v4),
            _ => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether `ip` (reached on `port`) may be connected to under a policy.
///
/// Order: this process's own listeners are always denied; then the operator's `deny` list; then
/// the operator's `allow` list; then the built-in table.
pub fn classify(
    ip: IpAddr,
    port: u16,
    allow: &[IpNet],
    deny: &[IpNet],
    own: &[SocketAddr],
) -> Result<(), Denial> {
    let canonical = ip.to_canonical();
    let judged = effective(ip);
    let is_own = own.iter().any(|l| {
        l.port() == port
            && (l.ip().is_unspecified()
                || l.ip().to_canonical() == canonical
                || l.ip().to_canonical() == judged)
    });
    if is_own {
        return Err(Denial::OwnListener);
    }
    let in_list = |list: &[IpNet]| {
        list.iter()
            .any(|n| n.contains(&canonical) || n.contains(&judged))
    };
    if in_list(deny) {
        return Err(Denial::Operator);
    }
    if in_list(allow) {
        return Ok(());
    }
    let reserved = match canonical {
        IpAddr::V4(v4) => reserved_v4(v4),
        IpAddr::V6(v6) => reserved_v6(v6),
    };
    if reserved {
        Err(Denial::Reserved)
    } else {
        Ok(())
    }
}

/// Host names denied by name, before any lookup: `localhost`, `*.localhost` and cloud metadata
/// names. `name` is lower-case without a trailing dot.
pub fn denied_name(name: &str) -> bool {
    const METADATA: &[&str] = &[
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.platformequinix.com",
        "metadata.tencentyun.com",
    ];
    name == "localhost"
        || name.ends_with(".localhost")
        || name == "localhost.localdomain"
        || METADATA.contains(&name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn denied(s: &str) -> bool {
        classify(s.parse().unwrap(), 443, &[], &[], &[]).is_err()
    }

    #[test]
    fn boundaries_of_the_v4_table() {
        for (ip, d) in [
            ("0.255.255.255", true),
            ("1.0.0.0", false),
            ("9.255.255.255", false),
            ("10.0.0.0", true),
            ("10.255.255.255", true),
            ("11.0.0.0", false),
            ("100.63.255.255", false),
            ("100.64.0.0", true),
            ("100.127.255.255", true),
            ("100.128.0.0", false),
            ("126.255.255.255", false),
            ("127.0.0.1", true),
            ("128.0.0.0", false),
            ("169.253.255.255", false),
            ("169.254.169.254", true),
            ("169.255.0.0", false),
            ("172.15.255.255", false),
            ("172.16.0.0", true),
            ("172.31.255.255", true),
            ("172.32.0.0", false),
            ("192.0.0.255", true),
            ("192.0.1.0", false),
            ("192.0.2.1", true),
            ("192.0.3.0", false),
            ("192.88.98.255", false),
            ("192.88.99.1", true),
            ("192.88.100.0", false),
            ("192.167.255.255", false),
            ("192.168.0.0", true),
            ("192.169.0.0", false),
            ("198.17.255.255", false),
            ("198.18.0.0", true),
            ("198.19.255.255", true),
            ("198.20.0.0", false),
            ("198.51.100.7", true),
            ("203.0.113.9", true),
            ("203.0.114.0", false),
            ("223.255.255.255", false),
            ("224.0.0.0", true),
            ("239.255.255.255", true),
            ("240.0.0.0", true),
            ("255.255.255.255", true),
            ("8.8.8.8", false),
            ("93.184.216.34", false),
        ] {
            assert_eq!(denied(ip), d, "{ip}");
        }
    }

    #[test]
    fn boundaries_of_the_v6_table() {
        for (ip, d) in [
            ("::", true),
            ("::1", true),
            ("fe80::1", true),
            ("fc00::1", true),
            ("fd12:3456::1", true),
            ("ff02::1", true),
            ("100::1", true),
            ("1fff:ffff::1", true),
            ("2000::1", false),
            ("2001::1", true),
            ("2001:1ff:ffff::1", true),
            ("2001:200::1", false),
            ("2001:db7:ffff::1", false),
            ("2001:db8::1", true),
            ("2001:db9::1", false),
            ("2002::1", true),
            ("2002:c0a8:0101::1", true),
            ("2003::1", false),
            ("2606:4700:4700::1111", false),
            ("3ffe:ffff::1", false),
            ("3fff::1", true),
            ("3fff:0fff::1", true),
            ("3fff:1000::1", false),
            ("4000::1", true),
        ] {
            assert_eq!(denied(ip), d, "{ip}");
        }
    }

    #[test]
    fn embedded_ipv4_is_unwrapped() {
        for (ip, d) in [
            ("::ffff:127.0.0.1", true),
            ("::ffff:10.1.2.3", true),
            ("::ffff:169.254.169.254", true),
            ("::ffff:8.8.8.8", false),
            ("::127.0.0.1", true),
            ("::8.8.8.8", true),
            ("64:ff9b::127.0.0.1", true),
            ("64:ff9b::a00:1", true),
            ("64:ff9b::8.8.8.8", false),
            ("64:ff9b:1::7f00:1", true),
            ("64:ff9b:1:ffff::c0a8:101", true),
            ("64:ff9b:1::808:808", false),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", true),
        ] {
            assert_eq!(denied(ip), d, "{ip}");
        }
        assert_eq!(
            effective("::ffff:1.2.3.4".parse().unwrap()),
            "1.2.3.4".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn operator_lists_and_own_listeners() {
        let allow: Vec<IpNet> = vec!["10.1.0.0/16".parse().unwrap()];
        let deny: Vec<IpNet> = vec!["8.8.8.0/24".parse().unwrap()];
        let own: Vec<SocketAddr> = vec!["0.0.0.0:8080".parse().unwrap()];
        let c = |s: &str, port| classify(s.parse().unwrap(), port, &allow, &deny, &own);
        assert_eq!(c("10.1.2.3", 443), Ok(()));
        assert_eq!(c("::ffff:10.1.2.3", 443), Ok(()));
        assert_eq!(c("10.2.0.1", 443), Err(Denial::Reserved));
        assert_eq!(c("8.8.8.8", 443), Err(Denial::Operator));
        assert_eq!(c("10.1.2.3", 8080), Err(Denial::OwnListener));
        assert_eq!(c("1.1.1.1", 8080), Err(Denial::OwnListener));
        let own: Vec<SocketAddr> = vec!["127.0.0.1:9000".parse().unwrap()];
        let allow: Vec<IpNet> = vec!["127.0.0.0/8".parse().unwrap()];
        let c = |s: &str, port| classify(s.parse().unwrap(), port, &allow, &[], &own);
        assert_eq!(c("127.0.0.1", 9000), Err(Denial::OwnListener));
        assert_eq!(c("::ffff:127.0.0.1", 9000), Err(Denial::OwnListener));
        assert_eq!(c("127.0.0.1", 9001), Ok(()));
    }

    #[test]
    fn names() {
        for n in [
            "localhost",
            "a.localhost",
            "metadata.google.internal",
            "metadata",
        ] {
            assert!(denied_name(n), "{n}");
        }
        assert!(!denied_name("example.com"));
        assert!(!denied_name("localhost.example.com"));
    }
}
