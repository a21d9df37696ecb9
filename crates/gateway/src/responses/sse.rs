//! A streamed response: the run goes on in a task of its own and its events are framed as
//! `event: TYPE` / `data: {…, "sequence_number": N}` as they come. When the client goes away,
//! a response that is not `background` is cancelled (its upstream request and running tools
//! stop); a background one runs on and is stored.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::run::{self, Prepared};
use crate::state::AppState;

/// Appends one frame (`event: TYPE`, `data: {…}`) to `out`.
fn write_frame(out: &mut Vec<u8>, kind: &str, fields: Value, sequence: u64) {
    let mut event = Map::new();
    event.insert("type".into(), Value::String(kind.to_owned()));
    if let Value::Object(map) = fields {
        event.extend(map);
    }
    event.insert("sequence_number".into(), Value::from(sequence));
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    // Writing a `Value` into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &Value::Object(event));
    out.extend_from_slice(b"\n\n");
}

/// Frames already waiting are sent together, up to about this many bytes: one write (and one
/// wake-up of the connection) for a burst of events instead of one each.
const BATCH_BYTES: usize = 32 << 10;

pub(crate) fn respond(state: Arc<AppState>, prepared: Prepared, background: bool) -> Response {
    let (tx, rx) = mpsc::channel(64);
    let cancel = prepared.cancel_token();
    tokio::spawn(run::execute(state, prepared, Some(tx)));
    // Cancels the run when the body is dropped before the run ended (the client went away).
    let guard = CancelOnDrop(if background { None } else { Some(cancel) });
    let body = futures::stream::unfold(
        (rx, guard, 0u64),
        |(mut rx, mut guard, sequence): (
            mpsc::Receiver<(&'static str, Value)>,
            CancelOnDrop,
            u64,
        )| async move {
            match rx.recv().await {
                Some((kind, fields)) => {
                    let mut out = Vec::with_capacity(1024);
                    write_frame(&mut out, kind, fields, sequence);
                    let mut sequence = sequence + 1;
                    while out.len() < BATCH_BYTES {
                        let Ok((kind, fields)) = rx.try_recv() else {
                            break;
                        };
                        write_frame(&mut out, kind, fields, sequence);
                        sequence += 1;
                    }
                    Some((
                        Ok::<Bytes, std::convert::Infallible>(Bytes::from(out)),
                        (rx, guard, sequence),
                    ))
                }
                None => {
                    // The run ended (its sender is gone): nothing is left to cancel.
                    guard.disarm();
                    None
                }
            }
        },
    );
    super::sse_body(Body::from_stream(body))
}

/// Cancels a run when dropped, unless disarmed first (the run ended on its own).
pub(crate) struct CancelOnDrop(Option<tokio_util::sync::CancellationToken>);

impl CancelOnDrop {
    pub(crate) fn new(token: tokio_util::sync::CancellationToken) -> Self {
        CancelOnDrop(Some(token))
    }

    pub(crate) fn disarm(&mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take() {
            token.cancel();
        }
    }
}
