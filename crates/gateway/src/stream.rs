//! Streaming answers: the model's events as OpenAI `chat.completion.chunk` server-sent events.
//!
//! The response starts only once the model produced its first event, so a failure before any
//! content (bad key upstream, every fallback arm down, a timeout) is still a proper HTTP error
//! status. After that, an upstream failure or a silence longer than the idle limit ends the
//! stream with one OpenAI-shaped error event, `data: {"error": {…}}`, and no `[DONE]`.
//!
//! Events that are ready together are written into one buffer and sent as one chunk of the
//! HTTP body. When the client goes away, hyper drops the body, which drops the model stream,
//! which cancels the upstream request.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::time::{Instant, Sleep};
use toolbridge_protocol::decode::ModelEvent;
use toolbridge_protocol::parser::ErrorKind;
use toolbridge_protocol::types::Usage;
use toolbridge_providers::{Model, ModelStream};

use crate::chunks::ChunkWriter;
use crate::error::ApiError;
use crate::request::{completion_id, unix_now, ClientRequest};
use crate::state::AppState;

/// A chunk of the body is sent once this much is buffered, even if more events are ready.
const FLUSH_BYTES: usize = 16 << 10;

/// Starts a streamed answer.
pub(crate) async fn respond(
    state: Arc<AppState>,
    model: &Model,
    client: ClientRequest,
    started: Instant,
) -> Response {
    let deadline = started + state.limits.request_timeout;
    let name = client.request.model.clone();
    let only_first_call = client.request.parallel_tool_calls == Some(false);
    let mut upstream = model.stream(client.request);
    let first = match tokio::time::timeout_at(deadline, upstream.next()).await {
        Err(_) => {
            tracing::warn!(model = %name, "no first event within the request timeout");
            state.metrics.duration(true, started.elapsed());
            return ApiError::timeout().into_response();
        }
        Ok(Some(Err(error))) => {
            state.metrics.upstream_error(error.kind());
            state.metrics.duration(true, started.elapsed());
            tracing::warn!(model = %name, kind = error.kind(), %error, "upstream failed");
            return ApiError::upstream(&error).into_response();
        }
        Ok(Some(Ok(event))) => Some(event),
        Ok(None) => None,
    };
    if upstream.arm().is_some_and(|a| a.index > 0) {
        state.metrics.fallback();
    }
    let idle = state.limits.stream_idle_timeout;
    let body = SseBody {
        writer: ChunkWriter::new(&completion_id(), unix_now(), &name),
        upstream: Some(upstream),
        first,
        started_stream: false,
        include_usage: client.include_usage,
        only_first_call,
        usage: None,
        idle: Box::pin(tokio::time::sleep(idle)),
        idle_limit: idle,
        last_progress: Instant::now(),
        model: name,
        started,
        state,
    };
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

struct SseBody {
    writer: ChunkWriter,
    /// `None` once the stream has ended.
    upstream: Option<ModelStream>,
    /// The event that started the response, not yet written.
    first: Option<ModelEvent>,
    started_stream: bool,
    include_usage: bool,
    /// `parallel_tool_calls: false`: calls after the first are left out.
    only_first_call: bool,
    usage: Option<Usage>,
    idle: Pin<Box<Sleep>>,
    idle_limit: std::time::Duration,
    last_progress: Instant,
    model: String,
    started: Instant,
    state: Arc<AppState>,
}

impl SseBody {
    fn write_event(&mut self, out: &mut Vec<u8>, event: ModelEvent) {
        let w = &self.writer;
        match event {
            ModelEvent::Text { text } => w.content(out, &text),
            ModelEvent::Reasoning { text } => w.reasoning(out, &text),
            ModelEvent::CallStart { index, id, name } => {
                if !(self.only_first_call && index > 0) {
                    w.call_start(out, index, &id, &name);
                }
            }
            ModelEvent::CallArgs { index, fragment } => {
                if !(self.only_first_call && index > 0) {
                    w.call_args(out, index, &fragment);
                }
            }
            ModelEvent::CallEnd { index } => {
                if !(self.only_first_call && index > 0) {
                    self.state.metrics.tool_calls(1);
                }
            }
            // The raw text of a malformed call is already in the visible text.
            ModelEvent::Malformed { error } => {
                self.state
                    .metrics
                    .malformed(error.kind == ErrorKind::Truncated);
            }
            ModelEvent::Usage { usage } => self.usage = Some(usage),
            ModelEvent::Finish { reason } => w.finish(out, reason),
        }
    }

    /// The end of a complete answer: the usage chunk if asked for, then `[DONE]`.
    fn write_end(&mut self, out: &mut Vec<u8>) {
        if self.include_usage {
            if let Some(usage) = &self.usage {
                self.writer.usage(out, usage);
            }
        }
        ChunkWriter::done(out);
        self.upstream = None;
    }

    fn write_error(&mut self, out: &mut Vec<u8>, error: ApiError) {
        ChunkWriter::error(out, &error.body_json());
        self.upstream = None;
    }
}

impl Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.upstream.is_none() {
            return Poll::Ready(None);
        }
        let mut out = Vec::new();
        if !this.started_stream {
            this.started_stream = true;
            this.writer.role(&mut out);
            if let Some(event) = this.first.take() {
                this.write_event(&mut out, event);
            }
        }
        while out.len() < FLUSH_BYTES {
            let Some(upstream) = this.upstream.as_mut() else {
                break;
            };
            match upstream.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(event))) => this.write_event(&mut out, event),
                Poll::Ready(Some(Err(error))) => {
                    this.state.metrics.upstream_error(error.kind());
                    tracing::warn!(model = %this.model, kind = error.kind(), %error, "upstream failed mid-stream");
                    this.write_error(&mut out, ApiError::upstream(&error));
                }
                Poll::Ready(None) => this.write_end(&mut out),
                Poll::Pending => break,
            }
        }
        if !out.is_empty() {
            this.last_progress = Instant::now();
            return Poll::Ready(Some(Ok(Bytes::from(out))));
        }
        // Nothing ready: wait, but not longer than the idle limit since the last progress. The
        // timer is moved only when it fires, not on every event.
        loop {
            let due = this.last_progress + this.idle_limit;
            if this.idle.deadline() < due {
                this.idle.as_mut().reset(due);
            }
            match this.idle.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if Instant::now() < due => continue,
                Poll::Ready(()) => {
                    tracing::warn!(model = %this.model, "upstream silent past the stream idle limit");
                    this.state.metrics.upstream_error("timeout");
                    this.write_error(&mut out, ApiError::timeout());
                    return Poll::Ready(Some(Ok(Bytes::from(out))));
                }
            }
        }
    }
}

impl Drop for SseBody {
    fn drop(&mut self) {
        self.state.metrics.duration(true, self.started.elapsed());
    }
}
