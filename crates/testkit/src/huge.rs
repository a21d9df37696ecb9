//! A response of any size, generated while it is sent (never held in memory): for testing that
//! clients cap what they read.

use axum::body::Body;
use axum::http::{header, HeaderValue};
use axum::response::Response;
use bytes::Bytes;

use crate::plan::Endpoint;

/// Bytes of filler per body chunk.
const PIECE: usize = 64 << 10;

/// A reply whose text is `bytes` bytes of `x`: one JSON body (chunked, no `Content-Length`) when
/// `json`, else a stream of SSE text deltas of 64 KiB each.
pub(crate) fn response(endpoint: Endpoint, bytes: u64, json: bool) -> Response {
    let (head, piece, tail, content_type): (String, Bytes, String, &'static str) =
        match (endpoint, json) {
            (Endpoint::OpenAi, true) => (
                r#"{"id":"chatcmpl-huge","object":"chat.completion","created":0,"model":"mock-model","choices":[{"index":0,"message":{"role":"assistant","content":""#.to_owned(),
                Bytes::from(vec![b'x'; PIECE]),
                r#""},"finish_reason":"stop"}]}"#.to_owned(),
                "application/json",
            ),
            (Endpoint::OpenAi, false) => (
                String::new(),
                Bytes::from(format!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{}\"}}}}]}}\n\n",
                    "x".repeat(PIECE)
                )),
                "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_owned(),
                "text/event-stream",
            ),
            (Endpoint::Anthropic, true) => (
                r#"{"id":"msg_huge","type":"message","role":"assistant","model":"mock-model","content":[{"type":"text","text":""#.to_owned(),
                Bytes::from(vec![b'x'; PIECE]),
                r#""}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}"#.to_owned(),
                "application/json",
            ),
            (Endpoint::Anthropic, false) => (
                concat!(
                    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_huge\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"mock-model\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
                    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
                )
                .to_owned(),
                Bytes::from(format!(
                    "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{}\"}}}}\n\n",
                    "x".repeat(PIECE)
                )),
                concat!(
                    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                    "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n",
                    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                )
                .to_owned(),
                "text/event-stream",
            ),
        };
    let pieces = bytes.div_ceil(PIECE as u64);
    let stream = async_stream::stream! {
        yield Ok::<Bytes, std::io::Error>(Bytes::from(head));
        for _ in 0..pieces {
            yield Ok(piece.clone());
        }
        yield Ok(Bytes::from(tail));
    };
    let mut response = Response::new(Body::from_stream(stream));
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
