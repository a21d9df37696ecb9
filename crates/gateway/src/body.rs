//! Every request body's size and time limits, in one place: the [`guard`] layer wraps each
//! request's body before any route sees it, so a handler (or an extractor: `Multipart`,
//! `Bytes`) reads it through [`GuardedBody`] whether it knows about the limits or not.
//!
//! - **Size**: a `Content-Length` above the route's cap is answered 413 before the handler runs;
//!   a chunked body that runs over is cut with an error while it is read.
//! - **Time**: a body that stalls is cut with an error. Ordinary (JSON) bodies must arrive whole
//!   within `body_read_timeout_secs` of the request; an upload (`POST /v1/files`), which may be
//!   large, must deliver [`UPLOAD_PROGRESS_BYTES`] more (or its end) within every
//!   `upload_progress_timeout_secs`. A drip of a byte now and then counts as no progress, so it
//!   cannot hold a connection (and a slot of `max_connections`) for long.
//!
//! When the body was cut, the layer answers 413 or 408 in place of whatever the handler made of
//! the read error, so the status does not depend on how a route reads its body.
//!
//! The timer is armed only when a read has to wait: a body that came with the request head
//! costs no timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use crate::error::ApiError;
use crate::state::AppState;

/// How much more of an upload must arrive within each `upload_progress_timeout_secs`.
pub(crate) const UPLOAD_PROGRESS_BYTES: u64 = 64 << 10;

/// Room for the multipart framing around an upload's file.
const MULTIPART_OVERHEAD: u64 = 64 << 10;

/// Why a body was cut. It travels inside the read error, so a reader can tell it apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyCut {
    #[error("the request body was not received in time")]
    TimedOut,
    #[error("the request body is larger than its limit")]
    TooLarge,
}

impl BodyCut {
    /// The cut a read error holds, looking through the errors that wrap it.
    pub(crate) fn find(error: &(dyn std::error::Error + 'static)) -> Option<BodyCut> {
        let mut next = Some(error);
        while let Some(e) = next {
            if let Some(cut) = e.downcast_ref::<BodyCut>() {
                return Some(*cut);
            }
            next = e.source();
        }
        None
    }

    fn code(self) -> u8 {
        match self {
            BodyCut::TimedOut => 1,
            BodyCut::TooLarge => 2,
        }
    }

    fn from_code(code: u8) -> Option<BodyCut> {
        match code {
            1 => Some(BodyCut::TimedOut),
            2 => Some(BodyCut::TooLarge),
            _ => None,
        }
    }
}

/// The limits of one request's body.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyLimits {
    /// The largest body, in bytes.
    pub max_bytes: u64,
    pub clock: Clock,
}

/// When a body that is still arriving is cut.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Clock {
    /// The whole body within this time of the request.
    Whole(Duration),
    /// [`UPLOAD_PROGRESS_BYTES`] more (or the end) within each period of this length.
    Progress(Duration),
}

impl BodyLimits {
    /// The limits of the request: an upload's, or every other body's.
    pub(crate) fn of(state: &AppState, method: &Method, path: &str) -> BodyLimits {
        if method == Method::POST && path == "/v1/files" {
            BodyLimits {
                max_bytes: state
                    .responses
                    .max_file_bytes()
                    .saturating_add(MULTIPART_OVERHEAD),
                clock: Clock::Progress(state.limits.upload_progress_timeout),
            }
        } else {
            BodyLimits {
                max_bytes: state.limits.body_limit as u64,
                clock: Clock::Whole(state.limits.body_read_timeout),
            }
        }
    }
}

/// The layer: checks the announced length, wraps the body, and answers 408/413 for a body it
/// cut.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let limits = BodyLimits::of(&state, request.method(), request.uri().path());
    if announced_length(request.headers()).is_some_and(|n| n > limits.max_bytes) {
        return too_large(limits).into_response();
    }
    let cut = Arc::new(AtomicU8::new(0));
    let request = request.map(|body| Body::new(GuardedBody::new(body, limits, Arc::clone(&cut))));
    let response = next.run(request).await;
    match BodyCut::from_code(cut.load(Ordering::Acquire)) {
        Some(BodyCut::TimedOut) => ApiError::body_timeout().into_response(),
        Some(BodyCut::TooLarge) => too_large(limits).into_response(),
        None => response,
    }
}

fn too_large(limits: BodyLimits) -> ApiError {
    let error = ApiError::too_large(usize::try_from(limits.max_bytes).unwrap_or(usize::MAX));
    match limits.clock {
        // What is too large in an upload is its file.
        Clock::Progress(_) => error.with_param("file"),
        Clock::Whole(_) => error,
    }
}

