//! A client's request: the body read within its limits (size, time), checked for depth, and
//! parsed into a [`ChatRequest`]. Unknown fields stay in `ChatRequest::extra` and so reach
//! native upstreams unchanged; the few fields the gateway itself answers for are taken out.

use std::time::Duration;

use axum::body::Body;
use axum::http::HeaderMap;
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use rand::distr::{Alphanumeric, SampleString};
use serde_json::Value;
use toolbridge_protocol::types::{ChatRequest, ToolChoice};
use toolbridge_protocol::validate::validate_tools;

use crate::body::{announced_length, BodyCut};
use crate::config::Limits;
use crate::decode::from_json;
use crate::depth::check_depth;
use crate::error::ApiError;
use crate::schema::check_properties;

/// A parsed chat completion request and what it asks of the response's form.
pub(crate) struct ClientRequest {
    pub request: ChatRequest,
    pub stream: bool,
    /// `stream_options.include_usage`: send the usage chunk before `[DONE]`.
    pub include_usage: bool,
}

/// Reads the body: at most `body_limit` bytes (413 beyond, whether announced by
/// `Content-Length` or found while reading a chunked body). Its time limit is the body guard's
/// ([`crate::body`]), which every body is read through.
pub(crate) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limits: &Limits,
) -> Result<Bytes, ApiError> {
    if announced_length(headers).is_some_and(|n| n > limits.body_limit as u64) {
        return Err(ApiError::too_large(limits.body_limit));
    }
    match Limited::new(body, limits.body_limit).collect().await {
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => {
            Err(ApiError::too_large(limits.body_limit))
        }
        Err(e) => Err(match BodyCut::find(e.as_ref()) {
            Some(BodyCut::TimedOut) => ApiError::body_timeout(),
            Some(BodyCut::TooLarge) => ApiError::too_large(limits.body_limit),
            None => ApiError::bad_request("The request body could not be read."),
        }),
        Ok(collected) => Ok(collected.to_bytes()),
    }
}

/// Parses and checks a body.
pub(crate) fn parse(bytes: &[u8], limits: &Limits) -> Result<ClientRequest, ApiError> {
    check_depth(bytes, limits.json_depth_limit).map_err(|limit| {
        ApiError::bad_request(format!(
            "The JSON body is nested more than {limit} levels deep."
        ))
    })?;
    let mut request: ChatRequest = from_json(bytes).map_err(|e| e.to_openai())?;
    if request.model.is_empty() {
        return Err(ApiError::bad_param("model", "`model` is required."));
    }
    if request.messages.is_empty() {
        return Err(ApiError::bad_param(
            "messages",
            "`messages` must hold at least one message.",
        ));
    }
    // One choice per response: the tool modes and the decoder follow a single answer.
    match request.extra.get("n") {
        None | Some(Value::Null) => {}
        Some(n) if n.as_u64() == Some(1) => {}
        Some(_) => {
            return Err(ApiError::bad_param("n", "Only `n` = 1 is supported."));
        }
    }
    // Names and schemas go into prompt-mode system prompts: only what OpenAI accepts.
    validate_tools(&request.tools).map_err(|e| ApiError::bad_param(e.param(), e.message))?;
    for (i, tool) in request.tools.iter().enumerate() {
        if let Some(parameters) = &tool.parameters {
            check_properties(parameters, &format!("tools[{i}].function.parameters"))?;
        }
    }
    if let Some(ToolChoice::Named(name)) = &request.tool_choice {
        if !request.tools.iter().any(|t| &t.name == name) {
            return Err(ApiError::bad_param(
                "tool_choice",
                "`tool_choice` names a function that is not in `tools`.",
            ));
        }
    }
    // The gateway answers for these itself: streaming to the upstream is the provider's choice,
    // and usage is always requested upstream and passed on only when the client asked for it.
    let include_usage = match request.extra.remove("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(options)) => match options.get("include_usage") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ApiError::bad_param(
                    "stream_options.include_usage",
                    "Invalid type for 'stream_options.include_usage': expected a boolean.",
                ))
            }
        },
        Some(_) => {
            return Err(ApiError::bad_param(
                "stream_options",
                "Invalid type for 'stream_options': expected an object.",
            ))
        }
    };
    let stream = std::mem::take(&mut request.stream);
    Ok(ClientRequest {
        request,
        stream,
        include_usage,
    })
}

