//! Fenced code blocks: calls written as fenced JSON, calls wrapped in a fence that is the whole
//! message, and ordinary fences whose content is text.

use super::block::limit;
use super::json::Feed;
use super::shape::{array_elements, judge_object};
use super::{is_ws, match_prefix, Match, Parser, Sink, State, OPEN_CALL, OPEN_USE};
use super::{ErrorKind, ParseError, ParseProblem};

#[derive(Debug)]
pub(super) struct Fence {
    /// Length of the opening backtick run.
    ticks: usize,
    /// The info string allows a JSON fence (empty or `json`).
    json_ok: bool,
    /// The fence opened before any visible text: a tagged fence is possible.
    message_start: bool,
    kind: Kind,
    closer: Closer,
    /// Where the body starts in `buf` (after the opening line).
    body_start: usize,
    /// Where the current line starts in `buf` (tagged fences).
    line_start: usize,
    /// Where the line holding the closing run starts, once found.
    close_line_start: usize,
    /// Where the closing backtick run ends in `buf`.
    closer_end: usize,
    /// Complete JSON values of a JSON fence, as ranges of `buf`.
    values: Vec<(usize, usize)>,
    value_start: usize,
    tag_start: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// Leading whitespace of the body, held until its first character decides.
    Undecided,
    /// The body starts with `<`: is it an open tag?
    TagProbe,
    /// Inside a JSON value of a JSON fence.
    JsonValue,
    /// Between values of a JSON fence (or on its closing line).
    JsonBetween,
    /// A tagged fence, held until it is known to be the whole message.
    Tagged,
    /// A tagged fence that has closed; whitespace after it is held.
    TaggedDone,
    /// An ordinary fence: visible text.
    Text,
}

/// Tracks whether the current line can be the closing fence line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closer {
    LineStart(u8),
    Ticks(usize),
    Trail,
    No,
}

impl Closer {
    /// The next state, and whether this byte (a newline) completes a closing line.
    fn step(self, b: u8, ticks: usize) -> (Closer, bool) {
        match (self, b) {
            (Closer::Ticks(n), b'\n') if n >= ticks => (Closer::LineStart(0), true),
            (Closer::Trail, b'\n') => (Closer::LineStart(0), true),
            (_, b'\n') => (Closer::LineStart(0), false),
            (Closer::LineStart(s), b' ') if s < 3 => (Closer::LineStart(s + 1), false),
            (Closer::LineStart(_), b'`') => (Closer::Ticks(1), false),
            (Closer::Ticks(n), b'`') => (Closer::Ticks(n + 1), false),
            (Closer::Ticks(n), b' ' | b'\t' | b'\r') if n >= ticks => (Closer::Trail, false),
            (Closer::Trail, b' ' | b'\t' | b'\r') => (Closer::Trail, false),
            _ => (Closer::No, false),
        }
    }

    /// A closing line that the end of the stream completes.
    fn closes_at_end(self, ticks: usize) -> bool {
        matches!(self, Closer::Ticks(n) if n >= ticks) || self == Closer::Trail
    }

    /// The state after bytes known to hold no closing line (JSON value bytes).
    fn skip(self, bytes: &[u8], ticks: usize) -> Closer {
        let (mut c, tail) = match memchr::memrchr(b'\n', bytes) {
            Some(p) => (Closer::LineStart(0), &bytes[p + 1..]),
            None => (self, bytes),
        };
        for &b in tail {
            if c == Closer::No {
                break;
            }
            c = c.step(b, ticks).0;
        }
        c
    }
}

impl Parser {
    /// The opening line is complete (`held` holds backticks and info string; the newline is next).
    pub(super) fn open_fence(&mut self, ticks: usize) {
        let info = self.held[ticks..].trim();
        let json_ok = info.is_empty() || info.eq_ignore_ascii_case("json");
        self.buf.clear();
        self.buf.push_str(&self.held);
        self.buf.push('\n');
        self.held.clear();
        let body_start = self.buf.len();
        self.state = State::Fence(Box::new(Fence {
            ticks,
            json_ok,
            message_start: !self.seen_visible,
            kind: Kind::Undecided,
            closer: Closer::LineStart(0),
            body_start,
            line_start: body_start,
            close_line_start: body_start,
            closer_end: body_start,
            values: Vec::new(),
            value_start: body_start,
            tag_start: body_start,
        }));
    }

    /// A line-start backtick run turned out not to open a fence: it opens a code span.
    pub(super) fn not_a_fence<S: Sink + ?Sized>(&mut self, ticks: usize, sink: &mut S) {
        let held = std::mem::take(&mut self.held);
        self.emit_text(&held, sink);
        self.line = None;
        self.state = State::CodeSpan { ticks, run: 0 };
    }

