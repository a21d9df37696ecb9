//! The endpoints and the guards in front of them.
//!
//! | endpoint | guard |
//! |---|---|
//! | `POST /v1/chat/completions` | key, rate limit, counted in `toolbridge_requests_total` |
//! | `GET /v1/models` | key, rate limit |
//! | `GET /metrics` | key when `metrics_require_auth` (the default) |
//! | `GET /healthz` | none |
//!
//! No CORS layer: browsers get no `Access-Control-*` header and preflights are not answered.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio::time::Instant;

use crate::error::ApiError;
use crate::metrics::StreamLabel;
use crate::request::{parse, read_body};
use crate::state::AppState;
use crate::{completion, stream};

/// The client's address, put on each request by the accept loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(pub SocketAddr);

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let chat = post(chat_completions)
        .layer(middleware::from_fn_with_state(state.clone(), guard_api))
        .layer(middleware::from_fn_with_state(state.clone(), count));
    let models = get(list_models).layer(middleware::from_fn_with_state(state.clone(), guard_api));
    let metrics = get(metrics).layer(middleware::from_fn_with_state(state.clone(), guard_metrics));
    Router::new()
        .route("/v1/chat/completions", chat)
        .route("/v1/models", models)
        .route("/metrics", metrics)
        .route("/healthz", get(healthz))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .with_state(state)
}

fn peer_ip(request: &Request) -> Option<std::net::IpAddr> {
    request.extensions().get::<Peer>().map(|p| p.0.ip())
}

/// Key check, then the rate limit of whoever the key (or the address) says the client is.
async fn guard_api(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let who = match state
        .keys
        .authenticate(request.headers(), peer_ip(&request))
    {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    if let Some(limiter) = &state.limiter {
        if let Err(wait) = limiter.check(who) {
            return ApiError::rate_limited(wait).into_response();
        }
    }
    next.run(request).await
}

async fn guard_metrics(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if state.limits.metrics_require_auth {
        if let Err(e) = state
            .keys
            .authenticate(request.headers(), peer_ip(&request))
        {
            return e.into_response();
        }
    }
    next.run(request).await
}

/// Counts every chat completion request by status and streaming, refused ones included.
async fn count(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    let stream = response
        .extensions()
        .get::<StreamLabel>()
        .copied()
        .unwrap_or(StreamLabel::Unknown);
    state.metrics.request(response.status().as_u16(), stream);
    response
}

async fn chat_completions(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    let client = match read_body(body, &parts.headers, &state.limits)
        .await
        .and_then(|bytes| parse(&bytes, &state.limits))
    {
        Ok(client) => client,
        Err(e) => return e.into_response(),
    };
    let label = if client.stream {
        StreamLabel::Yes
    } else {
        StreamLabel::No
    };
    let mut response = match state.models.get(&client.request.model) {
        None => ApiError::model_not_found(&client.request.model).into_response(),
        Some(model) if client.stream => {
            stream::respond(state.clone(), model, client, started).await
        }
        Some(model) => completion::respond(&state, model, client, started).await,
    };
    response.extensions_mut().insert(label);
    response
}

async fn list_models(State(state): State<Arc<AppState>>) -> Response {
    json(Body::from(state.models_body.clone()))
}

async fn healthz() -> Response {
    json(Body::from(r#"{"status":"ok"}"#))
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let mut response = state.metrics.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

fn json(body: Body) -> Response {
    let mut response = body.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
