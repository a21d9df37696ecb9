//! The `[server]` table of `toolbridge.toml`: where the gateway listens and every limit it
//! enforces. Every field has a default (docs/src/security.md, "The gateway"), so an empty table is
//! a safe server.
//!
//! ```toml
//! [server]
//! listen = "127.0.0.1:8080"
//! api_keys_env = "TOOLBRIDGE_API_KEYS"   # comma-separated keys; unset = no auth, loopback only
//! rate_limit_per_minute = 600            # per key (per client IP without auth); 0 = off
//! allowed_origins = []                   # browser origins let in when no keys are set
//! model_map = { "claude-*" = "local" }   # requested names (exact or glob) → configured models
//! ```

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::GatewayError;

/// The gateway's settings. Durations are seconds (fractions allowed), sizes are bytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// The address to listen on, `HOST:PORT` (`localhost:8080` is 127.0.0.1:8080; other host
    /// names are resolved). Without API keys only a loopback address is accepted.
    #[serde(deserialize_with = "listen_from_text")]
    pub listen: SocketAddr,
    /// The environment variable holding the accepted bearer keys, comma-separated. When it is
    /// unset or empty, requests need no key, and the gateway refuses to listen anywhere but on a
    /// loopback address.
    pub api_keys_env: String,
    /// The largest request body; larger ones (chunked too) get 413.
    pub body_limit: usize,
    /// The deepest nesting of arrays and objects in a request body; deeper gets 400.
    pub json_depth_limit: usize,
    /// The largest request head (request line and headers); larger gets 431.
    pub max_header_bytes: usize,
    /// Open client connections at most; further clients wait in the listen backlog.
    pub max_connections: usize,
    /// A client must send its complete request head within this time after connecting (or
    /// after the previous response on a kept-alive connection), else the connection is closed.
    pub header_read_timeout_secs: f64,
    /// A client must send its complete body within this time after the head (408 otherwise);
    /// every route's body, whoever reads it.
    pub body_read_timeout_secs: f64,
    /// An upload (`POST /v1/files`) may take longer than `body_read_timeout_secs` as long as it
    /// keeps arriving: 64 KiB more (or its end) within every period of this length, else 408.
    pub upload_progress_timeout_secs: f64,
    /// A non-streaming request must be answered within this time (504 otherwise); a streaming
    /// one must produce its first event within it.
    pub request_timeout_secs: f64,
    /// The longest silence between two events of a streamed response; then the stream ends
    /// with an error event.
    pub stream_idle_timeout_secs: f64,
    /// Requests per minute per API key (per client IP when auth is off); 0 turns it off.
    pub rate_limit_per_minute: u32,
    /// How many requests may come at once before the per-minute rate applies.
    pub rate_limit_burst: u32,
    /// For non-streaming requests: how often a malformed tool call is re-asked with the retry
    /// message before the visible text is returned as the answer.
    pub malformed_retries: u32,
    /// After a shutdown signal: how long in-flight requests may take to finish.
    pub shutdown_grace_secs: f64,
    /// Whether `GET /metrics` needs a key too (when keys are configured).
    pub metrics_require_auth: bool,
    /// Without API keys: the browser origins (`scheme://host[:port]`) whose requests are let in;
    /// a request from any other `Origin` gets 403 (a web page must not drive a keyless gateway).
    /// Empty by default. With keys the key decides and `Origin` is not checked.
    pub allowed_origins: Vec<String>,
    /// Connection threads (and the main runtime's workers) in `toolbridge serve`; 0 means one
    /// per CPU core. A connection lives on one connection thread with all its requests' work
    /// (see `threads.rs`); new connections go to the threads in turn.
    pub worker_threads: usize,
    /// Requested model names (exact, or globs with `*` and `?`) mapped to configured models, so
    /// clients that send their own ids (Claude Code's `claude-…`) reach a configured model. A
    /// configured name always wins; then an exact key; then the longest matching glob.
    pub model_map: BTreeMap<String, String>,
    /// `[server.responses]`: the Responses API's options.
    pub responses: crate::responses::ResponsesConfig,
    /// `[server.state]`: where responses, conversations, paused runs and files are stored.
    pub state: crate::responses::StateConfig,
    /// `[[server.keys]]`: keys of named users, besides the ones in `api_keys_env` (which act
    /// for users named after a digest of the key).
    pub keys: Vec<crate::auth::KeyEntry>,
    /// `[[server.agents]]`: agents served as Chat Completions models (the server-side loop
    /// for chat-only clients).
    pub agents: Vec<crate::responses::AgentModel>,
    /// Whether images a Messages request gives by URL (`"source": {"type": "url"}`) are
    /// fetched by the gateway — through the same guard as `web_fetch` (public addresses only
    /// unless `[tools.fetch]` allows more; 20 MiB; the type sniffed) — and sent on inline, so
    /// every upstream gets them. `false` refuses them with a 400.
    pub fetch_image_urls: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            api_keys_env: "TOOLBRIDGE_API_KEYS".to_owned(),
            body_limit: 2 << 20,
            json_depth_limit: 64,
            max_header_bytes: 32 << 10,
            max_connections: 1024,
            header_read_timeout_secs: 5.0,
            body_read_timeout_secs: 30.0,
            upload_progress_timeout_secs: 30.0,
            request_timeout_secs: 300.0,
            stream_idle_timeout_secs: 60.0,
            rate_limit_per_minute: 600,
            rate_limit_burst: 60,
            malformed_retries: 2,
            shutdown_grace_secs: 30.0,
            metrics_require_auth: true,
            allowed_origins: Vec::new(),
            worker_threads: 0,
            model_map: BTreeMap::new(),
            responses: crate::responses::ResponsesConfig::default(),
            state: crate::responses::StateConfig::default(),
            agents: Vec::new(),
            keys: Vec::new(),
            fetch_image_urls: true,
        }
    }
}

