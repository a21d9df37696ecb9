//! `POST /v1/messages` and `POST /v1/messages/count_tokens`: Anthropic's Messages API as a codec
//! over the same core as Chat Completions.
//!
//! The body is read with the same limits, decoded into the gateway's [`ChatRequest`]
//! (`request.rs`), answered by the same [`Model::stream`] (tool modes, parser, fallback arms,
//! the malformed-call retry for non-streaming answers) and encoded as an Anthropic message
//! (`response.rs`) or its server-sent events (`stream.rs`). Errors are the shared ones in
//! Anthropic's shape (`error.rs`).
//!
//! A request with Anthropic's server tools (`web_search_…`, `web_fetch_…`, `code_execution_…`)
//! is not translated but run: the agent's loop, shared with the Responses API, executes them
//! with the configured built-ins (`server.rs`, its blocks in `server_blocks.rs`).
//!
//! [`ChatRequest`]: toolbridge_protocol::types::ChatRequest
//! [`Model::stream`]: toolbridge_providers::Model::stream

pub(crate) mod error;
mod images;
mod request;
mod response;
mod server;
mod server_blocks;
mod stream;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use tokio::time::Instant;
use toolbridge_protocol::mode::encode;

use crate::metrics::StreamLabel;
use crate::request::read_body;
use crate::routes::{unknown_model, User};
use crate::state::AppState;
use crate::{browser, completion};
use response::Form;

/// `POST /v1/messages`.
pub(crate) async fn create(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    if let Err(e) = browser::check_json_body(&parts.headers) {
        return e.into_response();
    }
    let mut client = match read_body(body, &parts.headers, &state.limits)
        .await
        .and_then(|bytes| request::parse(&bytes, &state.limits))
    {
        Ok(client) => client,
        Err(e) => return e.into_response(),
    };
    crate::access::request(&client.request.model, client.stream);
    if let Err(e) =
        images::inline_remote_images(&mut client.request, state.image_fetch.as_ref()).await
    {
        return e.into_response();
    }
    let label = if client.stream {
        StreamLabel::Yes
    } else {
        StreamLabel::No
    };
    if !client.server_tools.is_empty() {
        let owner = parts
            .extensions
            .get::<User>()
            .map_or_else(|| "local".to_owned(), |u| u.0.clone());
        let mut response = server::respond(state, &owner, &parts.headers, client).await;
        response.extensions_mut().insert(label);
        return response;
    }
    let form = Form {
        model: client.request.model.clone(),
        only_first_call: client.request.parallel_tool_calls == Some(false),
        stop_sequences: client.request.stop.clone(),
    };
    let mut response = match state.model(&client.request.model) {
        None => unknown_model(&state, &client.request.model),
        Some(model) if client.stream => {
            let id = response::message_id();
            crate::stream::respond_with(state.clone(), model, client.request, started, move || {
                stream::MessagesCodec::new(id, form)
            })
            .await
        }
        Some(model) => {
            completion::respond_with(&state, model, client.request, started, |answer, usage| {
                response::render(&state, &form, answer, usage)
            })
            .await
        }
    };
    response.extensions_mut().insert(label);
    response
}

/// `POST /v1/messages/count_tokens`: the request's input tokens as the model's first arm would
/// send it (tool prompt included) — exact for the embedded model (its own template and
/// tokenizer), else an estimate of about four bytes per token.
pub(crate) async fn count_tokens(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(e) = browser::check_json_body(&parts.headers) {
        return e.into_response();
    }
    // `max_tokens` is not part of a count request: give the decoder the one it requires.
    let parsed = read_body(body, &parts.headers, &state.limits)
        .await
        .and_then(|bytes| {
            let mut value: serde_json::Value =
                crate::decode::from_json(&bytes).map_err(|e| e.to_anthropic())?;
            if let Some(map) = value.as_object_mut() {
                map.entry("max_tokens").or_insert(1.into());
            }
            let bytes = serde_json::to_vec(&value).unwrap_or_default();
            request::parse(&bytes, &state.limits)
        });
    let client = match parsed {
        Ok(client) => client,
        Err(e) => return e.into_response(),
    };
    let Some(model) = state.model(&client.request.model) else {
        return unknown_model(&state, &client.request.model);
    };
    let Some(arm) = model.arms.first() else {
        return unknown_model(&state, &client.request.model);
    };
    let encoded = encode(&client.request, arm.resolved_mode(), &arm.encode_options());
    // Exact where the upstream counts itself (the embedded model: its template and tokenizer),
    // else about four bytes of the request as sent per token.
    let tokens = arm.upstream.count_tokens(&encoded).unwrap_or_else(|| {
        let bytes = serde_json::to_vec(&encoded.messages).map_or(0, |b| b.len())
            + serde_json::to_vec(&encoded.tools).map_or(0, |b| b.len());
        bytes.div_ceil(4) as u64
    });
    let mut response = format!(r#"{{"input_tokens":{tokens}}}"#).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
