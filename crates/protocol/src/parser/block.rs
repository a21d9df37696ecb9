//! Call blocks: `<tool_call>` … `</tool_call>`.

use super::json::Feed;
use super::json::Member;
use super::lane::{Kind, HERMES_AFTER_VALUE};
use super::shape::{array_elements, judge_members, judge_object};
use super::{agrees, match_prefix, Match, Parser, Sink, State, MAX_TAG_SPACE, OPEN_CALL, OPEN_USE};
use super::{DialectProblem, ErrorKind, JsonSyntax, ParseError, ParseProblem};

const CLOSE_CALL: &[u8] = b"</tool_call>";
const CLOSE_USE: &[u8] = b"</tool_use>";
const CLOSE_FUNCTION: &[u8] = b"</function>";
/// What can follow a value inside a block: a close tag ends it, an open tag may start the next.
const BLOCK_TAGS: [&[u8]; 5] = [CLOSE_CALL, CLOSE_USE, CLOSE_FUNCTION, OPEN_CALL, OPEN_USE];

/// Whether `tag` closes the block: `</tool_call>` and `</tool_use>` close any block,
/// `</function>` only a `<function=NAME>` block.
fn closes(tag: &[u8], function_block: bool) -> bool {
    tag == CLOSE_CALL || tag == CLOSE_USE || (tag == CLOSE_FUNCTION && function_block)
}

#[derive(Debug)]
pub(super) struct Block {
    phase: Phase,
    /// Where the current (or last) value starts in `buf`.
    value_start: usize,
    /// Calls this block has produced; a block with none stays visible.
    calls: usize,
    /// Where a tag being matched starts in `buf`.
    tag_start: usize,
    /// Set when the current value hit a syntax error.
    broken: Option<ParseProblem>,
    /// The tool of a `<function=NAME>` block, whose values are that tool's arguments.
    function: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Inside a JSON value.
    Value,
    /// After a value: whitespace, commas or another value may follow.
    After,
    /// After other text: only the block's end matters now.
    Junk,
    /// After a syntax error: only the block's end matters now.
    Broken,
    /// Matching a tag that starts at `tag_start`; then back to `resume`.
    Tag { resume: Rest },
    /// After a complete open tag inside the block: a `{`/`[` starts the next block.
    OpenSpace { resume: Rest },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rest {
    Junk,
    Broken,
}

impl Rest {
    fn phase(self) -> Phase {
        match self {
            Rest::Junk => Phase::Junk,
            Rest::Broken => Phase::Broken,
        }
    }
}

/// `s` cut after at most `room` bytes from `i` (rounded up to a character boundary).
pub(super) fn limit(s: &str, i: usize, room: usize) -> &str {
    let mut end = i.saturating_add(room).min(s.len());
    while !s.is_char_boundary(end) {
        end += 1;
    }
    &s[..end]
}

impl Block {
    /// Whether the block is inside a JSON value (whose bytes the scanner reads).
    pub(super) fn in_value(&self) -> bool {
        self.phase == Phase::Value
    }

    /// The value hit a syntax error at `found`, after the bytes of `buf` (the block so far).
    fn break_at(&mut self, buf: &str, problem: JsonSyntax, found: char) {
        let position = buf.get(self.value_start..).map_or(0, |v| v.chars().count());
        self.broken = Some(ParseProblem::Syntax {
            problem,
            position,
            found,
        });
        self.phase = Phase::Broken;
    }
}

impl Parser {
    /// Has the JSON scanner read the bytes the lane appended to the value ([`Kind::Json`]), as
    /// `block_step` would have read them as they came: before anything else reads the block.
    /// None of them can end the value (the lane stops at closing brackets), and after a syntax
    /// error among them the rest is block content that only a `<` (where the lane stops too)
    /// would change.
    ///
    /// [`Kind::Json`]: super::lane::Kind::Json
    #[inline(always)]
    pub(super) fn settle_json(&mut self) {
        if self.json_pending != 0 {
            self.settle_json_now();
        }
    }

    #[inline(never)]
    fn settle_json_now(&mut self) {
        let from = self.buf.len() - std::mem::take(&mut self.json_pending);
        let State::Block(block) = &mut self.state else {
            return;
        };
        if let Feed::Error(at, reason) = self.scanner.feed(&self.buf.as_bytes()[from..]) {
            let (before, after) = self.buf.split_at(from + at);
            block.break_at(before, reason, after.chars().next().unwrap_or('\u{FFFD}'));
        }
    }

