//! Typed provider errors. None of them ever carries an API key: upstream messages are passed
//! through [`redact`] with the key before they are stored.

use std::time::Duration;

use thiserror::Error;

/// Which deadline ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutKind {
    Connect,
    FirstByte,
    /// The gap between two streamed chunks.
    Idle,
    Total,
}

impl std::fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::FirstByte => "first byte",
            TimeoutKind::Idle => "idle gap between chunks",
            TimeoutKind::Total => "total",
        })
    }
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProviderError {
    /// 401/403: the key is missing, wrong or lacks access.
    #[error("authentication failed ({status}): {message}")]
    Auth { status: u16, message: String },
    /// 404: wrong base URL or model name.
    #[error("not found ({status}): {message}")]
    NotFound { status: u16, message: String },
    /// 429, with the server's `Retry-After` when it sent one.
    #[error("rate limited{}: {message}", retry_after.map(|d| format!(" (retry after {}s)", d.as_secs())).unwrap_or_default())]
    RateLimited {
        retry_after: Option<Duration>,
        message: String,
    },
    /// Any other HTTP error status (5xx, 400, …).
    #[error("upstream error ({status}): {message}")]
    Upstream { status: u16, message: String },
    #[error("timed out ({0})")]
    Timeout(TimeoutKind),
    /// The connection could not be made or broke.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The upstream answered something we cannot read (bad JSON, bad SSE, a stream cut mid-way).
    #[error("bad response from upstream: {0}")]
    BadResponse(String),
    /// The configuration cannot work (missing key variable, unknown provider, bad URL).
    #[error("configuration error: {0}")]
    Config(String),
    /// The API key an upstream needs is not in the environment (a configuration error that a
    /// server can start with: it answers that model with an error until it is fixed).
    #[error("configuration error: {0}")]
    MissingKey(String),
    #[error("cancelled")]
    Cancelled,
}

impl ProviderError {
    /// Errors that another attempt (a retry, or the next fallback arm) may not hit: connection
    /// failures, timeouts, 429, 5xx, and unreadable responses.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Connect(_)
            | ProviderError::Timeout(_)
            | ProviderError::RateLimited { .. }
            | ProviderError::BadResponse(_) => true,
            ProviderError::Upstream { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// A short machine-readable kind, for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Auth { .. } => "auth",
            ProviderError::NotFound { .. } => "not_found",
            ProviderError::RateLimited { .. } => "rate_limited",
            ProviderError::Upstream { .. } => "upstream",
            ProviderError::Timeout(_) => "timeout",
            ProviderError::Connect(_) => "connect",
            ProviderError::BadResponse(_) => "bad_response",
            ProviderError::Config(_) | ProviderError::MissingKey(_) => "config",
            ProviderError::Cancelled => "cancelled",
        }
    }

    /// Builds the error for an HTTP error status from the response body, with the key redacted.
    pub fn from_status(
        status: u16,
        body: &str,
        retry_after: Option<Duration>,
        key: Option<&str>,
    ) -> Self {
        let message = redact(&error_message(body), key);
        match status {
            401 | 403 => ProviderError::Auth { status, message },
            404 => ProviderError::NotFound { status, message },
            429 => ProviderError::RateLimited {
                retry_after,
                message,
            },
            _ => ProviderError::Upstream { status, message },
        }
    }
}

/// The message of an error body: OpenAI's and Anthropic's `{"error": {"message": …}}`, else the
/// body itself, cut to a readable length.
fn error_message(body: &str) -> String {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    let msg = parsed
        .as_ref()
        .and_then(|v| v.get("error"))
        .and_then(|e| e.get("message").or(Some(e)))
        .and_then(|m| m.as_str().map(str::to_owned))
        .unwrap_or_else(|| body.trim().to_owned());
    let mut msg: String = msg.chars().take(500).collect();
    if msg.is_empty() {
        msg.push_str("(empty body)");
    }
    msg
}

/// Removes every occurrence of the key (and of its last 8+ characters, which some servers echo as
/// "sk-…abcd1234") from a message.
pub fn redact(message: &str, key: Option<&str>) -> String {
    let Some(key) = key.filter(|k| k.len() >= 8) else {
        return message.to_owned();
    };
    let mut out = message.replace(key, "[redacted]");
    let tail = &key[key.len() - 8..];
    if out.contains(tail) {
        out = out.replace(tail, "[redacted]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds_and_keys_never_leak() {
        let key = "sk-secret-0123456789abcdef";
        let body =
            r#"{"error":{"message":"Incorrect API key provided: sk-secret-0123456789abcdef"}}"#;
        let e = ProviderError::from_status(401, body, None, Some(key));
        assert!(matches!(e, ProviderError::Auth { status: 401, .. }));
        assert!(!e.to_string().contains("0123456789abcdef"));
        let e = ProviderError::from_status(429, "slow down", Some(Duration::from_secs(3)), None);
        assert_eq!(e.to_string(), "rate limited (retry after 3s): slow down");
        assert!(e.is_transient());
        assert!(ProviderError::from_status(503, "", None, None).is_transient());
        assert!(!ProviderError::from_status(400, "bad", None, None).is_transient());
        assert!(!ProviderError::from_status(404, "no", None, None).is_transient());
    }
}
