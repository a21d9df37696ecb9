//! The outbound-fetch guard, docs/src/security.md, "Outbound fetches: the guard"'s checklist:
//! literal IPs never reach the resolver and are still blocked; redirect hops re-checked; scheme
//! before host; every DNS answer classified; DNS timeout; body, gzip-bomb and deadline limits.
//! Loopback only: names come from stub resolvers and the servers listen on 127.0.0.1.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use common::{guard, gzip, serve, Counting};
use toolbridge_tools::net::{Denial, FetchError, Guard, Policy, Refusal, StaticResolver};

fn redirect(to: String) -> Response {
    (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
}

#[tokio::test]
async fn literal_ips_never_reach_the_resolver_and_are_still_blocked() {
    let resolver = Counting::default();
    let guard = Guard::new(Policy::default(), Arc::new(resolver.clone()));
    for url in [
        "http://127.0.0.1/",
        "http://2130706433/",
        "http://0x7f.0.0.1/",
        "http://0177.0.0.1/",
        "http://127.1/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::127.0.0.1]/",
        "http://[64:ff9b::127.0.0.1]/",
        "http://[64:ff9b:1::a00:1]/",
        "http://[2002:7f00:1::]/",
        "http://[fe80::1]/",
        "http://0.0.0.0/",
        "https://[fd00::1]/",
    ] {
        let e = guard.check(url).await.unwrap_err();
        assert!(
            matches!(
                e,
                Refusal::Address {
                    host: None,
                    denial: Denial::Reserved,
                    ..
                }
            ),
            "{url}: {e:?}"
        );
        // And fetching is refused the same way, before any connection.
        let e = guard.fetch(url, "*/*", 1024).await.unwrap_err();
        assert!(
            matches!(e, FetchError::Refused(Refusal::Address { .. })),
            "{url}: {e:?}"
        );
    }
    assert_eq!(
        resolver.count(),
        0,
        "a literal address reached the resolver"
    );
    // A public literal passes without a lookup too.
    let checked = guard.check("https://93.184.216.34/").await.unwrap();
    assert_eq!(
        checked.addrs,
        vec!["93.184.216.34".parse::<IpAddr>().unwrap()]
    );
    assert_eq!(resolver.count(), 0);
}

#[tokio::test]
async fn every_answer_of_a_name_is_classified() {
    let table = StaticResolver::new([
        (
            "mixed.test".to_owned(),
            vec![
                "93.184.216.34".parse().unwrap(),
                "10.1.2.3".parse().unwrap(),
            ],
        ),
        (
            "mapped.test".to_owned(),
            vec!["::ffff:192.168.1.1".parse().unwrap()],
        ),
        (
            "nat64.test".to_owned(),
            vec!["64:ff9b::a9fe:a9fe".parse().unwrap()],
        ),
        (
            "public.test".to_owned(),
            vec![
                "93.184.216.34".parse().unwrap(),
                "2606:2800:220:1::1".parse().unwrap(),
            ],
        ),
    ]);
    let resolver = Counting {
        table,
        ..Counting::default()
    };
    let guard = Guard::new(Policy::default(), Arc::new(resolver.clone()));
    for (url, ip) in [
        ("http://mixed.test/", "10.1.2.3"),
        ("http://MAPPED.test./", "::ffff:192.168.1.1"),
        ("http://nat64.test/", "64:ff9b::a9fe:a9fe"),
    ] {
        match guard.check(url).await.unwrap_err() {
            Refusal::Address {
                host: Some(_),
                ip: got,
                denial: Denial::Reserved,
            } => {
                assert_eq!(got, ip.parse::<IpAddr>().unwrap(), "{url}")
            }
            other => panic!("{url}: {other:?}"),
        }
    }
    let ok = guard.check("https://public.test/x").await.unwrap();
    assert_eq!(ok.addrs.len(), 2);
    assert_eq!(ok.name.as_deref(), Some("public.test"));
    // Denied by name, without a lookup.
    let before = resolver.count();
    for url in [
        "http://localhost/",
        "http://a.b.localhost/",
        "http://metadata.google.internal/",
    ] {
        assert!(
            matches!(guard.check(url).await.unwrap_err(), Refusal::Name(_)),
            "{url}"
        );
    }
    assert_eq!(resolver.count(), before);
    assert!(matches!(
        guard.check("http://unknown.test/").await.unwrap_err(),
        Refusal::DnsFailed(_)
    ));
    // The refusal text names the host and the address.
    let text = guard
        .check("http://mixed.test/")
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        text,
        "mixed.test (10.1.2.3) is an internal or reserved address"
    );
}

