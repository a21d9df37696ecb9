//! The Conversations API: `POST /v1/conversations`, `GET`/`POST`/`DELETE
//! /v1/conversations/{id}`, `GET /v1/conversations/{id}/items`. A response created with
//! `conversation` reads the conversation's messages and appends its input and output to it
//! ([`super::run`]); the conversation also names the workspace its code runs in.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};
use toolbridge_state::{ConversationRecord, StoreError};

use super::{ids, json_response, request, ListQuery};
use crate::decode::Query;
use crate::error::ApiError;
use crate::routes::User;
use crate::state::AppState;

fn object(c: &ConversationRecord) -> Value {
    json!({"id": c.id, "object": "conversation", "created_at": c.created_at, "metadata": c.metadata})
}

fn failed(e: StoreError) -> Response {
    tracing::error!(error = %e, "conversations: state store");
    ApiError::state_unavailable().into_response()
}

fn metadata_of(body: &Value) -> Result<Value, ApiError> {
    match body.get("metadata") {
        None | Some(Value::Null) => Ok(json!({})),
        Some(Value::Object(m)) if m.len() <= 16 && m.values().all(Value::is_string) => {
            Ok(Value::Object(m.clone()))
        }
        Some(_) => Err(ApiError::bad_param(
            "metadata",
            "Invalid 'metadata': at most 16 pairs of string keys and string values.",
        )),
    }
}

fn body_json(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(json!({}));
    }
    match crate::decode::unique_value(bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        )),
        Err(e) => Err(e.to_openai()),
    }
}

/// A conversation request's body: JSON, read within the body limits.
async fn read_json(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<Value, ApiError> {
    crate::browser::check_json_body(headers)?;
    let bytes = crate::request::read_body(body, headers, &state.limits).await?;
    body_json(&bytes)
}

/// `POST /v1/conversations`: `{"items": [...], "metadata": {...}}`, both optional.
pub(crate) async fn create(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Response {
    let body = match read_json(&state, &headers, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let metadata = match metadata_of(&body) {
        Ok(m) => m,
        Err(e) => return e.into_response(),
    };
    let (items, messages) =
        match request::decode_items(body.get("items").cloned().unwrap_or(Value::Null)) {
            Ok(d) => d,
            Err(e) => return e.into_response(),
        };
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let now = toolbridge_state::now();
    let record = ConversationRecord {
        id: ids::new("conv"),
        owner,
        created_at: now,
        updated_at: now,
        metadata,
        items: Value::Array(items),
        context: json!({"workspace": ids::new("ws"), "messages": messages}),
        version: 0,
    };
    match store.put_conversation(record, None).await {
        Ok(stored) => json_response(StatusCode::OK, &object(&stored)),
        Err(e) => failed(e),
    }
}

async fn find(
    state: &Arc<AppState>,
    owner: &str,
    id: &str,
) -> Result<ConversationRecord, Response> {
    let store = state.responses.store().await.map_err(failed)?;
    match store.get_conversation(owner, id).await {
        Ok(Some(c)) => Ok(c),
        Ok(None) => Err(ApiError::no_such("conversation", id, None).into_response()),
        Err(e) => Err(failed(e)),
    }
}

/// `GET /v1/conversations/{id}`.
pub(crate) async fn retrieve(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    match find(&state, &owner, &id).await {
        Ok(c) => json_response(StatusCode::OK, &object(&c)),
        Err(r) => r,
    }
}

/// `POST /v1/conversations/{id}`: new `metadata`.
pub(crate) async fn update(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    body: axum::body::Body,
) -> Response {
    let metadata = match read_json(&state, &headers, body)
        .await
        .and_then(|b| metadata_of(&b))
    {
        Ok(m) => m,
        Err(e) => return e.into_response(),
    };
    let mut c = match find(&state, &owner, &id).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let version = c.version;
    c.metadata = metadata;
    c.updated_at = toolbridge_state::now();
    match store.put_conversation(c, Some(version)).await {
        Ok(stored) => json_response(StatusCode::OK, &object(&stored)),
        Err(StoreError::Conflict(_)) => {
            ApiError::bad_request("The conversation changed while it was being updated; try again.")
                .into_response()
        }
        Err(e) => failed(e),
    }
}

/// `DELETE /v1/conversations/{id}`.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
) -> Response {
    let store = match state.responses.store().await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    match store.delete_conversation(&owner, &id).await {
        Ok(true) => json_response(
            StatusCode::OK,
            &json!({"id": id, "object": "conversation.deleted", "deleted": true}),
        ),
        Ok(false) => ApiError::no_such("conversation", &id, None).into_response(),
        Err(e) => failed(e),
    }
}

/// `GET /v1/conversations/{id}/items` (`order` `desc` by default, as OpenAI's).
pub(crate) async fn items(
    State(state): State<Arc<AppState>>,
    Extension(User(owner)): Extension<User>,
    Path(id): Path<String>,
    Query(query): Query<ListQuery>,
) -> Response {
    let request = match query.items() {
        Ok(r) => r,
        Err(e) => return e.into_response(),
    };
    let c = match find(&state, &owner, &id).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let items = c.items.as_array().cloned().unwrap_or_default();
    match crate::pagination::items_page(items, &request) {
        Ok(page) => json_response(StatusCode::OK, &page),
        Err(e) => e.into_response(),
    }
}
