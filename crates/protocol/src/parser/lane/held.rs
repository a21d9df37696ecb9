//! The lane's paths for held bytes: the next byte of a held marker (wanted, or taken by the
//! markers' steps on a miss) and the byte that shows the held bytes were content.

use super::super::same_bytes;
use super::{Kind, Parser, Sink, State};

impl Parser {
    /// The one held byte was plain content, as the character `c` shows (see [`Lane::expect`]):
    /// both go out as the state's content, as its own handling would send them (the held byte
    /// first, then `c`). False, with nothing changed, when a section would outgrow its limit.
    #[inline(never)]
    pub(super) fn lane_release<S: Sink + ?Sized>(&mut self, c: char, sink: &mut S) -> bool {
        let mut tmp = [0; 4];
        let c = c.encode_utf8(&mut tmp);
        if let Some(lone) = self.lane.take_lone() {
            return self.release_lone(lone, c, sink);
        }
        let kind = self.lane.kind();
        let mut held = match self.dialect.as_deref_mut() {
            Some(engine) => match engine.take_held(kind, c.len()) {
                Some(held) => {
                    self.lane.reopen();
                    held
                }
                None => return false,
            },
            None => {
                self.release_lt(c, sink);
                return true;
            }
        };
        // Both succeed: `take_held` checked a section's limit for the held byte and `c`, and text
        // and reasoning have none.
        if self.lane_push(&held, sink) {
            self.lane_push(c, sink);
        }
        held.clear();
        match self.dialect.as_deref_mut() {
            Some(engine) => engine.give_held(held),
            None => self.held = held,
        }
        true
    }

