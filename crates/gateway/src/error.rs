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
    pub param: Option<&'static str>,
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

    fn with_param(mut self, param: &'static str) -> Self {
        self.param = Some(param);
        self
    }

    pub fn bad_request(message: impl Into<Cow<'static, str>>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request_error", message)
    }

    pub fn bad_param(param: &'static str, message: impl Into<Cow<'static, str>>) -> Self {
        ApiError::bad_request(message).with_param(param)
    }

    pub fn missing_key() -> Self {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "You didn't provide an API key. Send it as `Authorization: Bearer KEY`.",
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

    pub fn model_not_found(model: &str) -> Self {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "invalid_request_error",
            format!(
                "The model `{}` does not exist or you do not have access to it.",
                echo(model)
            ),
        )
        .with_param("model")
        .with_code("model_not_found")
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
                param: self.param,
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
        response
    }
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
        let e = ApiError::model_not_found(&long);
        assert!(e.message.len() < 400);
    }
}
