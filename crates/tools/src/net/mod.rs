//! The outbound-fetch guard (docs/src/security.md, "Outbound fetches: the guard"): every URL a
//! model chose goes through here.
//!
//! 1. [`url`]: scheme (http/https) first, then no userinfo, a host, an allowed port.
//! 2. A literal IP is classified directly; a name is denied by name (`localhost`, metadata names)
//!    or resolved by our own [`Resolver`] under a timeout, and **every** answer is classified
//!    ([`classify`]) after unwrapping embedded IPv4; one denied answer refuses the fetch.
//! 3. [`fetch`]: the connection goes only to the checked addresses (`resolve_to_addrs`), proxies
//!    are ignored (`no_proxy`), redirects are off.
//! 4. Redirects are followed by hand (at most 5), each hop checked again from step 1.
//! 5. Deadlines (connect 5 s, total 30 s), a streaming body cap and a decompressed-size cap.
//! 6. This process's own listening addresses are always denied ([`register_own_listener`]).

pub mod classify;
pub mod fetch;
pub mod resolve;
pub mod url;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use toolbridge_protocol::texts;

pub use classify::Denial;
pub use fetch::{FetchError, Fetched};
pub use resolve::{Resolver, StaticResolver, SystemResolver};

use self::url::{Target, TargetHost};

/// Why the guard refuses a URL (before any connection).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{}", texts::net_reason(texts::NET_BAD_URL, &[("<DETAIL>", .0)]))]
    BadUrl(String),
    #[error("{}", texts::net_reason(texts::NET_SCHEME, &[("<SCHEME>", .0)]))]
    Scheme(String),
    #[error("{}", texts::NET_USERINFO)]
    Userinfo,
    #[error("{}", texts::NET_NO_HOST)]
    NoHost,
    #[error("{}", texts::net_reason(texts::NET_PORT, &[("<PORT>", &.port.to_string()), ("<PORTS>", &ports(.allowed))]))]
    Port { port: u16, allowed: Vec<u16> },
    #[error("{}", texts::net_reason(texts::NET_NAME_DENIED, &[("<HOST>", .0)]))]
    Name(String),
    #[error("{}", address_reason(.host.as_deref(), *.ip, *.denial))]
    Address {
        /// The name that resolved to the address (`None` for a literal address).
        host: Option<String>,
        ip: IpAddr,
        denial: Denial,
    },
    #[error("{}", texts::net_reason(texts::NET_DNS_TIMEOUT, &[("<HOST>", .0)]))]
    DnsTimeout(String),
    #[error("{}", texts::net_reason(texts::NET_DNS_FAILED, &[("<HOST>", .0)]))]
    DnsFailed(String),
}

fn ports(allowed: &[u16]) -> String {
    allowed
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn address_reason(host: Option<&str>, ip: IpAddr, denial: Denial) -> String {
    let address = match host {
        Some(h) => format!("{h} ({ip})"),
        None => ip.to_string(),
    };
    let template = match denial {
        Denial::Reserved => texts::NET_ADDRESS_RESERVED,
        Denial::Operator => texts::NET_ADDRESS_POLICY,
        Denial::OwnListener => texts::NET_ADDRESS_OWN,
    };
    texts::net_reason(template, &[("<ADDRESS>", &address)])
}

/// `[tools.fetch]` in `toolbridge.toml`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FetchConfig {
    /// Ports a URL may use (default 80 and 443).
    pub allowed_ports: Option<Vec<u16>>,
    /// Extra allowed networks (CIDR or single addresses), e.g. an intranet the operator trusts.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Extra denied networks; they win over `allow`.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Deadline of one fetch with its redirects and body (default 30).
    pub timeout_secs: Option<u64>,
}

/// The guard's policy.
#[derive(Clone, Debug)]
pub struct Policy {
    pub allowed_ports: Vec<u16>,
    pub allow: Vec<IpNet>,
    pub deny: Vec<IpNet>,
    /// Listening addresses of this process, denied on top of [`register_own_listener`]'s.
    pub own_listeners: Vec<SocketAddr>,
    pub dns_timeout: Duration,
    pub connect_timeout: Duration,
    pub total_timeout: Duration,
    pub max_redirects: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            allowed_ports: vec![80, 443],
            allow: Vec::new(),
            deny: Vec::new(),
            own_listeners: Vec::new(),
            dns_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(30),
            max_redirects: 5,
        }
    }
}