#[tokio::test]
async fn scheme_before_host_and_userinfo_and_ports() {
    let resolver = Counting::default();
    let guard = Guard::new(Policy::default(), Arc::new(resolver.clone()));
    for url in [
        "file:///etc/passwd",
        "file://127.0.0.1/etc/passwd",
        "gopher://localhost:70/",
        "ftp://10.0.0.1/",
        "dict://[::1]:11211/",
    ] {
        assert!(
            matches!(guard.check(url).await.unwrap_err(), Refusal::Scheme(_)),
            "{url}"
        );
    }
    assert_eq!(
        guard.check("http://user@example.test/").await.unwrap_err(),
        Refusal::Userinfo
    );
    assert_eq!(
        guard.check("http://:pw@example.test/").await.unwrap_err(),
        Refusal::Userinfo
    );
    assert!(matches!(
        guard.check("http://93.184.216.34:8080/").await.unwrap_err(),
        Refusal::Port { port: 8080, .. }
    ));
    assert_eq!(resolver.count(), 0);
}

#[tokio::test]
async fn dns_lookups_time_out() {
    let table = StaticResolver::new([(
        "slow.test".to_owned(),
        vec!["93.184.216.34".parse().unwrap()],
    )]);
    let resolver = Counting {
        table,
        delay: Some(Duration::from_secs(30)),
        ..Counting::default()
    };
    let policy = Policy {
        dns_timeout: Duration::from_millis(200),
        ..Policy::default()
    };
    let guard = Guard::new(policy, Arc::new(resolver));
    let started = std::time::Instant::now();
    assert_eq!(
        guard.check("http://slow.test/").await.unwrap_err(),
        Refusal::DnsTimeout("slow.test".into())
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(Policy::default().dns_timeout, Duration::from_secs(5));
}

#[tokio::test]
async fn redirect_hops_are_checked_again() {
    let router = Router::new()
        .route(
            "/page",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "hello") }),
        )
        .route("/to-page", get(|| async { redirect("/page".into()) }))
        .route(
            "/to-other-loopback",
            get(|| async { redirect("http://127.0.0.2/".into()) }),
        )
        .route(
            "/to-internal-name",
            get(|| async { redirect("http://intranet.test/".into()) }),
        )
        .route(
            "/to-file",
            get(|| async { redirect("file:///etc/passwd".into()) }),
        )
        .route(
            "/to-userinfo",
            get(|| async { redirect("http://u:p@example.test/".into()) }),
        )
        .route(
            "/to-metadata",
            get(|| async { redirect("http://169.254.169.254/latest/".into()) }),
        )
        .route("/loop", get(|| async { redirect("/loop".into()) }));
    let addr = serve(router).await;
    let port = addr.port();
    let names = StaticResolver::new([
        (
            "intranet.test".to_owned(),
            vec!["10.0.0.5".parse().unwrap()],
        ),
        ("site.test".to_owned(), vec!["127.0.0.1".parse().unwrap()]),
    ]);
    // Port 80 too, so that the hops below are refused for their addresses, not their port.
    let mut policy = common::loopback_policy(port);
    policy.allowed_ports.push(80);
    let g = Guard::new(policy, Arc::new(names));
    let base = format!("http://127.0.0.1:{port}");

    let ok = g
        .fetch(&format!("{base}/to-page"), "*/*", 1024)
        .await
        .unwrap();
    assert_eq!(ok.body, b"hello");
    assert_eq!(ok.redirects, 1);
    assert_eq!(ok.url.path(), "/page");
    // A name resolved by the stub to the allowed loopback address: connected to that address only.
    let ok = g
        .fetch(&format!("http://site.test:{port}/page"), "*/*", 1024)
        .await
        .unwrap();
    assert_eq!(ok.body, b"hello");

    for (path, want) in [
        (
            "/to-other-loopback",
            "127.0.0.2 is an internal or reserved address",
        ),
        (
            "/to-internal-name",
            "intranet.test (10.0.0.5) is an internal or reserved address",
        ),
        (
            "/to-file",
            "only http and https URLs can be fetched, not file",
        ),
        (
            "/to-userinfo",
            "URLs with a user name or password are not fetched",
        ),
        (
            "/to-metadata",
            "169.254.169.254 is an internal or reserved address",
        ),
        ("/loop", "it redirected more than 5 times"),
    ] {
        let e = g
            .fetch(&format!("{base}{path}"), "*/*", 1024)
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), want, "{path}");
    }
}

