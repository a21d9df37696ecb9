//! Errors in Anthropic's shape: `{"type":"error","error":{"type":…,"message":…}}`.
//!
//! Every error the gateway gives is an [`ApiError`] (from the shared guards, limits and
//! handlers alike), which travels with its response; for `/v1/messages` paths the outer layer
//! ([`reshape`]) re-renders it here, so the same hardening and the same sanitized texts apply and
//! only the shape differs. The `type` follows the status, as Anthropic's does.

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::ApiError;

/// Anthropic's error `type` for a status.
pub(crate) fn anthropic_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

#[derive(Serialize)]
struct Body<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: Detail<'a>,
}

#[derive(Serialize)]
struct Detail<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: &'a str,
}

/// The JSON body of an error.
pub(crate) fn body(error: &ApiError) -> Vec<u8> {
    let body = Body {
        kind: "error",
        error: Detail {
            kind: anthropic_type(error.status),
            message: &error.message,
        },
    };
    // Serializing plain strings cannot fail; the fallback keeps the shape regardless.
    serde_json::to_vec(&body).unwrap_or_else(|_| {
        br#"{"type":"error","error":{"type":"api_error","message":"error"}}"#.to_vec()
    })
}

/// The error as an HTTP response (status and `Retry-After` as the shared form has them).
pub(crate) fn response(error: &ApiError) -> Response {
    let mut response = (error.status, body(error)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = error.retry_after {
        headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

/// Re-renders the error answers of `/v1/messages…` paths in Anthropic's shape.
pub(crate) async fn reshape(request: Request, next: Next) -> Response {
    let messages = request.uri().path().starts_with("/v1/messages");
    let response = next.run(request).await;
    if !messages {
        return response;
    }
    match response.extensions().get::<ApiError>() {
        Some(error) => {
            let mut reshaped = self::response(error);
            // Keep the labels the metrics layer reads.
            *reshaped.extensions_mut() = response.extensions().clone();
            reshaped
        }
        None => response,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn errors_have_anthropic_types_and_the_same_texts() {
        let e = ApiError::bad_param("max_tokens", "max_tokens: Field required");
        let v: serde_json::Value = serde_json::from_slice(&body(&e)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}})
        );
        assert_eq!(
            anthropic_type(ApiError::wrong_key().status),
            "authentication_error"
        );
        assert_eq!(
            anthropic_type(ApiError::too_large(1).status),
            "request_too_large"
        );
        assert_eq!(anthropic_type(ApiError::timeout().status), "timeout_error");
        assert_eq!(anthropic_type(StatusCode::BAD_GATEWAY), "api_error");
        let limited = response(&ApiError::rate_limited(std::time::Duration::from_secs(3)));
        assert_eq!(limited.headers()[header::RETRY_AFTER], "3");
    }
}
