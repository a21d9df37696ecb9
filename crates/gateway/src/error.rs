//! Errors: [`GatewayError`] for starting the server, [`ApiError`] for answers to clients.
//!
//! Every client-facing error is OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`,
//! and its text is fixed here or comes from the client's own input. Upstream failures are told
//! by kind only ("upstream error (timeout)"): a provider's message may hold upstream text, URLs
//! or paths, so it goes to the operator log and never to the client.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use toolbridge_providers::ProviderError;

/// Why the gateway cannot start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("configuration error: {0}")]
    Config(String),
    #[error(
        "refusing to listen on {0} without API keys: set the variable named by server.api_keys_env \
         (comma-separated keys) or listen on a loopback address such as 127.0.0.1"
    )]
    NoKeysOnPublicAddress(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// An error answer to a client.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: Cow<'static, str>,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, …
    pub kind: &'static str,
    pub param: Option<Cow<'static, str>>,
    pub code: Option<Cow<'static, str>>,
    /// Seconds for a `Retry-After` header.
    pub retry_after: Option<u64>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: Option<&'a str>,
}

/// Client input echoed in a message is cut to this many characters.
const ECHO_CHARS: usize = 200;

fn echo(text: &str) -> String {
    text.chars().take(ECHO_CHARS).collect()
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError {
            status,
            message: message.into(),
            kind,
            param: None,
            code: None,
            retry_after: None,
        }
    }

    fn with_code(mut self, code: &'static str) -> Self {
        self.code = Some(Cow::Borrowed(code));
        self
    }

    pub(crate) fn with_param(mut self, param: impl Into<Cow<'static, str>>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// An error answer of `status` that was not made here (a framework's plain-text
    /// rejection), re-rendered in the client's shape: a client error keeps its text, which is
    /// about the client's own request; a server error says only that it happened.
    pub(crate) fn from_foreign(status: StatusCode, text: &str) -> Self {
        if status.is_server_error() {
            return ApiError {
                status,
                ..ApiError::internal()
            };
        }
        let text = echo(text.trim());
        let message = if text.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("The request is not valid.")
                .to_owned()
        } else {
            text
        };
        ApiError::new(status, "invalid_request_error", message)
    }

    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    pub fn bad_param(
        param: impl Into<Cow<'static, str>>,
        message: impl Into<Cow<'static, str>>,
    ) -> Self {
        ApiError::bad_request(message).with_param(param)
    }

    pub fn missing_key() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "You didn't provide an API key. Send it as `Authorization: Bearer KEY` or `x-api-key: KEY`.",
        )
        .with_code("missing_api_key")
    }

    pub fn wrong_key() -> Self {
        // Never echo the key a client sent: it may be another service's secret.
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Incorrect API key provided.",
        )
        .with_code("invalid_api_key")
    }

    /// `served`: the names a client can send instead (listed in the message, so a typo or a
    /// guess is answered with what to send).
    pub fn model_not_found(model: &str, served: &[&str]) -> Self {
        let instead = if served.is_empty() {
            "This server serves no model (its log says why).".to_owned()
        } else {
            // A long list is cut: the message is for reading, `GET /v1/models` has them all.
            const SHOWN: usize = 20;
            let mut names: Vec<String> = served
                .iter()
                .take(SHOWN)
                .map(|n| format!("`{}`", echo(n)))
                .collect();
            if served.len() > SHOWN {
                names.push(format!(
                    "and {} more (GET /v1/models)",
                    served.len() - SHOWN
                ));
            }
            format!("The models here: {}.", names.join(", "))
        };
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "The model `{}` does not exist or you do not have access to it. {instead}",
                echo(model)
            ),
        )
        .with_param("model")
        .with_code("model_not_found")
    }

    /// A configured model whose upstream could not be set up (a missing API key): the reason is
    /// in the operator's log, the client is told only that the gateway is not set up for it.
    pub fn model_unavailable(model: &str) -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            format!(
                "The model `{}` is configured on this gateway but not available: its upstream \
                 could not be set up (the gateway's log says why).",
                echo(model)
            ),
        )
        .with_param("model")
        .with_code("model_unavailable")
    }

    /// `Content-Type` of a POST body other than `application/json`.
    pub fn unsupported_media_type() -> Self {
        ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "The request body must be JSON, sent with `Content-Type: application/json`.",
        )
        .with_code("unsupported_media_type")
    }

    /// A browser request from an origin not in `server.allowed_origins` (the gateway runs
    /// without keys).
    pub fn origin_not_allowed() -> Self {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "invalid_request_error",
            "Requests from this origin are not allowed (see server.allowed_origins).",
        )
        .with_code("origin_not_allowed")
    }

    /// A `Host` other than a loopback name on a gateway without keys (DNS rebinding).
    pub fn host_not_allowed() -> Self {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "invalid_request_error",
            "This gateway answers only requests addressed to localhost, 127.0.0.1 or [::1].",
        )
        .with_code("host_not_allowed")
    }

    pub fn not_found() -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            "Unknown endpoint.",
        )
        .with_code("unknown_url")
    }

    pub fn method_not_allowed() -> Self {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "invalid_request_error",
            "Method not allowed for this endpoint.",
        )
        .with_code("method_not_allowed")
    }

    /// A stored object (response, file, conversation) this key cannot see: 404 whether it exists
    /// for another key or not (docs/src/security.md, "Stored objects and tenancy": no existence
    /// oracle).
    pub fn no_such(kind: &str, id: &str, param: Option<&'static str>) -> Self {
        let e = ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!("No {kind} with id '{}' was found.", echo(id)),
        )
        .with_code("not_found");
        match param {
            Some(p) => e.with_param(p),
            None => e,
        }
    }

    /// An `mcp_approval_response` whose approval request was answered before (replayed, or
    /// sent twice at once): an answer is used once. 400, not 409: OpenAI's SDKs retry a 409 as
    /// a passing conflict, and a used approval never becomes usable again.
    pub fn approval_already_answered(request_ids: &[String]) -> Self {
        ApiError::bad_param(
            "input",
            format!(
                "MCP approval request {} was already answered; an approval is used once. Ask again in a new response.",
                echo(&request_ids.join(", "))
            ),
        )
        .with_code("approval_already_answered")
    }

    /// More runs of one user at once than `[server.responses] max_concurrent_per_user`.
    pub fn too_many_runs(max: usize) -> Self {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!("Too many responses are running for this key at once (at most {max}); wait for one to finish."),
        )
        .with_code("too_many_concurrent_responses")
    }

    /// A hosted tool had no capacity: every interpreter the server allows was busy.
    pub fn server_busy() -> Self {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "Every code interpreter this server allows is busy; try again in a moment.",
        )
        .with_code("server_busy");
        e.retry_after = Some(5);
        e
    }

    /// A failure of the server's own (the detail goes to the log).
    pub fn internal() -> Self {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "The server had an error while processing your request. The server log has the details.",
        )
        .with_code("server_error")
    }

    /// A server-side run whose model request failed (the detail goes to the log).
    pub fn run_failed() -> Self {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "upstream_error",
            "The model request failed. The server log has the details.",
        )
        .with_code("upstream_error")
    }

    /// The state store failed (the detail goes to the log).
    pub fn state_unavailable() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "server_error",
            "The server's state store is not available; try again later.",
        )
        .with_code("state_unavailable")
    }

    pub fn too_large(limit: usize) -> Self {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request_error",
            format!("The request body is larger than the limit of {limit} bytes."),
        )
        .with_code("request_too_large")
    }

    pub fn body_timeout() -> Self {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request_error",
            "The request body was not received in time.",
        )
        .with_code("request_timeout")
    }

    pub fn rate_limited(retry_after: Duration) -> Self {
        let secs = retry_after.as_secs_f64().ceil().max(1.0) as u64;
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            format!("Rate limit reached. Try again in {secs} s."),
        )
        .with_code("rate_limit_exceeded");
        e.retry_after = Some(secs);
        e
    }

    /// The gateway's own deadline for a response ran out.
    pub fn timeout() -> Self {
        ApiError::new(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout_error",
            "The upstream model did not answer in time.",
        )
        .with_code("timeout")
    }

    /// An upstream failure, told by kind only.
    pub fn upstream(error: &ProviderError) -> Self {
        let kind = error.kind();
        let message = Cow::Owned(format!("upstream error ({kind})"));
        let code = Some(Cow::Owned(format!("upstream_{kind}")));
        match error {
            ProviderError::Timeout(_) => ApiError {
                status: StatusCode::GATEWAY_TIMEOUT,
                message,
                kind: "upstream_error",
                param: None,
                code,
                retry_after: None,
            },
            ProviderError::RateLimited { retry_after, .. } => ApiError {
                status: StatusCode::TOO_MANY_REQUESTS,
                message,
                kind: "rate_limit_error",
                param: None,
                code,
                retry_after: retry_after.map(|d| d.as_secs_f64().ceil().max(1.0) as u64),
            },
            _ => ApiError {
                status: StatusCode::BAD_GATEWAY,
                message,
                kind: "upstream_error",
                param: None,
                code,
                retry_after: None,
            },
        }
    }

    /// The JSON body, `{"error": {…}}`.
    pub fn body_json(&self) -> Vec<u8> {
        let body = Body {
            error: Detail {
                message: &self.message,
                kind: self.kind,
                param: self.param.as_deref(),
                code: self.code.as_deref(),
            },
        };
        // Serializing plain strings cannot fail; the fallback keeps the shape regardless.
        serde_json::to_vec(&body).unwrap_or_else(|_| {
            br#"{"error":{"message":"error","type":"server_error","param":null,"code":null}}"#
                .to_vec()
        })
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body_json()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        // The error travels with its response, so a wire with another error shape (the
        // Messages API) can render the same error its own way.
        response.extensions_mut().insert(self);
        response
    }
}

