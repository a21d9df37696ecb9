//! The streaming tool-call parser: a sans-IO state machine.
//!
//! Push text in ([`Parser::push`], [`Parser::push_bytes`]), end it ([`Parser::finish`]), and the
//! parser hands visible text, reasoning, calls and errors to a [`Sink`]. The policy — what is a call,
//! what stays visible — is `docs/src/parser.md`; the corpus and property tests pin it down.
//!
//! How it stays linear: plain text is skipped with `memchr` and handed out as slices of the input;
//! only what could still become a marker is copied into a small `held` buffer; a call block or a
//! candidate fence is copied once into `buf` while an incremental JSON scanner ([`json`]) keeps its
//! state across chunks, so no byte is ever scanned again because a chunk ended.
//!
//! How a push stays cheap when text arrives a token or a byte at a time: a push that changes
//! nothing but the output is taken by the fast lane ([`lane`]) with a table load per byte, before
//! any state dispatch; everything else goes to the state machine, which then sets the lane up for
//! the state it left.

mod block;
pub mod dialect;
mod events;
mod fence;
mod json;
mod lane;
mod problem;
mod shape;
mod step;
mod text;
mod utf8;

use std::collections::{HashMap, HashSet};

/// The parser's collector: a whole response (re-exported from [`crate::response`]).
pub use crate::response::ModelResponse;
pub use dialect::{parameter_type, Dialect, DialectSetting, UnknownDialect};
pub use events::{ErrorKind, EventLog, ModelEvent, ParseError, Sink, Tee};
pub use problem::{DialectProblem, JsonSyntax, ParseProblem, PythonicProblem};

use block::Block;
use fence::Fence;
use json::Scanner;
use lane::Lane;
use text::advance_line;

/// How the parser reads a response.
#[derive(Clone, Debug)]
pub struct ParserConfig {
    /// The declared tool names. A call to another name is malformed. `None` accepts any name.
    pub tools: Option<Vec<String>>,
    /// Call ids are this prefix followed by the call's index.
    pub id_prefix: String,
    /// Recognise calls written as fenced JSON (seed 002's variant).
    pub fences: bool,
    /// Separate `<think>…</think>` reasoning from the visible text.
    pub think: bool,
    /// A call block larger than this is malformed (bounds memory).
    pub max_block_bytes: usize,
    /// The tool-call format to read (docs/src/parser.md, "Dialects").
    pub dialect: Dialect,
    /// The reply begins inside reasoning: the chat template already wrote `<think>`, so the text
    /// up to the first `</think>` is reasoning.
    pub reasoning_open: bool,
    /// The declared tools' parameter schemas (tool name → JSON Schema of its parameters), for the
    /// dialects whose values are bare text (qwen3-coder, glm45): they give each value its type.
    pub schemas: HashMap<String, serde_json::Value>,
}

impl Default for ParserConfig {
    fn default() -> Self {
        ParserConfig {
            tools: None,
            id_prefix: "call_".to_owned(),
            fences: true,
            think: true,
            max_block_bytes: 4 << 20,
            dialect: Dialect::Hermes,
            reasoning_open: false,
            schemas: HashMap::new(),
        }
    }
}

impl ParserConfig {
    /// A configuration that accepts only these tool names.
    pub fn with_tools<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ParserConfig {
            tools: Some(names.into_iter().map(Into::into).collect()),
            ..Self::default()
        }
    }
}

/// Parses a whole text at once.
pub fn parse(text: &str, config: &ParserConfig) -> ModelResponse {
    let mut out = ModelResponse::default();
    let mut parser = Parser::new(config.clone());
    parser.push(text, &mut out);
    parser.finish(&mut out);
    out
}

/// Longest whitespace run held after an open tag before the tag is taken as text.
const MAX_TAG_SPACE: usize = 4096;
/// Longest fence info string; a longer "opening line" is not a fence.
const MAX_FENCE_INFO: usize = 1024;

const OPEN_CALL: &[u8] = b"<tool_call>";
const OPEN_USE: &[u8] = b"<tool_use>";
/// Llama 3.1's custom-tool form, `<function=NAME>{…}</function>` (docs/src/parser.md).
const OPEN_FUNCTION: &[u8] = b"<function=";
/// Longest tool name in a `<function=NAME>` tag.
const MAX_FUNCTION_NAME: usize = 128;
const OPEN_THINK: &[u8] = b"<think>";
const CLOSE_THINK: &[u8] = b"</think>";

#[derive(Debug)]
enum State {
    /// Plain visible text.
    Text,
    /// `held` is a proper prefix of an open marker.
    TextTag,
    /// `held` is a complete open tag plus the whitespace after it.
    TagSpace,
    /// `held` is `<function=` and the tool name read so far.
    FunctionHead,
    /// `held` is a backtick run that began at the start of a line.
    LineTicks,
    /// A backtick run in the middle of a line, already emitted; `run` backticks so far.
    Ticks {
        run: usize,
    },
    /// Inside an inline code span opened by `ticks` backticks; `run` counts a backtick run in it.
    CodeSpan {
        ticks: usize,
        run: usize,
    },
    /// `held` is a fence's opening backticks and the info string read so far.
    FenceInfo {
        ticks: usize,
    },
    Fence(Box<Fence>),
    /// Inside `<think>`; `matched` bytes of `</think>` are held.
    Think {
        matched: usize,
    },
    Block(Block),
}

