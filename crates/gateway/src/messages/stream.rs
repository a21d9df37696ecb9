//! A streamed answer as Anthropic's server-sent events: `message_start`, then per block
//! `content_block_start` / `content_block_delta` (`text_delta`, `thinking_delta`,
//! `input_json_delta`) / `content_block_stop`, then `message_delta` (stop reason, usage) and
//! `message_stop`; `ping` after the start and while the upstream is silent; an `error` event
//! ends a stream that failed.
//!
//! A `tool_use` block is written only once its call is complete (start, the whole input as one
//! `input_json_delta`, stop): a call cut off by the token limit never reaches the client as
//! `tool_use`, and the answer ends with `stop_reason: max_tokens`.

use serde::Serialize;
use serde_json::Value;
use toolbridge_protocol::types::{FinishReason, Usage};

use super::response::{matched_stop, stop_reason, tool_use_id, Form, WireUsage};
use crate::error::ApiError;
use crate::stream::SseCodec;

#[derive(Clone, Copy, PartialEq)]
enum Open {
    None,
    Text,
    Thinking,
}

/// A call whose input is still arriving.
struct PendingCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

pub(crate) struct MessagesCodec {
    id: String,
    form: Form,
    /// The index the next content block gets.
    next_block: usize,
    open: Open,
    pending: Vec<PendingCall>,
    calls: usize,
    usage: Option<Usage>,
    finish: Option<FinishReason>,
    stop_sequence: Option<String>,
}

fn json<T: Serialize>(out: &mut Vec<u8>, value: &T) {
    // Only plain structs of strings and numbers are written here: this cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn json_str(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

pub(super) fn event(out: &mut Vec<u8>, name: &str, body: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    body(out);
    out.extend_from_slice(b"\n\n");
}

#[derive(Serialize)]
struct MessageStart<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    message: StartMessage<'a>,
}

#[derive(Serialize)]
struct StartMessage<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: [(); 0],
    stop_reason: Option<()>,
    stop_sequence: Option<()>,
    usage: WireUsage,
}

#[derive(Serialize)]
struct ToolUseBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: &'a str,
    name: &'a str,
    input: Value,
}

impl MessagesCodec {
    pub(crate) fn new(id: String, form: Form) -> Self {
        MessagesCodec {
            id,
            form,
            next_block: 0,
            open: Open::None,
            pending: Vec::new(),
            calls: 0,
            usage: None,
            finish: None,
            stop_sequence: None,
        }
    }

