//! The engine's side of the parser's fast lane (see `parser::lane`): its byte sets, the lane of
//! each state, and the held-marker shortcuts the lane takes.

use super::{header_close, no_markers, Engine, State, MAX_HEADER, REPLY_SET};
use crate::parser::lane::{Kind, Lane};

/// The lane's byte sets: text's openers, the header's end, none (a reply-start section), then one
/// per closer set.
const LANE_TEXT: usize = 0;
const LANE_HEADER: usize = 1;
const LANE_REPLY: usize = 2;
const LANE_CLOSERS: usize = 3;

impl Engine {
    /// The parser's lane for this dialect (see `parser::lane`): one set of stopping bytes per
    /// marker set (the first bytes of its markers), then one per marker set and first byte `h` of
    /// its markers: the bytes after a held `h` that show it was content.
    pub(crate) fn lane(&mut self) -> Lane {
        let sets = LANE_CLOSERS + self.spec.closers.len();
        let markers = |set: usize| match set {
            LANE_TEXT => &self.spec.openers,
            LANE_HEADER => header_close(),
            LANE_REPLY => no_markers(),
            n => &self.spec.closers[n - LANE_CLOSERS].markers,
        };
        let mut release = Vec::new();
        for set in 0..sets {
            for &h in markers(set).first_bytes() {
                if !markers(set).has(&[h]) {
                    release.push((set, h));
                }
            }
        }
        let lane = Lane::new(sets + release.len(), |k, b| {
            let Some(&(set, h)) = k.checked_sub(sets).and_then(|r| release.get(r)) else {
                return markers(k).may_start_with(b);
            };
            markers(set).may_start_with(b) || markers(set).starts_with_pair(h, b)
        });
        self.release_sets = release;
        self.release_base = sets;
        lane
    }

    /// The lane of the current state when nothing is held: where its content goes and its set.
    fn open_lane(&self) -> Option<(Kind, usize)> {
        match self.state {
            // A start byte at the start of the reply opens a section. (Elsewhere `at_start` is
            // not read, so the lane need not keep it.)
            State::Text if self.at_start && self.spec.start_byte.is_some() => None,
            State::Text => Some((Kind::Text, LANE_TEXT)),
            State::Header => Some((Kind::Collect { limit: MAX_HEADER }, LANE_HEADER)),
            State::Section { set } => {
                let limit = self.max_block;
                let set = if set == REPLY_SET {
                    LANE_REPLY
                } else {
                    LANE_CLOSERS + set
                };
                Some((Kind::Collect { limit }, set))
            }
            State::Reasoning(set) => Some((Kind::Reasoning, LANE_CLOSERS + set)),
        }
    }

    /// Opens the parser's lane for the current state, or closes it while bytes are held (a
    /// partial marker or, with `utf8_pending`, a partial character).
    pub(crate) fn set_lane(&self, utf8_pending: bool, lane: &mut Lane) {
        if utf8_pending {
            return lane.close();
        }
        let open = self.open_lane();
        if self.held.is_empty() {
            return match open {
                Some((kind, set)) => lane.open(kind, set),
                None => lane.close(),
            };
        }
        // One held byte that the next byte shows to be content goes out with it, as
        // `resolve_held` and the state's scan would send them.
        let release = match (self.held.as_bytes(), open) {
            (&[h], Some((kind, set))) => self
                .release_sets
                .iter()
                .position(|&r| r == (set, h))
                .map(|k| (kind, self.release_base + k, set)),
            _ => None,
        };
        lane.expect(self.held_next(), release);
    }

    /// The held byte(s), taken for the lane to release them with the next byte as `kind`
    /// content; None, with nothing changed, when that would take a section past its limit.
    pub(crate) fn take_held(&mut self, kind: Kind) -> Option<String> {
        if let Kind::Collect { limit } = kind {
            if self.buf.len() + self.held.len() + 1 > limit {
                return None;
            }
        }
        self.held_marker = None;
        Some(std::mem::take(&mut self.held))
    }

    /// The emptied allocation of [`Engine::take_held`] back.
    pub(crate) fn give_held(&mut self, held: String) {
        if self.held.is_empty() {
            self.held = held;
        }
    }

    /// [`Engine::collect`] for one character (no copy call for one byte).
    #[inline]
    pub(crate) fn collect_char(&mut self, c: char, limit: usize) -> bool {
        if self.buf.len() + c.len_utf8() > limit {
            return false;
        }
        self.buf.push(c);
        true
    }

    /// Content the parser's lane took in a section or header; false (and nothing added) when it
    /// would take the buffer past `limit`.
    #[inline]
    pub(crate) fn collect(&mut self, s: &str, limit: usize) -> bool {
        if self.buf.len() + s.len() > limit {
            return false;
        }
        self.buf.push_str(s);
        true
    }

    /// The common case of a marker arriving in pieces: `s` continues the held bytes and the
    /// marker is still incomplete, so `s` is held too, with no scan (the result the scan would
    /// give). Returns false, having changed nothing, in every other case.
    #[inline]
    pub(crate) fn extend_held(&mut self, s: &str) -> bool {
        let Some(marker) = self.held_marker else {
            return false;
        };
        let at = self.held.len();
        let extends = marker.len() > at + s.len()
            && marker.get(at..at + s.len()) == Some(s.as_bytes())
            && !self.held.is_empty();
        if extends {
            self.held.push_str(s);
        }
        extends
    }

    /// [`Engine::extend_held`] for the byte [`Engine::held_next`] gave; returns the next one.
    #[inline]
    pub(crate) fn extend_held_byte(&mut self, b: u8) -> Option<u8> {
        self.held.push(char::from(b));
        self.held_next()
    }

    /// The byte that [`Engine::extend_held`] would take alone (ASCII, so a byte is a character).
    fn held_next(&self) -> Option<u8> {
        let marker = self.held_marker?;
        let at = self.held.len();
        marker
            .get(at)
            .copied()
            .filter(|b| b.is_ascii() && marker.len() > at + 1)
    }

    /// A marker of the current state's set that the held bytes are a proper prefix of (see
    /// [`Engine::extend_held`]); None when nothing is held.
    pub(super) fn find_held_marker(&self) -> Option<&'static [u8]> {
        if self.held.is_empty() {
            return None;
        }
        let held = self.held.as_bytes();
        self.markers().prefixed_by(held)
    }
}
