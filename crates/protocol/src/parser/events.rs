//! What the parser hands out: a sink trait for zero-copy consumers, and owned events and a collected
//! result for everyone else.

use serde::Serialize;

/// Why a block did not give a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Bad JSON, unknown tool, arguments that are not an object, a block too large.
    Malformed,
    /// The stream ended inside the call (the token limit cut it off).
    Truncated,
}

/// A call the parser could not accept. `raw` stays visible (see docs/parser.md).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParseError {
    pub kind: ErrorKind,
    pub raw: String,
    pub reason: String,
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

/// One parser event, owned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Text {
        text: String,
    },
    Reasoning {
        text: String,
    },
    CallStart {
        index: usize,
        id: String,
        name: String,
    },
    CallArgs {
        index: usize,
        fragment: String,
    },
    CallEnd {
        index: usize,
    },
    Error(ParseError),
}

/// Collects events, merging adjacent text (and adjacent reasoning) into one event.
impl Sink for Vec<Event> {
    fn text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Event::Text { text: last }) = self.last_mut() {
            last.push_str(text);
        } else {
            self.push(Event::Text {
                text: text.to_owned(),
            });
        }
    }

    fn reasoning(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(Event::Reasoning { text: last }) = self.last_mut() {
            last.push_str(text);
        } else {
            self.push(Event::Reasoning {
                text: text.to_owned(),
            });
        }
    }

    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.push(Event::CallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }

    fn call_args(&mut self, index: usize, fragment: &str) {
        self.push(Event::CallArgs {
            index,
            fragment: fragment.to_owned(),
        });
    }

    fn call_end(&mut self, index: usize) {
        self.push(Event::CallEnd { index });
    }

    fn error(&mut self, error: ParseError) {
        self.push(Event::Error(error));
    }
}

/// Records every event exactly as handed out, without merging text deltas: what a streaming
/// consumer sees (`toolbridge parse --events`, the property tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventLog(pub Vec<Event>);

impl Sink for EventLog {
    fn text(&mut self, text: &str) {
        self.0.push(Event::Text {
            text: text.to_owned(),
        });
    }
    fn reasoning(&mut self, text: &str) {
        self.0.push(Event::Reasoning {
            text: text.to_owned(),
        });
    }
    fn call_start(&mut self, index: usize, id: &str, name: &str) {
        self.0.push(Event::CallStart {
            index,
            id: id.to_owned(),
            name: name.to_owned(),
        });
    }
    fn call_args(&mut self, index: usize, fragment: &str) {
        self.0.push(Event::CallArgs {
            index,
            fragment: fragment.to_owned(),
        });
    }
    fn call_end(&mut self, index: usize) {
        self.0.push(Event::CallEnd { index });
    }
    fn error(&mut self, error: ParseError) {
        self.0.push(Event::Error(error));
    }
}

/// A call the parser accepted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ParsedCall {
    pub id: String,
    pub name: String,
    /// The arguments JSON text, as the model wrote it.
    pub arguments: String,
}

/// Everything the parser produced for one response.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParseOutput {
    pub calls: Vec<ParsedCall>,
    pub visible: String,
    pub reasoning: String,
    pub errors: Vec<ParseError>,
}

impl ParseOutput {
    /// A call was cut off by the end of the stream: the response's finish reason is `length`.
    pub fn truncated(&self) -> bool {
        self.errors.iter().any(|e| e.kind == ErrorKind::Truncated)
    }
}

impl Sink for ParseOutput {
    fn text(&mut self, text: &str) {
        self.visible.push_str(text);
    }

    fn reasoning(&mut self, text: &str) {
        self.reasoning.push_str(text);
    }

    fn call_start(&mut self, _index: usize, id: &str, name: &str) {
        self.calls.push(ParsedCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: String::new(),
        });
    }

    fn call_args(&mut self, _index: usize, fragment: &str) {
        if let Some(call) = self.calls.last_mut() {
            call.arguments.push_str(fragment);
        }
    }

    fn call_end(&mut self, _index: usize) {}

    fn error(&mut self, error: ParseError) {
        self.errors.push(error);
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
