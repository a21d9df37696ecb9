//! Response decoding: recorded streams and whole messages as wire events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use toolbridge_protocol::accumulator::{FunctionDelta, ToolCallDelta};
use toolbridge_protocol::types::{FinishReason, Usage};

use super::*;
use crate::anthropic::decode::args_delta;
use crate::anthropic::{message_events, StreamDecoder};
use crate::error::ProviderError;

/// Decodes `bytes` in the given chunks: the events and the error, if any.
fn decode_chunks(chunks: &[&[u8]]) -> (Vec<WireEvent>, Option<ProviderError>) {
    let mut decoder = StreamDecoder::new(Some("sk-ant-api03-secretkey-0123456789".into()));
    let mut out = Vec::new();
    for chunk in chunks {
        if let Err(e) = decoder.push(chunk, &mut out) {
            return (out, Some(e));
        }
    }
    let err = decoder.finish(&mut out).err();
    (out, err)
}

/// Decodes whole, then checks every two-way split and byte-by-byte feeding give the same.
fn decode(bytes: &[u8]) -> (Vec<WireEvent>, Option<ProviderError>) {
    let whole = decode_chunks(&[bytes]);
    for cut in (0..bytes.len()).step_by(7) {
        assert_eq!(
            decode_chunks(&[&bytes[..cut], &bytes[cut..]]),
            whole,
            "cut at {cut}"
        );
    }
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode_chunks(&singles), whole);
    whole
}

fn usage(prompt: u64, completion: u64) -> WireEvent {
    WireEvent::Usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
    })
}

fn start(index: usize, id: &str, name: &str) -> WireEvent {
    WireEvent::ToolCall(ToolCallDelta {
        index: Some(index),
        id: Some(id.into()),
        kind: Some("function".into()),
        function: Some(FunctionDelta {
            name: Some(name.into()),
            arguments: Some(String::new()),
        }),
    })
}

fn args(index: usize, fragment: &str) -> WireEvent {
    args_delta(index, fragment.into())
}

/// The arguments streamed for block `index`, concatenated.
fn arguments_of(events: &[WireEvent], index: usize) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            WireEvent::ToolCall(d) if d.index == Some(index) => {
                d.function.as_ref().and_then(|f| f.arguments.clone())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn text_stream() {
    let (events, err) = decode(TEXT);
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            text("Hello"),
            text("! How can I help you today?"),
            usage(25, 12),
            WireEvent::Finish(FinishReason::Stop),
        ]
    );
    // CRLF line endings decode the same.
    let crlf = String::from_utf8(TEXT.to_vec())
        .unwrap()
        .replace('\n', "\r\n");
    assert_eq!(decode(crlf.as_bytes()), (events, None));
}

#[test]
fn thinking_then_text() {
    let (events, err) = decode(THINKING);
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            WireEvent::Reasoning("The user asks for 27 * 453.".into()),
            WireEvent::Reasoning("\n27 * 453 = 12231.".into()),
            // The signature over the block, to hand back with it.
            WireEvent::ReasoningSignature(
                "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into()
            ),
            text("27 * 453 = "),
            text("12,231"),
            // Cache reads count as prompt tokens.
            usage(40 + 2048, 64),
            WireEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn tool_use_with_split_input() {
    let (events, err) = decode(TOOL_USE);
    assert_eq!(err, None);
    assert_eq!(events[0], text("Okay, let me check"));
    assert_eq!(events[1], text(" the weather."));
    assert_eq!(
        events[2],
        start(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")
    );
    assert_eq!(events[3], args(1, "{\"location\":"));
    // Empty partial_json fragments are not forwarded: 8 non-empty fragments.
    assert_eq!(events.len(), 3 + 8 + 2);
    let input = arguments_of(&events, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
    );
    assert_eq!(events[events.len() - 2], usage(472, 89));
    assert_eq!(
        events[events.len() - 1],
        WireEvent::Finish(FinishReason::ToolCalls)
    );
}

#[test]
fn two_tool_uses() {
    let (events, err) = decode(TWO_TOOLS);
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            start(0, "toolu_01A09q90qw90lq917835lq9", "get_weather"),
            args(0, "{\"location\": \"Paris\"}"),
            start(1, "toolu_01B7hJ2kd8s0sKd0qP1x2Zz", "get_time"),
            args(1, "{\"timezone\""),
            args(1, ": \"Europe/Paris\"}"),
            usage(710, 71),
            WireEvent::Finish(FinishReason::ToolCalls),
        ]
    );
}

