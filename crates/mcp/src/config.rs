//! The `[[mcp_servers]]` tables of `toolbridge.toml` and the `--mcp NAME=COMMAND ARGS…` flag.

use std::collections::{BTreeMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// One MCP server: either a command run over stdio, or a streamable HTTP URL.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Part of every tool name (`mcp__<name>__<tool>`): letters, digits, `_` and `-` only.
    pub name: String,
    /// stdio: the program to run.
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables for the server, besides the few it inherits
    /// ([`INHERITED_ENV`]). `${VAR}` in a value is replaced by toolbridge's variable `VAR` when
    /// the server starts (`TOKEN = "${TOKEN}"` passes one variable on by name).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: the working folder (default: toolbridge's).
    pub cwd: Option<PathBuf>,
    /// Streamable HTTP: the endpoint URL.
    pub url: Option<String>,
    /// Streamable HTTP: headers for every request. `${VAR}` in a value is replaced by the
    /// environment variable `VAR` when the server starts, so secrets stay out of the file.
    /// Values are never logged.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Seconds to spawn/connect, initialize and list the tools (also `startup_timeout_secs`).
    /// Default: [`STDIO_START_TIMEOUT_SECS`] for stdio servers, [`HTTP_START_TIMEOUT_SECS`] for
    /// HTTP ones (see [`McpServerConfig::start_timeout`]).
    #[serde(default, alias = "startup_timeout_secs")]
    pub start_timeout_secs: Option<u64>,
    /// Seconds one tool call may take (default 60; the agent's `tool_timeout_secs` applies too,
    /// the smaller wins).
    #[serde(default = "default_call_timeout")]
    pub call_timeout_secs: u64,
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Whether the server's tools go through `[agent.approvals]` (default `annotations`).
    #[serde(default)]
    pub approval: McpApproval,
}

/// `approval` of an MCP server: which of its tools require approval (and so follow
/// `[agent.approvals]`, whose `default` is `ask`). `per_tool` entries apply to every tool anyway.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpApproval {
    /// From the server's tool annotations: a tool marked `readOnlyHint: true` runs unasked; any
    /// other (destructive, additive, or without annotations) requires approval. Annotations are
    /// the server's own claims: use `ask` for a server you do not trust to make them honestly.
    #[default]
    Annotations,
    /// Every tool of the server requires approval, read-only or not.
    Ask,
    /// No tool of the server requires approval.
    Never,
}

impl McpApproval {
    /// Whether a tool requires approval, given whether the server annotated it read-only.
    pub fn requires_approval(self, read_only: bool) -> bool {
        match self {
            McpApproval::Annotations => !read_only,
            McpApproval::Ask => true,
            McpApproval::Never => false,
        }
    }
}

/// The default start timeout of a stdio server. Generous, because the first start of a server
/// launched through a package runner (`npx -y`, `uvx`, `bunx`, `docker run`) downloads it first —
/// 26.5 s was measured for an `npx -y` server — while the timeout only decides when a start that
/// hangs is given up (servers start concurrently, so one slow server does not delay the others).
pub const STDIO_START_TIMEOUT_SECS: u64 = 120;

/// The default start timeout of a streamable HTTP server: it is already running, so connecting,
/// initializing and listing its tools is quick unless something is wrong.
pub const HTTP_START_TIMEOUT_SECS: u64 = 30;

fn default_call_timeout() -> u64 {
    60
}

fn default_true() -> bool {
    true
}

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport<'a> {
    Stdio {
        command: &'a str,
        args: &'a [String],
    },
    Http {
        url: &'a str,
    },
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("MCP server name `{0}` may only hold letters, digits, `_` and `-`")]
    BadName(String),
    #[error("two MCP servers are named `{0}`")]
    Duplicate(String),
    #[error("MCP server `{0}`: give either `command` (stdio) or `url` (streamable HTTP)")]
    NoTransport(String),
    #[error("MCP server `{0}`: `command` and `url` exclude each other")]
    BothTransports(String),
    #[error("MCP server `{0}`: {1} only apply to stdio servers (with `command`)")]
    StdioOnly(String, &'static str),
    #[error("MCP server `{0}`: `headers` only apply to HTTP servers (with `url`)")]
    HttpOnly(String),
    #[error("MCP server `{0}`: timeouts must be at least 1 second")]
    ZeroTimeout(String),
    #[error("--mcp `{0}`: expected NAME=COMMAND [ARGS…]")]
    BadFlag(String),
    #[error("MCP server `{server}`: header `{header}` refers to `${{{var}}}`, which is not set")]
    MissingVar {
        server: String,
        header: String,
        var: String,
    },
    #[error("MCP server `{server}`: env `{key}` refers to `${{{var}}}`, which is not set")]
    MissingEnvVar {
        server: String,
        key: String,
        var: String,
    },
    #[error("MCP server `{server}`: header `{header}` is not a valid HTTP header")]
    BadHeader { server: String, header: String },
}

