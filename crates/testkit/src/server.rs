//! The HTTP server: routes, handlers and the accept loop.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use bytes::Bytes;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::plan::{Endpoint, Plan, RequestCtx};
use crate::sse::{faulty_json_body, sse_body, Fault};
use crate::{anthropic, openai, Behavior, Recorded, Reply, Shared};

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(endpoint(Endpoint::OpenAi)))
        .route("/v1/messages", post(endpoint(Endpoint::Anthropic)))
        .route("/v1/models", get(models))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(shared)
}

/// Accepts connections until the listener fails for good (it is shut down when
/// the `TestUpstream` is dropped) or the task is aborted; every connection runs in
/// a `JoinSet` owned by this task, so they all end with it.
pub(crate) async fn serve(listener: tokio::net::TcpListener, router: Router) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    let service = TowerToHyperService::new(router.clone());
                    connections.spawn(async move {
                        // No hyper timer: no header-read timeout, so idle keep-alive
                        // connections survive tests running on a paused clock.
                        let _ = hyper::server::conn::http1::Builder::new()
                            .keep_alive(true)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(e) => match e.kind() {
                    std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock => {}
                    std::io::ErrorKind::InvalidInput => break,
                    // e.g. too many open files: back off briefly.
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                },
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The handler of one API's route: both APIs are served by [`handle`], told which one it is.
fn endpoint(
    endpoint: Endpoint,
) -> impl Fn(
    State<Arc<Shared>>,
    Uri,
    HeaderMap,
    Bytes,
) -> futures::future::BoxFuture<'static, Response>
       + Clone
       + Send
       + Sync
       + 'static {
    move |State(shared), uri, headers, body| {
        Box::pin(async move { handle(&shared, endpoint, &uri, &headers, &body).await })
    }
}

async fn models() -> Response {
    axum::Json(json!({
        "object": "list",
        "data": [{ "id": "mock-model", "object": "model", "created": 0, "owned_by": "testkit" }],
    }))
    .into_response()
}

async fn not_found(uri: Uri) -> Response {
    error_response(
        Endpoint::OpenAi,
        StatusCode::NOT_FOUND,
        &format!("testkit: no route for {}", uri.path()),
        None,
    )
}

async fn handle(
    shared: &Shared,
    endpoint: Endpoint,
    uri: &Uri,
    headers: &HeaderMap,
    raw: &Bytes,
) -> Response {
    let parsed = serde_json::from_slice::<Value>(raw);
    // Built only while recording is on (benchmarks turn it off).
    let record = !shared.lock().skip_recording;
    let recorded = record.then(|| Recorded {
        path: uri.path().to_owned(),
        body: match &parsed {
            Ok(value) => value.clone(),
            Err(_) => Value::String(String::from_utf8_lossy(raw).into_owned()),
        },
        authorization: headers
            .get(header::AUTHORIZATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    });
    let request = match parsed {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) => {
            shared.lock().requests.extend(recorded);
            return error_response(
                endpoint,
                StatusCode::BAD_REQUEST,
                "testkit: request body must be a JSON object",
                None,
            );
        }
        Err(e) => {
            shared.lock().requests.extend(recorded);
            return error_response(
                endpoint,
                StatusCode::BAD_REQUEST,
                &format!("testkit: invalid JSON body: {e}"),
                None,
            );
        }
    };
    let behavior = {
        let mut inner = shared.lock();
        inner.requests.extend(recorded);
        inner.queue.pop_front().or_else(|| inner.default.clone())
    };
    let ctx = RequestCtx::new(endpoint, &request);
    match behavior {
        None => error_response(
            endpoint,
            StatusCode::INTERNAL_SERVER_ERROR,
            "testkit: no scripted reply left",
            None,
        ),
        Some(Behavior::Status {
            code,
            message,
            retry_after,
        }) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            error_response(endpoint, status, &message, retry_after)
        }
        Some(Behavior::Reply(reply)) => respond(endpoint, &ctx, &reply, Fault::None),
        Some(Behavior::SlowFirstByte { delay, reply }) => {
            tokio::time::sleep(delay).await;
            respond(endpoint, &ctx, &reply, Fault::None)
        }
        Some(Behavior::StallMidStream {
            after_chunks,
            stall,
            reply,
        }) => respond(
            endpoint,
            &ctx,
            &reply,
            Fault::Stall {
                after: after_chunks,
                stall,
            },
        ),
        Some(Behavior::CutMidStream {
            after_chunks,
            reply,
        }) => respond(
            endpoint,
            &ctx,
            &reply,
            Fault::Cut {
                after: after_chunks,
            },
        ),
        Some(Behavior::Huge { bytes, json }) => {
            crate::huge::response(endpoint, bytes, json || !ctx.stream)
        }
        Some(Behavior::MalformedSse {
            after_chunks,
            reply,
        }) => respond(
            endpoint,
            &ctx,
            &reply,
            Fault::Malformed {
                after: after_chunks,
            },
        ),
    }
}

fn respond(endpoint: Endpoint, ctx: &RequestCtx, reply: &Reply, fault: Fault) -> Response {
    let plan = Plan::new(reply, &ctx.stops);
    if ctx.stream {
        let (frames, terminal) = match endpoint {
            Endpoint::OpenAi => openai::stream_frames(&plan, ctx),
            Endpoint::Anthropic => anthropic::stream_frames(&plan, ctx),
        };
        let mut response = Response::new(sse_body(frames, terminal, fault));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream; charset=utf-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    } else {
        let value = match endpoint {
            Endpoint::OpenAi => openai::body(&plan, ctx),
            Endpoint::Anthropic => anthropic::body(&plan, ctx),
        };
        let bytes = value.to_string().into_bytes();
        let body = faulty_json_body(bytes.clone(), fault).unwrap_or_else(|| Body::from(bytes));
        let mut response = Response::new(body);
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}

/// The `type` of an error body for an HTTP status.
fn error_type(endpoint: Endpoint, status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 | 422 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        code if code >= 500 => match endpoint {
            Endpoint::OpenAi => "server_error",
            Endpoint::Anthropic => "api_error",
        },
        _ => "invalid_request_error",
    }
}

/// An error answer: `{"error":{"message","type",…}}` (plus `"type":"error"` on
/// the Anthropic endpoint) with an optional `Retry-After` header.
fn error_response(
    endpoint: Endpoint,
    status: StatusCode,
    message: &str,
    retry_after: Option<u64>,
) -> Response {
    let kind = error_type(endpoint, status);
    let body = match endpoint {
        Endpoint::OpenAi => json!({
            "error": { "message": message, "type": kind, "param": null, "code": null },
        }),
        Endpoint::Anthropic => json!({
            "type": "error",
            "error": { "type": kind, "message": message },
        }),
    };
    let mut response = (status, axum::Json(body)).into_response();
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}
