//! A dialect's lone held byte kept in the lane: the first byte of a marker, held alone.
//!
//! In prose the first byte of a marker comes up every few dozen bytes (`<`, `[`, phi4-mini's `f`
//! of `functools[`), and almost always the next byte shows it was text. A byte at a time, holding
//! it in the engine and setting the lane up from the engine's state, then taking it back out, was
//! most of what such a byte cost. The lane keeps it instead, with what the engine would have set
//! up (the marker, the byte that continues it, the bytes that release it, all known per byte set
//! and first byte when the parser is built), and hands it to the engine ([`Parser::settle_lone`])
//! before anything else reads the engine's held bytes: the general path, a wanted byte, the end
//! of the stream.

use super::{bit, next_char, Gate, Kind, Lane, Parser, Sink, CLOSED, NO_BYTE};

/// What holding a byte alone sets up, for one byte set and first byte.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hold {
    /// The byte set of the state that holds it, and the byte.
    pub set: usize,
    pub byte: u8,
    /// The first marker of the set that the byte begins and that is longer than it.
    pub marker: &'static [u8],
    /// The lane's set of bytes that release it, if any.
    pub release: Option<usize>,
}

/// A [`Hold`] ready to use: the gate it opens (see [`Lane::hold_lone`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Ready {
    set: usize,
    byte: u8,
    marker: &'static [u8],
    gate: Gate,
}

impl Lane {
    /// The holds [`Lane::hold_lone`] knows, with the gate each sets up (what `expect_along` sets
    /// up for the marker's second byte), by first byte.
    pub(crate) fn set_lone_holds(&mut self, mut holds: Vec<Hold>) {
        holds.sort_by_key(|h| h.byte);
        self.lone_holds = holds
            .iter()
            .map(|h| {
                let mut gate = Gate {
                    release: h.release.map_or(0, bit),
                    reopen: h.release.map_or(0, |_| bit(h.set)),
                    ..CLOSED
                };
                gate.set_want(next_char(h.marker, 1));
                Ready {
                    set: h.set,
                    byte: h.byte,
                    marker: h.marker,
                    gate,
                }
            })
            .collect();
        self.lone_first = [u16::MAX; 256];
        for (i, h) in self.lone_holds.iter().enumerate().rev() {
            self.lone_first[usize::from(h.byte)] = u16::try_from(i).unwrap_or(u16::MAX);
        }
    }

    /// Holds `b` alone in the lane, if the current set has a hold for it, and sets the lane up as
    /// the engine's `set_lane` would with `b` held: the marker's next byte is wanted, and the
    /// release set releases it (the kind stays).
    #[inline(always)]
    pub(crate) fn hold_lone(&mut self, b: u8) -> bool {
        let set = self.gate.mask.trailing_zeros() as usize;
        let first = usize::from(self.lone_first[usize::from(b)]);
        let Some(hold) = self
            .lone_holds
            .get(first..)
            .and_then(|rest| {
                rest.iter()
                    .take_while(|h| h.byte == b)
                    .find(|h| h.set == set)
            })
            .copied()
        else {
            return false;
        };
        self.cursor = (hold.marker, 1);
        // (The lane is open, so not suspended: `suspended` is not read until a suspend or a
        // close writes it, see `Lane::suspend`.)
        self.gate = hold.gate;
        self.lone = (u16::from(b), hold.marker);
        true
    }

    /// Whether a byte is held alone in visible text ([`Parser::release_lone_text`] releases it).
    #[inline(always)]
    pub(crate) fn holds_lone_text(&self) -> bool {
        self.lone.0 != NO_BYTE && self.kind == Kind::Text
    }

    /// The byte held alone and its marker, taken out of the lane.
    pub(crate) fn take_lone(&mut self) -> Option<(u8, &'static [u8])> {
        let (b, marker) = std::mem::replace(&mut self.lone, (NO_BYTE, &[]));
        u8::try_from(b).ok().map(|b| (b, marker))
    }
}

impl Parser {
    /// Hands a byte the lane holds alone to the engine, which then holds it as its one-byte step
    /// would have.
    #[inline(always)]
    pub(in crate::parser) fn settle_lone(&mut self) {
        if self.lane.lone.0 != NO_BYTE {
            self.settle_lone_now();
        }
    }

    #[inline(never)]
    fn settle_lone_now(&mut self) {
        if let (Some((b, marker)), Some(engine)) =
            (self.lane.take_lone(), self.dialect.as_deref_mut())
        {
            engine.hold_lone(b, marker);
        }
    }

    /// The byte held alone in visible text and `b`, which shows it was content (see
    /// [`Lane::releases`]), go out as text: `release_lone` for text, inline. In prose the first
    /// byte of a marker comes up every few dozen bytes (phi4-mini's `f`), and the call and the
    /// kind dispatch were most of what its release cost.
    #[inline(always)]
    pub(in crate::parser) fn release_lone_text<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) {
        let held = self.lane.lone.0;
        self.lane.lone = (NO_BYTE, &[]);
        self.lane.gate = Gate {
            mask: self.lane.gate.reopen,
            text: self.lane.gate.reopen,
            ..CLOSED
        };
        // The held byte is ASCII: the lane holds only bytes that take no other path.
        sink.text(char::from(held as u8 & 0x7F).encode_utf8(&mut [0; 4]));
        sink.text(char::from(b).encode_utf8(&mut [0; 4]));
    }

    /// The byte held alone and `c`, which shows it was content, go out as the state's content, as
    /// `lane_release` sends held bytes; false, with the byte handed to the engine, when they would
    /// take a section past its limit.
    pub(in crate::parser) fn release_lone<S: Sink + ?Sized>(
        &mut self,
        (held, marker): (u8, &'static [u8]),
        c: &str,
        sink: &mut S,
    ) -> bool {
        let kind = self.lane.kind();
        let room = match (kind, self.dialect.as_deref()) {
            (Kind::Collect { limit }, Some(engine)) => engine.has_room(1 + c.len(), limit),
            _ => true,
        };
        if !room {
            if let Some(engine) = self.dialect.as_deref_mut() {
                engine.hold_lone(held, marker);
            }
            return false;
        }
        self.lane.reopen();
        if kind == Kind::Text {
            sink.text(char::from(held).encode_utf8(&mut [0; 4]));
            sink.text(c);
            return true;
        }
        // Both succeed: the room was checked, and reasoning has no limit.
        if self.lane_char(char::from(held), sink) {
            self.lane_push(c, sink);
        }
        true
    }
}