impl McpServerConfig {
    /// A stdio server.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> Self {
        McpServerConfig {
            name: name.into(),
            command: Some(command.into()),
            args,
            call_timeout_secs: default_call_timeout(),
            enabled: true,
            ..McpServerConfig::default()
        }
    }

    /// A streamable HTTP server.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        McpServerConfig {
            name: name.into(),
            url: Some(url.into()),
            call_timeout_secs: default_call_timeout(),
            enabled: true,
            ..McpServerConfig::default()
        }
    }

    /// The configured start timeout, else the default of the server's transport.
    pub fn start_timeout(&self) -> Duration {
        let default = if self.url.is_some() {
            HTTP_START_TIMEOUT_SECS
        } else {
            STDIO_START_TIMEOUT_SECS
        };
        Duration::from_secs(self.start_timeout_secs.unwrap_or(default))
    }

    pub fn call_timeout(&self) -> Duration {
        Duration::from_secs(self.call_timeout_secs)
    }

    /// The transport, after checking that exactly one was given and the keys fit it.
    pub fn transport(&self) -> Result<Transport<'_>, ConfigError> {
        let name = || self.name.clone();
        match (&self.command, &self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    return Err(ConfigError::HttpOnly(name()));
                }
                Ok(Transport::Stdio {
                    command,
                    args: &self.args,
                })
            }
            (None, Some(url)) => {
                if !self.args.is_empty() || !self.env.is_empty() || self.cwd.is_some() {
                    return Err(ConfigError::StdioOnly(name(), "`args`, `env` and `cwd`"));
                }
                Ok(Transport::Http { url })
            }
            (None, None) => Err(ConfigError::NoTransport(name())),
            (Some(_), Some(_)) => Err(ConfigError::BothTransports(name())),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !is_valid_name(&self.name) {
            return Err(ConfigError::BadName(self.name.clone()));
        }
        if self.start_timeout_secs == Some(0) || self.call_timeout_secs == 0 {
            return Err(ConfigError::ZeroTimeout(self.name.clone()));
        }
        self.transport().map(|_| ())
    }

    /// The headers with `${VAR}` replaced from `lookup`.
    pub fn resolved_headers(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<(String, String)>, ConfigError> {
        self.headers
            .iter()
            .map(|(header, value)| {
                expand(value, &lookup)
                    .map(|v| (header.clone(), v))
                    .map_err(|var| ConfigError::MissingVar {
                        server: self.name.clone(),
                        header: header.clone(),
                        var,
                    })
            })
            .collect()
    }
}

/// The variables of toolbridge's own environment that a stdio server inherits, besides those
/// starting with `LC_`: what it needs to find programs (`PATH`), its user's files and caches
/// (`HOME`: `npx` and `uvx` keep their downloads there), temporary files (`TMPDIR`), and the
/// user's language and time zone. Nothing else reaches it: toolbridge's environment holds API
/// keys (`OPENAI_API_KEY`, `[server] api_keys_env`, …) that are no server's business. A server
/// that needs another variable gets it by name in its `env` entry (`VAR = "${VAR}"`).
pub const INHERITED_ENV: [&str; 6] = ["PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ"];

/// Whether a stdio server inherits toolbridge's variable `name` ([`INHERITED_ENV`] and `LC_*`).
pub fn is_inherited(name: &OsStr) -> bool {
    name.to_str()
        .is_some_and(|name| INHERITED_ENV.contains(&name) || name.starts_with("LC_"))
}

