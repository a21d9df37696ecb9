//! The OpenAI Responses API: `POST /v1/responses` (streaming and not, in the background or
//! not), `GET`/`DELETE /v1/responses/{id}`, `GET /v1/responses/{id}/input_items` and
//! `POST /v1/responses/{id}/cancel`. Unlike Chat Completions, the server runs the agent's tool
//! loop: hosted tools (`web_search`, `code_interpreter`, `image_generation`, `mcp`) are the
//! configured built-ins and MCP servers, executed here; the client's `function` tools come
//! back as `function_call` items and the run pauses until a request with
//! `previous_response_id` brings their outputs. Responses, conversations and paused runs are
//! kept in the state store ([`toolbridge_state`]), so any instance on the same store continues
//! them.
//!
//! A codec over the agent: [`request`] decodes, [`tools`] maps the tools, [`run`] prepares and
//! drives the run on [`agent_run`] (the part every front door with a server-side loop shares),
//! [`output`] assembles items and events, [`sse`] frames them.

pub(crate) mod agent_run;
pub(crate) mod chat_agent;
pub(crate) mod conversations;
pub(crate) mod files;
mod ids;
pub(crate) mod output;
pub(crate) mod remote_mcp;
pub(crate) mod request;
mod request_input;
mod request_tools;
mod run;
pub(crate) mod service;
pub(crate) mod sse;
mod staging;
pub(crate) mod tools;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};

use crate::browser;
use crate::decode::Query;
use crate::depth::check_depth;
use crate::error::ApiError;
use crate::metrics::StreamLabel;
use crate::request::read_body;
use crate::routes::User;
use crate::state::AppState;

pub use chat_agent::AgentModel;
pub use service::{ResponsesConfig, StateConfig};
pub use tools::UnavailableTools;

/// `POST /v1/responses`.
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    if let Err(e) = browser::check_json_body(&parts.headers) {
        return e.into_response();
    }
    let decoded = match read_body(body, &parts.headers, &state.limits)
        .await
        .and_then(|bytes| {
            check_depth(&bytes, state.limits.json_depth_limit).map_err(|limit| {
                ApiError::bad_request(format!(
                    "The JSON body is nested more than {limit} levels deep."
                ))
            })?;
            request::decode(&bytes)
        }) {
        Ok(d) => d,
        Err(e) => return e.into_response(),
    };
    let (stream, background) = (decoded.stream, decoded.background);
    crate::access::request(&decoded.model, stream);
    let label = if stream {
        StreamLabel::Yes
    } else {
        StreamLabel::No
    };
    let prepared = match run::prepare(&state, &owner, decoded).await {
        Ok(p) => p,
        Err(e) => return with_label(e.into_response(), label),
    };
    let response = if stream {
        sse::respond(state, prepared, background)
    } else if background {
        let skeleton = prepared.record.body.clone();
        let id = prepared.record.id.clone();
        // Stored as in_progress before the answer, so a retrieve right after finds it.
        let store = state.responses.store().await.ok();
        if let Some(store) = &store {
            if let Err(e) = store.put_response(&prepared.record).await {
                tracing::error!(error = %e, response = %id, "responses: storing a background response failed");
                return ApiError::state_unavailable().into_response();
            }
        }
        tokio::spawn(run::execute(state, prepared, None));
        let mut body = skeleton;
        body["status"] = json!("queued");
        json_response(StatusCode::OK, &body)
    } else {
        let body = run::execute(state, prepared, None).await;
        json_response(StatusCode::OK, &body)
    };
    with_label(response, label)
}

fn with_label(mut response: Response, label: StreamLabel) -> Response {
    response.extensions_mut().insert(label);
    response
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn stored(
    state: &Arc<AppState>,
    owner: &str,
    id: &str,
) -> Result<toolbridge_state::ResponseRecord, ApiError> {
    let store = state.responses.store().await.map_err(|e| {
        tracing::error!(error = %e, "responses: state store");
        ApiError::state_unavailable()
    })?;
    match store.get_response(owner, id).await {
        Ok(Some(record)) => Ok(record),
        Ok(None) => Err(ApiError::no_such("response", id, None)),
        Err(e) => {
            tracing::error!(error = %e, "responses: state store");
            Err(ApiError::state_unavailable())
        }
    }
}

/// `GET /v1/responses/{id}`.
pub(crate) async fn retrieve(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    match stored(&state, &owner, &id).await {
        Ok(record) => json_response(StatusCode::OK, &record.body),
        Err(e) => e.into_response(),
    }
}

/// `DELETE /v1/responses/{id}`.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(_) => return ApiError::state_unavailable().into_response(),
    };
    match store.delete_response(&owner, &id).await {
        Ok(true) => {
            state.responses.cancel(&id);
            json_response(
                StatusCode::OK,
                &json!({"id": id, "object": "response", "deleted": true}),
            )
        }
        Ok(false) => ApiError::no_such("response", &id, None).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "responses: state store");
            ApiError::state_unavailable().into_response()
        }
    }
}

pub(crate) use crate::pagination::ListQuery;

/// `GET /v1/responses/{id}/input_items`: OpenAI's list page (`order` `desc` by default).
pub(crate) async fn input_items(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
    Query(query): Query<ListQuery>,
) -> Response {
    let request = match query.items() {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let record = match stored(&state, &owner, &id).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let items = record.input_items.as_array().cloned().unwrap_or_default();
    match crate::pagination::items_page(items, &request) {
        Ok(page) => json_response(StatusCode::OK, &page),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/responses/{id}/cancel`: a background response running on this instance is
/// cancelled (its final state is stored as `cancelled`); one running on another instance is
/// marked cancelled in the store, and that instance stops it at its next heartbeat; one that has
/// ended is returned as it is.
pub(crate) async fn cancel(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    let record = match stored(&state, &owner, &id).await {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    if !record.body["background"].as_bool().unwrap_or(false) {
        return ApiError::bad_request("Only background responses can be cancelled.")
            .into_response();
    }
    if state.responses.cancel(&id) {
        // Give the run a moment to store its end, so the answer shows it.
        for _ in 0..50 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            if let Ok(r) = stored(&state, &owner, &id).await {
                if r.status != "in_progress" && r.status != "queued" {
                    return json_response(StatusCode::OK, &r.body);
                }
            }
        }
        let mut body = record.body;
        body["status"] = json!("cancelled");
        return json_response(StatusCode::OK, &body);
    }
    if record.status == "in_progress" || record.status == "queued" {
        // Running on another instance: the stored row says cancelled, and that instance's next
        // heartbeat (at most `HEARTBEAT` later) stops the run, which then stores its end.
        let mut record = record;
        record.status = "cancelled".into();
        record.body["status"] = json!("cancelled");
        let Ok(store) = state.responses.store().await else {
            return ApiError::internal().into_response();
        };
        if let Err(e) = store.put_response(&record).await {
            tracing::error!(error = %e, "responses: storing a cancellation failed");
            return ApiError::internal().into_response();
        }
        return json_response(StatusCode::OK, &record.body);
    }
    json_response(StatusCode::OK, &record.body)
}

/// The body of a streamed response.
pub(crate) fn sse_body(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