    /// [`Parser::lane_release`] for an ASCII byte. The byte comes in as a `u8` rather than as a
    /// `char` for the hot loop's sake: with a `char` made from the byte in `lane_byte`, the
    /// compiler widened every pushed byte before the ASCII check (one more instruction a byte).
    /// Hermes (which holds no byte in the lane itself) goes straight to [`Parser::release_lt`]:
    /// in prose a `<` followed by plain text comes up every few dozen words.
    #[inline(never)]
    pub(super) fn lane_release_byte<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        if self.dialect.is_none() {
            self.release_lt(char::from(b).encode_utf8(&mut [0; 4]), sink);
            return true;
        }
        self.lane_release(char::from(b), sink)
    }

    /// Hermes's release: what `release_held` and the text state do with a held `<` (the only
    /// byte hermes's lane releases, see [`Parser::lt_lane`]) and the plain text `c` after it:
    /// both go out, and mid-line text follows.
    #[inline(always)]
    fn release_lt<S: Sink + ?Sized>(&mut self, c: &str, sink: &mut S) {
        if self.function.is_some() {
            self.function = None;
        }
        if !matches!(self.state, State::Text) {
            self.state = State::Text;
        }
        self.line = None;
        self.seen_visible = true;
        self.lane.open_text_line();
        sink.text(&self.held);
        sink.text(c);
        self.held.clear();
    }

    /// An ASCII byte after a dialect's held bytes that the lane neither wanted nor released (see
    /// [`Engine::held_miss`]), then the lane set up as after the general path; false when the
    /// general path must take it (the lone held byte, if any, is then the engine's).
    ///
    /// [`Engine::held_miss`]: crate::parser::dialect::engine::Engine::held_miss
    #[inline(never)]
    pub(super) fn lane_miss<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        !self.utf8.pending() && self.miss(char::from(b).encode_utf8(&mut [0; 4]), sink)
    }

    /// [`Parser::lane_miss`] for a complete character `c` (a character of more than one byte
    /// shows the held bytes were content, as DeepSeek's `▁` after a held `<｜tool▁call` in a
    /// section does, or goes to the general path).
    #[inline(never)]
    pub(super) fn lane_miss_char<S: Sink + ?Sized>(&mut self, c: &str, sink: &mut S) -> bool {
        self.miss(c, sink)
    }

    #[inline(always)]
    fn miss<S: Sink + ?Sized>(&mut self, c: &str, sink: &mut S) -> bool {
        self.settle_lone();
        let taken = self
            .dialect
            .as_deref_mut()
            .is_some_and(|engine| engine.held_miss(c, sink));
        if taken {
            self.set_lane();
        }
        taken
    }

    /// A byte that starts a marker in the current state (see [`Lane::holds`]) is held, and the
    /// lane set up for it, as the state's one-byte step and `set_lane` would; false, with nothing
    /// changed, when the general path must take it.
    ///
    /// Hermes's `<` in text first, on a path that calls nothing (so it saves and restores no
    /// registers): in prose one comes every few dozen words.
    #[inline(never)]
    pub(super) fn lane_hold(&mut self, b: u8) -> bool {
        if self.dialect.is_none() && matches!(self.state, State::Text) {
            // `text_byte` for a `<` (hermes holds nothing else alone; `b` is ASCII).
            self.held.clear();
            self.held.push(char::from(b & 0x7F));
            self.state = State::TextTag;
            self.lt_lane();
            return true;
        }
        self.lane_hold_other(b)
    }

    /// [`Parser::lane_hold`] in the other states.
    #[inline(never)]
    fn lane_hold_other(&mut self, b: u8) -> bool {
        match self.dialect.as_deref_mut() {
            Some(_) => self.lane.hold_lone(b),
            // `text_byte` for a `<` (hermes holds nothing else alone); the lane also opens on an
            // inline code span's end, where the state is not text yet.
            None if matches!(self.state, State::Text) => {
                self.held.clear();
                self.held.push(char::from(b));
                self.state = State::TextTag;
                self.lt_lane();
                true
            }
            // `block_byte` for a `<` after a block's value (`byte_step` then sets the lane up).
            None if matches!(self.state, State::Block(_)) => {
                let taken = self.block_byte(b);
                if taken {
                    self.block_lane();
                }
                taken
            }
            None => false,
        }
    }

    /// Adds the byte the lane wanted to the held marker, or to a block's tag (see
    /// [`Lane::expect`]); false, with nothing changed, when that would take the block past its
    /// limit.
    #[inline]
    pub(super) fn extend_held(&mut self, b: u8) -> bool {
        self.settle_lone();
        match self.dialect.as_deref_mut() {
            Some(engine) => {
                let want = engine.extend_held_byte(b);
                self.lane.expect(want, None);
            }
            None => {
                if let State::Block(_) = self.state {
                    if self.buf.len() >= self.config.max_block_bytes {
                        return false;
                    }
                    self.buf.push(char::from(b));
                } else {
                    self.held.push(char::from(b));
                }
                // The marker stays the first one `held` begins (see `held_marker`).
                self.lane.advance();
            }
        }
        true
    }

    /// [`Parser::extend_held`] for hermes: a held open marker on a path that calls nothing (so it
    /// saves and restores no registers), as every call's tag comes a byte at a time; a block's
    /// tag goes to `extend_held`. `b` is ASCII (only an ASCII byte is wanted).
    #[inline(never)]
    pub(super) fn extend_held_hermes(&mut self, b: u8) -> bool {
        if !matches!(self.state, State::TextTag) {
            return self.extend_held(b);
        }
        self.held.push(char::from(b & 0x7F));
        // The marker stays the first one `held` begins (see `held_marker`).
        self.lane.advance();
        true
    }

    /// [`Parser::extend_held`] for a character of more than one byte, which only a dialect's
    /// marker wants (hermes's markers and tags are ASCII).
    #[inline(never)]
    pub(super) fn extend_held_char(&mut self, c: char) -> bool {
        self.settle_lone();
        let Some(engine) = self.dialect.as_deref_mut() else {
            return false;
        };
        let want = engine.extend_held_char(c);
        self.lane.expect(want, None);
        true
    }

    /// In [`State::TextTag`], the first open marker that `held` and its next byte leave a proper
    /// prefix of (and no marker complete), so that the state's step would only hold that byte
    /// (`Match::Partial`).
    pub(super) fn held_marker(&self) -> Option<&'static [u8]> {
        if !matches!(self.state, State::TextTag) {
            return None;
        }
        let held = self.held.as_bytes();
        let n = held.len();
        let markers = self.open_markers();
        let marker = markers
            .iter()
            .copied()
            .find(|m| m.len() > n + 1 && same_bytes(m, held))?;
        let completes = markers
            .iter()
            .any(|m| m.len() == n + 1 && same_bytes(m, held) && m[n] == marker[n]);
        (!completes).then_some(marker)
    }

    /// The lane of [`State::TextTag`]: the held marker's next byte is held too, and with
    /// `release` a plain byte releases the held bytes (see [`Lane::expect`]).
    pub(super) fn marker_lane(&mut self, release: Option<(Kind, usize, usize)>) {
        match self.held_marker() {
            Some(marker) => self.lane.expect_along(marker, self.held.len(), release),
            None => self.lane.expect(None, release),
        }
    }
}
