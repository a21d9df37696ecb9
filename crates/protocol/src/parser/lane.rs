//! The fast lane: what a push does when the parser is in a state that passes plain bytes straight
//! through (text, reasoning, or the body of a section being collected) and the pushed bytes cannot
//! start anything.
//!
//! Token streaming pushes a few bytes at a time, often one, so the fixed cost of a push is most of
//! the parser's cost there. The lane answers "does this push change nothing but the output?" with
//! one table load per byte, before any state dispatch. The general path sets the lane up after each
//! push it handles ([`Parser::set_lane`]); a push the lane does not take goes to the general path,
//! which gives the same result, so a lane that is closed is always correct and a lane that is open
//! must only do what the state's own handling would do.
//!
//! Besides plain content, one byte at a time also brings markers and multi-byte characters in
//! pieces: a byte that starts a marker is held ([`Lane::holds`]; a dialect's is kept in the lane
//! itself, see `lone`), the next byte of a marker that stays incomplete is added to the held bytes
//! directly ([`Lane::expect`]), and a character's bytes are collected with the lane suspended
//! until it is complete. In hermes's mid-line text a newline and a backtick are taken too
//! ([`Parser::lane_newline`], [`Parser::lane_tick`]), and a call block's JSON value is appended
//! for the scanner to read in one go when a byte that may end it comes ([`Kind::Json`]).

use super::{Parser, Sink, State, MAX_TAG_SPACE, OPEN_CALL};

mod held;
mod lone;

pub(crate) use lone::Hold;

/// How many byte sets one table holds: one bit per set in a `u32`.
const SETS: usize = 32;

/// Where the lane's bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Visible text.
    Text,
    /// Reasoning.
    Reasoning,
    /// Visible text at the start of a line or of the reply (hermes): the first non-blank
    /// character ends that, and the lane goes on in mid-line text.
    LineStart,
    /// Visible text after a backtick run in hermes's mid-line text (`ticks` backticks): the first
    /// byte that is not a backtick opens an inline code span, and the lane goes on in its content.
    SpanOpen { ticks: usize },
    /// Visible text after an inline code span's closing run (hermes): the span has ended, and the
    /// lane goes on in mid-line text.
    SpanClose,
    /// Appended to the engine's section or header buffer, while it stays within `limit` bytes.
    Collect { limit: usize },
    /// A hermes call block's JSON value: appended to the block, while it stays within `limit`
    /// bytes, for the JSON scanner to read later ([`Parser::settle_json`]): only a closing bracket
    /// can end the value and only a `<` matters after a syntax error, and the lane stops at
    /// those.
    Json { limit: usize },
    /// Blanks after hermes's complete open tag, added to the held tag (as `text` does while
    /// the tag and its blanks stay within `MAX_TAG_SPACE`): a call's JSON follows.
    TagSpace,
    /// Blanks and commas after a value in a hermes call block, appended to the block (as
    /// `block_general` does while it stays within `limit` bytes): a `<` then starts its close tag
    /// ([`Parser::lane_hold`]).
    AfterValue { limit: usize },
}