#[tokio::test]
async fn own_listening_addresses_are_denied() {
    let addr = serve(Router::new().route("/", get(|| async { "gateway" }))).await;
    let mut policy = common::loopback_policy(addr.port());
    policy.own_listeners = vec![addr];
    let g = Guard::new(policy, Arc::new(StaticResolver::default()));
    let e = g
        .fetch(&format!("http://{addr}/"), "*/*", 1024)
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            FetchError::Refused(Refusal::Address {
                denial: Denial::OwnListener,
                ..
            })
        ),
        "{e:?}"
    );
}

#[tokio::test]
async fn bodies_are_capped_while_streaming_and_after_decompression() {
    let big = vec![b'a'; 64 * 1024];
    let bomb = gzip(&vec![0u8; 8 * 1024 * 1024]);
    assert!(bomb.len() < 64 * 1024);
    let small = gzip(b"compressed hello");
    let router = Router::new()
        .route(
            "/big",
            get({
                let big = big.clone();
                move || async move { big }
            }),
        )
        .route(
            "/chunked",
            get(|| async {
                let chunks = futures::stream::iter(
                    (0..100).map(|_| Ok::<_, std::io::Error>(vec![b'b'; 4096])),
                );
                Body::from_stream(chunks)
            }),
        )
        .route(
            "/bomb",
            get(move || async move { ([(header::CONTENT_ENCODING, "gzip")], bomb) }),
        )
        .route(
            "/gz",
            get(move || async move { ([(header::CONTENT_ENCODING, "gzip")], small) }),
        )
        .route(
            "/br",
            get(|| async { ([(header::CONTENT_ENCODING, "br")], "xx") }),
        );
    let addr = serve(router).await;
    let g = guard(addr.port(), &[]);
    let url = |p: &str| format!("http://{addr}{p}");
    assert_eq!(
        g.fetch(&url("/big"), "*/*", 1000).await.unwrap_err(),
        FetchError::TooLarge(1000)
    );
    assert_eq!(
        g.fetch(&url("/big"), "*/*", 64 * 1024)
            .await
            .unwrap()
            .body
            .len(),
        64 * 1024
    );
    assert_eq!(
        g.fetch(&url("/chunked"), "*/*", 10_000).await.unwrap_err(),
        FetchError::TooLarge(10_000)
    );
    assert_eq!(
        g.fetch(&url("/bomb"), "*/*", 1024 * 1024)
            .await
            .unwrap_err(),
        FetchError::TooLarge(1024 * 1024)
    );
    assert_eq!(
        g.fetch(&url("/gz"), "*/*", 1024).await.unwrap().body,
        b"compressed hello"
    );
    assert!(matches!(
        g.fetch(&url("/br"), "*/*", 1024).await.unwrap_err(),
        FetchError::Encoding(_)
    ));
}

#[tokio::test]
async fn the_total_deadline_holds_against_a_stalling_server() {
    let router = Router::new().route(
        "/stall",
        get(|| async {
            let first = futures::stream::iter([Ok::<_, std::io::Error>(b"<html>".to_vec())]);
            Body::from_stream(futures::StreamExt::chain(first, futures::stream::pending()))
        }),
    );
    let addr = serve(router).await;
    let mut policy = common::loopback_policy(addr.port());
    policy.total_timeout = Duration::from_millis(800);
    let g = Guard::new(policy, Arc::new(StaticResolver::default()));
    let started = std::time::Instant::now();
    let e = g
        .fetch(&format!("http://{addr}/stall"), "*/*", 1024)
        .await
        .unwrap_err();
    assert!(matches!(e, FetchError::Deadline(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(Policy::default().total_timeout, Duration::from_secs(30));
    assert_eq!(Policy::default().connect_timeout, Duration::from_secs(5));
}

#[tokio::test]
async fn status_errors_are_reported() {
    let addr = serve(Router::new().route("/gone", get(|| async { StatusCode::GONE }))).await;
    let g = guard(addr.port(), &[]);
    assert_eq!(
        g.fetch(&format!("http://{addr}/gone"), "*/*", 10)
            .await
            .unwrap_err(),
        FetchError::Status(410)
    );
}