    /// Starts a block whose open tag and whitespace are already in `buf`; the next byte is `{`/`[`.
    pub(super) fn start_block<S: Sink + ?Sized>(&mut self, _sink: &mut S) {
        self.scanner.reset();
        self.state = State::Block(Block {
            phase: Phase::Value,
            value_start: self.buf.len(),
            calls: 0,
            tag_start: 0,
            broken: None,
            function: self.function.take(),
        });
    }

    pub(super) fn block_step<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        sink: &mut S,
    ) -> usize {
        // Fast path: more of a value that stays open (most of a streamed call).
        if let State::Block(block) = &self.state {
            let rest = &s[i..];
            if block.phase == Phase::Value
                && self.buf.len() + rest.len() <= self.config.max_block_bytes
            {
                let fed = self.scanner.feed(rest.as_bytes());
                if fed == Feed::NeedMore {
                    self.buf.push_str(rest);
                    return s.len();
                }
                return self.block_general(s, i, Some(fed), sink);
            }
        }
        self.block_general(s, i, None, sink)
    }

    /// One ASCII byte in a block (see `step`) after its value (the lane reads values): what may
    /// follow one, content after it, and the next byte of a tag that stays incomplete, as
    /// [`Parser::block_general`] takes them. False, with nothing changed, when the general path
    /// must take it.
    pub(super) fn block_byte(&mut self, b: u8) -> bool {
        // A byte that makes the block too large is the general path's.
        if self.buf.len() >= self.config.max_block_bytes {
            return false;
        }
        let State::Block(block) = &mut self.state else {
            return false;
        };
        match block.phase {
            Phase::After if matches!(b, b' ' | b'\t' | b'\r' | b'\n' | b',') => {}
            // `Junk` takes a `<` (every tag starts with it and is longer).
            Phase::After | Phase::Junk | Phase::Broken if b == b'<' => {
                let resume = if block.phase == Phase::Broken {
                    Rest::Broken
                } else {
                    Rest::Junk
                };
                block.tag_start = self.buf.len();
                block.phase = Phase::Tag { resume };
            }
            Phase::Junk | Phase::Broken => {}
            Phase::Tag { .. } => {
                let held = &self.buf.as_bytes()[block.tag_start..];
                let partial = BLOCK_TAGS
                    .iter()
                    .any(|t| t.len() > held.len() + 1 && t.starts_with(held) && t[held.len()] == b);
                let full = BLOCK_TAGS.iter().any(|t| {
                    t.len() == held.len() + 1 && t.starts_with(held) && t[held.len()] == b
                });
                // Only a tag that stays incomplete (`Match::Partial`).
                if !partial || full {
                    return false;
                }
            }
            _ => return false,
        }
        self.buf.push(char::from(b));
        true
    }

    /// The lane of a block after its value (see `lane`): blanks and commas right after the value
    /// are appended; a tag being matched wants the next byte of the first tag it begins (no tag
    /// begins another, so that byte leaves it incomplete); otherwise the lane is closed.
    pub(super) fn block_lane(&mut self) {
        let State::Block(block) = &self.state else {
            return self.lane.close();
        };
        if block.phase == Phase::After {
            let limit = self.config.max_block_bytes;
            return self
                .lane
                .open(Kind::AfterValue { limit }, HERMES_AFTER_VALUE);
        }
        if !matches!(block.phase, Phase::Tag { .. }) {
            return self.lane.close();
        }
        let held = &self.buf.as_bytes()[block.tag_start..];
        let n = held.len();
        match BLOCK_TAGS
            .iter()
            .find(|t| t.len() > n + 1 && t.starts_with(held))
        {
            Some(tag) => self.lane.expect_along(tag, n, None),
            None => self.lane.close(),
        }
    }