pub(crate) struct Lane {
    /// Per byte, bit `k`: the byte passes in the states of set `k` (no byte of the set). One table
    /// for every state, so opening the lane in another state copies nothing.
    table: [u32; 256],
    /// `table` for the ASCII bytes, 0 for the others: the one test of a plain pushed byte also
    /// shows that it is a whole character (no test for ASCII first, one branch less a byte).
    ascii: [u32; 256],
    /// Per byte, bit `k`: in the states of set `k` the byte is held alone, as the first byte of a
    /// marker (see [`Lane::holds`]).
    hold: [u32; 256],
    /// Bit `k`: set `k` passes every non-ASCII byte (a character's bytes need no table loads).
    non_ascii: u32,
    gate: Gate,
    /// The gate while [`Lane::suspend`]ed.
    suspended: Gate,
    /// Hermes's held marker or block tag and how much of it is held, whose next byte the lane
    /// wants (see [`Lane::expect_along`]).
    cursor: (&'static [u8], usize),
    kind: Kind,
    /// A dialect's byte held alone in the lane (or [`NO_BYTE`]) and its marker (see `lone`).
    lone: (u16, &'static [u8]),
    /// What holding each byte alone sets up, by byte (see `lone`).
    lone_holds: Vec<lone::Ready>,
    /// Per byte, where its first entry in `lone_holds` is.
    lone_first: [u16; 256],
}

/// What the lane lets through.
#[derive(Clone, Copy, Debug)]
struct Gate {
    /// The current state's bit, or 0 when the lane is closed.
    mask: u32,
    /// `mask` when the lane's bytes are visible text ([`Kind::Text`]), else 0: plain text, most of
    /// every stream, goes out without the dispatch on the kind.
    text: u32,
    /// While a marker is arriving in pieces (the lane closed): the byte that continues it and
    /// leaves it still incomplete, or [`NO_BYTE`].
    want: u16,
    /// The same for a character of more than one byte (a dialect's marker may hold some, such as
    /// DeepSeek's `｜`), or [`NO_CHAR`].
    want_char: u32,
    /// While one byte is held: the set of bytes that show it was plain content (they continue no
    /// marker from it and start none), or 0.
    release: u32,
    /// The mask to open once a held byte was released.
    reopen: u32,
    /// A byte that ends a line of hermes's mid-line text (see [`Parser::lane_newline`]), or
    /// [`NO_BYTE`].
    newline: u16,
    /// A backtick that opens or closes an inline code span in hermes's mid-line text (see
    /// [`Parser::lane_tick`]), or [`NO_BYTE`].
    tick: u16,
}

const CLOSED: Gate = Gate {
    mask: 0,
    text: 0,
    want: NO_BYTE,
    want_char: NO_CHAR,
    release: 0,
    reopen: 0,
    newline: NO_BYTE,
    tick: NO_BYTE,
};

/// No byte is wanted.
const NO_BYTE: u16 = 0x100;

/// No character is wanted (no `char` has this value).
const NO_CHAR: u32 = u32::MAX;

/// The character of `marker` at `at`, when the marker goes on after it: what the lane wants next
/// while `at` bytes of the marker are held.
#[inline(always)]
pub(crate) fn next_char(marker: &[u8], at: usize) -> Option<char> {
    let &lead = marker.get(at)?;
    if lead.is_ascii() {
        return (marker.len() > at + 1).then_some(char::from(lead));
    }
    next_wide_char(marker, at)
}

/// [`next_char`] for a character of more than one byte (decoded by hand: a marker is valid UTF-8,
/// and this runs for every such character of a marker that arrives a byte at a time).
#[cold]
fn next_wide_char(marker: &[u8], at: usize) -> Option<char> {
    let &lead = marker.get(at)?;
    let (width, bits) = match lead {
        0xC0..=0xDF => (2, lead & 0x1F),
        0xE0..=0xEF => (3, lead & 0x0F),
        _ => (4, lead & 0x07),
    };
    let tail = marker.get(at + 1..at + width)?;
    let code = tail.iter().fold(u32::from(bits), |code, &b| {
        (code << 6) | u32::from(b & 0x3F)
    });
    (marker.len() > at + width).then(|| char::from_u32(code))?
}

impl Gate {
    /// Wants `want`: in [`Gate::want`] if it is ASCII, else in [`Gate::want_char`].
    fn set_want(&mut self, want: Option<char>) {
        match want {
            Some(c) if c.is_ascii() => self.want = u16::from(c as u8),
            Some(c) => self.want_char = u32::from(c),
            None => {}
        }
    }
}

/// A set number as a mask (0, the lane closed, for a set beyond the table).
fn bit(set: usize) -> u32 {
    if set < SETS {
        1 << set
    } else {
        0
    }
}

impl Lane {
    /// A closed lane whose set `k < sets` stops at the bytes `b` for which `stops(k, b)`.
    pub(crate) fn new(sets: usize, stops: impl Fn(usize, u8) -> bool) -> Self {
        let mut table = [0u32; 256];
        for (b, slot) in (0..=u8::MAX).zip(table.iter_mut()) {
            for k in 0..sets.min(SETS) {
                if !stops(k, b) {
                    *slot |= 1 << k;
                }
            }
        }
        let non_ascii = table[0x80..].iter().fold(u32::MAX, |all, &bits| all & bits);
        let mut ascii = [0; 256];
        ascii[..0x80].copy_from_slice(&table[..0x80]);
        Lane {
            table,
            ascii,
            hold: [0; 256],
            non_ascii,
            gate: CLOSED,
            suspended: CLOSED,
            cursor: (&[], 0),
            kind: Kind::Text,
            lone: (NO_BYTE, &[]),
            lone_holds: Vec::new(),
            lone_first: [u16::MAX; 256],
        }
    }

    /// Whether a lone ASCII byte `b` takes the lane. (A lone byte of another kind is an incomplete
    /// character: the caller checks for ASCII first.)
    #[inline(always)]
    pub(crate) fn takes_byte(&self, b: u8) -> bool {
        self.table[usize::from(b)] & self.gate.mask != 0
    }

    /// Whether a lone byte `b` is ASCII and takes the lane as visible text ([`Kind::Text`]).
    #[inline(always)]
    pub(crate) fn takes_text_byte(&self, b: u8) -> bool {
        self.ascii[usize::from(b)] & self.gate.text != 0
    }

    /// Marks the bytes `b` that set `k < sets` holds alone, `holds(k, b)` (see [`Lane::holds`]).
    pub(crate) fn set_holds(&mut self, sets: usize, holds: impl Fn(usize, u8) -> bool) {
        for (b, slot) in (0..=u8::MAX).zip(self.hold.iter_mut()) {
            for k in 0..sets.min(SETS) {
                if holds(k, b) {
                    *slot |= 1 << k;
                }
            }
        }
    }

    /// Whether a lone ASCII byte `b`, which the lane does not take, starts a marker in the
    /// current state that it is held for, alone ([`Parser::lane_hold`]): the first byte of every
    /// marker comes up often in prose (`<`, `[`, phi4-mini's `f`), and the general path's fixed
    /// cost was most of what it cost.
    #[inline(always)]
    pub(crate) fn holds(&self, b: u8) -> bool {
        self.hold[usize::from(b)] & self.gate.mask != 0
    }

    /// Whether `b` ends a line of hermes's mid-line text (see [`Lane::open_text_line`]).
    #[inline(always)]
    pub(crate) fn ends_line(&self, b: u8) -> bool {
        u16::from(b) == self.gate.newline
    }

    /// Opens the lane for hermes's mid-line text, with a newline taken by
    /// [`Parser::lane_newline`] and a backtick by [`Parser::lane_tick`].
    fn open_text_line(&mut self) {
        self.kind = Kind::Text;
        self.gate = TEXT_LINE_GATE;
    }

    /// Whether `b` is a backtick that [`Parser::lane_tick`] takes.
    #[inline(always)]
    pub(crate) fn ticks(&self, b: u8) -> bool {
        u16::from(b) == self.gate.tick
    }

    /// Whether `b` is the byte that continues a held marker (see [`Lane::expect`]).
    #[inline(always)]
    pub(crate) fn wants(&self, b: u8) -> bool {
        u16::from(b) == self.gate.want
    }

    /// Whether the complete character `c` continues a held marker (see [`Lane::expect`]).
    #[inline(always)]
    pub(crate) fn wants_char(&self, c: char) -> bool {
        u32::from(c) == self.gate.want_char
    }

    /// Whether a non-ASCII character shows that the one held byte was plain content (see
    /// [`Lane::expect`]): every non-ASCII byte passes the release set.
    #[inline(always)]
    pub(crate) fn releases_char(&self) -> bool {
        self.non_ascii & self.gate.release != 0
    }

    /// Whether `b` shows that the one held byte was plain content (see [`Lane::expect`]).
    #[inline(always)]
    pub(crate) fn releases(&self, b: u8) -> bool {
        self.table[usize::from(b)] & self.gate.release != 0
    }

    /// Whether a non-ASCII character takes the lane as visible text ([`Kind::Text`]): the
    /// lane's set passes every non-ASCII byte.
    #[inline(always)]
    pub(crate) fn takes_wide_text(&self) -> bool {
        self.gate.text & self.non_ascii != 0
    }

    /// Whether a non-ASCII character takes the lane.
    #[inline(always)]
    pub(crate) fn takes_char(&self, c: &str) -> bool {
        self.gate.mask & self.non_ascii != 0 || self.takes_str(c.as_bytes())
    }

    /// Whether a non-empty chunk of complete characters takes the lane (every byte passes).
    #[inline(always)]
    pub(crate) fn takes_str(&self, s: &[u8]) -> bool {
        self.gate.mask != 0 && !s.is_empty() && s.iter().all(|&b| self.takes_byte(b))
    }

    /// Whether held bytes await a byte that leaves their marker incomplete (closed, the lane
    /// wants one), so that another byte may be one that [`Parser::lane_miss`] takes: a marker's
    /// last byte (the lane wants none) completes it or shows it was content, both general.
    #[inline(always)]
    pub(crate) fn misses(&self) -> bool {
        self.gate.mask == 0 && (self.gate.want != NO_BYTE || self.gate.want_char != NO_CHAR)
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Closes the lane: every push goes to the general path.
    pub(crate) fn close(&mut self) {
        self.gate = CLOSED;
        self.suspended = CLOSED;
    }

    /// Closes the lane while bytes are held, except that `want` (if any), the character that
    /// continues the held marker, is added to them ([`Parser::extend_held`]), and, with `release`
    /// = `(set, open)`, a byte of byte set `set` (or a non-ASCII character, when set `set` passes
    /// them all) shows that the one held byte was `kind` content: both go out and the lane opens
    /// with set `open` ([`Parser::lane_release`]). Each must be what the state's own handling
    /// would do.
    pub(crate) fn expect(&mut self, want: Option<char>, release: Option<(Kind, usize, usize)>) {
        self.close();
        self.gate.set_want(want);
        if let Some((kind, set, open)) = release {
            self.kind = kind;
            self.gate.release = bit(set);
            self.gate.reopen = bit(open);
        }
    }

    /// [`Lane::expect`] with the next byte of `marker`, of which `at` bytes are held, as the byte
    /// wanted while the marker stays incomplete; [`Lane::advance`] moves on by one.
    pub(crate) fn expect_along(
        &mut self,
        marker: &'static [u8],
        at: usize,
        release: Option<(Kind, usize, usize)>,
    ) {
        self.cursor = (marker, at);
        self.expect(next_char(marker, at), release);
    }

    /// The wanted byte of [`Lane::expect_along`]'s marker was held: the lane wants the next.
    fn advance(&mut self) {
        let (marker, at) = self.cursor;
        self.cursor = (marker, at + 1);
        // `expect(next_char(marker, at + 1), None)` without rewriting `suspended` (see
        // `Lane::suspend`): the lane is not suspended while it wants a byte.
        self.gate = CLOSED;
        self.gate.set_want(next_char(marker, at + 1));
    }

    /// Opens the lane after a release (see [`Lane::expect`]).
    pub(crate) fn reopen(&mut self) {
        self.gate = Gate {
            mask: self.gate.reopen,
            text: self.text_mask(self.gate.reopen),
            ..CLOSED
        };
    }

    /// [`Gate::text`] for `mask` and the current kind.
    fn text_mask(&self, mask: u32) -> u32 {
        if self.kind == Kind::Text {
            mask
        } else {
            0
        }
    }

    /// Closes the lane until [`Lane::resume`], which opens it as it was unless it was closed
    /// meanwhile (then it stays closed). The lane suspends it for a character's bytes (see
    /// [`Parser::lane_wide_byte`]) and resumes it when the character is complete; the general
    /// path, the only other path meanwhile, closes it while a character is incomplete
    /// ([`Parser::set_lane`]). So only a suspend and a close write `suspended`, and a resume reads
    /// what the last of them wrote: opening the lane leaves `suspended` alone (a push of a few
    /// bytes opens it once or twice).
    pub(crate) fn suspend(&mut self) {
        self.suspended = self.gate;
        self.gate = CLOSED;
    }

    pub(crate) fn resume(&mut self) {
        self.gate = self.suspended;
    }

    /// Opens the lane for `kind`, stopping at the bytes of set `set` (a set beyond the table
    /// leaves it closed).
    pub(crate) fn open(&mut self, kind: Kind, set: usize) {
        self.kind = kind;
        self.gate = Gate {
            mask: bit(set),
            text: self.text_mask(bit(set)),
            ..CLOSED
        };
    }
}

/// Hermes's byte sets (see [`Parser::set_lane`]): mid-line text stops at what may open a marker,
/// a fence or a code span and at a newline (which changes the line state); text at the start of a
/// line also at blanks (which it counts); an inline code span's content at a backtick or a
/// newline; a call block's JSON value at what may end it or, once broken, the block (its
/// structure is read later, see [`Kind::Json`]).
/// After a held `<`, mid-line text that continues no open marker releases it.
const HERMES_TEXT: usize = 0;
const HERMES_LINE_START: usize = 1;
const HERMES_SPAN: usize = 2;
const HERMES_JSON: usize = 3;
const HERMES_AFTER_LT: usize = 4;
const HERMES_TAG_SPACE: usize = 5;
pub(super) const HERMES_AFTER_VALUE: usize = 6;

/// The gate of [`Lane::open_text_line`]: `open(Kind::Text, HERMES_TEXT)` with a newline and a
/// backtick taken, set up whole (a newline and the end of a `<` or of a code span open it).
const TEXT_LINE_GATE: Gate = Gate {
    mask: 1 << HERMES_TEXT,
    text: 1 << HERMES_TEXT,
    newline: b'\n' as u16,
    tick: b'`' as u16,
    ..CLOSED
};

/// The gate of [`Parser::lt_lane`]: `<tool_call>`'s `t` is wanted, and a byte of set
/// [`HERMES_AFTER_LT`] releases the `<` and opens set [`HERMES_TEXT`].
const LT_GATE: Gate = Gate {
    want: OPEN_CALL[1] as u16,
    release: 1 << HERMES_AFTER_LT,
    reopen: 1 << HERMES_TEXT,
    ..CLOSED
};

/// Hermes's lane; `open_markers` are the markers that open something in text (all start with `<`).
pub(super) fn hermes(open_markers: &[&[u8]]) -> Lane {
    let text_stops = |b: u8| matches!(b, b'<' | b'`' | b'\n');
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let mut lane = Lane::new(7, |set, b| match set {
        HERMES_TEXT => text_stops(b),
        HERMES_LINE_START => matches!(b, b'<' | b'`') || blank(b),
        HERMES_SPAN => matches!(b, b'`' | b'\n'),
        HERMES_JSON => matches!(b, b'}' | b']' | b'<'),
        HERMES_TAG_SPACE => !blank(b),
        HERMES_AFTER_VALUE => !(blank(b) || b == b','),
        _ => text_stops(b) || open_markers.iter().any(|m| m.get(1) == Some(&b)),
    });
    // Text holds a `<`, which every open marker starts with (`text_byte`), and so does a block
    // after its value, where every tag starts with it (`block_byte`).
    lane.set_holds(7, |set, b| {
        matches!(set, HERMES_TEXT | HERMES_LINE_START | HERMES_AFTER_VALUE) && b == b'<'
    });
    lane
}

impl Parser {
    /// One pushed byte, if the lane can take it: plain content, the next byte of a held marker, or
    /// a byte of a multi-byte character. False when the general path must take it.
    #[inline(always)]
    pub(super) fn lane_byte<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        if self.lane.takes_text_byte(b) {
            // `b` is ASCII (the mask only tells the compiler so: one byte of text).
            sink.text(char::from(b & 0x7F).encode_utf8(&mut [0; 4]));
            return true;
        }
        if b.is_ascii() {
            if self.lane.takes_byte(b) {
                return self.lane_char(char::from(b), sink);
            }
            if self.lane.holds(b) {
                // A dialect's byte is held in the lane itself (see `lone`), inline: in prose the
                // first byte of a marker comes up every few dozen bytes.
                if self.dialect.is_some() {
                    return self.lane.hold_lone(b);
                }
                return self.lane_hold(b);
            }
            if self.lane.ends_line(b) {
                self.lane_newline(sink);
                return true;
            }
            if self.lane.ticks(b) {
                return self.lane_tick(sink);
            }
            if self.lane.wants(b) {
                if self.dialect.is_some() {
                    return self.extend_held(b);
                }
                return self.extend_held_hermes(b);
            }
            if !self.lane.releases(b) {
                return self.lane.misses() && self.dialect.is_some() && self.lane_miss(b, sink);
            }
            if self.lane.holds_lone_text() {
                self.release_lone_text(b, sink);
                return true;
            }
            return self.lane_release_byte(b, sink);
        }
        self.lane_wide_byte(b, sink)
    }

    /// A non-ASCII byte (see [`Parser::lane_byte`]). The lane waits while the character is
    /// incomplete (the state cannot change meanwhile) and takes it whole. No dispatch on what
    /// the byte did: a byte at a time, characters come up every few words of prose, and each of
    /// their bytes comes here. Out of line: inline, the hot loop widened every pushed byte.
    #[inline(never)]
    fn lane_wide_byte<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        if !self.utf8.pending() {
            if self.utf8.start(b) {
                self.lane.suspend();
                return true;
            }
            return false;
        }
        match self.utf8.continue_with(b) {
            Some(None) => true,
            Some(Some(c)) => {
                self.lane.resume();
                if self.lane.takes_wide_text() {
                    sink.text(c.encode_utf8(&mut [0; 4]));
                } else {
                    self.lane_wide_char(c, sink);
                }
                true
            }
            None => false,
        }
    }

    /// A complete character of more than one byte that is not plain visible text in the lane
    /// (see [`Parser::lane_byte`]): the lane's other paths, or the general path.
    #[inline(never)]
    fn lane_wide_char<S: Sink + ?Sized>(&mut self, c: char, sink: &mut S) {
        let mut tmp = [0; 4];
        let s = c.encode_utf8(&mut tmp);
        let taken = if self.lane.takes_char(s) {
            self.lane_push(s, sink)
        } else if self.lane.wants_char(c) {
            self.extend_held_char(c)
        } else if self.lane.releases_char() {
            self.lane_release(c, sink)
        } else {
            self.lane.misses() && self.dialect.is_some() && self.lane_miss_char(s, sink)
        };
        if !taken {
            self.push_general(s, sink);
        }
    }

    /// Hands content the lane took to where the current state sends it; false when it cannot
    /// (a section that would outgrow its limit), and the general path must take it.
    #[inline(always)]
    pub(super) fn lane_push<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) -> bool {
        match self.lane.kind() {
            Kind::Text => sink.text(text),
            Kind::Reasoning => sink.reasoning(text),
            Kind::LineStart => self.line_start_text(text, sink),
            Kind::SpanOpen { ticks } => self.span_open_text(ticks, text, sink),
            Kind::SpanClose => self.span_close_text(text, sink),
            Kind::Collect { limit } => {
                return self
                    .dialect
                    .as_deref_mut()
                    .is_some_and(|engine| engine.collect(text, limit))
            }
            Kind::Json { limit } => {
                if self.buf.len() + text.len() > limit {
                    return false;
                }
                self.buf.push_str(text);
                self.json_pending += text.len();
            }
            Kind::TagSpace => {
                if self.held.len() + text.len() > MAX_TAG_SPACE {
                    return false;
                }
                self.held.push_str(text);
            }
            Kind::AfterValue { limit } => {
                if self.buf.len() + text.len() > limit {
                    return false;
                }
                self.buf.push_str(text);
            }
        }
        true
    }

