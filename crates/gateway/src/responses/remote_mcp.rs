//! Remote MCP servers a request names by `server_url` (the Responses API's `mcp` tool): only URLs
//! the operator allow-listed (`[server.responses] remote_mcp_urls`) are connected, each through the
//! outbound guard (docs/src/security.md, "Outbound fetches: the guard": every address the host
//! resolves to is checked, and the connection goes only to those addresses, with no proxy and no
//! redirect). A server is connected for one request: its tools join that request's run and the
//! connection closes when the run's agent is dropped. The request's `headers` and `authorization`
//! go to that server only; they are never logged, stored or echoed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use toolbridge_mcp::{connect_remote, McpServerConfig, McpTool};
use toolbridge_tools::net::{Guard, Policy};
use url::Url;

use super::request::Hosted;
use crate::error::ApiError;

/// At most this many remote servers in one request: each is a connection made before the run.
pub(crate) const MAX_REMOTE_SERVERS: usize = 8;
/// At most this many headers for one remote server, each value at most [`MAX_HEADER_BYTES`].
const MAX_HEADERS: usize = 32;
const MAX_HEADER_BYTES: usize = 8 << 10;

/// Headers the MCP transport sets itself: a request may not replace them.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "accept",
    "connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// The headers a request sends to its remote server (`headers`, and `authorization` as a
/// bearer token). Values are marked sensitive, and `Debug` shows names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct RemoteHeaders(Vec<(HeaderName, HeaderValue)>);

impl std::fmt::Debug for RemoteHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name.as_str()))
            .finish()
    }
}

impl RemoteHeaders {
    /// `headers` (an object of strings) and `authorization` of the `mcp` tool at `param`.
    pub(crate) fn decode(
        param: &str,
        headers: Option<&serde_json::Value>,
        authorization: Option<&serde_json::Value>,
    ) -> Result<Self, ApiError> {
        let bad = |what: String| ApiError::bad_param(param.to_owned(), what);
        let mut out = Vec::new();
        match headers {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Object(map)) => {
                if map.len() > MAX_HEADERS {
                    return Err(bad(format!(
                        "Too many headers for an MCP server (at most {MAX_HEADERS})."
                    )));
                }
                for (name, value) in map {
                    let Some(value) = value.as_str() else {
                        return Err(bad(format!(
                            "Header '{name}' of an MCP server must be a string."
                        )));
                    };
                    out.push(header(name, value).map_err(bad)?);
                }
            }
            Some(_) => return Err(bad("'headers' of an MCP tool must be an object.".into())),
        }
        match authorization {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::String(token)) => {
                out.retain(|(name, _)| name != reqwest::header::AUTHORIZATION);
                out.push(header("authorization", &format!("Bearer {token}")).map_err(bad)?);
            }
            Some(_) => {
                return Err(bad(
                    "'authorization' of an MCP tool must be a string.".into()
                ))
            }
        }
        Ok(RemoteHeaders(out))
    }

    fn to_map(&self) -> HeaderMap {
        self.0.iter().cloned().collect()
    }
}

fn header(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let parsed = HeaderName::try_from(name)
        .map_err(|_| format!("'{name}' is not a valid HTTP header name."))?;
    if RESERVED_HEADERS.contains(&parsed.as_str()) {
        return Err(format!(
            "Header '{name}' is set by the MCP transport and cannot be given."
        ));
    }
    if value.len() > MAX_HEADER_BYTES {
        return Err(format!(
            "Header '{name}' is longer than {MAX_HEADER_BYTES} bytes."
        ));
    }
    // The value is left out of the message: it may be a secret.
    let mut value = HeaderValue::try_from(value)
        .map_err(|_| format!("Header '{name}' has a value that is not valid in HTTP."))?;
    value.set_sensitive(true);
    Ok((parsed, value))
}

/// An allow-list entry: scheme, host and port must equal the entry's, and the path must be the
/// entry's path or lie under it (`https://mcp.example.com/v1` allows `/v1` and `/v1/…`, not
/// `/v10`).
#[derive(Clone, Debug)]
struct Allowed {
    url: Url,
}

impl Allowed {
    fn parse(entry: &str) -> Result<Self, String> {
        let url = Url::parse(entry.trim())
            .map_err(|e| format!("remote_mcp_urls: `{entry}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "remote_mcp_urls: `{entry}` must be an http or https URL"
            ));
        }
        if url.host_str().is_none() {
            return Err(format!("remote_mcp_urls: `{entry}` has no host"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "remote_mcp_urls: `{entry}` may not hold credentials (a request gives them in `headers` or `authorization`)"
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "remote_mcp_urls: `{entry}` may not have a query or a fragment"
            ));
        }
        Ok(Allowed { url })
    }

    fn port(&self) -> u16 {
        self.url.port_or_known_default().unwrap_or(443)
    }

    fn allows(&self, url: &Url) -> bool {
        if url.scheme() != self.url.scheme()
            || url.host() != self.url.host()
            || url.port_or_known_default() != self.url.port_or_known_default()
        {
            return false;
        }
        let base = self.url.path();
        let path = url.path();
        path == base
            || base.ends_with('/') && path.starts_with(base)
            || path
                .strip_prefix(base)
                .is_some_and(|rest| rest.starts_with('/'))
    }
}