/// The settings checked and converted for use.
#[derive(Clone, Debug)]
pub(crate) struct Limits {
    pub body_limit: usize,
    pub json_depth_limit: usize,
    pub max_header_bytes: usize,
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub upload_progress_timeout: Duration,
    pub request_timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub malformed_retries: u32,
    pub shutdown_grace: Duration,
    pub metrics_require_auth: bool,
    /// The connection threads (`worker_threads`, 0 read as one per CPU core).
    pub connection_threads: usize,
    /// Normalized: lower case, no trailing `/`.
    pub allowed_origins: Vec<String>,
}

/// Parses a listen address: `IP:PORT`, `[IPv6]:PORT`, or `HOST:PORT` with a host name
/// (`localhost` is 127.0.0.1; other names are resolved, IPv4 preferred).
pub fn parse_listen(text: &str) -> Result<SocketAddr, GatewayError> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    let bad = |why: &str| {
        GatewayError::Config(format!(
            "cannot listen on `{text}`: {why} (expected HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080)"
        ))
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
    if host.is_empty() {
        return Err(bad("no host"));
    }
    if host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.") {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(&format!("the host name does not resolve ({e})")))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| bad("the host name resolves to no address"))
}

fn listen_from_text<'de, D: Deserializer<'de>>(d: D) -> Result<SocketAddr, D::Error> {
    let text = String::deserialize(d)?;
    parse_listen(&text).map_err(serde::de::Error::custom)
}

fn origins(list: &[String]) -> Result<Vec<String>, GatewayError> {
    list.iter()
        .map(|o| {
            let origin = o.trim().trim_end_matches('/').to_ascii_lowercase();
            let rest = origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"));
            match rest {
                Some(host) if !host.is_empty() && !host.contains('/') => Ok(origin),
                _ => Err(GatewayError::Config(format!(
                    "server.allowed_origins: `{o}` is not an origin (expected scheme://host[:port], e.g. http://localhost:3000)"
                ))),
            }
        })
        .collect()
}

fn secs(value: f64, name: &str) -> Result<Duration, GatewayError> {
    if value.is_finite() && value > 0.0 && value < 1e9 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(GatewayError::Config(format!(
            "server.{name} must be a positive number of seconds, not {value}"
        )))
    }
}

fn at_least(value: usize, min: usize, name: &str) -> Result<usize, GatewayError> {
    if value >= min {
        Ok(value)
    } else {
        Err(GatewayError::Config(format!(
            "server.{name} must be at least {min}, not {value}"
        )))
    }
}

impl ServerConfig {
    pub(crate) fn limits(&self) -> Result<Limits, GatewayError> {
        Ok(Limits {
            body_limit: at_least(self.body_limit, 1024, "body_limit")?,
            json_depth_limit: at_least(self.json_depth_limit, 2, "json_depth_limit")?,
            // hyper's own floor for its read buffer.
            max_header_bytes: at_least(self.max_header_bytes, 8192, "max_header_bytes")?,
            max_connections: at_least(self.max_connections, 1, "max_connections")?,
            header_read_timeout: secs(self.header_read_timeout_secs, "header_read_timeout_secs")?,
            body_read_timeout: secs(self.body_read_timeout_secs, "body_read_timeout_secs")?,
            upload_progress_timeout: secs(
                self.upload_progress_timeout_secs,
                "upload_progress_timeout_secs",
            )?,
            request_timeout: secs(self.request_timeout_secs, "request_timeout_secs")?,
            stream_idle_timeout: secs(self.stream_idle_timeout_secs, "stream_idle_timeout_secs")?,
            malformed_retries: self.malformed_retries,
            shutdown_grace: secs(self.shutdown_grace_secs, "shutdown_grace_secs")?,
            metrics_require_auth: self.metrics_require_auth,
            connection_threads: match self.worker_threads {
                0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
                n => n,
            },
            allowed_origins: origins(&self.allowed_origins)?,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn defaults_are_the_documented_ones_and_typos_are_refused() {
        let c: ServerConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, ServerConfig::default());
        assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(c.body_limit, 2 * 1024 * 1024);
        let typo = serde_json::from_str::<ServerConfig>(r#"{"lisen": "0.0.0.0:1"}"#);
        assert!(typo
            .unwrap_err()
            .to_string()
            .contains("unknown field `lisen`"));
        let bad = ServerConfig {
            request_timeout_secs: 0.0,
            ..ServerConfig::default()
        };
        assert!(bad
            .limits()
            .unwrap_err()
            .to_string()
            .contains("server.request_timeout_secs"));
    }

    #[test]
    fn listen_takes_host_names() {
        let c: ServerConfig = serde_json::from_str(r#"{"listen": "localhost:8082"}"#).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:8082");
        assert_eq!(
            parse_listen("LOCALHOST:1").unwrap().to_string(),
            "127.0.0.1:1"
        );
        assert_eq!(parse_listen("[::1]:9").unwrap().to_string(), "[::1]:9");
        assert!(parse_listen("localhost").is_err());
        assert!(parse_listen("localhost:http").is_err());
        let bad = ServerConfig {
            allowed_origins: vec!["http://a.example/path".into()],
            ..ServerConfig::default()
        };
        assert!(bad.limits().is_err());
        let good = ServerConfig {
            allowed_origins: vec!["HTTP://App.Example:3000/".into()],
            ..ServerConfig::default()
        };
        assert_eq!(
            good.limits().unwrap().allowed_origins,
            ["http://app.example:3000"]
        );
    }
}