    fn block_start(&mut self, out: &mut Vec<u8>, block: impl FnOnce(&mut Vec<u8>)) -> usize {
        let index = self.next_block;
        self.next_block += 1;
        event(out, "content_block_start", |o| {
            o.extend_from_slice(br#"{"type":"content_block_start","index":"#);
            o.extend_from_slice(index.to_string().as_bytes());
            o.extend_from_slice(br#","content_block":"#);
            block(o);
            o.push(b'}');
        });
        index
    }

    fn delta(out: &mut Vec<u8>, index: usize, delta: impl FnOnce(&mut Vec<u8>)) {
        event(out, "content_block_delta", |o| {
            o.extend_from_slice(br#"{"type":"content_block_delta","index":"#);
            o.extend_from_slice(index.to_string().as_bytes());
            o.extend_from_slice(br#","delta":"#);
            delta(o);
            o.push(b'}');
        });
    }

    fn block_stop(out: &mut Vec<u8>, index: usize) {
        event(out, "content_block_stop", |o| {
            o.extend_from_slice(br#"{"type":"content_block_stop","index":"#);
            o.extend_from_slice(index.to_string().as_bytes());
            o.push(b'}');
        });
    }

    /// Closes the open text or thinking block.
    fn close(&mut self, out: &mut Vec<u8>) {
        match self.open {
            Open::None => {}
            Open::Text => Self::block_stop(out, self.next_block - 1),
            Open::Thinking => {
                // Clients that replay thinking expect a signature; without the upstream's
                // (`reasoning_signature` closes a signed block itself) there is none to give.
                Self::delta(out, self.next_block - 1, |o| {
                    o.extend_from_slice(br#"{"type":"signature_delta","signature":""}"#)
                });
                Self::block_stop(out, self.next_block - 1);
            }
        }
        self.open = Open::None;
    }

    fn open(&mut self, out: &mut Vec<u8>, kind: Open) -> usize {
        if self.open != kind {
            self.close(out);
            match kind {
                Open::Text => self.block_start(out, |o| {
                    o.extend_from_slice(br#"{"type":"text","text":""}"#)
                }),
                Open::Thinking => self.block_start(out, |o| {
                    o.extend_from_slice(br#"{"type":"thinking","thinking":""}"#)
                }),
                Open::None => 0,
            };
            self.open = kind;
        }
        self.next_block - 1
    }
}

impl SseCodec for MessagesCodec {
    fn start(&mut self, out: &mut Vec<u8>) {
        event(out, "message_start", |o| {
            json(
                o,
                &MessageStart {
                    kind: "message_start",
                    message: StartMessage {
                        id: &self.id,
                        kind: "message",
                        role: "assistant",
                        model: &self.form.model,
                        content: [],
                        stop_reason: None,
                        stop_sequence: None,
                        usage: WireUsage::from(None),
                    },
                },
            )
        });
        self.ping(out);
    }

    fn text(&mut self, out: &mut Vec<u8>, text: &str) {
        if text.is_empty() {
            return;
        }
        let index = self.open(out, Open::Text);
        Self::delta(out, index, |o| {
            o.extend_from_slice(br#"{"type":"text_delta","text":"#);
            json_str(o, text);
            o.push(b'}');
        });
    }

    fn reasoning(&mut self, out: &mut Vec<u8>, text: &str) {
        if text.is_empty() {
            return;
        }
        let index = self.open(out, Open::Thinking);
        Self::delta(out, index, |o| {
            o.extend_from_slice(br#"{"type":"thinking_delta","thinking":"#);
            json_str(o, text);
            o.push(b'}');
        });
    }

    fn reasoning_signature(&mut self, out: &mut Vec<u8>, signature: &str) {
        let index = self.open(out, Open::Thinking);
        Self::delta(out, index, |o| {
            o.extend_from_slice(br#"{"type":"signature_delta","signature":"#);
            json_str(o, signature);
            o.push(b'}');
        });
        Self::block_stop(out, index);
        self.open = Open::None;
    }

    fn redacted_reasoning(&mut self, out: &mut Vec<u8>, data: &str) {
        self.close(out);
        let index = self.block_start(out, |o| {
            o.extend_from_slice(br#"{"type":"redacted_thinking","data":"#);
            json_str(o, data);
            o.push(b'}');
        });
        Self::block_stop(out, index);
    }

    fn call_start(&mut self, _out: &mut Vec<u8>, index: usize, id: &str, name: &str) {
        self.pending.push(PendingCall {
            index,
            id: tool_use_id(id),
            name: name.to_owned(),
            arguments: String::new(),
        });
    }

    fn call_args(&mut self, _out: &mut Vec<u8>, index: usize, fragment: &str) {
        if let Some(call) = self.pending.iter_mut().find(|c| c.index == index) {
            call.arguments.push_str(fragment);
        }
    }

    fn call_end(&mut self, out: &mut Vec<u8>, index: usize) {
        let Some(at) = self.pending.iter().position(|c| c.index == index) else {
            return;
        };
        let call = self.pending.swap_remove(at);
        self.close(out);
        self.calls += 1;
        let block = self.block_start(out, |o| {
            json(
                o,
                &ToolUseBlock {
                    kind: "tool_use",
                    id: &call.id,
                    name: &call.name,
                    input: Value::Object(serde_json::Map::new()),
                },
            )
        });
        // The input as compact JSON, the way the client's accumulator parses it.
        let input = super::response::input_object(&call.arguments).to_string();
        Self::delta(out, block, |o| {
            o.extend_from_slice(br#"{"type":"input_json_delta","partial_json":"#);
            json_str(o, &input);
            o.push(b'}');
        });
        Self::block_stop(out, block);
    }

    fn usage(&mut self, usage: Usage) {
        self.usage = Some(usage);
    }

    fn stop_sequence(&mut self, sequence: &str) {
        self.stop_sequence = Some(sequence.to_owned());
    }

    fn finish(&mut self, _out: &mut Vec<u8>, reason: FinishReason) {
        self.finish = Some(reason);
    }

    fn end(&mut self, out: &mut Vec<u8>) {
        self.close(out);
        if self.next_block == 0 {
            // A message has at least one block.
            self.open(out, Open::Text);
            self.close(out);
        }
        let stop = matched_stop(&self.form.stop_sequences, self.stop_sequence.as_deref());
        let reason = stop_reason(self.finish, self.calls > 0, stop.is_some());
        event(out, "message_delta", |o| {
            o.extend_from_slice(br#"{"type":"message_delta","delta":{"stop_reason":"#);
            json_str(o, reason);
            o.extend_from_slice(br#","stop_sequence":"#);
            json(o, &stop);
            o.extend_from_slice(br#"},"usage":"#);
            json(o, &WireUsage::from(self.usage.as_ref()));
            o.push(b'}');
        });
        event(out, "message_stop", |o| {
            o.extend_from_slice(br#"{"type":"message_stop"}"#)
        });
    }

    fn error(&mut self, out: &mut Vec<u8>, error: &ApiError) {
        event(out, "error", |o| {
            o.extend_from_slice(&super::error::body(error));
        });
    }

    fn ping(&mut self, out: &mut Vec<u8>) -> bool {
        event(out, "ping", |o| o.extend_from_slice(br#"{"type": "ping"}"#));
        true
    }
}