#[test]
fn max_tokens_cut_mid_tool_use() {
    let (events, err) = decode(MAX_TOKENS);
    assert_eq!(err, None);
    assert_eq!(
        events[0],
        start(0, "toolu_01Wq1mRSbx5yB3LmM8yqs3Xk", "write_file")
    );
    assert_eq!(
        arguments_of(&events, 0),
        "{\"path\": \"notes.md\", \"content\": \"# Notes\\n\\nThe first"
    );
    assert_eq!(
        events.last(),
        Some(&WireEvent::Finish(FinishReason::Length))
    );
}

#[test]
fn error_event_is_a_transient_upstream_error() {
    let (events, err) = decode(ERROR);
    assert_eq!(events, vec![text("Sure")]);
    let err = err.unwrap();
    assert_eq!(
        err,
        ProviderError::Upstream {
            status: 529,
            message: "Overloaded".into()
        }
    );
    assert!(err.is_transient());
    // Other error types keep their meaning, and keys never leak.
    let mut d = StreamDecoder::new(Some("sk-ant-api03-secretkey-0123456789".into()));
    let e = d
        .push(
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad key sk-ant-api03-secretkey-0123456789\"}}\n\n",
            &mut Vec::new(),
        )
        .unwrap_err();
    assert!(matches!(e, ProviderError::Upstream { status: 400, .. }));
    assert!(!e.is_transient());
    assert!(!e.to_string().contains("0123456789"));
}

#[test]
fn stream_cut_before_message_stop() {
    let (events, err) = decode(CUT);
    assert_eq!(events, vec![text("The answer is")]);
    assert_eq!(
        err,
        Some(ProviderError::BadResponse(
            "stream ended before message_stop".into()
        ))
    );
    assert_eq!(decode(b""), (vec![], err));
}

#[test]
fn invalid_json_is_a_bad_response() {
    let (events, err) =
        decode_chunks(&[b"event: content_block_delta\ndata: {\"type\":\"content_blo\n\n"]);
    assert!(events.is_empty());
    assert!(
        matches!(err, Some(ProviderError::BadResponse(m)) if m.contains("content_block_delta"))
    );
}

#[test]
fn whole_input_in_block_start_and_events_after_stop() {
    let stream = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{\"b\":1,\"a\":[2]}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\"},\"usage\":{\"output_tokens\":5}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n",
    );
    let (events, err) = decode(stream.as_bytes());
    assert_eq!(err, None);
    assert_eq!(
        events,
        vec![
            start(0, "t1", "f"),
            args(0, "{\"b\":1,\"a\":[2]}"),
            usage(3, 5),
            WireEvent::Finish(FinishReason::ContentFilter),
        ]
    );
}

#[test]
fn whole_message_response() {
    let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[
        {"type":"thinking","thinking":"hmm","signature":"x"},
        {"type":"redacted_thinking","data":"ENCRYPTED"},
        {"type":"text","text":"Let me look."},
        {"type":"tool_use","id":"toolu_9","name":"search","input":{"q":"rust"}}],
        "stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":7}}"#;
    assert_eq!(
        message_events(body, None).unwrap(),
        vec![
            WireEvent::Reasoning("hmm".into()),
            WireEvent::ReasoningSignature("x".into()),
            WireEvent::RedactedReasoning("ENCRYPTED".into()),
            text("Let me look."),
            start(3, "toolu_9", "search"),
            args(3, "{\"q\":\"rust\"}"),
            usage(10, 7),
            WireEvent::Finish(FinishReason::ToolCalls),
        ]
    );
    let err = message_events(
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, ProviderError::Upstream { status: 529, .. }));
}
