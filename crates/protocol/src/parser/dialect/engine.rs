//! The engine every non-hermes dialect runs on: plain text scanned for the dialect's markers,
//! reasoning streamed until its closing marker, and call sections held (bounded) until they close,
//! then read whole by the dialect's section reader. Every byte is scanned once per state it passes
//! through; only a possible partial marker (a few bytes) is held back at a chunk's end.

mod lane;
mod track;

use self::track::{Read, Track};
use super::scan::{Found, Markers};
use super::values::ParamTypes;
use super::Dialect;
use crate::parser::ParseProblem;
use crate::parser::{Declared, ErrorKind, ParseError, ParserConfig, Sink};

/// Longest header (gpt-oss `<|channel|>…<|message|>`) before the opener is taken as text.
const MAX_HEADER: usize = 512;

/// What a marker found in text starts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Action {
    /// Reasoning, until one of the closers of set `n`.
    Reasoning(usize),
    /// A call section, until one of the closers of set `n` (an empty set: the end of the stream).
    Section(usize),
    /// A header ending at `<|message|>`, which the dialect's header reader turns into an action.
    Header,
    /// A marker with no content of its own: removed.
    Drop,
}

/// A set of closing markers; `reopen[i]` marks a closer that, once consumed, acts as the opener
/// with the same text (Mistral's next `[TOOL_CALLS]`, harmony's next `<|start|>`).
pub(crate) struct Closers {
    pub markers: Markers,
    pub reopen: Vec<bool>,
}

/// What a section reader produces, in order.
#[derive(Debug)]
pub(crate) enum Piece {
    Text(String),
    Call { name: String, arguments: String },
    Error(ParseError),
}

/// What a section reader knows besides the section's text.
pub(crate) struct SectionCtx<'a> {
    pub declared: &'a Declared,
    pub types: &'a ParamTypes,
    /// The marker (or header) that opened the section; empty for a reply-start section.
    pub opener: &'a str,
    /// The name a header gave the section (gpt-oss), else empty.
    pub label: &'a str,
    /// Whether a closing marker ended the section (else the end of the stream did).
    pub closed: bool,
    /// At the end of the stream, the start of a closing marker that the stream cut off (the stop
    /// sequence or the token limit ate the rest). It is not part of the section's text: it counts
    /// as the (eaten) marker, and goes back into the visible text if the section holds no call.
    pub cut: &'a str,
}

impl SectionCtx<'_> {
    /// Whether `name` may be called.
    pub fn check_name(&self, name: &str) -> Result<(), ParseProblem> {
        crate::parser::shape::check_name(name, self.declared)
    }

    /// `text` without a trailing start of `marker` that the end of the stream cut off (the stop
    /// sequence or the token limit ate the rest of it); `text` itself when the section was closed.
    /// The second value says whether anything was cut.
    pub fn without_cut_marker<'t>(&self, text: &'t str, marker: &str) -> (&'t str, bool) {
        if self.closed {
            return (text, false);
        }
        let keep = text.len() - super::scan::cut_len(text.as_bytes(), marker.as_bytes());
        match text.get(..keep) {
            Some(kept) if keep < text.len() => (kept, true),
            _ => (text, false),
        }
    }

    /// Whether `name` could still grow into a declared tool's name (it is a proper prefix of one
    /// and not declared itself): a name the end of the stream may have cut off.
    pub fn name_may_be_cut(&self, name: &str) -> bool {
        use crate::parser::shape::Declared as _;
        !self.declared.allows(name) && self.declared.has_longer(name)
    }

    /// A malformed-call error, or a truncated one when the stream ended inside the section.
    pub fn error(&self, raw: &str, reason: impl Into<ParseProblem>, incomplete: bool) -> Piece {
        let kind = if incomplete && !self.closed {
            ErrorKind::Truncated
        } else {
            ErrorKind::Malformed
        };
        let reason = if kind == ErrorKind::Truncated {
            ParseProblem::EndedInside
        } else {
            reason.into()
        };
        Piece::Error(ParseError {
            kind,
            raw: raw.trim().to_owned(),
            reason,
        })
    }
}

