//! The access log: one line per request at `info` on the target `toolbridge::access`.
//!
//! The line names the method, the path (never the query string: it could carry a key), the
//! status, the requested model, the arm that answered and its tool mode, whether the answer
//! streamed, the duration and the token counts — never content or keys. The middleware
//! ([`log`]) opens a [`Record`] per request; the handlers fill it as they learn things (the
//! model once the body is parsed, the arm and usage once the model answered); the line is
//! written when the response body is dropped — after its last byte, or when the client went
//! away — so a streamed answer's line has its whole duration and its usage.
//!
//! Why a task-local and not a request extension: the arm and the usage are known deep in shared
//! code (`completion::collect`, the SSE body) that several front doors call without the
//! request at hand; the handler runs inside the middleware's future, so the record is in scope
//! there. Code that outlives the handler (a streamed body, a spawned run) takes the record with
//! [`current`] while it is still in scope.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use tokio::time::Instant;
use toolbridge_protocol::response::ArmInfo;
use toolbridge_protocol::types::Usage;

/// Requested model names are the client's text: only this many characters are logged.
const MAX_MODEL_CHARS: usize = 128;

/// The status logged for a request whose client left before the response began.
const CLIENT_CLOSED: u16 = 499;

tokio::task_local! {
    static CURRENT: Record;
}

/// What is known about one request so far; shared by the handler and the line's writer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Record(Arc<Mutex<Fields>>);

#[derive(Debug, Default)]
struct Fields {
    model: Option<String>,
    arm: Option<String>,
    mode: Option<&'static str>,
    stream: Option<bool>,
    usage: Option<Usage>,
}

impl Record {
    fn with(&self, f: impl FnOnce(&mut Fields)) {
        // A poisoned lock only means a panic elsewhere mid-update; the fields are still usable.
        let mut fields = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut fields);
    }

    /// The model the client asked for, and whether it asked for a stream.
    pub(crate) fn request(&self, model: &str, stream: bool) {
        let model: String = model.chars().take(MAX_MODEL_CHARS).collect();
        self.with(|f| {
            f.model = Some(model);
            f.stream = Some(stream);
        });
    }

    /// The arm that answered (the last one when a request made several model calls).
    pub(crate) fn arm(&self, arm: &ArmInfo) {
        let name = arm.name.clone();
        let mode = arm.mode.as_str();
        self.with(|f| {
            f.arm = Some(name);
            f.mode = Some(mode);
        });
    }

    /// Usage of one model call; several calls (retries, agent rounds) add up.
    pub(crate) fn usage(&self, usage: Usage) {
        self.with(|f| *f.usage.get_or_insert_with(Usage::default) += usage);
    }
}

/// The record of the request being handled, if the access log middleware is in front of it.
pub(crate) fn current() -> Option<Record> {
    CURRENT.try_with(Clone::clone).ok()
}

/// Notes the requested model and streaming on the current request's record.
pub(crate) fn request(model: &str, stream: bool) {
    if let Some(r) = current() {
        r.request(model, stream);
    }
}

/// Notes the arm that answered on the current request's record.
pub(crate) fn arm(arm: &ArmInfo) {
    if let Some(r) = current() {
        r.arm(arm);
    }
}

/// Adds one model call's usage to the current request's record.
pub(crate) fn usage(usage: Usage) {
    if let Some(r) = current() {
        r.usage(usage);
    }
}

/// The middleware: runs the request with a fresh record in scope and writes its line when the
/// response body is gone.
pub(crate) async fn log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let record = Record::default();
    // Made before the handler runs: if the client goes away first, the handler's future is
    // dropped with this one and the line says 499 (nginx's "client closed request").
    let mut line = Line {
        method: request.method().to_string(),
        path: request.uri().path().to_owned(),
        status: CLIENT_CLOSED,
        started,
        record: record.clone(),
    };
    let response = CURRENT.scope(record, next.run(request)).await;
    let (parts, body) = response.into_parts();
    line.status = parts.status.as_u16();
    Response::from_parts(
        parts,
        Body::new(Logged {
            inner: body,
            _line: line,
        }),
    )
}

/// The line of one request, written when dropped.
struct Line {
    method: String,
    path: String,
    status: u16,
    started: Instant,
    record: Record,
}

impl Drop for Line {
    fn drop(&mut self) {
        let duration_ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let f = self.record.0.lock().unwrap_or_else(PoisonError::into_inner);
        tracing::info!(
            target: "toolbridge::access",
            method = %self.method,
            path = %self.path,
            status = self.status,
            model = f.model.as_deref(),
            arm = f.arm.as_deref(),
            mode = f.mode,
            stream = f.stream,
            duration_ms,
            input_tokens = f.usage.map(|u| u.prompt_tokens),
            output_tokens = f.usage.map(|u| u.completion_tokens),
            "request"
        );
    }
}

/// A response body that carries its request's line until the body is done with.
struct Logged {
    inner: Body,
    _line: Line,
}

impl HttpBody for Logged {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