/// A network in a `[tools.fetch]` list: CIDR notation or a single address.
pub fn parse_net(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<IpNet>() {
        return Ok(n.trunc());
    }
    s.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("`{s}` is not a network (CIDR like 10.0.0.0/8) or an address"))
}

impl Policy {
    /// The policy of a `[tools.fetch]` table.
    pub fn from_config(config: &FetchConfig) -> Result<Self, String> {
        let defaults = Policy::default();
        Ok(Policy {
            allowed_ports: config
                .allowed_ports
                .clone()
                .unwrap_or(defaults.allowed_ports),
            allow: config
                .allow
                .iter()
                .map(|s| parse_net(s))
                .collect::<Result<_, _>>()?,
            deny: config
                .deny
                .iter()
                .map(|s| parse_net(s))
                .collect::<Result<_, _>>()?,
            total_timeout: config
                .timeout_secs
                .map(Duration::from_secs)
                .unwrap_or(defaults.total_timeout),
            ..defaults
        })
    }
}

static OWN_LISTENERS: Mutex<Vec<SocketAddr>> = Mutex::new(Vec::new());

/// Records a listening address of this process (the gateway, its metrics): no guard of this
/// process will connect to it, whatever its policy allows. An unspecified address (`0.0.0.0:8080`)
/// denies its port on every address.
pub fn register_own_listener(addr: SocketAddr) {
    let mut list = OWN_LISTENERS.lock().unwrap_or_else(|e| e.into_inner());
    if !list.contains(&addr) {
        list.push(addr);
    }
}

fn own_listeners(policy: &Policy) -> Vec<SocketAddr> {
    let mut list = OWN_LISTENERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    list.extend(policy.own_listeners.iter().copied());
    list
}

/// A URL the guard accepted, with the addresses it may connect to.
#[derive(Clone, Debug)]
pub struct Checked {
    pub url: ::url::Url,
    /// The host name, for a name (`None` for a literal address).
    pub name: Option<String>,
    pub port: u16,
    /// Every address checked; the connection goes to these only.
    pub addrs: Vec<IpAddr>,
}

/// The guard: a policy and a resolver.
#[derive(Clone)]
pub struct Guard {
    policy: Arc<Policy>,
    resolver: Arc<dyn Resolver>,
}

impl Guard {
    pub fn new(policy: Policy, resolver: Arc<dyn Resolver>) -> Self {
        Guard {
            policy: Arc::new(policy),
            resolver,
        }
    }

    /// The default policy with the system resolver.
    pub fn system(policy: Policy) -> Self {
        Guard::new(policy, Arc::new(SystemResolver))
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Whether the guard would fetch `text`, without fetching it.
    pub async fn check(&self, text: &str) -> Result<Checked, Refusal> {
        let target = url::check_text(text)?;
        self.check_target(target).await
    }

    /// Steps 1 (port) and 2 for a URL that passed the text checks.
    pub async fn check_target(&self, target: Target) -> Result<Checked, Refusal> {
        if !self.policy.allowed_ports.contains(&target.port) {
            return Err(Refusal::Port {
                port: target.port,
                allowed: self.policy.allowed_ports.clone(),
            });
        }
        let own = own_listeners(&self.policy);
        let judge = |host: Option<&str>, ip: IpAddr| {
            classify::classify(ip, target.port, &self.policy.allow, &self.policy.deny, &own)
                .map_err(|denial| Refusal::Address {
                    host: host.map(str::to_owned),
                    ip,
                    denial,
                })
        };
        match &target.host {
            TargetHost::Ip(ip) => {
                judge(None, *ip)?;
                Ok(Checked {
                    url: target.url.clone(),
                    name: None,
                    port: target.port,
                    addrs: vec![*ip],
                })
            }
            TargetHost::Name(name) => {
                if classify::denied_name(name) {
                    return Err(Refusal::Name(name.clone()));
                }
                let lookup = self.resolver.resolve(name);
                let addrs = match tokio::time::timeout(self.policy.dns_timeout, lookup).await {
                    Err(_) => return Err(Refusal::DnsTimeout(name.clone())),
                    Ok(Err(_)) => return Err(Refusal::DnsFailed(name.clone())),
                    Ok(Ok(addrs)) if addrs.is_empty() => {
                        return Err(Refusal::DnsFailed(name.clone()))
                    }
                    Ok(Ok(addrs)) => addrs,
                };
                for ip in &addrs {
                    judge(Some(name), *ip)?;
                }
                Ok(Checked {
                    url: target.url.clone(),
                    name: Some(name.clone()),
                    port: target.port,
                    addrs,
                })
            }
        }
    }
}
