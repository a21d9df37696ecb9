//! The endpoints and the guards in front of them.
//!
//! | endpoint | guard |
//! |---|---|
//! | `POST /v1/chat/completions` | key, rate limit, counted in `toolbridge_requests_total` |
//! | `POST /v1/messages`, `POST /v1/messages/count_tokens` | the same ([`crate::messages`]) |
//! | `POST /v1/responses` | key, rate limit, counted ([`crate::responses`]) |
//! | `GET`/`DELETE /v1/responses/{id}`, `GET …/input_items`, `POST …/cancel` | key, rate limit |
//! | `/v1/files…`, `GET /v1/containers/{id}/files…` | key, rate limit; uploads capped |
//! | `/v1/conversations…` | key, rate limit |
//! | `GET /v1/models`, `GET /v1/models/{id}` | key, rate limit |
//! | `GET /metrics` | key when `metrics_require_auth` (the default) |
//! | `GET /healthz` | none |
//! | `GET /ui`, `GET /ui/{file}` (the web page, [`crate::ui`]); `GET /` redirects there | none: the page holds no key, its API calls carry the user's |
//!
//! Every route is behind the browser guard ([`crate::browser`]: `Host` and `Origin` when no keys
//! are configured). No CORS layer: browsers get no `Access-Control-*` header and preflights are
//! not answered. Keys come as `Authorization: Bearer KEY` or `x-api-key: KEY`; errors on
//! `/v1/messages` paths are re-rendered in Anthropic's shape by the outermost layer.

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
use crate::{browser, completion, stream};

/// The client's address, put on each request by the accept loop.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peer(pub SocketAddr);

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let chat = post(chat_completions)
        .layer(middleware::from_fn_with_state(state.clone(), guard_api))
        .layer(middleware::from_fn_with_state(state.clone(), count));
    let models = get(list_models).layer(middleware::from_fn_with_state(state.clone(), guard_api));
    let model = get(retrieve_model).layer(middleware::from_fn_with_state(state.clone(), guard_api));
    let messages = post(crate::messages::create)
        .layer(middleware::from_fn_with_state(state.clone(), guard_api))
        .layer(middleware::from_fn_with_state(state.clone(), count));
    let count_tokens = post(crate::messages::count_tokens)
        .layer(middleware::from_fn_with_state(state.clone(), guard_api));
    let metrics = get(metrics).layer(middleware::from_fn_with_state(state.clone(), guard_metrics));
    let api = |r: axum::routing::MethodRouter<Arc<AppState>>| {
        r.layer(middleware::from_fn_with_state(state.clone(), guard_api))
    };
    let responses = api(post(crate::responses::create))
        .layer(middleware::from_fn_with_state(state.clone(), count));
    let response = api(get(crate::responses::retrieve).delete(crate::responses::delete));
    Router::new()
        .route("/v1/chat/completions", chat)
        .route("/v1/messages", messages)
        .route("/v1/messages/count_tokens", count_tokens)
        .route("/v1/responses", responses)
        .route("/v1/responses/{id}", response)
        .route(
            "/v1/responses/{id}/input_items",
            api(get(crate::responses::input_items)),
        )
        .route(
            "/v1/responses/{id}/cancel",
            api(post(crate::responses::cancel)),
        )
        .route(
            "/v1/files",
            api(post(crate::responses::files::upload).get(crate::responses::files::list))
                // Uploads are capped by `[server.state] max_file_bytes` while they stream in,
                // by the body guard (crate::body), in place of axum's own limit.
                .layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/v1/files/{id}",
            api(get(crate::responses::files::retrieve).delete(crate::responses::files::delete)),
        )
        .route(
            "/v1/files/{id}/content",
            api(get(crate::responses::files::content)),
        )
        .route(
            "/v1/containers/{id}/files",
            api(get(crate::responses::files::container_files)),
        )
        .route(
            "/v1/containers/{id}/files/{file_id}",
            api(get(crate::responses::files::container_file)),
        )
        .route(
            "/v1/containers/{id}/files/{file_id}/content",
            api(get(crate::responses::files::container_file_content)),
        )
        .route(
            "/v1/conversations",
            api(post(crate::responses::conversations::create)),
        )
        .route(
            "/v1/conversations/{id}",
            api(get(crate::responses::conversations::retrieve)
                .post(crate::responses::conversations::update)
                .delete(crate::responses::conversations::delete)),
        )
        .route(
            "/v1/conversations/{id}/items",
            api(get(crate::responses::conversations::items)),
        )
        .route("/v1/models", models)
        .route("/v1/models/{id}", model)
        .route("/metrics", metrics)
        .route("/healthz", get(healthz))
        .route("/", get(crate::ui::root))
        .route("/ui", get(crate::ui::index))
        .route("/ui/", get(crate::ui::index))
        .route("/ui/{name}", get(crate::ui::asset))
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async { ApiError::method_not_allowed() })
        .layer(middleware::from_fn_with_state(state.clone(), guard_browser))
        // Every body is read through it: one size and time limit for every route.
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::body::guard,
        ))
        // Every error answer is JSON: the ones axum makes itself are re-rendered.
        .layer(middleware::from_fn(crate::error::json_errors))
        .layer(middleware::from_fn(crate::messages::error::reshape))
        // Outermost: refused requests get their line too, with the status the client saw.
        .layer(middleware::from_fn(crate::access::log))
        .with_state(state)
}