/// The set of declared names, or "any".
pub(crate) struct Declared(Option<HashSet<String>>, String);

impl Declared {
    fn new(tools: &Option<Vec<String>>) -> Self {
        match tools {
            None => Declared(None, String::new()),
            Some(names) => Declared(Some(names.iter().cloned().collect()), names.join(", ")),
        }
    }

    /// Whether a declared name is longer than `prefix` and starts with it.
    pub(crate) fn has_longer(&self, prefix: &str) -> bool {
        self.0.as_ref().is_some_and(|set| {
            set.iter()
                .any(|name| name.len() > prefix.len() && name.starts_with(prefix))
        })
    }
}

impl shape::Declared for Declared {
    fn allows(&self, name: &str) -> bool {
        self.0.as_ref().is_none_or(|set| set.contains(name))
    }

    fn describe(&self) -> String {
        if self.1.is_empty() {
            crate::texts::PARSE_NO_TOOLS.to_owned()
        } else {
            self.1.clone()
        }
    }
}

/// The streaming parser. See the module documentation.
pub struct Parser {
    config: ParserConfig,
    declared: Declared,
    state: State,
    /// Bytes held back in the text states (a partial marker), always short.
    held: String,
    /// The raw text of the current call block or candidate fence.
    buf: String,
    scanner: Scanner,
    /// Whether the current position is at the start of a line, and after how many spaces.
    line: Option<u8>,
    /// Whether any non-whitespace visible text has been emitted.
    seen_visible: bool,
    next_index: usize,
    utf8: utf8::Carry,
    /// The tool name of a `<function=NAME>` tag whose block is about to start.
    function: Option<String>,
    /// The engine of a dialect other than hermes, which then handles all the text.
    dialect: Option<Box<dialect::engine::Engine>>,
    /// What a push of plain bytes does in the current state, without the state machine.
    lane: Lane,
    /// How many bytes at the end of `buf` (a call block's JSON value) the lane appended that the
    /// JSON scanner has not read yet (see [`Parser::settle_json`]).
    json_pending: usize,
}

impl Parser {
    pub fn new(config: ParserConfig) -> Self {
        let declared = Declared::new(&config.tools);
        let mut dialect = (config.dialect != Dialect::Hermes)
            .then(|| Box::new(dialect::engine::Engine::new(&config)));
        let state = if config.reasoning_open {
            State::Think { matched: 0 }
        } else {
            State::Text
        };
        let lane = match dialect.as_deref_mut() {
            Some(engine) => engine.lane(),
            None => lane::hermes(open_markers(config.think)),
        };
        let mut parser = Parser {
            function: None,
            dialect,
            config,
            declared,
            state,
            held: String::new(),
            buf: String::new(),
            scanner: Scanner::default(),
            line: Some(0),
            seen_visible: false,
            next_index: 0,
            utf8: utf8::Carry::default(),
            lane,
            json_pending: 0,
        };
        parser.set_lane();
        parser
    }

    /// How many calls have been emitted so far.
    pub fn calls_emitted(&self) -> usize {
        match &self.dialect {
            Some(engine) => engine.calls_emitted(),
            None => self.next_index,
        }
    }

    /// Pushes the next chunk of text.
    #[inline]
    pub fn push<S: Sink + ?Sized>(&mut self, chunk: &str, sink: &mut S) {
        // The token-streaming common case: a short piece of plain content (see `lane`).
        if chunk.len() < 16 && self.lane.takes_str(chunk.as_bytes()) && self.lane_push(chunk, sink)
        {
            return;
        }
        self.push_general(chunk, sink);
    }

    /// Pushes the next chunk of raw bytes, which may split a UTF-8 character anywhere. An incomplete
    /// character at the end is held until its remaining bytes arrive; invalid bytes become U+FFFD.
    #[inline]
    pub fn push_bytes<S: Sink + ?Sized>(&mut self, chunk: &[u8], sink: &mut S) {
        // One byte: plain content, the next byte of a marker or of a character (see `lane`).
        if let [b] = *chunk {
            if self.lane_byte(b, sink) {
                return;
            }
        }
        self.push_bytes_general(chunk, sink);
    }

    #[inline(never)]
    fn push_general<S: Sink + ?Sized>(&mut self, chunk: &str, sink: &mut S) {
        self.settle_lone();
        self.settle_json();
        if let Some(engine) = self.dialect.as_deref_mut() {
            // Only the held bytes grow, a one-byte step, or the engine's general path.
            let stepped = match *chunk.as_bytes() {
                [b] => engine.byte_step(b, sink),
                _ => engine.extend_held(chunk),
            };
            if !stepped {
                engine.push(chunk, sink);
            }
        } else {
            match *chunk.as_bytes() {
                // One byte: its state's own step, without the dispatch (see `step`), which also
                // sets the lane up.
                [b] if !self.utf8.pending() && self.byte_step(b, sink) => return,
                _ => self.run(chunk, 0, sink),
            }
        }
        self.set_lane();
    }

