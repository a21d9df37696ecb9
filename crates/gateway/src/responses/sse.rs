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

/// One frame.
pub(crate) fn frame(kind: &str, fields: Value, sequence: u64) -> Bytes {
    let mut event = Map::new();
    event.insert("type".into(), Value::String(kind.to_owned()));
    if let Value::Object(map) = fields {
        event.extend(map);
    }
    event.insert("sequence_number".into(), Value::from(sequence));
    let data = Value::Object(event).to_string();
    let mut out = String::with_capacity(data.len() + kind.len() + 16);
    out.push_str("event: ");
    out.push_str(kind);
    out.push_str("\ndata: ");
    out.push_str(&data);
    out.push_str("\n\n");
    Bytes::from(out)
}

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
                Some((kind, fields)) => Some((
                    Ok::<Bytes, std::convert::Infallible>(frame(kind, fields, sequence)),
                    (rx, guard, sequence + 1),
                )),
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