    /// Every phase; `fed` is the scanner's answer when the fast path already fed the value.
    pub(super) fn block_general<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        fed: Option<Feed>,
        sink: &mut S,
    ) -> usize {
        let State::Block(mut block) = std::mem::replace(&mut self.state, State::Text) else {
            return i;
        };
        // Never read past the byte that makes the block too large, so the overflow happens at the
        // same place however the text was chunked.
        let s = limit(
            s,
            i,
            self.config.max_block_bytes.saturating_sub(self.buf.len()) + 1,
        );
        let b = s.as_bytes()[i];
        let next = match block.phase {
            Phase::Value => self.value_phase(s, i, fed, &mut block, sink),
            Phase::After => match b {
                b' ' | b'\t' | b'\r' | b'\n' | b',' => {
                    self.buf.push(b as char);
                    i + 1
                }
                b'{' | b'[' => {
                    block.value_start = self.buf.len();
                    self.scanner.reset();
                    block.phase = Phase::Value;
                    i
                }
                // Junk handles tags (with a look-ahead) and everything else after a value.
                _ => {
                    block.phase = Phase::Junk;
                    i
                }
            },
            // The junk scan stays inline: as a function returning where the block closed, it cost
            // about three instructions more per call here (callgrind, `examples/bytewise.rs`).
            Phase::Junk | Phase::Broken => {
                let resume = if block.phase == Phase::Junk {
                    Rest::Junk
                } else {
                    Rest::Broken
                };
                let bytes = s.as_bytes();
                let mut pos = i;
                loop {
                    let Some(off) = memchr::memchr(b'<', &bytes[pos..]) else {
                        self.buf.push_str(&s[i..]);
                        break s.len();
                    };
                    let at = pos + off;
                    // Decide from the bytes at hand when they suffice; else match byte by byte.
                    let window = &bytes[at..bytes.len().min(at + CLOSE_CALL.len())];
                    let function_block = block.function.is_some();
                    let tags = BLOCK_TAGS
                        .iter()
                        .copied()
                        .filter(|t| *t != CLOSE_FUNCTION || function_block);
                    match tags.into_iter().find(|t| agrees(window, t)) {
                        None => pos = at + 1,
                        Some(tag) if window.len() >= tag.len() && closes(tag, function_block) => {
                            let end = at + tag.len();
                            self.buf.push_str(&s[i..at]);
                            let raw_end = self.buf.len();
                            self.buf.push_str(&s[at..end]);
                            let text_end = self.buf.len();
                            self.end_block(block, text_end, raw_end, sink);
                            return end;
                        }
                        Some(_) => {
                            self.buf.push_str(&s[i..at]);
                            block.tag_start = self.buf.len();
                            self.buf.push('<');
                            block.phase = Phase::Tag { resume };
                            break at + 1;
                        }
                    }
                }
            }
            Phase::Tag { resume } => {
                let mut probe = [0u8; 16];
                let held = &self.buf.as_bytes()[block.tag_start..];
                probe[..held.len()].copy_from_slice(held);
                probe[held.len()] = b;
                match match_prefix(&probe[..=held.len()], &BLOCK_TAGS) {
                    Match::Partial => {
                        self.buf.push(b as char);
                        i + 1
                    }
                    Match::Full(tag) if closes(tag, block.function.is_some()) => {
                        self.buf.push(b as char);
                        let raw_end = block.tag_start;
                        self.end_block(block, self.buf.len(), raw_end, sink);
                        return i + 1;
                    }
                    Match::Full(tag) if tag != CLOSE_FUNCTION => {
                        self.buf.push(b as char);
                        block.phase = Phase::OpenSpace { resume };
                        i + 1
                    }
                    // `</function>` in a block that is not a function block is block content.
                    Match::Full(_) => {
                        block.phase = resume.phase();
                        i
                    }
                    Match::None => {
                        block.phase = resume.phase();
                        i
                    }
                }
            }
            Phase::OpenSpace { resume } => match b {
                b' ' | b'\t' | b'\r' | b'\n'
                    if self.buf.len() - block.tag_start < MAX_TAG_SPACE =>
                {
                    self.buf.push(b as char);
                    i + 1
                }
                b'{' | b'[' => {
                    // An open tag right after a value: this block ends, the next one begins.
                    let tag_start = block.tag_start;
                    let next = self.buf.split_off(tag_start);
                    self.end_block(block, tag_start, tag_start, sink);
                    self.buf = next;
                    self.start_block(sink);
                    return i;
                }
                _ => {
                    block.phase = resume.phase();
                    i
                }
            },
        };
        if self.buf.len() > self.config.max_block_bytes {
            self.overflow(block, sink);
        } else {
            self.state = State::Block(block);
        }
        next
    }

    /// The value phase: feeds the scanner (unless the fast path did) and judges the value when it
    /// closes, or breaks the block where it is malformed.
    #[inline(always)]
    fn value_phase<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        fed: Option<Feed>,
        block: &mut Block,
        sink: &mut S,
    ) -> usize {
        let rest = &s[i..];
        let fed = match fed {
            Some(fed) => fed,
            None => self.scanner.feed(rest.as_bytes()),
        };
        match fed {
            Feed::NeedMore => {
                self.buf.push_str(rest);
                s.len()
            }
            Feed::Done(n) => {
                self.buf.push_str(&rest[..n]);
                self.judge_value(block, sink);
                block.phase = Phase::After;
                i + n
            }
            Feed::Error(at, reason) => {
                self.buf.push_str(&rest[..at]);
                let found = rest[at..].chars().next().unwrap_or('\u{FFFD}');
                block.break_at(&self.buf, reason, found);
                i + at
            }
        }
    }

    /// Judges the value that just closed at the end of `buf`.
    fn judge_value<S: Sink + ?Sized>(&mut self, block: &mut Block, sink: &mut S) {
        let buf = std::mem::take(&mut self.buf);
        let text = &buf[block.value_start..];
        if let Some(name) = block.function.clone() {
            self.judge_function(&name, text, block, sink);
        } else if text.starts_with('[') {
            match array_elements(text) {
                Ok(items) if items.is_empty() => sink.error(ParseError {
                    kind: ErrorKind::Malformed,
                    raw: text.to_owned(),
                    reason: ParseProblem::EmptyArray,
                }),
                Ok(items) => {
                    for item in items {
                        self.judge_one(item, block, sink);
                    }
                }
                Err(reason) => sink.error(ParseError {
                    kind: ErrorKind::Malformed,
                    raw: text.to_owned(),
                    reason,
                }),
            }
        } else {
            let members = self.scanner.take_members();
            self.judge_with(text, Some(&members), block, sink);
            self.scanner.restore_members(members);
        }
        self.buf = buf;
    }

    /// A value of a `<function=NAME>` block: the arguments of a call to NAME.
    fn judge_function<S: Sink + ?Sized>(
        &mut self,
        name: &str,
        text: &str,
        block: &mut Block,
        sink: &mut S,
    ) {
        let reason = if !text.starts_with('{') {
            Some(ParseProblem::Dialect(
                DialectProblem::FunctionArgumentsNotObject,
            ))
        } else {
            super::shape::check_name(name, &self.declared).err()
        };
        match reason {
            None => {
                block.calls += 1;
                self.emit_call(name, text, sink);
            }
            Some(reason) => sink.error(ParseError {
                kind: ErrorKind::Malformed,
                raw: text.to_owned(),
                reason,
            }),
        }
    }

    fn judge_one<S: Sink + ?Sized>(&mut self, text: &str, block: &mut Block, sink: &mut S) {
        self.judge_with(text, None, block, sink)
    }

    /// Judges one object; `members` (from the scanner) spare a second parse when given.
    fn judge_with<S: Sink + ?Sized>(
        &mut self,
        text: &str,
        members: Option<&[Member]>,
        block: &mut Block,
        sink: &mut S,
    ) {
        let fast = members.and_then(|m| judge_members(text, m, &self.declared));
        match fast.unwrap_or_else(|| judge_object(text, &self.declared, false)) {
            Ok(call) => {
                block.calls += 1;
                self.emit_call(&call.name, &call.arguments, sink);
            }
            Err(reason) => sink.error(ParseError {
                kind: ErrorKind::Malformed,
                raw: text.to_owned(),
                reason,
            }),
        }
    }

    /// Ends the block: reports a broken value, and releases the block's text (up to `text_end`)
    /// when it produced no call.
    fn end_block<S: Sink + ?Sized>(
        &mut self,
        block: Block,
        text_end: usize,
        raw_end: usize,
        sink: &mut S,
    ) {
        let buf = std::mem::take(&mut self.buf);
        if let Some(reason) = block.broken {
            let raw = buf[block.value_start..raw_end].trim_end().to_owned();
            sink.error(ParseError {
                kind: ErrorKind::Malformed,
                raw,
                reason,
            });
        }
        if block.calls == 0 {
            self.emit_text(&buf[..text_end], sink);
        }
        self.buf = buf;
        self.buf.clear();
        self.state = State::Text;
        self.line = None;
    }

    /// The stream ended inside a block.
    pub(super) fn finish_block<S: Sink + ?Sized>(&mut self, block: Block, sink: &mut S) {
        if block.phase == Phase::Value {
            let raw = self.buf[block.value_start..].trim_end().to_owned();
            sink.error(ParseError {
                kind: ErrorKind::Truncated,
                raw,
                reason: ParseProblem::EndedInside,
            });
        }
        let end = self.buf.len();
        self.end_block(block, end, end, sink);
    }

    /// The block grew past `max_block_bytes`: what is held is released and parsing goes on as text.
    fn overflow<S: Sink + ?Sized>(&mut self, mut block: Block, sink: &mut S) {
        if block.phase == Phase::Value {
            let raw = self.buf[block.value_start..].trim_end().to_owned();
            let reason = ParseProblem::TooLarge {
                limit: self.config.max_block_bytes,
            };
            sink.error(ParseError {
                kind: ErrorKind::Malformed,
                raw,
                reason,
            });
        }
        if block.calls > 0 && block.phase == Phase::Value {
            // Earlier calls of this block stay removed; the oversized value itself stays visible.
            let tail = self.buf.split_off(block.value_start);
            self.buf = tail;
            block.calls = 0;
        }
        let end = self.buf.len();
        self.end_block(block, end, end, sink);
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, ParserConfig, MAX_TAG_SPACE};

    #[test]
    fn oversized_block_is_released_and_reported() {
        let cfg = ParserConfig {
            max_block_bytes: 64,
            ..ParserConfig::default()
        };
        let big = format!(
            r#"<tool_call>{{"name":"f","arguments":{{"x":"{}"}}}}</tool_call>"#,
            "a".repeat(100)
        );
        let out = parse(&big, &cfg);
        assert!(out.calls.is_empty());
        assert_eq!(out.errors.len(), 1);
        assert!(out.errors[0]
            .reason
            .to_string()
            .contains("larger than 64 bytes"));
        assert_eq!(out.text, big);
    }

    /// The lane appends a value's bytes for the scanner to read later: a syntax error among them
    /// is found where it is (the same error, position and found character), whatever follows it
    /// before the scanner reads them (more content, a closing bracket, a tag, the block's limit,
    /// the end of the stream).
    #[test]
    fn a_syntax_error_read_late_is_the_same_a_byte_at_a_time() {
        let texts = [
            "<tool_call>{\"name\": \"f\", \"arguments\" {\"é\": 1}}</tool_call> tail",
            "<tool_call>{\"name\": \"f\" \"x\": [1 2]] <tool_call>{\"name\": \"f\"}</tool_call>",
            "<tool_call>{\"a\": tru é</tool_call>",
            "<tool_call>{\"a\": 1 ",
        ];
        for text in texts {
            bytewise_is_whole_at_every_limit(text);
        }
    }

    /// The one-byte lane reads a value with the scanner and stops at the block's limit: wherever
    /// the limit falls (in a string, in the structure, in a character, after the value), byte
    /// input gives what the whole text gives.
    #[test]
    fn the_limit_holds_a_byte_at_a_time() {
        let text = "a\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": \"é\\\"b\", \"n\": [1, 2.5]}}\n</tool_call>\ntail";
        bytewise_is_whole_at_every_limit(text);
    }

    /// The lane's blanks after an open tag and blanks, commas and a tag's `<` after a value (see
    /// `block_lane`): byte input gives what the whole text gives, wherever the limit falls (in
    /// the blanks, in the commas, at the `<`), with several values, junk after a value and a tag
    /// that is not a block's.
    #[test]
    fn blanks_and_commas_after_a_value_a_byte_at_a_time() {
        let texts = [
            "<tool_call> \t\r\n{\"name\": \"f\"} ,\n, {\"name\": \"g\"}\r\n</tool_call>\ntail",
            "<tool_call>\n{\"name\": \"f\"}\n x <b> </tool_call>",
            "<tool_call>{\"name\": \"f\"}, <tool_call>{\"name\": \"g\"}</tool_call> <tool_use>",
            "<tool_call>\n\n x</tool_call><tool_call>\n [{\"name\": \"f\"}]  <",
        ];
        for text in texts {
            bytewise_is_whole_at_every_limit(text);
        }
    }

    /// Blanks after an open tag are held with it up to `MAX_TAG_SPACE` bytes, the lane's ones
    /// too: around that length byte input gives what the whole text gives.
    #[test]
    fn a_long_tag_space_a_byte_at_a_time() {
        let cfg = ParserConfig::default();
        for blanks in MAX_TAG_SPACE - 13..MAX_TAG_SPACE - 9 {
            let text = format!(
                "<tool_call>{}{{\"name\": \"f\"}}</tool_call>",
                " ".repeat(blanks)
            );
            let mut out = crate::response::ModelResponse::default();
            let mut p = super::super::Parser::new(cfg.clone());
            for b in text.as_bytes() {
                p.push_bytes(std::slice::from_ref(b), &mut out);
            }
            p.finish(&mut out);
            assert_eq!(out, parse(&text, &cfg), "{blanks} blanks");
        }
    }

    /// `text` fed a byte at a time gives what the whole text gives, at every block limit.
    fn bytewise_is_whole_at_every_limit(text: &str) {
        for max_block_bytes in 1..text.len() + 2 {
            let cfg = ParserConfig {
                max_block_bytes,
                ..ParserConfig::default()
            };
            let mut out = crate::response::ModelResponse::default();
            let mut p = super::super::Parser::new(cfg.clone());
            for b in text.as_bytes() {
                p.push_bytes(std::slice::from_ref(b), &mut out);
            }
            p.finish(&mut out);
            assert_eq!(out, parse(text, &cfg), "{text} limit {max_block_bytes}");
        }
    }
}