    /// Hermes's state machine on `chunk` from `i` to its end.
    fn run<S: Sink + ?Sized>(&mut self, chunk: &str, mut i: usize, sink: &mut S) {
        while i < chunk.len() {
            // Plain text skips the general state dispatch: it is most of every stream.
            i = if matches!(self.state, State::Text) {
                self.text(chunk, i, sink)
            } else {
                self.step(chunk, i, sink)
            };
        }
    }

    #[inline(never)]
    fn push_bytes_general<S: Sink + ?Sized>(&mut self, chunk: &[u8], sink: &mut S) {
        self.settle_lone();
        if let [b] = *chunk {
            if b.is_ascii() && !self.utf8.pending() {
                return self.push_general(char::from(b).encode_utf8(&mut [0; 4]), sink);
            }
        }
        if !self.utf8.pending() {
            if let Ok(s) = std::str::from_utf8(chunk) {
                return self.push(s, sink);
            }
        }
        let mut carry = std::mem::take(&mut self.utf8);
        carry.decode(chunk, &mut |s: &str| self.push(s, sink));
        self.utf8 = carry;
        self.set_lane();
    }

    /// Ends the stream: whatever is still held is judged and emitted.
    pub fn finish<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        self.finish_states(sink);
        self.set_lane();
    }

    fn finish_states<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        self.settle_lone();
        self.settle_json();
        if self.utf8.pending() {
            self.utf8 = utf8::Carry::default();
            self.push("\u{FFFD}", sink);
        }
        if let Some(engine) = self.dialect.as_deref_mut() {
            return engine.finish(sink);
        }
        match std::mem::replace(&mut self.state, State::Text) {
            State::Text | State::Ticks { .. } | State::CodeSpan { .. } => {}
            State::TextTag
            | State::TagSpace
            | State::FunctionHead
            | State::LineTicks
            | State::FenceInfo { .. } => {
                let held = std::mem::take(&mut self.held);
                self.emit_text(&held, sink);
            }
            State::Think { matched } => sink.reasoning(as_str(&CLOSE_THINK[..matched])),
            State::Block(block) => self.finish_block(block, sink),
            State::Fence(fence) => self.finish_fence(*fence, sink),
        }
    }

    /// The markers that can open something in text.
    fn open_markers(&self) -> &'static [&'static [u8]] {
        open_markers(self.config.think)
    }

    /// Emits visible text and keeps the line-start and seen-visible state up to date.
    #[inline]
    fn emit_text<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) {
        if text.is_empty() {
            return;
        }
        self.line = advance_line(self.line, text.as_bytes());
        if !self.seen_visible && text.bytes().any(|b| !is_ws(b)) {
            self.seen_visible = true;
        }
        sink.text(text);
    }

    /// A held candidate turned out to be text: emit it and go back to plain text.
    fn release_held<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        self.function = None;
        let held = std::mem::take(&mut self.held);
        self.emit_text(&held, sink);
        self.held = held;
        self.held.clear();
        self.state = State::Text;
    }

    fn emit_call<S: Sink + ?Sized>(&mut self, name: &str, arguments: &str, sink: &mut S) {
        let index = self.next_index;
        self.next_index += 1;
        let mut id = String::with_capacity(self.config.id_prefix.len() + 4);
        id.push_str(&self.config.id_prefix);
        id.push_str(&index.to_string());
        sink.call_start(index, &id, name);
        sink.call_args(index, arguments);
        sink.call_end(index);
    }
}

/// The markers that can open something in text, with or without `<think>`.
fn open_markers(think: bool) -> &'static [&'static [u8]] {
    if think {
        &[OPEN_CALL, OPEN_USE, OPEN_FUNCTION, OPEN_THINK]
    } else {
        &[OPEN_CALL, OPEN_USE, OPEN_FUNCTION]
    }
}

/// Whether `window` and `marker` agree on their common length (the marker may still be there).
fn agrees(window: &[u8], marker: &[u8]) -> bool {
    same_bytes(window, marker)
}

/// Whether `a` and `b` agree on their common length. A plain loop: these are a few bytes, and a
/// byte at a time a library compare call costs more than the compare.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// The line state after `text`: `Some(n)` when `text` ends a line's first `n` characters, all spaces.
#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

enum Match {
    Partial,
    Full(&'static [u8]),
    None,
}

fn match_prefix(prefix: &[u8], candidates: &[&'static [u8]]) -> Match {
    let mut partial = false;
    for &c in candidates {
        if c.len() < prefix.len() || !same_bytes(c, prefix) {
            continue;
        }
        if c.len() == prefix.len() {
            return Match::Full(c);
        }
        partial = true;
    }
    if partial {
        Match::Partial
    } else {
        Match::None
    }
}

/// Marker constants are ASCII.
fn as_str(ascii: &[u8]) -> &str {
    std::str::from_utf8(ascii).unwrap_or_default()
}

#[cfg(test)]
mod tests;