/// The allow-list and the guard its servers are reached through (`None` in the state when the
/// list is empty: every `server_url` a request names is left out).
pub(crate) struct RemoteMcp {
    allowed: Vec<Allowed>,
    guard: Guard,
    start_timeout: Duration,
}

impl RemoteMcp {
    /// The allow-list of `entries` under `policy` (the operator's `[tools.fetch]` networks);
    /// the ports of the entries are allowed on top of the policy's.
    pub(crate) fn new(
        entries: &[String],
        mut policy: Policy,
        start_timeout: Duration,
    ) -> Result<Option<Self>, String> {
        if entries.is_empty() {
            return Ok(None);
        }
        let allowed = entries
            .iter()
            .map(|e| Allowed::parse(e))
            .collect::<Result<Vec<_>, _>>()?;
        for entry in &allowed {
            if !policy.allowed_ports.contains(&entry.port()) {
                policy.allowed_ports.push(entry.port());
            }
        }
        Ok(Some(RemoteMcp {
            allowed,
            guard: Guard::system(policy),
            start_timeout,
        }))
    }

    /// Uses `guard` (its resolver and policy) instead of the system one (tests).
    #[cfg(test)]
    fn with_guard(mut self, guard: Guard) -> Self {
        self.guard = guard;
        self
    }

    fn allows(&self, url: &Url) -> bool {
        self.allowed.iter().any(|a| a.allows(url))
    }

    /// Checks `url` against the allow-list and the guard, then connects and lists the tools.
    /// The error is the reason shown to the client; the details go to the log.
    async fn connect(
        &self,
        label: &str,
        url: &str,
        headers: &RemoteHeaders,
    ) -> Result<Vec<Arc<McpTool>>, String> {
        let parsed = Url::parse(url).map_err(|_| "its server_url is not a URL".to_owned())?;
        if !self.allows(&parsed) {
            return Err(NOT_ALLOWED.to_owned());
        }
        let checked = self.guard.check(url).await.map_err(|refusal| {
            tracing::warn!(server = label, %url, reason = %refusal, "remote MCP server refused by the outbound guard");
            format!("the outbound guard refused it: {refusal}")
        })?;
        let client = self
            .guard
            .pinned_client(&checked)
            .default_headers(headers.to_map())
            .build()
            .map_err(|e| {
                tracing::error!(server = label, error = %e, "cannot build a remote MCP client");
                CONNECT_FAILED.to_owned()
            })?;
        let mut config = McpServerConfig::http(label, url);
        config.start_timeout_secs = Some(self.start_timeout.as_secs().max(1));
        connect_remote(config, client).await.map_err(|e| {
            tracing::warn!(server = label, %url, error = %e, "remote MCP server could not be connected");
            CONNECT_FAILED.to_owned()
        })
    }
}

const NOT_ALLOWED: &str = "its server_url is not allow-listed in [server.responses] remote_mcp_urls; configure the server in [[mcp_servers]] or allow-list its URL";
const CONNECT_FAILED: &str = "the remote MCP server could not be connected (see the server log)";

/// The remote servers of one request: the tools of each label connected (each tool holds its
/// server's connection, which closes when the run's tools are dropped), and the reason each
/// other one was left out.
#[derive(Default)]
pub(crate) struct Connected {
    pub tools: HashMap<String, Vec<Arc<McpTool>>>,
    pub failed: HashMap<String, String>,
}