/// The largest foreign error body read to re-render it.
const FOREIGN_BODY_BYTES: usize = 4096;

/// Re-renders every error answer that is not an [`ApiError`] (axum's plain-text rejections of a
/// path, a query, a multipart body; anything a route forgot) as one, so each error a client
/// gets is JSON in its API's shape (the Messages layer outside this one reshapes it again for
/// `/v1/messages…`).
pub(crate) async fn json_errors(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use http_body_util::BodyExt;
    let response = next.run(request).await;
    let status = response.status();
    let is_error = status.is_client_error() || status.is_server_error();
    if !is_error || response.extensions().get::<ApiError>().is_some() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match http_body_util::Limited::new(body, FOREIGN_BODY_BYTES)
        .collect()
        .await
    {
        Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
        Err(_) => String::new(),
    };
    if status.is_server_error() {
        tracing::error!(%status, body = %text, "an error answer that was not an ApiError");
    }
    let mut rendered = ApiError::from_foreign(status, &text).into_response();
    // Keep what outer layers read (the metrics' labels, security headers).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            rendered.headers_mut().append(name, value.clone());
        }
    }
    let error = rendered.extensions_mut().remove::<ApiError>();
    *rendered.extensions_mut() = parts.extensions;
    if let Some(error) = error {
        rendered.extensions_mut().insert(error);
    }
    rendered
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use toolbridge_protocol::openai::ErrorBody;
    use toolbridge_providers::TimeoutKind;

    #[test]
    fn upstream_errors_are_told_by_kind_only() {
        let e = ProviderError::Connect("tcp connect error: 127.0.0.1:18000 refused".into());
        let api = ApiError::upstream(&e);
        assert_eq!(api.status, StatusCode::BAD_GATEWAY);
        let body = String::from_utf8(api.body_json()).unwrap();
        assert!(!body.contains("18000"), "{body}");
        let parsed: ErrorBody = serde_json::from_str(&body).unwrap();
        assert_eq!(parsed.error.message, "upstream error (connect)");
        assert_eq!(
            ApiError::upstream(&ProviderError::Timeout(TimeoutKind::FirstByte)).status,
            StatusCode::GATEWAY_TIMEOUT
        );
        let rl = ApiError::upstream(&ProviderError::RateLimited {
            retry_after: Some(Duration::from_millis(1500)),
            message: "slow".into(),
        });
        assert_eq!(
            (rl.status, rl.retry_after),
            (StatusCode::TOO_MANY_REQUESTS, Some(2))
        );
    }

    #[test]
    fn echoed_model_names_are_cut() {
        let long = "x".repeat(10_000);
        let e = ApiError::model_not_found(&long, &["local"]);
        assert!(e.message.len() < 400);
        assert!(
            e.message.ends_with("The models here: `local`."),
            "{}",
            e.message
        );
    }
}