/// A fresh completion id, `chatcmpl-` and 24 random letters and digits.
pub(crate) fn completion_id() -> String {
    let mut id = String::with_capacity(33);
    id.push_str("chatcmpl-");
    Alphanumeric.append_string(&mut rand::rng(), &mut id, 24);
    id
}

/// Seconds since the Unix epoch, for `created`.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d: Duration| d.as_secs())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::config::ServerConfig;

    fn limits() -> Limits {
        ServerConfig::default().limits().unwrap()
    }

    #[test]
    fn gateway_fields_are_taken_out_and_the_rest_passes_through() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,
            "stream_options":{"include_usage":true},"seed":7,"logit_bias":{"1":2}}"#;
        let c = parse(body, &limits()).unwrap();
        assert!(c.stream && c.include_usage);
        assert!(!c.request.stream);
        assert!(!c.request.extra.contains_key("stream_options"));
        assert_eq!(c.request.extra["seed"], 7);
        assert!(c.request.extra.contains_key("logit_bias"));
    }

    #[test]
    fn bad_requests_say_what_is_wrong() {
        let l = limits();
        let e = |b: &str| parse(b.as_bytes(), &l).err().unwrap();
        assert_eq!(e("{").status, 400);
        assert_eq!(
            e(r#"{"model":"m","messages":[]}"#).param.as_deref(),
            Some("messages")
        );
        assert_eq!(
            e(r#"{"messages":[{"role":"user","content":"x"}]}"#)
                .param
                .as_deref(),
            Some("model")
        );
        assert_eq!(
            e(r#"{"model":"m","n":2,"messages":[{"role":"user","content":"x"}]}"#)
                .param
                .as_deref(),
            Some("n")
        );
        assert_eq!(
            e(r#"{"model":"m","tool_choice":{"type":"function","function":{"name":"x"}},"messages":[{"role":"user","content":"x"}]}"#).param.as_deref(),
            Some("tool_choice")
        );
        let deep = format!(
            r#"{{"model":"m","messages":{}{}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert!(e(&deep).message.contains("nested more than 64 levels"));
    }

    #[test]
    fn tool_definitions_are_validated_with_the_field_named() {
        let l = limits();
        let body = |tools: &str| {
            format!(
                r#"{{"model":"m","messages":[{{"role":"user","content":"x"}}],"tools":{tools}}}"#
            )
        };
        let f = |name: &str, params: &str| {
            format!(r#"{{"type":"function","function":{{"name":{name:?},"parameters":{params}}}}}"#)
        };
        let ok = f("get_weather", r#"{"type":"object"}"#);
        for bad in [
            "</tool_call>",
            "get_weather</tool_call><tool_call>",
            "<|im_end|>",
            "",
        ] {
            let e = parse(body(&format!("[{ok},{}]", f(bad, "{}"))).as_bytes(), &l)
                .err()
                .unwrap();
            assert_eq!(e.status, 400, "{bad}");
            assert_eq!(e.param.as_deref(), Some("tools[1].function.name"), "{bad}");
        }
        let e = parse(
            body(&format!("[{}]", f("f", r#""a string""#))).as_bytes(),
            &l,
        )
        .err()
        .unwrap();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.parameters"));
        let e = parse(body(&format!("[{ok},{ok}]")).as_bytes(), &l)
            .err()
            .unwrap();
        assert_eq!(e.param.as_deref(), Some("tools[1].function.name"));
        assert!(parse(body(&format!("[{ok}]")).as_bytes(), &l).is_ok());
    }

    #[test]
    fn ids_look_like_openai_ids() {
        let id = completion_id();
        assert!(id.starts_with("chatcmpl-") && id.len() == 33);
        assert_ne!(id, completion_id());
    }
}