    pub(super) fn fence_step<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        sink: &mut S,
    ) -> usize {
        let State::Fence(mut f) = std::mem::replace(&mut self.state, State::Text) else {
            return i;
        };
        if f.kind == Kind::Text {
            return self.text_fence(f, s, i, sink);
        }
        let s = limit(
            s,
            i,
            self.config.max_block_bytes.saturating_sub(self.buf.len()) + 1,
        );
        let b = s.as_bytes()[i];
        let next = match f.kind {
            Kind::Undecided => match b {
                b' ' | b'\t' | b'\r' | b'\n' => {
                    self.buf.push(b as char);
                    f.closer = f.closer.step(b, f.ticks).0;
                    i + 1
                }
                b'{' | b'[' if f.json_ok => {
                    f.kind = Kind::JsonValue;
                    f.value_start = self.buf.len();
                    f.closer = Closer::No;
                    self.scanner.reset();
                    i
                }
                b'<' if f.message_start => {
                    f.kind = Kind::TagProbe;
                    f.tag_start = self.buf.len();
                    f.closer = Closer::No;
                    self.buf.push('<');
                    i + 1
                }
                _ => return self.become_text_fence(f, i, sink),
            },
            Kind::TagProbe => {
                let mut probe = [0u8; 16];
                let held = &self.buf.as_bytes()[f.tag_start..];
                probe[..held.len()].copy_from_slice(held);
                probe[held.len()] = b;
                match match_prefix(&probe[..=held.len()], &[OPEN_CALL, OPEN_USE]) {
                    Match::Partial => {
                        self.buf.push(b as char);
                        i + 1
                    }
                    Match::Full(_) => {
                        self.buf.push(b as char);
                        f.kind = Kind::Tagged;
                        i + 1
                    }
                    Match::None => return self.become_text_fence(f, i, sink),
                }
            }
            Kind::JsonValue => {
                let rest = &s[i..];
                match self.scanner.feed(rest.as_bytes()) {
                    Feed::NeedMore => {
                        self.buf.push_str(rest);
                        f.closer = f.closer.skip(rest.as_bytes(), f.ticks);
                        s.len()
                    }
                    Feed::Done(n) => {
                        self.buf.push_str(&rest[..n]);
                        f.closer = f.closer.skip(&rest.as_bytes()[..n], f.ticks);
                        f.values.push((f.value_start, self.buf.len()));
                        f.kind = Kind::JsonBetween;
                        i + n
                    }
                    Feed::Error(at, _) => {
                        self.buf.push_str(&rest[..at]);
                        f.closer = f.closer.skip(&rest.as_bytes()[..at], f.ticks);
                        return self.become_text_fence(f, i + at, sink);
                    }
                }
            }
            Kind::JsonBetween => {
                let (closer, closed) = f.closer.step(b, f.ticks);
                if closed {
                    self.buf.push('\n');
                    self.end_json_fence(*f, true, sink);
                    self.line = Some(0);
                    return i + 1;
                }
                if matches!(f.closer, Closer::Ticks(_))
                    && !matches!(closer, Closer::Ticks(_) | Closer::Trail)
                {
                    // A backtick run that does not close the fence is not JSON: the fence is text.
                    return self.become_text_fence(f, i, sink);
                }
                match b {
                    b' ' | b'\t' | b'\r' | b'\n' | b',' => {
                        self.buf.push(b as char);
                        f.closer = closer;
                        i + 1
                    }
                    b'`' if matches!(closer, Closer::Ticks(_)) => {
                        self.buf.push('`');
                        f.closer = closer;
                        f.closer_end = self.buf.len();
                        i + 1
                    }
                    b'{' | b'[' if !matches!(f.closer, Closer::Ticks(_) | Closer::Trail) => {
                        f.kind = Kind::JsonValue;
                        f.value_start = self.buf.len();
                        f.closer = Closer::No;
                        self.scanner.reset();
                        i
                    }
                    _ => return self.become_text_fence(f, i, sink),
                }
            }
            Kind::Tagged => self.tagged_fence(&mut f, s, i),
            Kind::TaggedDone => {
                if is_ws(b) {
                    self.buf.push(b as char);
                    i + 1
                } else {
                    // Text follows the fence: it is not the whole message, so it is all text.
                    let buf = std::mem::take(&mut self.buf);
                    self.emit_text(&buf, sink);
                    self.buf = buf;
                    self.buf.clear();
                    self.state = State::Text;
                    return i;
                }
            }
            Kind::Text => i,
        };
        if self.buf.len() > self.config.max_block_bytes {
            // Too large to be a call: the fence is text from here on.
            return self.become_text_fence(f, next, sink);
        }
        self.state = State::Fence(f);
        next
    }

    /// Held fence content is text after all: release it and continue as an ordinary fence.
    fn become_text_fence<S: Sink + ?Sized>(
        &mut self,
        mut f: Box<Fence>,
        i: usize,
        sink: &mut S,
    ) -> usize {
        let buf = std::mem::take(&mut self.buf);
        self.emit_text(&buf, sink);
        self.buf = buf;
        self.buf.clear();
        f.kind = Kind::Text;
        f.values.clear();
        self.state = State::Fence(f);
        i
    }

    /// An ordinary fence: everything is visible; only the closing line matters.
    fn text_fence<S: Sink + ?Sized>(
        &mut self,
        mut f: Box<Fence>,
        s: &str,
        i: usize,
        sink: &mut S,
    ) -> usize {
        let bytes = s.as_bytes();
        let mut p = i;
        while p < bytes.len() {
            if f.closer == Closer::No {
                match memchr::memchr(b'\n', &bytes[p..]) {
                    Some(off) => {
                        p += off + 1;
                        f.closer = Closer::LineStart(0);
                        continue;
                    }
                    None => {
                        p = bytes.len();
                        break;
                    }
                }
            }
            let (closer, closed) = f.closer.step(bytes[p], f.ticks);
            p += 1;
            if closed {
                self.emit_text(&s[i..p], sink);
                self.state = State::Text;
                self.line = Some(0);
                return p;
            }
            f.closer = closer;
        }
        self.emit_text(&s[i..p], sink);
        self.state = State::Fence(f);
        p
    }

    /// A tagged fence: held whole; returns how far it got.
    fn tagged_fence(&mut self, f: &mut Fence, s: &str, i: usize) -> usize {
        let bytes = s.as_bytes();
        let mut p = i;
        while p < bytes.len() {
            if f.closer == Closer::No {
                match memchr::memchr(b'\n', &bytes[p..]) {
                    Some(off) => {
                        self.buf.push_str(&s[p..=p + off]);
                        p += off + 1;
                        f.closer = Closer::LineStart(0);
                        f.line_start = self.buf.len();
                        continue;
                    }
                    None => {
                        self.buf.push_str(&s[p..]);
                        return bytes.len();
                    }
                }
            }
            let b = bytes[p];
            let (closer, closed) = f.closer.step(b, f.ticks);
            if closed {
                f.close_line_start = f.line_start;
                self.buf.push('\n');
                f.kind = Kind::TaggedDone;
                return p + 1;
            }
            if closer == Closer::No {
                f.closer = Closer::No;
                continue;
            }
            self.buf.push(b as char);
            if b == b'\n' {
                f.line_start = self.buf.len();
            }
            if b == b'`' {
                f.closer_end = self.buf.len();
            }
            f.closer = closer;
            p += 1;
        }
        p
    }

    /// Judges a JSON fence: calls if every value is call-shaped, text otherwise.
    fn end_json_fence<S: Sink + ?Sized>(&mut self, f: Fence, closed: bool, sink: &mut S) {
        let buf = std::mem::take(&mut self.buf);
        let mut calls = Vec::new();
        let all_calls = f.values.iter().all(|&(a, b)| {
            let text = &buf[a..b];
            let items = if text.starts_with('[') {
                match array_elements(text) {
                    Ok(items) if !items.is_empty() => items,
                    _ => return false,
                }
            } else {
                vec![text]
            };
            items
                .into_iter()
                .all(|item| match judge_object(item, &self.declared, true) {
                    Ok(call) => {
                        calls.push(call);
                        true
                    }
                    Err(_) => false,
                })
        });
        if all_calls && !calls.is_empty() {
            for call in &calls {
                self.emit_call(&call.name, &call.arguments, sink);
            }
            if closed {
                self.emit_text(&buf[f.closer_end..], sink);
            }
        } else {
            self.emit_text(&buf, sink);
        }
        drop(calls);
        self.buf = buf;
        self.buf.clear();
        self.state = State::Text;
    }

    /// The stream ended inside a fence.
    pub(super) fn finish_fence<S: Sink + ?Sized>(&mut self, f: Fence, sink: &mut S) {
        let closed = f.closer.closes_at_end(f.ticks);
        match f.kind {
            Kind::Text => {}
            Kind::Undecided | Kind::TagProbe => {
                let buf = std::mem::take(&mut self.buf);
                self.emit_text(&buf, sink);
            }
            Kind::JsonValue => {
                let raw = self.buf[f.value_start..].trim_end().to_owned();
                sink.error(ParseError {
                    kind: ErrorKind::Truncated,
                    raw,
                    reason: ParseProblem::EndedInside,
                });
                let buf = std::mem::take(&mut self.buf);
                self.emit_text(&buf, sink);
            }
            Kind::JsonBetween => self.end_json_fence(f, closed, sink),
            Kind::Tagged | Kind::TaggedDone => {
                let buf = std::mem::take(&mut self.buf);
                let done = f.kind == Kind::TaggedDone;
                let (body_end, trailing) = if done {
                    (f.close_line_start, &buf[f.closer_end..])
                } else if closed {
                    (f.line_start, &buf[f.closer_end..])
                } else {
                    (buf.len(), "")
                };
                let mut inner = Parser::new(self.config.clone());
                inner.next_index = self.next_index;
                inner.seen_visible = true;
                inner.push(&buf[f.body_start..body_end], sink);
                inner.finish(sink);
                self.next_index = inner.next_index;
                self.emit_text(trailing, sink);
            }
        }
        self.buf.clear();
    }
}