/// Without keys: only loopback `Host` names and allowed origins (see [`crate::browser`]).
async fn guard_browser(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if state.keys.is_empty() {
        if let Err(e) = browser::check_keyless(request.headers(), &state.limits.allowed_origins) {
            tracing::info!(
                host = ?request.headers().get(header::HOST),
                origin = ?request.headers().get(header::ORIGIN),
                code = ?e.code,
                "refused a browser request to a gateway without keys"
            );
            return e.into_response();
        }
    }
    next.run(request).await
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
        // With a state database shared by instances, the limit is counted there too.
        if let Err(wait) = crate::shared_limits::take_request(&state, limiter, who).await {
            return ApiError::rate_limited(wait).into_response();
        }
    }
    let mut request = request;
    request
        .extensions_mut()
        .insert(User(state.keys.user_of(who)));
    next.run(request).await
}

/// The user a request acts for ([`crate::auth::Keys::user_of`]), put on it by the key check.
#[derive(Clone, Debug)]
pub(crate) struct User(pub String);

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
    if let Err(e) = browser::check_json_body(&parts.headers) {
        return e.into_response();
    }
    let client = match read_body(body, &parts.headers, &state.limits)
        .await
        .and_then(|bytes| parse(&bytes, &state.limits))
    {
        Ok(client) => client,
        Err(e) => return e.into_response(),
    };
    crate::access::request(&client.request.model, client.stream);
    let label = if client.stream {
        StreamLabel::Yes
    } else {
        StreamLabel::No
    };
    if let Some(agent) = state.agents.iter().find(|a| a.name == client.request.model) {
        let agent = agent.clone();
        let owner = parts
            .extensions
            .get::<User>()
            .map_or_else(|| "local".to_owned(), |u| u.0.clone());
        let mut response =
            crate::responses::chat_agent::respond(state.clone(), &agent, &owner, client).await;
        response.extensions_mut().insert(label);
        return response;
    }
    let mut response = match state.model(&client.request.model) {
        None => unknown_model(&state, &client.request.model),
        Some(model) if client.stream => {
            stream::respond(state.clone(), model, client, started).await
        }
        Some(model) => completion::respond(&state, model, client, started).await,
    };
    response.extensions_mut().insert(label);
    response
}

/// 404 for a name that is not configured; 503 for one whose upstream could not be set up.
pub(crate) fn unknown_model(state: &AppState, name: &str) -> Response {
    unknown_model_error(state, name).into_response()
}

pub(crate) fn unknown_model_error(state: &AppState, name: &str) -> ApiError {
    match state.unavailable.get(state.resolved_name(name)) {
        Some(reason) => {
            tracing::warn!(model = %name, %reason, "request for a model that is not set up");
            ApiError::model_unavailable(name)
        }
        None => ApiError::model_not_found(name, &state.served_names()),
    }
}

/// Anthropic's SDKs send `anthropic-version` on every request; OpenAI's never do.
fn wants_anthropic_shape(headers: &axum::http::HeaderMap) -> bool {
    headers.contains_key("anthropic-version")
}

/// `GET /v1/models`: OpenAI's list, or Anthropic's when the request carries `anthropic-version`.
async fn list_models(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
) -> Response {
    if wants_anthropic_shape(&headers) {
        json(Body::from(state.anthropic_models_body.clone()))
    } else {
        json(Body::from(state.models_body.clone()))
    }
}

/// `GET /v1/models/{id}`: the model object, as OpenAI's `models.retrieve` reads it.
async fn retrieve_model(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Response {
    if state.models.contains_key(&id) || state.agents.iter().any(|a| a.name == id) {
        let object = if wants_anthropic_shape(&headers) {
            crate::anthropic_model_object(&id)
        } else {
            crate::model_object(&id)
        };
        json(Body::from(object.to_string()))
    } else {
        unknown_model(&state, &id)
    }
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
