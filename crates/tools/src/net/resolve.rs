//! Name resolution for the guard: an injectable [`Resolver`], so tests run offline.
//!
//! The guard bounds every lookup with its own timeout (5 s by default), whatever the resolver.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use futures::future::BoxFuture;

/// Answers a host name with addresses.
pub trait Resolver: Send + Sync + 'static {
    /// All addresses of `host` (lower-case, no trailing dot). An empty answer is a failure.
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo` through tokio's blocking pool).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
            ips.dedup();
            Ok(ips)
        })
    }
}

/// A fixed table of answers (`toolbridge net check --resolve`, tests). Unknown names fail.
#[derive(Clone, Debug, Default)]
pub struct StaticResolver {
    table: Arc<HashMap<String, Vec<IpAddr>>>,
}

impl StaticResolver {
    pub fn new(entries: impl IntoIterator<Item = (String, Vec<IpAddr>)>) -> Self {
        StaticResolver {
            table: Arc::new(
                entries
                    .into_iter()
                    .map(|(h, ips)| (h.trim_end_matches('.').to_ascii_lowercase(), ips))
                    .collect(),
            ),
        }
    }
}

impl Resolver for StaticResolver {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let answer = self.table.get(host).cloned();
        Box::pin(async move {
            answer.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "unknown host"))
        })
    }
}

/// Answers from a table first, then from another resolver (`net check --resolve` on top of the
/// system resolver).
pub struct Overlay<R> {
    pub table: StaticResolver,
    pub fallback: R,
}

impl<R: Resolver> Resolver for Overlay<R> {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        if self.table.table.contains_key(host) {
            self.table.resolve(host)
        } else {
            self.fallback.resolve(host)
        }
    }
}