    /// [`Parser::lane_push`] for one character.
    #[inline(always)]
    fn lane_char<S: Sink + ?Sized>(&mut self, c: char, sink: &mut S) -> bool {
        match self.lane.kind() {
            Kind::Text => sink.text(c.encode_utf8(&mut [0; 4])),
            Kind::Reasoning => sink.reasoning(c.encode_utf8(&mut [0; 4])),
            Kind::LineStart => self.line_start_text(c.encode_utf8(&mut [0; 4]), sink),
            Kind::SpanOpen { ticks } => {
                self.span_open_text(ticks, c.encode_utf8(&mut [0; 4]), sink)
            }
            Kind::SpanClose => self.span_close_text(c.encode_utf8(&mut [0; 4]), sink),
            Kind::Collect { limit } => {
                return self
                    .dialect
                    .as_deref_mut()
                    .is_some_and(|engine| engine.collect_char(c, limit))
            }
            Kind::Json { limit } => {
                if self.buf.len() + c.len_utf8() > limit {
                    return false;
                }
                self.buf.push(c);
                self.json_pending += c.len_utf8();
            }
            Kind::TagSpace => {
                if self.held.len() + c.len_utf8() > MAX_TAG_SPACE {
                    return false;
                }
                self.held.push(c);
            }
            Kind::AfterValue { limit } => {
                if self.buf.len() + c.len_utf8() > limit {
                    return false;
                }
                self.buf.push(c);
            }
        }
        true
    }

