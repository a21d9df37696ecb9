//! An incremental, validating JSON scanner.
//!
//! It answers one question per byte — is the value still well-formed, and has it ended? — without
//! building anything, so a call block is read in one pass however it is chunked, and a syntax error
//! is found at the byte where it happens (the parser then looks for the block's end instead of
//! swallowing the rest of the stream). Extraction of the finished value is left to `serde_json`.
//!
//! We write this instead of using a crate because the streaming JSON crates either build values
//! (allocation per token) or do not report where a value ends across chunk boundaries.

use std::ops::ControlFlow;

use super::problem::JsonSyntax;

/// The result of feeding bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feed {
    /// All bytes were consumed and the value is still open.
    NeedMore,
    /// The value ended; this many bytes of the input belong to it.
    Done(usize),
    /// The byte at this offset of the input cannot continue the value.
    Error(usize, JsonSyntax),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Expecting any value (after `:` or `,` in an array).
    Value,
    /// After `[`: a value or `]`.
    ArrayFirst,
    /// After `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    Key,
    /// After a key: `:`.
    Colon,
    /// After a value inside a container: `,` or the closer.
    AfterValue,
    /// Inside a string; `key` says whether it is an object key.
    Str {
        key: bool,
    },
    /// After a backslash in a string.
    Escape {
        key: bool,
    },
    /// Inside `\uXXXX`, with this many hex digits still to come.
    Hex {
        key: bool,
        left: u8,
    },
    Number(Num),
    /// Inside `true`, `false` or `null`: the literal and how much of it has been matched.
    Literal {
        lit: &'static [u8],
        at: u8,
    },
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Num {
    Minus,
    Zero,
    Int,
    Dot,
    Frac,
    Exp,
    ExpSign,
    ExpInt,
}

impl Num {
    /// The state after byte `b` of the number, if `b` continues it.
    #[inline(always)]
    fn after(self, b: u8) -> Option<Num> {
        match (self, b) {
            (Num::Minus, b'0') => Some(Num::Zero),
            (Num::Minus, b'1'..=b'9') => Some(Num::Int),
            (Num::Int, b'0'..=b'9') => Some(Num::Int),
            (Num::Zero | Num::Int, b'.') => Some(Num::Dot),
            (Num::Dot | Num::Frac, b'0'..=b'9') => Some(Num::Frac),
            (Num::Zero | Num::Int | Num::Frac, b'e' | b'E') => Some(Num::Exp),
            (Num::Exp, b'+' | b'-') => Some(Num::ExpSign),
            (Num::Exp | Num::ExpSign | Num::ExpInt, b'0'..=b'9') => Some(Num::ExpInt),
            _ => None,
        }
    }

    fn can_end(self) -> bool {
        matches!(self, Num::Zero | Num::Int | Num::Frac | Num::ExpInt)
    }
}

/// Deeper nesting than this is an error: it bounds the scanner's stack, and no tool's arguments
/// need it.
pub(crate) const MAX_DEPTH: usize = 128;

/// Bytes that end a run of plain string content.
static STRING_SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A member of the top-level object: byte ranges of its key's content and of its value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Member {
    pub key: (usize, usize),
    pub value: (usize, usize),
    /// The key holds an escape sequence (so its raw bytes are not its text).
    pub escaped: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Scanner {
    /// Open containers: `true` for an object, `false` for an array.
    stack: Vec<bool>,
    state: State,
    /// Where the current input starts within the value.
    base: usize,
    /// The members of a top-level object, recorded while scanning so the call's name and
    /// arguments can be read without parsing the value again.
    members: Vec<Member>,
    current: Member,
}

impl Default for Scanner {
    fn default() -> Self {
        Scanner {
            stack: Vec::new(),
            state: State::Value,
            base: 0,
            members: Vec::new(),
            current: Member::default(),
        }
    }
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

impl Scanner {
    /// Starts a fresh value.
    pub(crate) fn reset(&mut self) {
        self.stack.clear();
        self.state = State::Value;
        self.base = 0;
        self.members.clear();
    }

    /// Takes the members of the top-level object scanned since the last reset (give the vector
    /// back with [`Scanner::restore_members`] to keep its allocation).
    pub(crate) fn take_members(&mut self) -> Vec<Member> {
        std::mem::take(&mut self.members)
    }

    pub(crate) fn restore_members(&mut self, mut members: Vec<Member>) {
        members.clear();
        self.members = members;
    }

    /// Whether the scanner is directly inside the top-level object.
    fn at_top_object(&self) -> bool {
        self.stack.len() == 1 && self.stack[0]
    }

    /// A value of the top-level object ended at `end` (an offset within the value).
    fn end_member(&mut self, end: usize) {
        if self.at_top_object() {
            self.current.value.1 = end;
            self.members.push(self.current);
        }
    }

    /// Feeds the next bytes of the value.
    pub(crate) fn feed(&mut self, input: &[u8]) -> Feed {
        let result = self.feed_inner(input);
        self.base += match result {
            Feed::NeedMore => input.len(),
            Feed::Done(n) | Feed::Error(n, _) => n,
        };
        result
    }

