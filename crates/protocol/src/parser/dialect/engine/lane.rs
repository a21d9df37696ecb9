//! The engine's side of the parser's fast lane (see `parser::lane`): its byte sets, the lane of
//! each state, and the held-marker shortcuts the lane takes.

use super::super::scan::Step;
use super::track::{structural, LaneClass};
use super::{header_close, no_markers, Engine, State, MAX_HEADER, REPLY_SET};
use crate::parser::lane::{Hold, Kind, Lane};
use crate::parser::Sink;

/// The lane's byte sets: text's openers, the header's end, none (a reply-start section), a
/// tracked section's string content and its other content (see `track`), then one per closer set.
const LANE_TEXT: usize = 0;
const LANE_HEADER: usize = 1;
const LANE_REPLY: usize = 2;
const LANE_TRACK_STRING: usize = 3;
const LANE_TRACK_STRUCTURE: usize = 4;
const LANE_CLOSERS: usize = 5;

impl Engine {
    /// The parser's lane for this dialect (see `parser::lane`): one set of stopping bytes per
    /// marker set (the first bytes of its markers), then one per marker set and first byte `h` of
    /// its markers: the bytes after a held `h` that show it was content.
    pub(crate) fn lane(&mut self) -> Lane {
        let sets = LANE_CLOSERS + self.spec.closers.len();
        // The tracked sets hold and release nothing alone: every byte that may start a closer
        // goes to the general path, which reads it with the tracker.
        let markers = |set: usize| match set {
            LANE_TEXT => &self.spec.openers,
            LANE_HEADER => header_close(),
            LANE_REPLY | LANE_TRACK_STRING | LANE_TRACK_STRUCTURE => no_markers(),
            n => &self.spec.closers[n - LANE_CLOSERS].markers,
        };
        // A tracked section stops at its closers' first bytes (any section's, `<think>`'s set 0
        // aside: more stops than needed only send bytes to the general path) and at the bytes its
        // tracker reads.
        let closer_start = |b: u8| {
            self.spec.track
                && self.spec.closers[1..]
                    .iter()
                    .any(|c| c.markers.may_start_with(b))
        };
        let mut release = Vec::new();
        for set in 0..sets {
            for &h in markers(set).first_bytes() {
                if !markers(set).has(&[h]) {
                    release.push((set, h));
                }
            }
        }
        let mut lane = Lane::new(sets + release.len(), |k, b| {
            let Some(&(set, h)) = k.checked_sub(sets).and_then(|r| release.get(r)) else {
                return match k {
                    LANE_TRACK_STRING => closer_start(b) || matches!(b, b'"' | b'\\'),
                    LANE_TRACK_STRUCTURE => closer_start(b) || structural(b),
                    _ => markers(k).may_start_with(b),
                };
            };
            markers(set).may_start_with(b) || markers(set).starts_with_pair(h, b)
        });
        // The bytes `byte_step` holds alone when nothing is held: the first byte of a marker
        // longer than one byte.
        lane.set_holds(sets, |k, b| {
            markers(k).list().iter().any(|m| m.len() > 1 && m[0] == b)
        });
        // What `byte_step` and `set_lane` set up for each byte held alone.
        let mut holds = Vec::new();
        for set in 0..sets {
            for &byte in markers(set).first_bytes() {
                let marker = markers(set)
                    .list()
                    .iter()
                    .copied()
                    .find(|m| m.len() > 1 && m[0] == byte);
                if let Some(marker) = marker {
                    let release = release.iter().position(|&r| r == (set, byte));
                    holds.push(Hold {
                        set,
                        byte,
                        marker,
                        release: release.map(|k| sets + k),
                    });
                }
            }
        }
        lane.set_lone_holds(holds);
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
            State::Section { .. } if self.tracking() => {
                let limit = self.max_block;
                match self.track.lane_class() {
                    LaneClass::Closed => None,
                    LaneClass::String => Some((Kind::Collect { limit }, LANE_TRACK_STRING)),
                    LaneClass::Structure => Some((Kind::Collect { limit }, LANE_TRACK_STRUCTURE)),
                }
            }
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

    /// The held byte(s), taken for the lane to release them with the next character (`next`
    /// bytes long) as `kind` content; None, with nothing changed, when that would take a section
    /// past its limit.
    pub(crate) fn take_held(&mut self, kind: Kind, next: usize) -> Option<String> {
        if let Kind::Collect { limit } = kind {
            if self.buf.len() + self.held.len() + next > limit {
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

    /// One ASCII byte pushed alone, for the cases the lane leaves to the general path that the
    /// marker scan decides from the held bytes and `b` alone: `b` starts a marker (held), `b`
    /// continues the held bytes towards a marker other than the one the lane wanted (held), or
    /// `b` shows that all the held bytes are content (they and `b` go out as the state's content,
    /// as `resolve_held` sends them). False, with nothing changed, in every other case.
    pub(crate) fn byte_step<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        if self.state == State::Text && self.at_start && self.spec.start_byte.is_some() {
            return false;
        }
        if let State::Section { set: REPLY_SET } = self.state {
            return false;
        }
        let markers = self.markers();
        let held = self.held.as_bytes();
        let n = held.len();
        // The first marker that the held bytes and `b` are a proper prefix of: the scan finds it
        // open at the held bytes' start and holds them (`Found::Undecided`), as `push` ends with
        // `find_held_marker`.
        let longer = markers
            .list()
            .iter()
            .copied()
            .find(|m| m.len() > n + 1 && m[n] == b && m.starts_with(held));
        if let Some(marker) = longer {
            self.held.push(char::from(b));
            self.held_marker = Some(marker);
            return true;
        }
        if n == 0 && self.tracking() && !markers.has(&[b]) {
            // A byte of a tracked section's structure (the lane takes the rest): no marker starts
            // or is complete at it, so the scan gives it to the tracker as content.
            let byte = super::super::super::step::ascii(&b);
            if self.content(byte, sink) == 0 {
                // `b` showed that the section had ended before it: it is read as text.
                self.push(byte, sink);
            } else if self.overflowed() {
                self.overflow(sink);
            }
            return true;
        }
        if n == 0 || self.tracking() {
            // (A tracked section's held bytes go out through the general path, which reads them
            // with its tracker.)
            return false;
        }
        // No marker can start after the held bytes' first one, and none is complete at it (the
        // held bytes and `b` begin with none): the scan finds nothing, and they are content.
        let starts_later = held[1..]
            .iter()
            .chain([&b])
            .any(|&x| markers.may_start_with(x));
        let complete = markers.list().iter().any(|m| match m.len() {
            k if k <= n => held.starts_with(m),
            k if k == n + 1 => m[n] == b && m.starts_with(held),
            _ => false,
        });
        if starts_later || complete || self.content_overflows(n + 1) {
            return false;
        }
        let held = std::mem::take(&mut self.held);
        self.content(&held, sink);
        self.content(super::super::super::step::ascii(&b), sink);
        self.held = held;
        self.held.clear();
        self.held_marker = None;
        true
    }

    /// One character `c` after held bytes that the lane did not want: what [`Engine::byte_step`]
    /// (for an ASCII byte) and [`Engine::push`] do with it when that was decided with the markers
    /// (see `scan::Step`), without their search: `b` continues the held bytes towards another marker (held), or shows that they are
    /// content (they and `b` go out as the state's content). False, with nothing changed, in
    /// every other case. In a stream of markers most of a marker's bytes are wanted; this takes
    /// the byte where two markers part (kimi-k2's `<|tool_call_` and `<|tool_calls_`) and the
    /// byte that shows a marker's start was text (phi4-mini's `funct` of `function`).
    #[inline]
    pub(crate) fn held_miss<S: Sink + ?Sized>(&mut self, c: &str, sink: &mut S) -> bool {
        let (Some(marker), Some(&first)) = (self.held_marker, c.as_bytes().first()) else {
            return false;
        };
        if self.state == State::Text && self.at_start && self.spec.start_byte.is_some() {
            return false;
        }
        let n = self.held.len();
        let Some(step) = self.step_of_held(marker, n) else {
            return false;
        };
        let markers = self.markers();
        if let Some((fork, to)) = step.fork {
            if c.len() == 1 && fork == first {
                let to = markers.marker(to);
                self.held.push_str(c);
                self.held_marker = Some(to);
                return true;
            }
        }
        let content = step.releases
            // (`c` is not the marker's next character: a character with the same first byte
            // goes to the general path.)
            && marker.get(n) != Some(&first)
            && !markers.may_start_with(first)
            && !self.tracking()
            && !self.content_overflows(n + c.len());
        if !content {
            return false;
        }
        // `byte_step`'s release of the held bytes (the general path's, too, for a character:
        // the held bytes, then the character, as the state's content).
        let held = std::mem::take(&mut self.held);
        self.content(&held, sink);
        self.content(c, sink);
        self.held = held;
        self.held.clear();
        self.held_marker = None;
        true
    }

    /// The [`Step`] of the first `n` bytes of `marker`, of the current state's markers.
    #[inline]
    fn step_of_held(&mut self, marker: &[u8], n: usize) -> Option<Step> {
        match self.state {
            State::Text => self.spec.openers.held_step(marker, n),
            State::Section { set: REPLY_SET } => None,
            State::Reasoning(set) | State::Section { set } => {
                self.spec.closers.get_mut(set)?.markers.held_step(marker, n)
            }
            State::Header => header_close().made_step(marker, n),
        }
    }

    /// A byte the lane held alone (see `parser::lane::lone`), now held here as
    /// [`Engine::byte_step`] holds a byte that starts a marker.
    pub(crate) fn hold_lone(&mut self, b: u8, marker: &'static [u8]) {
        self.held.push(char::from(b));
        self.held_marker = Some(marker);
    }

    /// Whether the current state is a section its structure may end (see `track`).
    fn tracking(&self) -> bool {
        matches!(self.state, State::Section { set } if set != REPLY_SET && self.spec.track)
    }

    /// Whether `more` bytes of content fit in the section or header within `limit`.
    pub(crate) fn has_room(&self, more: usize, limit: usize) -> bool {
        self.buf.len() + more <= limit
    }

    /// Whether `more` bytes of content would take a section or header past its limit.
    fn content_overflows(&self, more: usize) -> bool {
        let limit = match self.state {
            State::Section { .. } => self.max_block,
            State::Header => MAX_HEADER,
            State::Text | State::Reasoning(_) => return false,
        };
        self.buf.len() + more > limit
    }

    /// [`Engine::extend_held`] for the byte [`Engine::held_next`] gave; returns the next
    /// character wanted.
    #[inline]
    pub(crate) fn extend_held_byte(&mut self, b: u8) -> Option<char> {
        self.held.push(char::from(b));
        self.held_next()
    }

    /// [`Engine::extend_held_byte`] for a character of more than one byte.
    pub(crate) fn extend_held_char(&mut self, c: char) -> Option<char> {
        self.held.push(c);
        self.held_next()
    }

    /// The character that [`Engine::extend_held`] would take alone: the held marker's next one,
    /// when the marker goes on after it.
    #[inline]
    fn held_next(&self) -> Option<char> {
        crate::parser::lane::next_char(self.held_marker?, self.held.len())
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

#[cfg(test)]
mod tests {
    use crate::parser::{parse, Dialect, ModelResponse, Parser, ParserConfig};

    /// The lane's miss path (`held_miss`): held bytes that part from the wanted marker towards
    /// another (kimi-k2's `<|` after a `<` held for `<think>`, `<|tool_call_` in a section), and
    /// held bytes that a byte or a character shows to be content (in text, reasoning and
    /// sections), a byte at a time as the whole text, wherever a section's limit falls.
    #[test]
    fn missed_bytes_a_byte_at_a_time_at_every_limit() {
        let texts = [
            (
                Dialect::KimiK2,
                true,
                "<|x <thinx <think>a </thinx <|tool_calls_x</think><|tool_calls_x <|tool_callz                  <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0\
                 <|tool_call_argument_begin|>{\"a\": \"<|tool_call_b <|tool_call_ <|tool_calls_x\"}\
                 <|tool_call_end|><|tool_calls_section_end|> <|tool_call_section_x <|tool_calls_",
            ),
            (
                Dialect::Phi4Mini,
                false,
                "function functi functoolz funct\u{e9} functools[{\"name\": \"f\", \"arguments\": {}}] funct",
            ),
            (
                Dialect::DeepseekV3,
                true,
                "<think>a <｜tool▁calls▁x </thinké</think> <｜tool▁calls▁x <｜tool▁callsé <｜tool▁calls▁é \
                 <｜tool▁calls▁begin｜>\
                 <｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"a\": \"<｜tool▁s <｜tool▁calls▁e <｜tool▁callé\"}\
                 <｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            ),
        ];
        for (dialect, think, text) in texts {
            let config = |max_block_bytes| {
                let mut cfg = ParserConfig::with_tools(["f", "g"]);
                cfg.dialect = dialect;
                cfg.think = think;
                cfg.max_block_bytes = max_block_bytes;
                cfg
            };
            assert!(
                !parse(text, &config(1 << 20)).calls.is_empty(),
                "{dialect}: no call"
            );
            bytewise_is_whole_at_every_limit(text, config);
        }
    }

    /// The one-byte steps hold, switch and release marker starts in text and in sections; a byte
    /// at a time gives what the whole text gives, wherever a section's limit falls.
    #[test]
    fn held_bytes_a_byte_at_a_time_at_every_limit() {
        let texts = [
            (
                Dialect::KimiK2,
                "a <b <|x <|tool_calls_section_begin|><|tool_call_begin|>functions.f:0\
                 <|tool_call_argument_begin|>{\"a\": \"<|to <|tool_call_x\"}<|tool_call_end|>\
                 <|tool_calls_section_end|> <|tool_call_s end",
            ),
            (
                Dialect::Phi4Mini,
                "fun café funct ffunctools functools[{\"name\": \"f\", \"arguments\": {\"a\": \"fé\"}}] ff",
            ),
            (
                Dialect::DeepseekV3,
                "a <é <｜t <｜tool▁x <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>\
                 {\"a\": \"<｜tool▁c <é\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜> <｜tool▁call end",
            ),
            (
                Dialect::Mistral,
                "[T [TOOL [TOOL_CALLS]f[ARGS]{\"a\": \"[TO x\"} [TOOL_CALLS]g[ARGS]{}",
            ),
        ];
        for (dialect, text) in texts {
            let config = |max_block_bytes| {
                let mut cfg = ParserConfig::with_tools(["f", "g"]);
                cfg.dialect = dialect;
                cfg.max_block_bytes = max_block_bytes;
                cfg
            };
            assert!(
                !parse(text, &config(1 << 20)).calls.is_empty(),
                "{dialect}: no call"
            );
            bytewise_is_whole_at_every_limit(text, config);
        }
    }

    /// Fed a byte at a time, `text` gives what it gives whole, for every block limit from 1 byte
    /// to past its length (`config` makes the configuration for a limit).
    fn bytewise_is_whole_at_every_limit(text: &str, config: impl Fn(usize) -> ParserConfig) {
        for max_block_bytes in 1..text.len() + 2 {
            let cfg = config(max_block_bytes);
            let mut out = ModelResponse::default();
            let mut p = Parser::new(cfg.clone());
            for b in text.as_bytes() {
                p.push_bytes(std::slice::from_ref(b), &mut out);
            }
            p.finish(&mut out);
            assert_eq!(out, parse(text, &cfg), "{text} limit {max_block_bytes}");
        }
    }
}
