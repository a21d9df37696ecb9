//! Where a call section ends by its own structure, for dialects whose sections have no closing
//! marker (Mistral's `[TOOL_CALLS]` runs to the next `[TOOL_CALLS]` or the end of the stream).
//!
//! Without it, text after a call stays in the section's buffer until the next marker or the end
//! of the stream: it reaches the client late, all at once, and costs a copy per byte. With it, the
//! section ends right after its calls and what follows streams as text. The tracker only finds the
//! end (strings, escapes, brackets); it does not validate: the section reader still judges the
//! section whole, and a section whose value never balances runs on as before.
//!
//! The grammar (Mistral's two forms, after leading whitespace):
//! - JSON values: `[…]` or `{…}`, several separated by whitespace and commas. The section ends
//!   after the last value, before the whitespace and commas that follow it, once a byte that
//!   starts no further value shows up.
//! - A name form: `NAME`, bracket tags (`[ARGS]`, `[CALL_ID]ID`), then `{…}`. The section ends
//!   right after the object.
//!
//! A closer of a tracked section may not hold `}` or `]` except as its last byte (so a possible
//! partial closer never ends where a value does).

/// Where the section's reading is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Whitespace before the first value or name.
    Lead,
    /// The name form's name or id.
    Name,
    /// Inside a bracket tag of the name form (`[ARGS]`).
    Tag,
    /// Inside a value, `depth` brackets deep.
    Value,
    /// After a value of the JSON-values form: whitespace and commas so far.
    After,
}

/// The tracker's state: plain data, copied to look ahead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Track {
    phase: Phase,
    /// The name form (else JSON values).
    named: bool,
    depth: u32,
    string: bool,
    escape: bool,
}

/// What reading some bytes showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    /// Every byte read; the section goes on.
    More,
    /// The name form's object ended with the byte before this offset: the section ends there.
    End(usize),
    /// A value of the JSON-values form ended with the byte before this offset; the section goes
    /// on, and ends there unless another value follows (see [`Read::Stop`]).
    ValueEnd(usize),
    /// The byte at this offset starts no further value: the section ended at the last
    /// [`Read::ValueEnd`], and the bytes read since are whitespace and commas.
    Stop(usize),
}

/// How the lane may carry a tracked section's bytes (see `engine::lane`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaneClass {
    /// Every byte matters: the lane stays closed.
    Closed,
    /// Inside a string: only `"` and `\` matter.
    String,
    /// Elsewhere: only `"`, `\`, brackets and braces matter.
    Structure,
}

impl Default for Track {
    fn default() -> Self {
        Track {
            phase: Phase::Lead,
            named: false,
            depth: 0,
            string: false,
            escape: false,
        }
    }
}

/// The bytes a tracked section's structure turns on outside strings.
pub(crate) fn structural(b: u8) -> bool {
    matches!(b, b'"' | b'\\' | b'{' | b'}' | b'[' | b']')
}

