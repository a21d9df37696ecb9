//! Assembles native streamed tool calls (OpenAI's `delta.tool_calls` fragments) into calls, emitting
//! the same [`Sink`] events as the text parser, so a consumer cannot tell a native upstream from a
//! prompt-mode one.
//!
//! Servers differ: OpenAI sends `index` with every fragment and `id`/`name` only on the first; some
//! servers omit `index`, repeat `id` on every fragment, or send each call whole in one fragment.
//! All of these assemble to the same calls.
//!
//! A call is handed to the sink only once its arguments are a complete JSON object (or, for
//! arguments that never become one, when the response ends normally), which is the guarantee
//! the text parser gives: a call cut off by the token limit never reaches a consumer, streaming
//! or not; it ends as a truncation error instead.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::parser::{ErrorKind, ParseError, ParseProblem, Sink};
use crate::types::ToolCall;

/// One fragment of a streamed tool call, as it appears in `choices[].delta.tool_calls[]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `"function"` on the first fragment of a call.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionDelta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

#[derive(Debug)]
struct Partial {
    /// The upstream's index, when it sends one.
    upstream_index: Option<usize>,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Our event index, reserved once the name is known (so calls keep the order they began in).
    index: Option<usize>,
    /// Whether `call_start` went out.
    started: bool,
    /// How much of `arguments` has been handed to the sink.
    sent: usize,
    /// Where the arguments stand as JSON, followed fragment by fragment.
    scan: ObjectScan,
}

/// Follows a JSON text byte by byte (each byte once, however it is fragmented) far enough to
/// tell when an object has closed; the text is then checked once with a real parser.
#[derive(Debug, Default)]
struct ObjectScan {
    state: ScanState,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// How many bytes of the arguments were scanned.
    scanned: usize,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum ScanState {
    /// Only blanks so far.
    #[default]
    Start,
    /// Inside the top-level object.
    Open,
    /// The object closed and the text parsed: the arguments are complete.
    Complete,
    /// Not an object, or not valid JSON: never complete (the end of the response decides).
    Never,
}

impl ObjectScan {
    /// Scans the bytes of `text` not seen yet; true when the text is a complete JSON object.
    fn advance(&mut self, text: &str) -> bool {
        let bytes = text.as_bytes();
        while self.scanned < bytes.len() {
            let b = bytes[self.scanned];
            self.scanned += 1;
            match self.state {
                ScanState::Start => match b {
                    b' ' | b'\t' | b'\n' | b'\r' => {}
                    b'{' => {
                        self.state = ScanState::Open;
                        self.depth = 1;
                    }
                    _ => self.state = ScanState::Never,
                },
                ScanState::Open if self.in_string => {
                    if self.escaped {
                        self.escaped = false;
                    } else if b == b'\\' {
                        self.escaped = true;
                    } else if b == b'"' {
                        self.in_string = false;
                    }
                }
                ScanState::Open => match b {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        if self.depth == 0 {
                            self.state = if is_json_object(&text[..self.scanned]) {
                                ScanState::Complete
                            } else {
                                ScanState::Never
                            };
                        }
                    }
                    _ => {}
                },
                ScanState::Complete => {
                    if !b.is_ascii_whitespace() {
                        self.state = ScanState::Never;
                    }
                }
                ScanState::Never => return false,
            }
        }
        self.state == ScanState::Complete
    }
}

/// The accumulator. Feed it fragments with [`Accumulator::push`], then [`Accumulator::finish`].
#[derive(Debug, Default)]
pub struct Accumulator {
    calls: Vec<Partial>,
    /// Event indexes continue after calls another source (the text parser) already numbered.
    next_event_index: usize,
    id_prefix: Cow<'static, str>,
}

impl Accumulator {
    /// An accumulator whose generated ids (for servers that send none) start with `call_`.
    pub fn new() -> Self {
        Accumulator {
            id_prefix: Cow::Borrowed("call_"),
            ..Self::default()
        }
    }

    /// Event indexes start at `first_index` (when text-parsed calls of the same response came first).
    pub fn with_first_index(first_index: usize) -> Self {
        Accumulator {
            next_event_index: first_index,
            ..Self::new()
        }
    }

    /// Generated ids start with this prefix (the parser's, so ids of one response never collide).
    pub fn with_id_prefix(prefix: impl Into<String>) -> Self {
        Accumulator {
            id_prefix: Cow::Owned(prefix.into()),
            ..Self::new()
        }
    }

    /// Takes one fragment.
    pub fn push<S: Sink + ?Sized>(&mut self, delta: &ToolCallDelta, sink: &mut S) {
        let slot = self.slot_for(delta);
        let call = &mut self.calls[slot];
        if call.id.is_none() {
            call.id.clone_from(&delta.id);
        }
        if let Some(f) = &delta.function {
            // The name comes once (servers that repeat it repeat the same one): the first wins.
            if let (Some(name), true) = (&f.name, call.name.is_empty()) {
                call.name.clone_from(name);
            }
            if let Some(args) = &f.arguments {
                call.arguments.push_str(args);
            }
        }
        self.flush(slot, sink, false);
    }