/// Connects, at once, the request's `mcp` tools that give a `server_url` and whose label no
/// configured server has (`configured`: whether a label has configured tools).
pub(crate) async fn connect_all(
    remote: Option<&RemoteMcp>,
    hosted: &[Hosted],
    configured: impl Fn(&str) -> bool,
) -> Connected {
    let wanted: Vec<(&str, &str, &RemoteHeaders)> = hosted
        .iter()
        .filter_map(|h| match h {
            Hosted::Mcp {
                label,
                url: Some(url),
                headers,
                ..
            } if !configured(label) => Some((label.as_str(), url.as_str(), headers)),
            _ => None,
        })
        .collect();
    let mut connected = Connected::default();
    let Some(remote) = remote else {
        for (label, _, _) in wanted {
            connected
                .failed
                .insert(label.to_owned(), NOT_ALLOWED.to_owned());
        }
        return connected;
    };
    let attempts = wanted.iter().map(|(label, url, headers)| async move {
        (*label, remote.connect(label, url, headers).await)
    });
    for (label, outcome) in futures::future::join_all(attempts).await {
        match outcome {
            Ok(tools) => {
                connected.tools.insert(label.to_owned(), tools);
            }
            Err(why) => {
                connected.failed.insert(label.to_owned(), why);
            }
        }
    }
    connected
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use toolbridge_tools::net::StaticResolver;

    use super::*;

    fn list(entries: &[&str]) -> RemoteMcp {
        let entries: Vec<String> = entries.iter().map(|s| (*s).to_owned()).collect();
        RemoteMcp::new(&entries, Policy::default(), Duration::from_secs(5))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn urls_match_on_origin_and_path_prefix() {
        let remote = list(&[
            "https://mcp.example.com/v1",
            "http://tools.example.org:8080/",
        ]);
        for ok in [
            "https://mcp.example.com/v1",
            "https://MCP.example.com/v1/mcp",
            "https://mcp.example.com:443/v1/x?y=1",
            "http://tools.example.org:8080/anything",
        ] {
            assert!(remote.allows(&Url::parse(ok).unwrap()), "{ok}");
        }
        for bad in [
            "https://mcp.example.com/v10",
            "https://mcp.example.com/",
            "http://mcp.example.com/v1",
            "https://mcp.example.com:8443/v1",
            "https://evil.mcp.example.com/v1",
            "https://mcp.example.com.evil.net/v1",
            "http://tools.example.org/anything",
            "https://mcp.example.com/v1/../admin",
        ] {
            assert!(!remote.allows(&Url::parse(bad).unwrap()), "{bad}");
        }
    }

    #[test]
    fn bad_entries_are_configuration_errors() {
        for bad in [
            "mcp.example.com",
            "ftp://mcp.example.com/",
            "https://user:pw@mcp.example.com/",
            "https://mcp.example.com/?q=1",
        ] {
            let err = RemoteMcp::new(&[bad.to_owned()], Policy::default(), Duration::from_secs(5))
                .err()
                .unwrap_or_else(|| panic!("{bad} accepted"));
            assert!(err.contains("remote_mcp_urls"), "{err}");
        }
        assert!(
            RemoteMcp::new(&[], Policy::default(), Duration::from_secs(5))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn entry_ports_are_allowed_by_the_guard() {
        let remote = list(&["http://tools.example.org:8080/"]);
        assert!(remote.guard.policy().allowed_ports.contains(&8080));
        assert!(remote.guard.policy().allowed_ports.contains(&443));
    }

    #[tokio::test]
    async fn an_allowed_name_that_resolves_to_a_private_address_is_refused() {
        let resolver = StaticResolver::new([(
            "mcp.example.com".to_owned(),
            vec!["10.0.0.7".parse::<IpAddr>().unwrap()],
        )]);
        let remote = list(&["https://mcp.example.com/"]);
        let guard = Guard::new(remote.guard.policy().clone(), Arc::new(resolver));
        let remote = remote.with_guard(guard);
        let err = remote
            .connect(
                "x",
                "https://mcp.example.com/mcp",
                &RemoteHeaders::default(),
            )
            .await
            .err()
            .unwrap();
        assert!(err.contains("outbound guard"), "{err}");
        let err = remote
            .connect(
                "x",
                "https://other.example.com/mcp",
                &RemoteHeaders::default(),
            )
            .await
            .err()
            .unwrap();
        assert_eq!(err, NOT_ALLOWED);
    }

    #[tokio::test]
    async fn an_allowed_server_that_does_not_answer_is_a_connect_failure() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{closed}/mcp");
        let policy = Policy {
            allow: vec![toolbridge_tools::net::parse_net("127.0.0.1").unwrap()],
            ..Policy::default()
        };
        let remote = RemoteMcp::new(std::slice::from_ref(&url), policy, Duration::from_secs(5))
            .unwrap()
            .unwrap();
        let err = remote
            .connect("x", &url, &RemoteHeaders::default())
            .await
            .err()
            .unwrap();
        assert_eq!(err, CONNECT_FAILED);
    }

    #[test]
    fn headers_are_checked_and_their_values_never_shown() {
        let h = RemoteHeaders::decode(
            "tools[0]",
            Some(&serde_json::json!({"X-Api-Key": "s3cret"})),
            Some(&serde_json::json!("tok")),
        )
        .unwrap();
        let shown = format!("{h:?}");
        assert!(
            !shown.contains("s3cret") && !shown.contains("tok"),
            "{shown}"
        );
        let map = h.to_map();
        assert_eq!(map["authorization"], "Bearer tok");
        assert_eq!(map["x-api-key"], "s3cret");
        for (headers, auth) in [
            (serde_json::json!({"Host": "x"}), None),
            (serde_json::json!({"Mcp-Session-Id": "x"}), None),
            (serde_json::json!({"X-A": 1}), None),
            (serde_json::json!({"bad name": "x"}), None),
            (serde_json::json!({"X-A": "line\nbreak"}), None),
            (serde_json::json!(["X-A"]), None),
            (serde_json::json!({}), Some(serde_json::json!(5))),
        ] {
            let err = RemoteHeaders::decode("tools[0]", Some(&headers), auth.as_ref())
                .err()
                .unwrap_or_else(|| panic!("{headers} accepted"));
            let text = format!("{err:?}");
            assert!(text.contains("tools[0]"), "{text}");
        }
    }
}