impl Track {
    /// Reads `bytes` up to the first place where the section ends or a value ends.
    pub(crate) fn read(&mut self, bytes: &[u8]) -> Read {
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if self.string {
                if self.escape {
                    self.escape = false;
                    i += 1;
                    continue;
                }
                // Plain string content is most of a call: skip it in one search.
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    Some(k) => {
                        i += k;
                        if bytes[i] == b'"' {
                            self.string = false;
                        } else {
                            self.escape = true;
                        }
                        i += 1;
                    }
                    None => return Read::More,
                }
                continue;
            }
            i += 1;
            match self.phase {
                Phase::Lead | Phase::After => {
                    if b.is_ascii_whitespace() || (self.phase == Phase::After && b == b',') {
                        continue;
                    }
                    if matches!(b, b'{' | b'[') {
                        self.phase = Phase::Value;
                        self.depth = 1;
                    } else if self.phase == Phase::After {
                        return Read::Stop(i - 1);
                    } else {
                        self.named = true;
                        self.phase = Phase::Name;
                    }
                }
                Phase::Name => match b {
                    b'[' => self.phase = Phase::Tag,
                    b'{' => {
                        self.phase = Phase::Value;
                        self.depth = 1;
                    }
                    _ => {}
                },
                Phase::Tag => {
                    if b == b']' {
                        self.phase = Phase::Name;
                    }
                }
                Phase::Value => match b {
                    b'"' => self.string = true,
                    b'{' | b'[' => self.depth = self.depth.saturating_add(1),
                    b'}' | b']' => {
                        self.depth -= 1;
                        if self.depth == 0 {
                            if self.named {
                                return Read::End(i);
                            }
                            self.phase = Phase::After;
                            return Read::ValueEnd(i);
                        }
                    }
                    _ => {}
                },
            }
        }
        Read::More
    }

    /// How the lane may carry the next bytes.
    pub(crate) fn lane_class(&self) -> LaneClass {
        match (self.phase, self.string, self.escape) {
            (Phase::Lead | Phase::After, _, _) | (_, _, true) => LaneClass::Closed,
            (_, true, false) => LaneClass::String,
            (Phase::Name | Phase::Tag | Phase::Value, false, false) => LaneClass::Structure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `text` a piece at a time, as the engine does, and returns where the section ends:
    /// (end, value end of a `Stop`).
    fn end_of(text: &str, piece: usize) -> Option<usize> {
        let mut t = Track::default();
        let bytes = text.as_bytes();
        let mut at = 0;
        let mut value_end = None;
        while at < bytes.len() {
            let to = (at + piece).min(bytes.len());
            match t.read(&bytes[at..to]) {
                Read::More => at = to,
                Read::End(k) => return Some(at + k),
                Read::ValueEnd(k) => {
                    value_end = Some(at + k);
                    at += k;
                }
                Read::Stop(_) => return value_end,
            }
        }
        None
    }

    #[test]
    fn the_section_ends_after_its_calls_whatever_the_pieces() {
        let cases: &[(&str, Option<usize>)] = &[
            (r#"f[ARGS]{"a": "}]\"{"} tail"#, Some(21)),
            (r#"f[CALL_ID]x1[ARGS]{"a": {"b": [1]}} more"#, Some(35)),
            (r#"name{"a":1}{"b":2}"#, Some(11)),
            (
                r#" [{"name": "f", "arguments": {}}] , {"name": "g"} text"#,
                Some(49),
            ),
            (r#"[{"a": 1}]  , "#, None),
            (r#"{"a": "x\\"} z"#, Some(12)),
            (r#"{"a": "x\""} z"#, Some(12)),
            ("junk [{\"a\": 1}] trail", None),
            ("f{\"a\": 1", None),
            ("", None),
        ];
        for &(text, want) in cases {
            for piece in [1, 2, 3, 7, text.len().max(1)] {
                assert_eq!(end_of(text, piece), want, "{text:?} in pieces of {piece}");
            }
        }
    }

    #[test]
    fn the_lane_class_follows_the_phase() {
        let mut t = Track::default();
        assert_eq!(t.lane_class(), LaneClass::Closed);
        t.read(b"f");
        assert_eq!(t.lane_class(), LaneClass::Structure);
        t.read(b"[ARGS]{\"a");
        assert_eq!(t.lane_class(), LaneClass::String);
        t.read(b"\\");
        assert_eq!(t.lane_class(), LaneClass::Closed);
        t.read(b"n\"");
        assert_eq!(t.lane_class(), LaneClass::Structure);
        let mut t = Track::default();
        assert_eq!(t.read(b"[1]"), Read::ValueEnd(3));
        assert_eq!(t.lane_class(), LaneClass::Closed);
    }

    /// Through the parser: the calls and the text after them are out before the stream ends,
    /// however the text arrives, and the result is what the whole text gives.
    #[test]
    fn text_after_mistral_calls_streams_before_the_end() {
        use crate::parser::{parse, Dialect, ModelResponse, Parser, ParserConfig};

        let cases = [
            (
                "Sure.[TOOL_CALLS]f[ARGS]{\"a\": \"}]\\\"\"} then more",
                vec!["f"],
                "Sure. then more",
            ),
            (
                "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {}}] , [{\"name\": \"g\", \"arguments\": {\"x\": [1]}}]\n\nDone.",
                vec!["f", "g"],
                "\n\nDone.",
            ),
            (
                "[TOOL_CALLS]f{\"a\": 1}[TOOL_CALLS]g{} ok",
                vec!["f", "g"],
                " ok",
            ),
        ];
        for (text, names, visible) in cases {
            let mut cfg = ParserConfig::with_tools(["f", "g"]);
            cfg.dialect = Dialect::Mistral;
            for piece in [1, 2, 5, text.len()] {
                let mut out = ModelResponse::default();
                let mut p = Parser::new(cfg.clone());
                for chunk in text.as_bytes().chunks(piece) {
                    p.push_bytes(chunk, &mut out);
                }
                let called: Vec<&str> = out.calls.iter().map(|c| c.name.as_str()).collect();
                assert_eq!(
                    called, names,
                    "{text:?} in pieces of {piece}: calls before the end"
                );
                assert_eq!(
                    out.text, visible,
                    "{text:?} in pieces of {piece}: text before the end"
                );
                p.finish(&mut out);
                assert_eq!(out, parse(text, &cfg), "{text:?} in pieces of {piece}");
            }
        }
    }
}
