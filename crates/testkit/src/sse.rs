//! Response bodies with faults injected.

use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;

/// A fault applied to a response body.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fault {
    None,
    Stall { after: usize, stall: Duration },
    Cut { after: usize },
    Malformed { after: usize },
}

const MALFORMED_LINE: &str = "data: {not json\n\n";

/// Gives hyper the chance to flush what was written, then fails the body so the
/// connection is aborted and the client sees an incomplete chunked body.
async fn abort() -> std::io::Error {
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "testkit: connection cut mid-stream",
    )
}

/// An SSE body: `frames` (each a complete event), then `terminal` (the
/// `[DONE]` / `message_stop` event), with `fault` applied after the frames it names.
pub(crate) fn sse_body(frames: Vec<String>, terminal: String, fault: Fault) -> Body {
    let stream = async_stream::stream! {
        let split = match fault {
            Fault::None => frames.len(),
            Fault::Stall { after, .. } | Fault::Cut { after } | Fault::Malformed { after } => {
                after.min(frames.len())
            }
        };
        let mut frames = frames.into_iter();
        for frame in frames.by_ref().take(split) {
            yield Ok::<Bytes, std::io::Error>(Bytes::from(frame));
        }
        match fault {
            Fault::None => {}
            Fault::Stall { stall, .. } => tokio::time::sleep(stall).await,
            Fault::Cut { .. } => {
                yield Err(abort().await);
                return;
            }
            Fault::Malformed { .. } => yield Ok(Bytes::from_static(MALFORMED_LINE.as_bytes())),
        }
        for frame in frames {
            yield Ok(Bytes::from(frame));
        }
        yield Ok(Bytes::from(terminal));
    };
    Body::from_stream(stream)
}

/// A JSON body with `fault` applied: stalls or cuts halfway through the bytes;
/// a malformed body starts with `{not json`. Without fault, `None` is returned
/// (the caller sends a plain body with a Content-Length).
pub(crate) fn faulty_json_body(json: Vec<u8>, fault: Fault) -> Option<Body> {
    let json = Bytes::from(json);
    let half = json.len() / 2;
    match fault {
        Fault::None => None,
        Fault::Malformed { .. } => {
            let mut bytes = b"{not json".to_vec();
            bytes.extend_from_slice(&json);
            Some(Body::from(bytes))
        }
        Fault::Stall { stall, .. } => {
            let stream = async_stream::stream! {
                yield Ok::<Bytes, std::io::Error>(json.slice(..half));
                tokio::time::sleep(stall).await;
                yield Ok(json.slice(half..));
            };
            Some(Body::from_stream(stream))
        }
        Fault::Cut { .. } => {
            let stream = async_stream::stream! {
                yield Ok::<Bytes, std::io::Error>(json.slice(..half));
                yield Err(abort().await);
            };
            Some(Body::from_stream(stream))
        }
    }
}
