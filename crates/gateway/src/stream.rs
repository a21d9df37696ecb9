//! Streaming answers: the model's events as server-sent events, in the form of an [`SseCodec`]
//! (OpenAI `chat.completion.chunk`s here, Anthropic's events in `messages/stream.rs`).
//!
//! The response starts only once the model produced its first event, so a failure before any
//! content (bad key upstream, every fallback arm down, a timeout) is still a proper HTTP error
//! status. After that, an upstream failure or a silence longer than the idle limit ends the
//! stream with one error event in the codec's shape (OpenAI: `data: {"error": {…}}` and no
//! `[DONE]`). Codecs with a keep-alive event (Anthropic's `ping`) write one after
//! `PING_INTERVAL` without output.
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
use toolbridge_protocol::types::{ChatRequest, FinishReason, Usage};
use toolbridge_protocol::visible::VisiblePrefix;
use toolbridge_providers::{Model, ModelStream};

use crate::chunks::ChunkWriter;
use crate::error::ApiError;
use crate::request::{completion_id, unix_now, ClientRequest};
use crate::state::AppState;

/// A chunk of the body is sent once this much is buffered, even if more events are ready.
const FLUSH_BYTES: usize = 16 << 10;

/// A keep-alive is written after this long without an event, on wires that have one.
const PING_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

/// How one wire (Chat Completions chunks, Messages events) writes a streamed answer. The shared
/// body below decides what is written when: visible text only, calls filtered by
/// `parallel_tool_calls`, metrics, the idle limit and keep-alives; a codec only renders.
pub(crate) trait SseCodec: Send + Unpin + 'static {
    /// What opens the stream, before the first event.
    fn start(&mut self, out: &mut Vec<u8>);
    fn text(&mut self, out: &mut Vec<u8>, text: &str);
    fn reasoning(&mut self, out: &mut Vec<u8>, text: &str);
    fn call_start(&mut self, out: &mut Vec<u8>, index: usize, id: &str, name: &str);
    fn call_args(&mut self, out: &mut Vec<u8>, index: usize, fragment: &str);
    fn call_end(&mut self, out: &mut Vec<u8>, index: usize);
    fn usage(&mut self, usage: Usage);
    /// The request's stop sequence the answer ended on (before `finish`).
    fn stop_sequence(&mut self, _sequence: &str) {}
    /// The upstream's signature over the reasoning since the last one (a wire that has no
    /// place for it drops it).
    fn reasoning_signature(&mut self, _out: &mut Vec<u8>, _signature: &str) {}
    /// Encrypted reasoning (dropped where the wire has no place for it).
    fn redacted_reasoning(&mut self, _out: &mut Vec<u8>, _data: &str) {}
    fn finish(&mut self, out: &mut Vec<u8>, reason: FinishReason);
    /// The end of a complete answer.
    fn end(&mut self, out: &mut Vec<u8>);
    /// An error after the stream began; nothing follows it.
    fn error(&mut self, out: &mut Vec<u8>, error: &ApiError);
    /// A keep-alive event while the upstream is silent; `false` when the wire has none.
    fn ping(&mut self, _out: &mut Vec<u8>) -> bool {
        false
    }
}

/// The Chat Completions codec: OpenAI chunks, the usage chunk when asked for, `[DONE]`.
struct ChatCodec {
    writer: ChunkWriter,
    include_usage: bool,
    usage: Option<Usage>,
}

