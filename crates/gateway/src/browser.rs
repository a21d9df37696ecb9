//! Guards against browsers driving a keyless gateway (docs/src/security.md, "The gateway"): without
//! API keys a web page could otherwise post to `http://127.0.0.1:PORT` (a "simple" cross-origin
//! request needs no preflight) or reach it under its own host name through DNS rebinding.
//!
//! Without keys:
//! - a request with an `Origin` that is neither the gateway's own (`http://` and the request's
//!   `Host`: the web page at `/ui`) nor in `server.allowed_origins` gets 403 `origin_not_allowed`
//!   (clients that are not browsers send no `Origin` and are not affected);
//! - a request whose `Host` is not a loopback name (`localhost`, a loopback IP such as
//!   `127.0.0.1`, or `[::1]`, with or without a port) gets 403 `host_not_allowed`.
//!
//! With keys the key decides and neither header is checked. Every POST body must be
//! `Content-Type: application/json` (415 otherwise), keys or not: a browser cannot send that
//! cross-origin without a preflight, which the gateway never answers.

use std::net::IpAddr;

use axum::http::{header, HeaderMap};

use crate::error::ApiError;

/// Whether a `Host` header value names this machine's loopback interface.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        match rest.split_once(']') {
            Some((ip, tail)) if tail.is_empty() || is_port(tail.strip_prefix(':')) => ip,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(Some(port)) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

fn is_port(text: Option<&str>) -> bool {
    text.is_some_and(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The checks of a request to a gateway without keys.
pub(crate) fn check_keyless(
    headers: &HeaderMap,
    allowed_origins: &[String],
) -> Result<(), ApiError> {
    let mut own_origin = None;
    if let Some(host) = headers.get(header::HOST) {
        match host.to_str() {
            Ok(host) if is_loopback_host(host) => {
                own_origin = Some(format!("http://{}", host.trim().to_ascii_lowercase()));
            }
            _ => return Err(ApiError::host_not_allowed()),
        }
    }
    for origin in headers.get_all(header::ORIGIN) {
        let origin = origin
            .to_str()
            .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
            .unwrap_or_default();
        // The page at `/ui` posts from the gateway's own origin: the loopback name and port the
        // browser addressed, which only this server answers. Another port on the same machine
        // is another origin and stays refused; DNS rebinding cannot get here (the `Host` check).
        let same_origin = own_origin.as_deref() == Some(origin.as_str());
        if !same_origin && !allowed_origins.contains(&origin) {
            return Err(ApiError::origin_not_allowed());
        }
    }
    Ok(())
}

/// A POST body must be declared JSON (`application/json`, parameters such as `charset` allowed).
pub(crate) fn check_json_body(headers: &HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_loopback_host_names_pass() {
        for ok in [
            "localhost",
            "localhost:8080",
            "LocalHost:1",
            "127.0.0.1",
            "127.0.0.1:8082",
            "127.1.2.3:9",
            "[::1]",
            "[::1]:8080",
            "localhost.:80",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "attacker.example",
            "attacker.example:8080",
            "localhost.attacker.example",
            "127.0.0.1.nip.io",
            "10.0.0.1:8080",
            "[::2]:80",
            "[::1]x",
            "localhost:",
            "localhost:80:80",
            "",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn origins_and_content_types() {
        let mut h = HeaderMap::new();
        assert!(check_keyless(&h, &[]).is_ok(), "no Origin: not a browser");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://attacker.example"),
        );
        assert_eq!(check_keyless(&h, &[]).unwrap_err().status, 403);
        assert!(check_keyless(&h, &["http://attacker.example".into()]).is_ok());
        h.insert(header::HOST, HeaderValue::from_static("attacker.example"));
        assert_eq!(
            check_keyless(&h, &["http://attacker.example".into()])
                .unwrap_err()
                .code
                .as_deref(),
            Some("host_not_allowed")
        );
        let mut h = HeaderMap::new();
        assert_eq!(check_json_body(&h).unwrap_err().status, 415);
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(check_json_body(&h).unwrap_err().status, 415);
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Application/JSON; charset=utf-8"),
        );
        assert!(check_json_body(&h).is_ok());
    }

    #[test]
    fn the_gateways_own_origin_passes_and_its_neighbours_do_not() {
        let request = |host: &'static str, origin: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::HOST, HeaderValue::from_static(host));
            h.insert(header::ORIGIN, HeaderValue::from_static(origin));
            check_keyless(&h, &[]).map_err(|e| e.code.unwrap_or_default())
        };
        assert!(request("127.0.0.1:8080", "http://127.0.0.1:8080").is_ok());
        assert!(request("LocalHost:8080", "http://localhost:8080").is_ok());
        assert!(request("[::1]:8080", "http://[::1]:8080").is_ok());
        for (host, origin) in [
            ("127.0.0.1:8080", "http://127.0.0.1:3000"),
            ("127.0.0.1:8080", "http://localhost:8080"),
            ("127.0.0.1:8080", "https://127.0.0.1:8080"),
            ("127.0.0.1:8080", "null"),
        ] {
            assert_eq!(
                request(host, origin).unwrap_err(),
                "origin_not_allowed",
                "{origin}"
            );
        }
        assert_eq!(
            request("attacker.example:8080", "http://attacker.example:8080").unwrap_err(),
            "host_not_allowed"
        );
    }
}