pub(crate) type SectionReader = fn(&SectionCtx<'_>, &str, &mut Vec<Piece>);
pub(crate) type HeaderReader = fn(&str, &mut String) -> Action;

/// A dialect's grammar: its markers and readers.
pub(crate) struct Spec {
    pub openers: Markers,
    pub actions: Vec<Action>,
    pub closers: Vec<Closers>,
    /// A reply whose first non-whitespace byte is this starts a section running to the end of the
    /// stream (llama3-json's bare JSON, pythonic's bare list), read with `opener` empty.
    pub start_byte: Option<u8>,
    pub section: SectionReader,
    pub header: Option<HeaderReader>,
    /// Sections (other than reply sections) also end by their own structure, right after their
    /// calls (see `track`), so the text after them streams as text.
    pub track: bool,
}

/// Builds a [`Spec`].
pub(crate) struct SpecBuilder {
    openers: Vec<&'static str>,
    actions: Vec<Action>,
    closers: Vec<Closers>,
}

/// The closer set of `<think>`; always set 0.
const THINK_SET: usize = 0;

impl SpecBuilder {
    pub fn new(think: bool) -> Self {
        let mut b = SpecBuilder {
            openers: Vec::new(),
            actions: Vec::new(),
            closers: Vec::new(),
        };
        let set = b.closers(&[("</think>", false)]);
        debug_assert_eq!(set, THINK_SET);
        if think {
            b.open("<think>", Action::Reasoning(set));
        }
        b
    }

    /// Adds a closer set; returns its number for [`Action::Reasoning`]/[`Action::Section`].
    pub fn closers(&mut self, list: &[(&'static str, bool)]) -> usize {
        let names: Vec<&'static str> = list.iter().map(|(m, _)| *m).collect();
        self.closers.push(Closers {
            markers: Markers::new(&names),
            reopen: list.iter().map(|(_, r)| *r).collect(),
        });
        self.closers.len() - 1
    }

    pub fn open(&mut self, marker: &'static str, action: Action) -> &mut Self {
        self.openers.push(marker);
        self.actions.push(action);
        self
    }

    pub fn build(
        self,
        start_byte: Option<u8>,
        section: SectionReader,
        header: Option<HeaderReader>,
    ) -> Spec {
        Spec {
            openers: Markers::new(&self.openers),
            actions: self.actions,
            closers: self.closers,
            start_byte,
            section,
            header,
            track: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Text,
    Reasoning(usize),
    /// A section with closer set `set` ([`REPLY_SET`]: a reply-start section).
    Section {
        set: usize,
    },
    Header,
}

pub(crate) struct Engine {
    spec: Spec,
    declared: Declared,
    types: ParamTypes,
    id_prefix: String,
    max_block: usize,
    state: State,
    /// A possible partial marker at the end of the last chunk.
    held: String,
    /// The current section's or header's content.
    buf: String,
    /// Scratch space for [`Engine::resolve_held`].
    probe: String,
    /// The other allocation for `held` (see [`Engine::resolve_held`]).
    spare: String,
    /// While bytes are held: a marker they are a proper prefix of.
    held_marker: Option<&'static [u8]>,
    /// The lane's release sets (see [`Engine::lane`]): marker set and held byte, from lane set
    /// `release_base` on.
    release_sets: Vec<(usize, u8)>,
    release_base: usize,
    /// The marker text (or header) that opened the current section.
    open_text: String,
    /// The call name a header gave.
    label: String,
    /// Nothing but whitespace and reasoning so far: a start byte may open a reply section.
    at_start: bool,
    next_index: usize,
    /// Where a tracked section's structure has got to (see `track`).
    track: Track,
    /// In a tracked section of JSON values: the buffer's length after its last complete value.
    value_end: usize,
}

impl Engine {
    pub(crate) fn new(config: &ParserConfig) -> Self {
        let spec = spec_for(config.dialect, config.think);
        let state = if config.reasoning_open {
            State::Reasoning(THINK_SET)
        } else {
            State::Text
        };
        Engine {
            spec,
            declared: Declared::new(&config.tools),
            types: ParamTypes::from_schemas(&config.schemas),
            id_prefix: config.id_prefix.clone(),
            max_block: config.max_block_bytes,
            state,
            held: String::new(),
            buf: String::new(),
            probe: String::new(),
            spare: String::new(),
            held_marker: None,
            release_sets: Vec::new(),
            release_base: 0,
            open_text: String::new(),
            label: String::new(),
            at_start: true,
            next_index: 0,
            track: Track::default(),
            value_end: 0,
        }
    }

    pub(crate) fn calls_emitted(&self) -> usize {
        self.next_index
    }

    /// The markers that matter in the current state.
    fn markers(&self) -> &Markers {
        match self.state {
            State::Text => &self.spec.openers,
            State::Section { set: REPLY_SET } => no_markers(),
            State::Reasoning(set) | State::Section { set } => &self.spec.closers[set].markers,
            State::Header => header_close(),
        }
    }

    pub(crate) fn push<S: Sink + ?Sized>(&mut self, s: &str, sink: &mut S) {
        let mut i = 0;
        while i < s.len() {
            i = if self.held.is_empty() {
                self.step(s, i, sink)
            } else {
                self.resolve_held(s, i, sink)
            };
        }
        self.held_marker = self.find_held_marker();
    }

    /// The held bytes plus the start of `s`: a marker that began in the held bytes completes, is
    /// still undecided, or the held bytes are plain content. Returns where to go on in `s`.
    fn resolve_held<S: Sink + ?Sized>(&mut self, s: &str, i: usize, sink: &mut S) -> usize {
        // Reused buffers: when text arrives a byte at a time, held bytes are resolved on many
        // pushes. The held bytes move to `spare` while the new held bytes (if any) go to the
        // other allocation.
        let mut held = std::mem::replace(&mut self.held, std::mem::take(&mut self.spare));
        let probe_end = ceil_boundary(s, i + 64);
        let mut probe = std::mem::take(&mut self.probe);
        probe.clear();
        probe.push_str(&held);
        probe.push_str(&s[i..probe_end]);
        let next = self.resolve_probe(&held, &probe, s.len(), i, probe_end == s.len(), sink);
        self.probe = probe;
        held.clear();
        self.spare = held;
        next
    }

    fn resolve_probe<S: Sink + ?Sized>(
        &mut self,
        held: &str,
        probe: &str,
        len: usize,
        i: usize,
        probe_is_rest: bool,
        sink: &mut S,
    ) -> usize {
        let (start, marker) = match self.markers().scan(probe.as_bytes(), false) {
            Found::Marker { start, index } if start < held.len() => (start, Some(index)),
            Found::Undecided { start } if start < held.len() && probe_is_rest => (start, None),
            _ => (held.len(), None),
        };
        let took = self.content(&held[..start], sink);
        if took < start {
            // A tracked section ended inside the held bytes: the rest is read again as text.
            self.push(&held[took..], sink);
            return i;
        }
        if self.overflowed() {
            // What follows the limit is text again, the held bytes included.
            self.overflow(sink);
            self.push(&held[start..], sink);
            return i;
        }
        match marker {
            Some(index) => {
                let end = start + self.markers().marker(index).len();
                self.on_marker(index, sink);
                i + end - held.len()
            }
            None if start < held.len() => {
                self.held.push_str(&probe[start..]);
                len
            }
            None => i,
        }
    }

    /// Processes `s` from `i` in the current state; returns how far it got.
    fn step<S: Sink + ?Sized>(&mut self, s: &str, i: usize, sink: &mut S) -> usize {
        if self.state == State::Text && self.at_start {
            if let Some(start) = self.spec.start_byte {
                let rest = &s.as_bytes()[i..];
                let ws = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
                self.emit_text(&s[i..i + ws], sink);
                match rest.get(ws) {
                    None => return s.len(),
                    Some(&b) if b == start => {
                        self.at_start = false;
                        self.open_text.clear();
                        self.state = State::Section { set: REPLY_SET };
                        return i + ws;
                    }
                    Some(_) => {}
                }
                return self.scan_step(s, i + ws, sink);
            }
        }
        if let State::Section { set, .. } = self.state {
            if set == REPLY_SET {
                // A reply section runs to the end of the stream.
                let room = self.max_block.saturating_sub(self.buf.len()) + 1;
                let end = ceil_boundary(s, i.saturating_add(room).min(s.len()));
                self.buf.push_str(&s[i..end]);
                if self.buf.len() > self.max_block {
                    self.overflow(sink);
                }
                return end;
            }
        }
        self.scan_step(s, i, sink)
    }

    /// Scans for the current state's markers from `i`.
    fn scan_step<S: Sink + ?Sized>(&mut self, s: &str, i: usize, sink: &mut S) -> usize {
        let rest = &s[i..];
        if self.markers().is_empty() {
            let took = self.content(rest, sink);
            if self.overflowed() {
                self.overflow(sink);
            }
            return i + took;
        }
        // A tracked section's markers count only up to where its structure ends it.
        let scanned = match self.tracked_end(rest.as_bytes()) {
            // (The byte that starts no further value may begin a longer character.)
            Some(end) => &rest[..ceil_boundary(rest, end)],
            None => rest,
        };
        match self.markers().scan(scanned.as_bytes(), false) {
            Found::Marker { start, index } => {
                let len = self.markers().marker(index).len();
                // The section's end is at or after the marker's (it ends `scanned`): all taken.
                self.content(&rest[..start], sink);
                if self.overflowed() {
                    self.overflow(sink);
                    return i + start;
                }
                self.on_marker(index, sink);
                i + start + len
            }
            // Bytes that may still become a marker, at the end of the chunk. (Where a tracked
            // section's structure ends `scanned` before that, no marker can be open: see `track`.)
            Found::Undecided { start } if scanned.len() == rest.len() => {
                self.content(&rest[..start], sink);
                if self.overflowed() {
                    self.overflow(sink);
                    return i + start;
                }
                self.held.push_str(&rest[start..]);
                s.len()
            }
            Found::Undecided { .. } | Found::None => {
                let took = self.content(scanned, sink);
                if self.overflowed() {
                    self.overflow(sink);
                }
                i + took
            }
        }
    }

    /// Content of the current state (text, reasoning, or section/header bytes). Returns how much
    /// of `text` it took: all of it, except where a tracked section ended inside it (the state is
    /// then text, and the caller goes on with the rest).
    fn content<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) -> usize {
        if text.is_empty() {
            return 0;
        }
        match self.state {
            State::Text => self.emit_text(text, sink),
            State::Reasoning(_) => sink.reasoning(text),
            State::Section { set } if self.spec.track && set != REPLY_SET => {
                return self.tracked_content(text, sink)
            }
            State::Section { .. } | State::Header => self.buf.push_str(text),
        }
        text.len()
    }

    /// Where a tracked section's structure ends it within `bytes` of its content: the length of
    /// the part that decides it (the byte that starts no further value included). None when it
    /// does not end there, or the section is not tracked.
    fn tracked_end(&self, bytes: &[u8]) -> Option<usize> {
        match self.state {
            State::Section { set } if self.spec.track && set != REPLY_SET => {}
            _ => return None,
        }
        let mut track = self.track;
        let mut at = 0;
        loop {
            match track.read(&bytes[at..]) {
                Read::More => return None,
                Read::ValueEnd(k) => at += k,
                Read::End(k) => return Some(at + k),
                Read::Stop(k) => return Some(at + k + 1),
            }
        }
    }

    /// [`Engine::content`] for a tracked section: reads `text` with the tracker and ends the
    /// section where it says. Past the section's limit nothing ends it: it overflows as any
    /// section does, at the same byte however the text was chunked.
    fn tracked_content<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) -> usize {
        let mut at = 0;
        loop {
            let read = self.track.read(&text.as_bytes()[at..]);
            let upto = match read {
                Read::More => text.len(),
                Read::ValueEnd(k) | Read::End(k) | Read::Stop(k) => at + k,
            };
            self.buf.push_str(&text[at..upto]);
            if self.buf.len() > self.max_block {
                self.buf.push_str(&text[upto..]);
                return text.len();
            }
            at = upto;
            match read {
                Read::More => return text.len(),
                Read::ValueEnd(_) => self.value_end = self.buf.len(),
                Read::End(_) => {
                    self.end_section(sink);
                    return at;
                }
                Read::Stop(_) => {
                    // The whitespace and commas after the last value are text.
                    let tail = self.buf.split_off(self.value_end);
                    self.end_section(sink);
                    self.emit_text(&tail, sink);
                    return at;
                }
            }
        }
    }

    /// A tracked section ended by its structure: read it as if a closing marker had ended it.
    fn end_section<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        self.close_section(Some(b""), "", sink);
    }

    fn overflowed(&self) -> bool {
        match self.state {
            State::Section { .. } => self.buf.len() > self.max_block,
            State::Header => self.buf.len() > MAX_HEADER,
            _ => false,
        }
    }

    /// Releases the section or header as text, cut right after its limit so the result does not
    /// depend on chunking; the rest is parsed again as text.
    fn overflow<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        let limit = if self.state == State::Header {
            MAX_HEADER
        } else {
            self.max_block
        };
        let cut = ceil_boundary(&self.buf, limit + 1);
        let rest = self.buf.split_off(cut);
        let body = std::mem::take(&mut self.buf);
        if self.state != State::Header {
            sink.error(ParseError {
                kind: ErrorKind::Malformed,
                raw: body.trim().to_owned(),
                reason: ParseProblem::TooLarge {
                    limit: self.max_block,
                },
            });
        }
        let opener = std::mem::take(&mut self.open_text);
        self.state = State::Text;
        self.at_start = false;
        self.emit_text(&opener, sink);
        self.emit_text(&body, sink);
        self.push(&rest, sink);
    }

    /// Marker `index` of the current state's set was found (and consumed).
    fn on_marker<S: Sink + ?Sized>(&mut self, index: usize, sink: &mut S) {
        match self.state {
            State::Text => {
                let action = self.spec.actions[index];
                let marker = self.spec.openers.marker(index);
                self.start(action, marker, sink);
            }
            State::Reasoning(set) => {
                self.state = State::Text;
                self.reopen(set, index, sink);
            }
            State::Section { set, .. } => {
                let closer = self.spec.closers[set].markers.marker(index);
                self.close_section(Some(closer), "", sink);
                self.reopen(set, index, sink);
            }
            State::Header => self.end_header(sink),
        }
    }

    /// After closer `index` of `set`: when it doubles as an opener, open what it opens.
    fn reopen<S: Sink + ?Sized>(&mut self, set: usize, index: usize, sink: &mut S) {
        let closers = &self.spec.closers[set];
        if !closers.reopen[index] {
            return;
        }
        let marker = closers.markers.marker(index);
        let found = (0..self.spec.actions.len()).find(|&k| self.spec.openers.marker(k) == marker);
        if let Some(k) = found {
            self.start(self.spec.actions[k], marker, sink);
        }
    }

    fn start<S: Sink + ?Sized>(&mut self, action: Action, marker: &[u8], sink: &mut S) {
        if !matches!(action, Action::Reasoning(_)) {
            self.at_start = false;
        }
        self.open_text.clear();
        self.open_text
            .push_str(std::str::from_utf8(marker).unwrap_or_default());
        match action {
            Action::Reasoning(set) => self.state = State::Reasoning(set),
            Action::Section(set) => {
                self.label.clear();
                self.track = Track::default();
                self.value_end = 0;
                self.state = State::Section { set };
            }
            Action::Header => self.state = State::Header,
            Action::Drop => {
                let _ = sink;
                self.state = State::Text;
            }
        }
    }

    fn end_header<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        let header = std::mem::take(&mut self.buf);
        let mut label = String::new();
        let action = match self.spec.header {
            Some(read) => read(&header, &mut label),
            None => Action::Drop,
        };
        self.open_text.push_str(&header);
        self.open_text.push_str(HEADER_CLOSE);
        let open_text = std::mem::take(&mut self.open_text);
        match action {
            Action::Section(set) => {
                self.track = Track::default();
                self.value_end = 0;
                self.state = State::Section { set };
            }
            Action::Reasoning(set) => self.state = State::Reasoning(set),
            Action::Header | Action::Drop => self.state = State::Text,
        }
        self.open_text = open_text;
        self.label = label;
        let _ = sink;
    }

    /// A section ended (at `closer`, or at the end of the stream): read it and emit the result.
    fn close_section<S: Sink + ?Sized>(&mut self, closer: Option<&[u8]>, cut: &str, sink: &mut S) {
        let body = std::mem::take(&mut self.buf);
        let opener = std::mem::take(&mut self.open_text);
        let mut pieces = Vec::new();
        let ctx = SectionCtx {
            declared: &self.declared,
            types: &self.types,
            opener: &opener,
            label: &self.label,
            closed: closer.is_some(),
            cut,
        };
        (self.spec.section)(&ctx, &body, &mut pieces);
        self.state = State::Text;
        let has_call = pieces.iter().any(|p| matches!(p, Piece::Call { .. }));
        // After text that follows the calls, a cut-off marker start is more likely text too:
        // visible text is never dropped.
        let cut_is_text = matches!(pieces.last(), Some(Piece::Text(t)) if !t.trim().is_empty());
        for piece in pieces {
            match piece {
                Piece::Text(t) if has_call => self.emit_text(&t, sink),
                Piece::Text(_) => {}
                Piece::Call { name, arguments } => self.emit_call(&name, &arguments, sink),
                Piece::Error(e) => sink.error(e),
            }
        }
        if has_call && cut_is_text {
            self.emit_text(cut, sink);
        }
        if !has_call {
            // No call: the section was text after all, markers and all (as for hermes blocks).
            self.emit_text(&opener, sink);
            self.emit_text(&body, sink);
            self.emit_text(cut, sink);
            if let Some(c) = closer {
                self.emit_text(std::str::from_utf8(c).unwrap_or_default(), sink);
            }
        }
        self.buf = body;
        self.buf.clear();
    }

    pub(crate) fn finish<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        // The held bytes can no longer grow: a complete marker in them still counts. (They are
        // the start of a marker, which cannot end a tracked section: see `track`.)
        let mut held = std::mem::take(&mut self.held);
        // In a section, a cut-off start of its closing marker is the marker the stop sequence or
        // the token limit ate: it is not text of the section.
        let mut cut = String::new();
        while !held.is_empty() {
            match self.markers().scan(held.as_bytes(), true) {
                Found::Marker { start, index } => {
                    let end = start + self.markers().marker(index).len();
                    self.content(&held[..start], sink);
                    self.on_marker(index, sink);
                    held.drain(..end);
                }
                _ => {
                    let k = match self.state {
                        State::Section { .. } => self.markers().cut_len(held.as_bytes()),
                        // Reasoning keeps it, as hermes does: it is never visible text.
                        State::Text | State::Reasoning(_) | State::Header => 0,
                    };
                    let mut keep = held.len() - k;
                    if !held.is_char_boundary(keep) {
                        keep = held.len();
                    }
                    self.content(&held[..keep], sink);
                    cut = held.split_off(keep);
                    held.clear();
                }
            }
            if self.overflowed() {
                self.overflow(sink);
            }
        }
        match self.state {
            // A section that overflowed went out as text: so does the rest.
            State::Text => self.emit_text(&cut, sink),
            State::Reasoning(_) => {}
            State::Section { .. } => self.close_section(None, &cut, sink),
            State::Header => {
                let header = std::mem::take(&mut self.buf);
                let opener = std::mem::take(&mut self.open_text);
                self.state = State::Text;
                self.emit_text(&opener, sink);
                self.emit_text(&header, sink);
            }
        }
        self.held_marker = self.find_held_marker();
    }

    fn emit_text<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) {
        if text.is_empty() {
            return;
        }
        if self.at_start && text.bytes().any(|b| !b.is_ascii_whitespace()) {
            self.at_start = false;
        }
        sink.text(text);
    }

    fn emit_call<S: Sink + ?Sized>(&mut self, name: &str, arguments: &str, sink: &mut S) {
        let index = self.next_index;
        self.next_index += 1;
        let id = format!("{}{index}", self.id_prefix);
        sink.call_start(index, &id, name);
        sink.call_args(index, arguments);
        sink.call_end(index);
    }
}