    /// A newline in hermes's mid-line text: what `emit_text` and `set_lane` do with it (a line
    /// starts; something visible was emitted before it).
    #[inline(always)]
    fn lane_newline<S: Sink + ?Sized>(&mut self, sink: &mut S) {
        self.line = Some(0);
        self.lane.open(Kind::LineStart, HERMES_LINE_START);
        sink.text("\n");
    }

    /// A backtick in hermes's mid-line text or in an inline code span's content (the lane opens
    /// for it only there, see [`Lane::open_text_line`] and [`Parser::span_lane`]): what
    /// `text_byte` and `span_byte` do with it (mid-line, `emit_text` only sends it) and the lane
    /// `run_lane` then opens. False, with nothing changed, in another state.
    #[inline(never)]
    fn lane_tick<S: Sink + ?Sized>(&mut self, sink: &mut S) -> bool {
        match self.state {
            // A run starts; content after it opens a span.
            State::Text => {
                self.state = State::Ticks { run: 1 };
                self.lane.open(Kind::SpanOpen { ticks: 1 }, HERMES_SPAN);
            }
            // A run in a span starts; content after it ends the span if the run is as long as
            // the opening one.
            State::CodeSpan { ticks, run: 0 } => {
                self.state = State::CodeSpan { ticks, run: 1 };
                if ticks == 1 {
                    self.lane.open(Kind::SpanClose, HERMES_TEXT);
                } else {
                    self.lane.close();
                }
            }
            _ => return false,
        }
        sink.text("`");
        true
    }