    fn feed_inner(&mut self, input: &[u8]) -> Feed {
        let mut i = 0;
        let n = input.len();
        while i < n {
            let b = input[i];
            match self.state {
                State::Str { key } => match self.string_run(input, i, key) {
                    ControlFlow::Continue(next) => {
                        i = next;
                        continue;
                    }
                    ControlFlow::Break(feed) => return feed,
                },
                State::Escape { key } => {
                    self.state = match b {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                            State::Str { key }
                        }
                        b'u' => State::Hex { key, left: 4 },
                        _ => return Feed::Error(i, JsonSyntax::InvalidEscape),
                    };
                }
                State::Hex { key, left } => {
                    if !b.is_ascii_hexdigit() {
                        return Feed::Error(i, JsonSyntax::InvalidUnicodeEscape);
                    }
                    self.state = if left == 1 {
                        State::Str { key }
                    } else {
                        State::Hex {
                            key,
                            left: left - 1,
                        }
                    };
                }
                State::Value | State::ArrayFirst => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    if b == b']' && self.state == State::ArrayFirst {
                        if let Some(done) = self.close(i) {
                            return done;
                        }
                        i += 1;
                        continue;
                    }
                    if self.at_top_object() {
                        self.current.value.0 = self.base + i;
                    }
                    if let Err(reason) = self.begin_value(b) {
                        return Feed::Error(i, reason);
                    }
                }
                State::ObjectFirst | State::Key => {
                    if is_ws(b) {
                        i += 1;
                        continue;
                    }
                    match b {
                        b'"' => {
                            if self.at_top_object() {
                                self.current = Member {
                                    key: (self.base + i + 1, self.base + i + 1),
                                    ..Member::default()
                                };
                            }
                            self.state = State::Str { key: true }
                        }
                        b'}' if self.state == State::ObjectFirst => {
                            if let Some(done) = self.close(i) {
                                return done;
                            }
                        }
                        _ => return Feed::Error(i, JsonSyntax::ExpectedKey),
                    }
                }
                State::Colon => {
                    if !is_ws(b) {
                        if b != b':' {
                            return Feed::Error(i, JsonSyntax::ExpectedColon);
                        }
                        self.state = State::Value;
                    }
                }
                State::AfterValue => {
                    if !is_ws(b) {
                        let in_object = self.stack.last().copied().unwrap_or(false);
                        match (b, in_object) {
                            (b',', true) => self.state = State::Key,
                            (b',', false) => self.state = State::Value,
                            (b'}', true) | (b']', false) => {
                                if let Some(done) = self.close(i) {
                                    return done;
                                }
                            }
                            (_, true) => return Feed::Error(i, JsonSyntax::ExpectedMemberEnd),
                            (_, false) => return Feed::Error(i, JsonSyntax::ExpectedElementEnd),
                        }
                    }
                }
                State::Number(num) => {
                    match num.after(b) {
                        Some(next) => self.state = State::Number(next),
                        None if num.can_end() => {
                            // The number ended before this byte; look at it again.
                            self.state = State::AfterValue;
                            self.end_member(self.base + i);
                            continue;
                        }
                        None => return Feed::Error(i, JsonSyntax::InvalidNumber),
                    }
                }
                State::Literal { lit, at } => {
                    if b != lit[at as usize] {
                        return Feed::Error(i, JsonSyntax::InvalidLiteral);
                    }
                    let at = at + 1;
                    if at as usize == lit.len() {
                        self.state = State::AfterValue;
                        self.end_member(self.base + i + 1);
                    } else {
                        self.state = State::Literal { lit, at };
                    }
                }
                State::Done => return Feed::Done(i),
            }
            i += 1;
        }
        Feed::NeedMore
    }

    /// String content from `i` up to its next quote or backslash, skipped as a run (the fast
    /// path): where to go on, or the scanner's answer when the input ends or the value does.
    #[inline(always)]
    fn string_run(&mut self, input: &[u8], i: usize, key: bool) -> ControlFlow<Feed, usize> {
        let n = input.len();
        let mut j = i;
        while j < n && !STRING_SPECIAL[input[j] as usize] {
            j += 1;
        }
        if j == n {
            return ControlFlow::Break(Feed::NeedMore);
        }
        match input[j] {
            b'"' => {
                if key {
                    if self.at_top_object() {
                        self.current.key.1 = self.base + j;
                    }
                    self.state = State::Colon;
                } else {
                    self.state = self.after_value();
                    if self.state == State::Done {
                        return ControlFlow::Break(Feed::Done(j + 1));
                    }
                    self.end_member(self.base + j + 1);
                }
            }
            b'\\' => {
                if key && self.at_top_object() {
                    self.current.escaped = true;
                }
                self.state = State::Escape { key }
            }
            _ => return ControlFlow::Break(Feed::Error(j, JsonSyntax::ControlCharacter)),
        }
        ControlFlow::Continue(j + 1)
    }

    /// The state after a scalar value or a closed container.
    fn after_value(&self) -> State {
        if self.stack.is_empty() {
            State::Done
        } else {
            State::AfterValue
        }
    }

    /// Closes the innermost container at input offset `i`; returns `Done` when it was the outermost.
    fn close(&mut self, i: usize) -> Option<Feed> {
        self.stack.pop();
        self.state = self.after_value();
        if self.state == State::Done {
            return Some(Feed::Done(i + 1));
        }
        self.end_member(self.base + i + 1);
        None
    }

    fn begin_value(&mut self, b: u8) -> Result<(), JsonSyntax> {
        self.state = match b {
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(JsonSyntax::TooDeep);
                }
                self.stack.push(b == b'{');
                if b == b'{' {
                    State::ObjectFirst
                } else {
                    State::ArrayFirst
                }
            }
            // Top-level scalars are never call values: the parser only starts a value on `{`/`[`.
            b'"' => State::Str { key: false },
            b'-' => State::Number(Num::Minus),
            b'0' => State::Number(Num::Zero),
            b'1'..=b'9' => State::Number(Num::Int),
            b't' => State::Literal {
                lit: b"true",
                at: 1,
            },
            b'f' => State::Literal {
                lit: b"false",
                at: 1,
            },
            b'n' => State::Literal {
                lit: b"null",
                at: 1,
            },
            _ => return Err(JsonSyntax::ExpectedValue),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(s: &str) -> Feed {
        let mut sc = Scanner::default();
        sc.feed(s.as_bytes())
    }

    fn bytewise(s: &str) -> Feed {
        let mut sc = Scanner::default();
        for (i, b) in s.as_bytes().iter().enumerate() {
            match sc.feed(std::slice::from_ref(b)) {
                Feed::NeedMore => {}
                Feed::Done(n) => return Feed::Done(i + n),
                Feed::Error(at, r) => return Feed::Error(i + at, r),
            }
        }
        Feed::NeedMore
    }

    #[test]
    fn finds_the_end_of_values() {
        for (s, end) in [
            (r#"{"a":1}xyz"#, 7),
            (r#"{"a":[1,2.5e-3,-0,true,false,null,"x\"}\u00e9"]} "#, 48),
            ("[]", 2),
            ("{}", 2),
            (r#"{"k":"</tool_call>"}</tool_call>"#, 20),
            (r#"[{"a":{}}, {"b":[[]]}]"#, 22),
        ] {
            assert_eq!(whole(s), Feed::Done(end), "{s}");
            assert_eq!(bytewise(s), Feed::Done(end), "{s}");
        }
    }

    #[test]
    fn reports_errors_where_they_happen() {
        for (s, at) in [
            (r#"{"a":1,}"#, 7),
            (r#"{'a':1}"#, 1),
            (r#"{"a":1</tool_call>"#, 6),
            ("{\"a\":\"x\ny\"}", 7),
            (r#"{"a":01}"#, 6),
            (r#"{"a":tru}"#, 8),
            (r#"{"a":"\x"}"#, 7),
            (r#"{"a":"\u12g4"}"#, 10),
            (r#"{"a" 1}"#, 5),
            (r#"[1 2]"#, 3),
            (r#"{"a":-}"#, 6),
            (r#"{"a":1.}"#, 7),
        ] {
            let w = whole(s);
            assert!(matches!(w, Feed::Error(i, _) if i == at), "{s}: {w:?}");
            assert_eq!(bytewise(s), w, "{s}");
        }
    }

    #[test]
    fn incomplete_values_need_more() {
        for s in [
            r#"{"a":"#,
            r#"{"a":"\u00"#,
            "[1, 2",
            r#"{"a":12"#,
            r#"{"a":tr"#,
        ] {
            assert_eq!(whole(s), Feed::NeedMore, "{s}");
            assert_eq!(bytewise(s), Feed::NeedMore, "{s}");
        }
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert!(matches!(whole(&deep), Feed::Error(i, _) if i == MAX_DEPTH));
    }

    #[test]
    fn records_top_level_members_across_chunks() {
        let text = r#"{"name": "f", "n": -1.5e3, "b": true, "arguments": {"x": [1, {"y": "}"}]}, "k\u0041": null}"#;
        let expect = {
            let mut sc = Scanner::default();
            assert_eq!(sc.feed(text.as_bytes()), Feed::Done(text.len()));
            sc.members.clone()
        };
        let spans: Vec<(&str, &str)> = expect
            .iter()
            .map(|m| (&text[m.key.0..m.key.1], &text[m.value.0..m.value.1]))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("name", "\"f\""),
                ("n", "-1.5e3"),
                ("b", "true"),
                ("arguments", r#"{"x": [1, {"y": "}"}]}"#),
                ("k\\u0041", "null"),
            ]
        );
        assert!(expect[4].escaped && !expect[0].escaped);
        let mut sc = Scanner::default();
        for (i, b) in text.as_bytes().iter().enumerate() {
            let r = sc.feed(std::slice::from_ref(b));
            if i + 1 < text.len() {
                assert_eq!(r, Feed::NeedMore);
            }
        }
        assert_eq!(sc.members, expect);
    }
}