impl McpServerConfig {
    /// A stdio server's whole environment, given toolbridge's own (`parent`, e.g.
    /// `std::env::vars_os()`): the inherited variables of `parent`, then the `env` entry with
    /// `${VAR}` read from `parent` (an entry wins over an inherited variable of its name).
    pub fn child_environment(
        &self,
        parent: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Result<BTreeMap<OsString, OsString>, ConfigError> {
        let parent: BTreeMap<OsString, OsString> = parent.into_iter().collect();
        let lookup = |var: &str| {
            parent
                .get(OsStr::new(var))
                .and_then(|v| v.to_str())
                .map(str::to_owned)
        };
        let mut child: BTreeMap<OsString, OsString> = parent
            .iter()
            .filter(|(name, _)| is_inherited(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        for (key, value) in &self.env {
            let value = expand(value, &lookup).map_err(|var| ConfigError::MissingEnvVar {
                server: self.name.clone(),
                key: key.clone(),
                var,
            })?;
            child.insert(key.into(), value.into());
        }
        Ok(child)
    }
}

/// Server names become part of tool names, which providers restrict to `[A-Za-z0-9_-]`.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks every server and refuses duplicate names; disabled servers are checked too (a typo
/// should not wait until the server is switched on).
pub fn validate_all(servers: &[McpServerConfig]) -> Result<(), ConfigError> {
    let mut seen = HashSet::new();
    for server in servers {
        server.validate()?;
        if !seen.insert(server.name.as_str()) {
            return Err(ConfigError::Duplicate(server.name.clone()));
        }
    }
    Ok(())
}

/// Reads `--mcp NAME=COMMAND [ARGS…]`: the command line is split like a POSIX shell would
/// (quotes and backslashes work; no variables, globs or pipes).
pub fn parse_flag(flag: &str) -> Result<McpServerConfig, ConfigError> {
    let bad = || ConfigError::BadFlag(flag.to_owned());
    let (name, command_line) = flag.split_once('=').ok_or_else(bad)?;
    let mut words = shlex::split(command_line).ok_or_else(bad)?.into_iter();
    let command = words.next().ok_or_else(bad)?;
    let config = McpServerConfig::stdio(name.trim(), command, words.collect());
    config.validate()?;
    Ok(config)
}

/// Replaces `${VAR}`; an unset variable is an error naming it. `$` not followed by `{` stays.
fn expand(value: &str, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[at..]);
            return Ok(out);
        };
        let var = &after[..end];
        out.push_str(&lookup(var).ok_or_else(|| var.to_owned())?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn flags_are_split_like_a_shell() {
        let c = parse_flag("fs=npx -y '@scope/server x' --root \"/a b\"").unwrap();
        assert_eq!(c.name, "fs");
        assert_eq!(c.command.as_deref(), Some("npx"));
        assert_eq!(c.args, ["-y", "@scope/server x", "--root", "/a b"]);
        assert!(parse_flag("fs").is_err());
        assert!(parse_flag("fs=").is_err());
        assert_eq!(
            parse_flag("a.b=cmd"),
            Err(ConfigError::BadName("a.b".into()))
        );
    }

    #[test]
    fn servers_are_checked() {
        let ok = McpServerConfig::stdio("a", "cmd", vec![]);
        let http = McpServerConfig::http("b", "http://127.0.0.1:1/mcp");
        assert!(validate_all(&[ok.clone(), http.clone()]).is_ok());
        assert_eq!(
            validate_all(&[ok.clone(), ok.clone()]),
            Err(ConfigError::Duplicate("a".into()))
        );
        let mut both = ok.clone();
        both.url = Some("http://x".into());
        assert!(matches!(
            validate_all(&[both]),
            Err(ConfigError::BothTransports(_))
        ));
        let mut none = ok;
        none.command = None;
        assert!(matches!(
            validate_all(&[none]),
            Err(ConfigError::NoTransport(_))
        ));
        let mut headers_on_stdio = McpServerConfig::stdio("c", "cmd", vec![]);
        headers_on_stdio.headers.insert("x".into(), "y".into());
        assert!(matches!(
            validate_all(&[headers_on_stdio]),
            Err(ConfigError::HttpOnly(_))
        ));
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs.iter().map(|(k, v)| (k.into(), v.into())).collect()
    }

    #[test]
    fn a_stdio_server_inherits_only_the_listed_variables_and_its_env_entry() {
        let mut c = McpServerConfig::stdio("s", "cmd", vec![]);
        c.env
            .insert("GITHUB_TOKEN".into(), "${GITHUB_TOKEN}".into());
        c.env.insert("LOG".into(), "warn, $5 ${".into());
        c.env.insert("HOME".into(), "/srv/home".into());
        let parent = vars(&[
            ("PATH", "/usr/bin"),
            ("HOME", "/root"),
            ("TMPDIR", "/var/tmp"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("TZ", "UTC"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("TOOLBRIDGE_API_KEYS", "sk-a,sk-b"),
            ("KEY_A", "a"),
            ("GITHUB_TOKEN", "gh-token"),
            ("HTTPS_PROXY", "http://proxy"),
        ]);
        let child = c.child_environment(parent).unwrap();
        let expected = vars(&[
            ("GITHUB_TOKEN", "gh-token"),
            ("HOME", "/srv/home"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C"),
            ("LOG", "warn, $5 ${"),
            ("PATH", "/usr/bin"),
            ("TMPDIR", "/var/tmp"),
            ("TZ", "UTC"),
        ]);
        assert_eq!(child.into_iter().collect::<Vec<_>>(), expected);

        c.env.insert("X".into(), "${UNSET}".into());
        assert_eq!(
            c.child_environment(vars(&[])),
            Err(ConfigError::MissingEnvVar {
                server: "s".into(),
                key: "GITHUB_TOKEN".into(),
                var: "GITHUB_TOKEN".into()
            })
        );
    }

    #[test]
    fn header_values_take_environment_variables() {
        let mut c = McpServerConfig::http("b", "http://127.0.0.1:1/mcp");
        c.headers
            .insert("Authorization".into(), "Bearer ${TOKEN}".into());
        c.headers.insert("X-Price".into(), "$5 ${".into());
        let env = |v: &str| (v == "TOKEN").then(|| "s3cret".to_owned());
        assert_eq!(
            c.resolved_headers(env).unwrap(),
            [
                ("Authorization".to_owned(), "Bearer s3cret".to_owned()),
                ("X-Price".to_owned(), "$5 ${".to_owned())
            ]
        );
        let e = c.resolved_headers(|_| None).unwrap_err();
        assert!(
            matches!(e, ConfigError::MissingVar { ref var, .. } if var == "TOKEN"),
            "{e}"
        );
    }

    #[test]
    fn toml_defaults() {
        let c: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "py", "command": "python3", "args": ["server.py"]
        }))
        .unwrap();
        assert_eq!(
            (c.start_timeout(), c.call_timeout_secs, c.enabled),
            (Duration::from_secs(STDIO_START_TIMEOUT_SECS), 60, true)
        );
        let http: McpServerConfig = serde_json::from_value(serde_json::json!({
            "name": "web", "url": "http://127.0.0.1:1/mcp"
        }))
        .unwrap();
        assert_eq!(
            http.start_timeout(),
            Duration::from_secs(HTTP_START_TIMEOUT_SECS)
        );
        for key in ["start_timeout_secs", "startup_timeout_secs"] {
            let set: McpServerConfig = serde_json::from_value(serde_json::json!({
                "name": "py", "command": "python3", key: 7
            }))
            .unwrap();
            assert_eq!(set.start_timeout(), Duration::from_secs(7), "{key}");
        }
        let mut zero = McpServerConfig::stdio("z", "cmd", vec![]);
        zero.start_timeout_secs = Some(0);
        assert_eq!(
            validate_all(&[zero]),
            Err(ConfigError::ZeroTimeout("z".into()))
        );
        assert_eq!(c.approval, McpApproval::Annotations);
        for (text, expected) in [
            ("never", McpApproval::Never),
            ("ask", McpApproval::Ask),
            ("annotations", McpApproval::Annotations),
        ] {
            let c: McpServerConfig = serde_json::from_value(serde_json::json!({
                "name": "py", "command": "python3", "approval": text
            }))
            .unwrap();
            assert_eq!(c.approval, expected);
        }
        assert!(serde_json::from_value::<McpServerConfig>(
            serde_json::json!({"name": "x", "command": "y", "approval": "always"})
        )
        .is_err());
        assert!(serde_json::from_value::<McpServerConfig>(
            serde_json::json!({"name": "x", "comand": "y"})
        )
        .is_err());
    }
}