    /// Text that begins a line with something visible (no blank, so `emit_text` would end the
    /// line start and note the visible text): the lane goes on in mid-line text.
    fn line_start_text<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) {
        self.line = None;
        self.seen_visible = true;
        self.lane.open_text_line();
        sink.text(text);
    }

    /// Content after an opening backtick run: what `step` does in [`State::Ticks`] and then in
    /// the code span it opens (mid-line, `emit_text` changes neither the line state nor
    /// `seen_visible`).
    fn span_open_text<S: Sink + ?Sized>(&mut self, ticks: usize, text: &str, sink: &mut S) {
        self.state = State::CodeSpan { ticks, run: 0 };
        self.span_lane();
        sink.text(text);
    }

    /// Text after a code span's closing run: what `step` does in [`State::CodeSpan`] and then
    /// `text` in mid-line text.
    fn span_close_text<S: Sink + ?Sized>(&mut self, text: &str, sink: &mut S) {
        self.state = State::Text;
        self.text_lane();
        sink.text(text);
    }

    /// The lane of [`State::Text`].
    pub(super) fn text_lane(&mut self) {
        if self.line.is_none() && self.seen_visible {
            self.lane.open_text_line()
        } else {
            self.lane.open(Kind::LineStart, HERMES_LINE_START)
        }
    }

    /// The lane of [`State::CodeSpan`] with no backtick run: only mid-line (as it always is
    /// there) the span's content passes without moving the line state.
    pub(super) fn span_lane(&mut self) {
        if self.line.is_none() && self.seen_visible {
            self.lane.open(Kind::Text, HERMES_SPAN);
            self.lane.gate.tick = u16::from(b'`');
        } else {
            self.lane.close()
        }
    }

    /// The lane of [`State::Ticks`] and of [`State::CodeSpan`] in a backtick run: mid-line, plain
    /// content opens the span after an opening run, and ends it after a closing run as long as
    /// the opening one.
    pub(super) fn run_lane(&mut self) {
        let mid = self.line.is_none() && self.seen_visible;
        match self.state {
            State::Ticks { run } if mid => {
                self.lane.open(Kind::SpanOpen { ticks: run }, HERMES_SPAN)
            }
            State::CodeSpan { ticks, run } if mid && run == ticks => {
                self.lane.open(Kind::SpanClose, HERMES_TEXT)
            }
            _ => self.lane.close(),
        }
    }

    /// The lane of [`State::TextTag`] holding a lone `<`: the next byte of the first open marker
    /// is held too, and plain text releases the `<` (emitted, it ends any line start).
    /// `marker_lane` with `held` = `<`, without its search: `<tool_call>` is the first open marker
    /// with or without `<think>`, and no marker is two bytes long.
    /// The gate is set up whole: a `<` in prose comes every few dozen words.
    pub(super) fn lt_lane(&mut self) {
        // `expect_along(OPEN_CALL, 1, Some((Kind::Text, HERMES_AFTER_LT, HERMES_TEXT)))`, without
        // rewriting `suspended` (see `Lane::suspend`; the lane is not suspended here).
        self.lane.cursor = (OPEN_CALL, 1);
        self.lane.kind = Kind::Text;
        self.lane.gate = LT_GATE;
    }

    /// Opens the lane for the current state, or closes it. Called after every change of state the
    /// lane does not make itself.
    pub(super) fn set_lane(&mut self) {
        if let Some(engine) = self.dialect.as_deref() {
            return engine.set_lane(self.utf8.pending(), &mut self.lane);
        }
        if self.utf8.pending() {
            return self.lane.close();
        }
        match &self.state {
            // Mid-line (`line` is None) only a newline changes the line state, and once something
            // visible was emitted `seen_visible` stays: plain bytes change neither.
            State::Text => self.text_lane(),
            State::CodeSpan { run: 0, .. } => self.span_lane(),
            State::Ticks { .. } | State::CodeSpan { .. } => self.run_lane(),
            State::TextTag if self.held == "<" => self.lt_lane(),
            State::TextTag => self.marker_lane(None),
            State::TagSpace => self.lane.open(Kind::TagSpace, HERMES_TAG_SPACE),
            State::Block(block) if block.in_value() => {
                let limit = self.config.max_block_bytes;
                self.lane.open(Kind::Json { limit }, HERMES_JSON)
            }
            State::Block(_) => self.block_lane(),
            _ => self.lane.close(),
        }
    }
}

#[cfg(test)]
mod tests;
