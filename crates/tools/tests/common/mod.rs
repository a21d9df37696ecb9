//! Loopback servers and guards for the tests (nothing leaves 127.0.0.1).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use toolbridge_tools::net::{Guard, Policy, Resolver, StaticResolver};

/// Serves a router on 127.0.0.1 (a free port) until the test's runtime ends.
pub async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    addr
}

/// A policy that allows 127.0.0.1 on `port` (loopback is denied by default).
pub fn loopback_policy(port: u16) -> Policy {
    Policy {
        allowed_ports: vec![port],
        allow: vec!["127.0.0.1/32".parse().unwrap()],
        ..Policy::default()
    }
}

/// A guard for a loopback server, with names answered from `names`.
pub fn guard(port: u16, names: &[(&str, &[&str])]) -> Guard {
    let table = names.iter().map(|(h, ips)| {
        (
            (*h).to_owned(),
            ips.iter().map(|ip| ip.parse::<IpAddr>().unwrap()).collect(),
        )
    });
    Guard::new(loopback_policy(port), Arc::new(StaticResolver::new(table)))
}

/// Counts lookups and answers from a table, optionally after a delay.
#[derive(Clone, Default)]
pub struct Counting {
    pub calls: Arc<AtomicUsize>,
    pub table: StaticResolver,
    pub delay: Option<Duration>,
}

impl Counting {
    pub fn count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Resolver for Counting {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.table.resolve(host);
        let delay = self.delay;
        Box::pin(async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            answer.await
        })
    }
}

/// A 1×1 PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// gzip of `data`.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}
