//! Step 1 of the guard (docs/src/security.md, "Outbound fetches: the guard"): the URL text. Scheme
//! first (for other schemes the `url` crate does not normalise the host), then userinfo, then the
//! host.

use url::{Host, Url};

use super::Refusal;

/// A URL that passed the text checks.
#[derive(Clone, Debug)]
pub struct Target {
    pub url: Url,
    pub host: TargetHost,
    /// The port, explicit or the scheme's default.
    pub port: u16,
}

/// The host of a [`Target`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetHost {
    /// A literal address: classified directly, never given to a resolver.
    Ip(std::net::IpAddr),
    /// A name: lower-case, without a trailing dot.
    Name(String),
}

/// The scheme of a URL text, if it starts with one (`scheme:`), lower-cased.
fn leading_scheme(text: &str) -> Option<String> {
    let text = text.trim_start_matches(|c: char| c <= ' ');
    let (scheme, _) = text.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        Some(scheme.to_ascii_lowercase())
    } else {
        None
    }
}

/// Checks a URL's text.
pub fn check_text(text: &str) -> Result<Target, Refusal> {
    if let Some(scheme) = leading_scheme(text) {
        if scheme != "http" && scheme != "https" {
            return Err(Refusal::Scheme(scheme));
        }
    }
    let url = Url::parse(text).map_err(|e| Refusal::BadUrl(e.to_string()))?;
    check_url(url)
}

/// Checks a parsed URL (a redirect's target is checked again from here).
pub fn check_url(url: Url) -> Result<Target, Refusal> {
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(Refusal::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Refusal::Userinfo);
    }
    let host = match url.host() {
        None => return Err(Refusal::NoHost),
        Some(Host::Ipv4(v4)) => TargetHost::Ip(v4.into()),
        Some(Host::Ipv6(v6)) => TargetHost::Ip(v6.into()),
        Some(Host::Domain(d)) => {
            let name = d.trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty() {
                return Err(Refusal::NoHost);
            }
            if name.contains('%') || name.contains(':') {
                return Err(Refusal::BadUrl("invalid host".into()));
            }
            TargetHost::Name(name)
        }
    };
    let Some(port) = url.port_or_known_default() else {
        return Err(Refusal::NoHost);
    };
    Ok(Target { url, host, port })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn scheme_before_anything_else() {
        for (u, s) in [
            ("file:///etc/passwd", "file"),
            ("FILE://localhost/etc/passwd", "file"),
            ("gopher://127.0.0.1:70/_x", "gopher"),
            ("ftp://[::1/", "ftp"),
            ("javascript:alert(1)", "javascript"),
            ("data:text/plain,hi", "data"),
        ] {
            assert_eq!(check_text(u).unwrap_err(), Refusal::Scheme(s.into()), "{u}");
        }
    }

    #[test]
    fn userinfo_and_hosts() {
        assert_eq!(
            check_text("http://a@b.example/").unwrap_err(),
            Refusal::Userinfo
        );
        assert_eq!(
            check_text("http://a:p@b.example/").unwrap_err(),
            Refusal::Userinfo
        );
        assert!(matches!(
            check_text("http://").unwrap_err(),
            Refusal::BadUrl(_) | Refusal::NoHost
        ));
        assert!(matches!(
            check_text("http://[fe80::1%25eth0]/").unwrap_err(),
            Refusal::BadUrl(_)
        ));
        assert!(matches!(
            check_text("no url").unwrap_err(),
            Refusal::BadUrl(_)
        ));
        let t = check_text("http://2130706433/").unwrap();
        assert_eq!(t.host, TargetHost::Ip("127.0.0.1".parse().unwrap()));
        let t = check_text("http://0x7f.1/").unwrap();
        assert_eq!(t.host, TargetHost::Ip("127.0.0.1".parse().unwrap()));
        let t = check_text("https://Example.COM./a").unwrap();
        assert_eq!(t.host, TargetHost::Name("example.com".into()));
        assert_eq!(t.port, 443);
        let t = check_text("http://[::ffff:7f00:1]:8080/").unwrap();
        assert_eq!(t.port, 8080);
    }
}