impl SseCodec for ChatCodec {
    fn start(&mut self, out: &mut Vec<u8>) {
        self.writer.role(out);
    }
    fn text(&mut self, out: &mut Vec<u8>, text: &str) {
        self.writer.content(out, text);
    }
    fn reasoning(&mut self, out: &mut Vec<u8>, text: &str) {
        self.writer.reasoning(out, text);
    }
    fn call_start(&mut self, out: &mut Vec<u8>, index: usize, id: &str, name: &str) {
        self.writer.call_start(out, index, id, name);
    }
    fn call_args(&mut self, out: &mut Vec<u8>, index: usize, fragment: &str) {
        self.writer.call_args(out, index, fragment);
    }
    fn call_end(&mut self, _out: &mut Vec<u8>, _index: usize) {}
    fn usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }
    fn finish(&mut self, out: &mut Vec<u8>, reason: FinishReason) {
        self.writer.finish(out, reason);
    }
    fn end(&mut self, out: &mut Vec<u8>) {
        if self.include_usage {
            if let Some(usage) = &self.usage {
                self.writer.usage(out, usage);
            }
        }
        ChunkWriter::done(out);
    }
    fn error(&mut self, out: &mut Vec<u8>, error: &ApiError) {
        ChunkWriter::error(out, &error.body_json());
    }
}

/// Starts a streamed Chat Completions answer.
pub(crate) async fn respond(
    state: Arc<AppState>,
    model: &Model,
    client: ClientRequest,
    started: Instant,
) -> Response {
    let include_usage = client.include_usage;
    let name = client.request.model.clone();
    respond_with(state, model, client.request, started, move || ChatCodec {
        writer: ChunkWriter::new(&completion_id(), unix_now(), &name),
        include_usage,
        usage: None,
    })
    .await
}

