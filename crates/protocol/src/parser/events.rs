//! What the parser hands out: a sink trait for zero-copy consumers, and the one owned event type
//! ([`ModelEvent`]) every collector, the response decoder and the providers use. The fold of
//! events into a whole response is [`crate::response::ModelResponse`].

use serde::Serialize;

use super::problem::ParseProblem;
use crate::types::{FinishReason, Usage};

/// Why a block did not give a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Bad JSON, unknown tool, arguments that are not an object, a block too large.
    Malformed,
    /// The stream ended inside the call (the token limit cut it off).
    Truncated,
}

/// A call the parser could not accept. `raw` stays visible (see docs/src/parser.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParseError {
    pub kind: ErrorKind,
    pub raw: String,
    /// Why, typed; serialized as its wording (a string).
    pub reason: ParseProblem,
}

/// Receives the parser's output as it is produced. Text slices borrow from the parser's input or
/// buffers, so a consumer that copies them where they go (a socket buffer, a `String`) pays no
/// allocation per event.
pub trait Sink {
    /// Visible text.
    fn text(&mut self, text: &str);
    /// Reasoning (`<think>` content).
    fn reasoning(&mut self, text: &str);
    /// A call begins; its arguments follow, then `call_end`.
    fn call_start(&mut self, index: usize, id: &str, name: &str);
    /// A fragment of the call's arguments JSON; the fragments concatenate to the arguments.
    fn call_args(&mut self, index: usize, fragment: &str);
    fn call_end(&mut self, index: usize);
    /// A block that did not give a call.
    fn error(&mut self, error: ParseError);
}

/// One event of a model's response, owned: what the parser produces, plus the usage and finish
/// reason the response decoder adds. Serialized (`toolbridge parse --events`) with a `type` tag;
/// a malformed call is `{"type": "error", "kind", "raw", "reason"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    /// Visible text.
    Text {
        text: String,
    },
    /// Reasoning text (`<think>` content or a server's `reasoning_content`).
    Reasoning {
        text: String,
    },
    /// A call begins (index counts calls of this response from 0).
    CallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A fragment of a call's arguments JSON.
    CallArgs {
        index: usize,
        fragment: String,
    },
    CallEnd {
        index: usize,
    },
    /// Text that tried to be a call and is not one (it also stays in the visible text).
    #[serde(rename = "error")]
    Malformed {
        #[serde(flatten)]
        error: ParseError,
    },
    Usage {
        usage: Usage,
    },
    /// The answer ended on this stop sequence of the request (not the tool-call close tag the
    /// tool mode adds), when the upstream or our own stop scanner tells which; before `Finish`.
    StopSequence {
        sequence: String,
    },
    /// The upstream's signature over the reasoning since the last signed block (Anthropic's
    /// `signature_delta`): the reasoning so far is one block to hand back with this signature.
    ReasoningSignature {
        signature: String,
    },
    /// Reasoning the upstream gave only encrypted (Anthropic's `redacted_thinking`).
    RedactedReasoning {
        data: String,
    },
    /// The last event of a decoded response: why it ended.
    Finish {
        reason: FinishReason,
    },
}

/// Collects events, merging adjacent text (and adjacent reasoning) into one event.
impl Sink for Vec<ModelEvent> {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(ModelEvent::Text { text: last }) = self.last_mut() {
            last.push_str(text);
        } else {
            self.push(ModelEvent::Text {
                text: text.to_owned(),
            });
        }
    }

    fn reasoning(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(ModelEvent::Reasoning { text: last }) = self.last_mut() {
            last.push_str(text);
        } else {
            self.push(ModelEvent::Reasoning {
                text: text.to_owned(),
            });
        }
    }

    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.push(ModelEvent::CallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    fn call_args(&mut self, index: usize, fragment: &str) {
        self.push(ModelEvent::CallArgs {
            index,
            fragment: fragment.to_owned(),
        });
    }

    fn call_end(&mut self, index: usize) {
        self.push(ModelEvent::CallEnd { index });
    }

    fn error(&mut self, error: ParseError) {
        self.push(ModelEvent::Malformed { error });
    }
}

/// Records every event exactly as handed out, without merging text deltas: what a streaming
/// consumer sees (`toolbridge parse --events`, the property tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventLog(pub Vec<ModelEvent>);

impl Sink for EventLog {
    fn text(&mut self, text: &str) {
        self.0.push(ModelEvent::Text {
            text: text.to_owned(),
        });
    }
    fn reasoning(&mut self, text: &str) {
        self.0.push(ModelEvent::Reasoning {
            text: text.to_owned(),
        });
    }
    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.0.call_start(index, id, name);
    }
    fn call_args(&mut self, index: usize, fragment: &str) {
        self.0.call_args(index, fragment);
    }
    fn call_end(&mut self, index: usize) {
        self.0.call_end(index);
    }
    fn error(&mut self, error: ParseError) {
        self.0.error(error);
    }
}

/// Forwards to two sinks (for example a collector and a live renderer).
pub struct Tee<'a, A: ?Sized, B: ?Sized>(pub &'a mut A, pub &'a mut B);

impl<A: Sink + ?Sized, B: Sink + ?Sized> Sink for Tee<'_, A, B> {
    fn text(&mut self, text: &str) {
        self.0.text(text);
        self.1.text(text);
    }
    fn reasoning(&mut self, text: &str) {
        self.0.reasoning(text);
        self.1.reasoning(text);
    }
    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.0.call_start(index, id, name);
        self.1.call_start(index, id, name);
    }
    fn call_args(&mut self, index: usize, fragment: &str) {
        self.0.call_args(index, fragment);
        self.1.call_args(index, fragment);
    }
    fn call_end(&mut self, index: usize) {
        self.0.call_end(index);
        self.1.call_end(index);
    }
    fn error(&mut self, error: ParseError) {
        self.0.error(error.clone());
        self.1.error(error);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// `toolbridge parse --events` prints these; the form of an error event is the one the
    /// parser's own event type had before the event types were merged.
    #[test]
    fn a_malformed_call_serializes_as_a_flat_error_event() {
        let event = ModelEvent::Malformed {
            error: ParseError {
                kind: ErrorKind::Truncated,
                raw: "{\"name\": \"f\"".into(),
                reason: ParseProblem::EndedInside,
            },
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"type":"error","kind":"truncated","raw":"{\"name\": \"f\"","reason":"the response ended inside the call"}"#
        );
        let start = ModelEvent::CallStart {
            index: 0,
            id: "call_0".into(),
            name: "f".into(),
        };
        assert_eq!(
            serde_json::to_string(&start).unwrap(),
            r#"{"type":"call_start","index":0,"id":"call_0","name":"f"}"#
        );
    }
}