const HEADER_CLOSE: &str = "<|message|>";

fn no_markers() -> &'static Markers {
    static NONE: std::sync::OnceLock<Markers> = std::sync::OnceLock::new();
    NONE.get_or_init(|| Markers::new(&[]))
}

fn header_close() -> &'static Markers {
    static CLOSE: std::sync::OnceLock<Markers> = std::sync::OnceLock::new();
    CLOSE.get_or_init(|| Markers::new(&[HEADER_CLOSE]).with_steps())
}

/// The closer-set number of a reply-start section (no closers: the end of the stream).
pub(crate) const REPLY_SET: usize = usize::MAX;

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The grammar of a dialect.
fn spec_for(dialect: Dialect, think: bool) -> Spec {
    let b = SpecBuilder::new(think);
    match dialect {
        // Hermes runs on the parent module's parser; this is never asked for it.
        Dialect::Hermes | Dialect::Granite => super::json_calls::granite(b),
        Dialect::Llama3Json => super::json_calls::llama3(b),
        Dialect::Mistral => super::json_calls::mistral(b),
        Dialect::Phi4Mini => super::json_calls::phi4_mini(b),
        Dialect::Pythonic => super::pythonic::spec(b),
        Dialect::Qwen3Coder => super::markup::qwen3_coder(b),
        Dialect::Glm45 => super::markup::glm45(b),
        Dialect::DeepseekV3 => super::specials::deepseek(b),
        Dialect::KimiK2 => super::specials::kimi(b),
        Dialect::GptOss => super::gpt_oss::spec(b),
    }
}