/// Starts a streamed answer in the wire form of the codec `make` builds (once the first event
/// is there: a failure before it is an HTTP error status, rendered from an [`ApiError`]).
pub(crate) async fn respond_with<C: SseCodec>(
    state: Arc<AppState>,
    model: &Model,
    request: ChatRequest,
    started: Instant,
    make: impl FnOnce() -> C,
) -> Response {
    let deadline = started + state.limits.request_timeout;
    let name = request.model.clone();
    let only_first_call = request.parallel_tool_calls == Some(false);
    let mut upstream = model.stream(request);
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
    // The body outlives the handler: it takes the access record along for the usage.
    let access = crate::access::current();
    if let (Some(record), Some(arm)) = (&access, upstream.arm()) {
        record.arm(arm);
    }
    let idle = state.limits.stream_idle_timeout;
    let body = SseBody {
        codec: make(),
        upstream: Some(upstream),
        first,
        started_stream: false,
        only_first_call,
        visible: VisiblePrefix::default(),
        idle: Box::pin(tokio::time::sleep(idle.min(PING_INTERVAL))),
        idle_limit: idle,
        last_progress: Instant::now(),
        last_write: Instant::now(),
        model: name,
        started,
        state,
        access,
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

struct SseBody<C> {
    codec: C,
    /// `None` once the stream has ended.
    upstream: Option<ModelStream>,
    /// The event that started the response, not yet written.
    first: Option<ModelEvent>,
    started_stream: bool,
    /// `parallel_tool_calls: false`: calls after the first are left out.
    only_first_call: bool,
    /// Text after a malformed call is its raw markup: the client gets the visible prefix only.
    visible: VisiblePrefix,
    idle: Pin<Box<Sleep>>,
    idle_limit: std::time::Duration,
    /// The last event from the upstream (the idle limit counts from here).
    last_progress: Instant,
    /// The last bytes sent to the client (keep-alives count from here).
    last_write: Instant,
    model: String,
    started: Instant,
    state: Arc<AppState>,
    access: Option<crate::access::Record>,
}

impl<C: SseCodec> SseBody<C> {
    fn write_event(&mut self, out: &mut Vec<u8>, event: ModelEvent) {
        if let Some(text) = self.visible.shown(&event) {
            self.codec.text(out, text);
            return;
        }
        let skip = |index: usize| self.only_first_call && index > 0;
        match event {
            // Not visible: malformed call markup (logged with the Malformed event).
            ModelEvent::Text { .. } => {}
            ModelEvent::Reasoning { text } => self.codec.reasoning(out, &text),
            ModelEvent::CallStart { index, id, name } => {
                if !skip(index) {
                    self.codec.call_start(out, index, &id, &name);
                }
            }
            ModelEvent::CallArgs { index, fragment } => {
                if !skip(index) {
                    self.codec.call_args(out, index, &fragment);
                }
            }
            ModelEvent::CallEnd { index } => {
                if !skip(index) {
                    self.state.metrics.tool_calls(1);
                    self.codec.call_end(out, index);
                }
            }
            // The raw text of a malformed call follows; it is left out of the content.
            ModelEvent::Malformed { error } => {
                tracing::info!(model = %self.model, reason = %error.reason, raw = %error.raw, "malformed tool call in a stream; its text is not sent");
                self.state
                    .metrics
                    .malformed(error.kind == ErrorKind::Truncated);
            }
            ModelEvent::Usage { usage } => {
                if let Some(record) = &self.access {
                    record.usage(usage);
                }
                self.codec.usage(usage);
            }
            ModelEvent::StopSequence { sequence } => self.codec.stop_sequence(&sequence),
            ModelEvent::ReasoningSignature { signature } => {
                self.codec.reasoning_signature(out, &signature)
            }
            ModelEvent::RedactedReasoning { data } => self.codec.redacted_reasoning(out, &data),
            ModelEvent::Finish { reason } => self.codec.finish(out, reason),
        }
    }

    fn write_error(&mut self, out: &mut Vec<u8>, error: ApiError) {
        self.codec.error(out, &error);
        self.upstream = None;
    }
}

impl<C: SseCodec> Stream for SseBody<C> {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.upstream.is_none() {
            return Poll::Ready(None);
        }
        let mut out = Vec::new();
        if !this.started_stream {
            this.started_stream = true;
            this.codec.start(&mut out);
            if let Some(event) = this.first.take() {
                this.write_event(&mut out, event);
            }
        }
        let mut progressed = false;
        while out.len() < FLUSH_BYTES {
            let Some(upstream) = this.upstream.as_mut() else {
                break;
            };
            match upstream.poll_next_unpin(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    progressed = true;
                    this.write_event(&mut out, event);
                }
                Poll::Ready(Some(Err(error))) => {
                    this.state.metrics.upstream_error(error.kind());
                    tracing::warn!(model = %this.model, kind = error.kind(), %error, "upstream failed mid-stream");
                    this.write_error(&mut out, ApiError::upstream(&error));
                }
                Poll::Ready(None) => {
                    this.codec.end(&mut out);
                    this.upstream = None;
                }
                Poll::Pending => break,
            }
        }
        if progressed {
            this.last_progress = Instant::now();
        }
        if !out.is_empty() {
            this.last_write = Instant::now();
            return Poll::Ready(Some(Ok(Bytes::from(out))));
        }
        // Nothing ready: wait, but not longer than the idle limit since the last progress (nor
        // than the keep-alive interval since the last write). The timer is moved only when it
        // fires, not on every event.
        loop {
            let due = this.last_progress + this.idle_limit;
            let ping_due = this.last_write + PING_INTERVAL;
            let wake = due.min(ping_due);
            if this.idle.deadline() < wake {
                this.idle.as_mut().reset(wake);
            }
            match this.idle.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) => {
                    let now = Instant::now();
                    if now >= due {
                        tracing::warn!(model = %this.model, "upstream silent past the stream idle limit");
                        this.state.metrics.upstream_error("timeout");
                        this.write_error(&mut out, ApiError::timeout());
                        return Poll::Ready(Some(Ok(Bytes::from(out))));
                    }
                    if now >= ping_due {
                        this.last_write = now;
                        if this.codec.ping(&mut out) {
                            return Poll::Ready(Some(Ok(Bytes::from(out))));
                        }
                    }
                }
            }
        }
    }
}

impl<C> Drop for SseBody<C> {
    fn drop(&mut self) {
        self.state.metrics.duration(true, self.started.elapsed());
    }
}