    /// Finds the call a fragment belongs to, opening a new one when needed.
    fn slot_for(&mut self, delta: &ToolCallDelta) -> usize {
        if let Some(index) = delta.index {
            if let Some(pos) = self
                .calls
                .iter()
                .position(|c| c.upstream_index == Some(index))
            {
                return pos;
            }
        } else if let Some(last) = self.calls.len().checked_sub(1) {
            // No index: a new id (or a new name) opens a new call; otherwise it continues the last.
            let c = &self.calls[last];
            let new_id = matches!((&delta.id, &c.id), (Some(a), Some(b)) if a != b);
            let new_name = delta
                .function
                .as_ref()
                .and_then(|f| f.name.as_ref())
                .is_some_and(|n| c.index.is_some() && delta.id.is_none() && *n != c.name);
            if !new_id && !new_name {
                return last;
            }
        }
        self.calls.push(Partial {
            upstream_index: delta.index,
            id: None,
            name: String::new(),
            arguments: String::new(),
            index: None,
            started: false,
            sent: 0,
            scan: ObjectScan::default(),
        });
        self.calls.len() - 1
    }

    /// Starts a call once its name is known and its arguments are a complete JSON object (or
    /// `force`: the response ended normally), then forwards arguments not yet sent.
    fn flush<S: Sink + ?Sized>(&mut self, slot: usize, sink: &mut S, force: bool) {
        let call = &mut self.calls[slot];
        if call.name.is_empty() {
            return;
        }
        let index = *call.index.get_or_insert_with(|| {
            let index = self.next_event_index;
            self.next_event_index += 1;
            index
        });
        if !call.started {
            let complete = call.scan.advance(&call.arguments);
            if !complete && !force {
                return;
            }
            let id = call
                .id
                .get_or_insert_with(|| format!("{}{index}", self.id_prefix));
            sink.call_start(index, id, &call.name);
            call.started = true;
        }
        if call.sent < call.arguments.len() {
            sink.call_args(index, &call.arguments[call.sent..]);
            call.sent = call.arguments.len();
        }
    }

    /// Ends every call and returns them in order. A call whose name never arrived is dropped (it
    /// cannot be executed); empty arguments become `{}`.
    pub fn finish<S: Sink + ?Sized>(self, sink: &mut S) -> Vec<ToolCall> {
        self.end(sink, false)
    }

    /// Ends the calls of a response the token limit cut off: a call whose arguments are not a
    /// complete JSON object is reported as truncated (an error event), never as a call.
    pub fn finish_truncated<S: Sink + ?Sized>(self, sink: &mut S) -> Vec<ToolCall> {
        self.end(sink, true)
    }

    fn end<S: Sink + ?Sized>(mut self, sink: &mut S, cut: bool) -> Vec<ToolCall> {
        let mut out = Vec::with_capacity(self.calls.len());
        for slot in 0..self.calls.len() {
            if self.calls[slot].name.is_empty() {
                continue;
            }
            if cut && !is_json_object(&self.calls[slot].arguments) {
                let call = &mut self.calls[slot];
                sink.error(ParseError {
                    kind: ErrorKind::Truncated,
                    raw: std::mem::take(&mut call.arguments),
                    reason: ParseProblem::CutOff {
                        name: call.name.clone(),
                    },
                });
                continue;
            }
            self.flush(slot, sink, true);
            let call = &mut self.calls[slot];
            let Some(index) = call.index else { continue };
            if call.arguments.trim().is_empty() {
                sink.call_args(index, "{}");
                call.arguments = "{}".to_owned();
            }
            sink.call_end(index);
            out.push(ToolCall {
                id: call.id.take().unwrap_or_default(),
                name: std::mem::take(&mut call.name),
                arguments: std::mem::take(&mut call.arguments),
            });
        }
        out
    }

    /// Whether any fragment has been received.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

fn is_json_object(text: &str) -> bool {
    let text = text.trim();
    text.starts_with('{') && serde_json::from_str::<&serde_json::value::RawValue>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{ModelEvent, ModelResponse};

    fn d(
        index: Option<usize>,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(Into::into),
            kind: None,
            function: Some(FunctionDelta {
                name: name.map(Into::into),
                arguments: args.map(Into::into),
            }),
        }
    }