/// The `Content-Length` a request announces.
pub(crate) fn announced_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// A request body read within [`BodyLimits`]; past them it yields a [`BodyCut`] error and
/// records the cut for the layer.
pub(crate) struct GuardedBody {
    inner: Body,
    limits: BodyLimits,
    /// When the body is cut unless it ends (or, for uploads, progresses) first.
    deadline: Instant,
    /// Armed on the first read that has to wait.
    timer: Option<Pin<Box<Sleep>>>,
    received: u64,
    /// `received` when the upload's progress period last began.
    progress_mark: u64,
    cut: Arc<AtomicU8>,
    done: bool,
}

impl GuardedBody {
    fn new(inner: Body, limits: BodyLimits, cut: Arc<AtomicU8>) -> GuardedBody {
        let period = match limits.clock {
            Clock::Whole(d) | Clock::Progress(d) => d,
        };
        GuardedBody {
            inner,
            limits,
            deadline: Instant::now() + period,
            timer: None,
            received: 0,
            progress_mark: 0,
            cut,
            done: false,
        }
    }

    fn cut(&mut self, why: BodyCut) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.done = true;
        self.cut.store(why.code(), Ordering::Release);
        Poll::Ready(Some(Err(axum::Error::new(why))))
    }

    /// Counts a data frame; an upload that made enough progress gets a new period.
    fn count(&mut self, bytes: u64) {
        self.received = self.received.saturating_add(bytes);
        if let Clock::Progress(period) = self.limits.clock {
            if self.received - self.progress_mark >= UPLOAD_PROGRESS_BYTES {
                self.progress_mark = self.received;
                self.deadline = Instant::now() + period;
                if let Some(timer) = &mut self.timer {
                    timer.as_mut().reset(self.deadline);
                }
            }
        }
    }
}

impl hyper::body::Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let len = frame.data_ref().map_or(0, |d| d.len() as u64);
                this.count(len);
                if this.received > this.limits.max_bytes {
                    return this.cut(BodyCut::TooLarge);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(None) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Pending => {
                let deadline = this.deadline;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                ready!(timer.as_mut().poll(cx));
                this.cut(BodyCut::TimedOut)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use http_body_util::BodyExt;

    fn guarded(body: Body, clock: Clock, max_bytes: u64) -> (GuardedBody, Arc<AtomicU8>) {
        let cut = Arc::new(AtomicU8::new(0));
        let limits = BodyLimits { max_bytes, clock };
        (GuardedBody::new(body, limits, Arc::clone(&cut)), cut)
    }

    #[tokio::test]
    async fn a_body_that_arrived_passes_and_one_over_the_cap_is_cut() {
        let (body, cut) = guarded(
            Body::from("hello"),
            Clock::Whole(Duration::from_secs(1)),
            10,
        );
        assert_eq!(body.collect().await.unwrap().to_bytes(), "hello");
        assert_eq!(cut.load(Ordering::Acquire), 0);
        let (body, cut) = guarded(
            Body::from("x".repeat(11)),
            Clock::Whole(Duration::from_secs(1)),
            10,
        );
        let e = body.collect().await.unwrap_err();
        assert_eq!(BodyCut::find(&e), Some(BodyCut::TooLarge));
        assert_eq!(
            BodyCut::from_code(cut.load(Ordering::Acquire)),
            Some(BodyCut::TooLarge)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_is_cut_at_its_deadline() {
        let (tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let (body, cut) = guarded(
            Body::from_stream(rx),
            Clock::Whole(Duration::from_secs(2)),
            100,
        );
        let e = body.collect().await.unwrap_err();
        assert_eq!(BodyCut::find(&e), Some(BodyCut::TimedOut));
        assert_eq!(
            BodyCut::from_code(cut.load(Ordering::Acquire)),
            Some(BodyCut::TimedOut)
        );
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn an_upload_must_progress_and_a_drip_does_not_count() {
        use futures::SinkExt;
        let period = Duration::from_secs(2);
        // A byte a second: never the progress an upload needs, so cut after one period.
        let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let (body, _) = guarded(Body::from_stream(rx), Clock::Progress(period), 1 << 20);
        let drip = tokio::spawn(async move {
            for _ in 0..10 {
                if tx.send(Ok(Bytes::from_static(b"x"))).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let started = Instant::now();
        let e = body.collect().await.unwrap_err();
        assert_eq!(BodyCut::find(&e), Some(BodyCut::TimedOut));
        assert_eq!(started.elapsed(), period);
        drip.abort();

        // Progress every second: it goes on past several periods.
        let (mut tx, rx) = futures::channel::mpsc::channel::<Result<Bytes, std::io::Error>>(4);
        let (body, _) = guarded(Body::from_stream(rx), Clock::Progress(period), 1 << 20);
        tokio::spawn(async move {
            for _ in 0..5 {
                let chunk = Bytes::from(vec![b'x'; UPLOAD_PROGRESS_BYTES as usize]);
                tx.send(Ok(chunk)).await.unwrap();
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let all = body.collect().await.unwrap().to_bytes();
        assert_eq!(all.len() as u64, 5 * UPLOAD_PROGRESS_BYTES);
    }
}