    #[test]
    fn openai_style_fragments() {
        let mut acc = Accumulator::new();
        let mut ev: Vec<ModelEvent> = Vec::new();
        for delta in [
            d(Some(0), Some("call_a"), Some("f"), Some("")),
            d(Some(0), None, None, Some("{\"x\":")),
            d(Some(1), Some("call_b"), Some("g"), None),
            d(Some(0), None, None, Some("1}")),
            d(Some(1), None, None, Some("{}")),
        ] {
            acc.push(&delta, &mut ev);
        }
        let calls = acc.finish(&mut ev);
        assert_eq!(calls.len(), 2);
        assert_eq!(
            calls[0],
            ToolCall {
                id: "call_a".into(),
                name: "f".into(),
                arguments: "{\"x\":1}".into()
            }
        );
        assert_eq!(calls[1].arguments, "{}");
        let mut out = ModelResponse::default();
        let mut acc = Accumulator::new();
        acc.push(
            &d(Some(3), Some("z"), Some("h"), Some("{\"a\":2}")),
            &mut out,
        );
        acc.finish(&mut out);
        assert_eq!(out.calls[0].arguments, "{\"a\":2}");
        assert_eq!(out.calls[0].id, "z");
    }

    #[test]
    fn servers_without_index() {
        let mut acc = Accumulator::new();
        let mut out = ModelResponse::default();
        for delta in [
            d(None, Some("1"), Some("f"), Some("{\"a\"")),
            d(None, Some("1"), None, Some(":1}")),
            d(None, Some("2"), Some("g"), Some("{}")),
        ] {
            acc.push(&delta, &mut out);
        }
        let calls = acc.finish(&mut out);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["f", "g"]
        );
        assert_eq!(calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn missing_ids_are_generated_and_nameless_calls_dropped() {
        let mut acc = Accumulator::with_first_index(2);
        let mut out = ModelResponse::default();
        acc.push(&d(Some(0), None, Some("f"), None), &mut out);
        acc.push(&d(Some(1), None, None, Some("{}")), &mut out);
        let calls = acc.finish(&mut out);
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "call_2");
    }

    #[test]
    fn a_call_cut_by_the_token_limit_is_truncated_not_a_call() {
        let mut acc = Accumulator::new();
        let mut out = ModelResponse::default();
        acc.push(
            &d(Some(0), Some("a"), Some("f"), Some("{\"x\": 1}")),
            &mut out,
        );
        acc.push(
            &d(Some(1), Some("b"), Some("g"), Some("{\"y\": \"unfini")),
            &mut out,
        );
        let calls = acc.finish_truncated(&mut out);
        assert_eq!(calls.len(), 1);
        assert_eq!(out.errors.len(), 1);
        assert_eq!(out.errors[0].kind, ErrorKind::Truncated);
        assert_eq!(out.errors[0].raw, "{\"y\": \"unfini");
    }

    #[test]
    fn a_call_is_held_until_its_arguments_are_complete_json() {
        // Issue 13 item 4: id/name, then `{"loc`, then the token limit.
        let mut acc = Accumulator::new();
        let mut ev: Vec<ModelEvent> = Vec::new();
        acc.push(
            &d(Some(0), Some("c1"), Some("get_weather"), Some("")),
            &mut ev,
        );
        acc.push(&d(Some(0), None, None, Some("{\"loc")), &mut ev);
        assert!(
            ev.is_empty(),
            "nothing of an incomplete call goes out: {ev:?}"
        );
        let calls = acc.finish_truncated(&mut ev);
        assert!(calls.is_empty());
        assert_eq!(ev.len(), 1, "{ev:?}");
        assert!(
            matches!(&ev[0], ModelEvent::Malformed { error: e } if e.kind == ErrorKind::Truncated)
        );

        // A complete call goes out as soon as its object closes, braces in strings included.
        let mut acc = Accumulator::new();
        let mut ev: Vec<ModelEvent> = Vec::new();
        for piece in [
            "{\"q\": \"a}",
            "\\\"]{\", ",
            "\"n\": [1, {\"x\": 2}",
            "]",
            "}",
        ] {
            acc.push(&d(Some(0), Some("c"), Some("f"), Some(piece)), &mut ev);
            if piece != "}" {
                assert!(ev.is_empty(), "held after {piece:?}: {ev:?}");
            }
        }
        assert!(matches!(&ev[0], ModelEvent::CallStart { index: 0, name, .. } if name == "f"));
        assert!(
            matches!(&ev[1], ModelEvent::CallArgs { fragment, .. } if fragment == "{\"q\": \"a}\\\"]{\", \"n\": [1, {\"x\": 2}]}")
        );
        // Later calls keep their order even when an earlier one never completes.
        acc.push(
            &d(Some(1), Some("c2"), Some("g"), Some("not json")),
            &mut ev,
        );
        acc.push(&d(Some(2), Some("c3"), Some("h"), Some("{}")), &mut ev);
        let calls = acc.finish(&mut ev);
        assert_eq!(
            calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["f", "g", "h"]
        );
        assert!(ev
            .iter()
            .any(|e| matches!(e, ModelEvent::CallStart { index: 2, name, .. } if name == "h")));
        assert!(ev
            .iter()
            .any(|e| matches!(e, ModelEvent::CallStart { index: 1, name, .. } if name == "g")));
    }
}
