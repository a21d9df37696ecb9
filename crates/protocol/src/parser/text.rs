//! The text states: plain text, partial open tags, backtick runs, code spans, fence openings and
//! reasoning, and the dispatch of every state's input ([`Parser::step`]).

use super::{agrees, as_str, is_ws, match_prefix, Match, Parser, Sink, State};
use super::{
    CLOSE_THINK, MAX_FENCE_INFO, MAX_FUNCTION_NAME, MAX_TAG_SPACE, OPEN_CALL, OPEN_FUNCTION,
    OPEN_THINK,
};

impl Parser {
    /// Processes input from `i`; returns how far it got.
    ///
    /// Every state's step is its own function, inlined here: this runs once per byte when tokens
    /// arrive one by one, and the inlining keeps the dispatch what it was as one function (the
    /// same instruction counts under callgrind, `examples/bytewise.rs`).
    pub(super) fn step<S: Sink + ?Sized>(&mut self, s: &str, i: usize, sink: &mut S) -> usize {
        let b = s.as_bytes()[i];
        match &mut self.state {
            State::Text => self.text(s, i, sink),
            State::TextTag => self.text_tag(b, i, sink),
            State::TagSpace => self.tag_space(b, i, sink),
            State::FunctionHead => self.function_head(b, i, sink),
            State::LineTicks => self.line_ticks(b, i, sink),
            State::FenceInfo { ticks } => {
                let ticks = *ticks;
                self.fence_info(s, i, b, ticks, sink)
            }
            State::Ticks { run } => {
                let run = *run;
                self.tick_run(b, i, run, sink)
            }
            State::CodeSpan { ticks, run } => {
                let (ticks, run) = (*ticks, *run);
                self.code_span(s, i, b, ticks, run, sink)
            }
            State::Think { matched } => {
                let matched = *matched;
                self.think(s, i, b, matched, sink)
            }
            State::Block(_) => self.block_step(s, i, sink),
            State::Fence(_) => self.fence_step(s, i, sink),
        }
    }

    /// `held` is a proper prefix of an open marker: `b` extends it, completes a marker, or shows
    /// that it was text.
    #[inline(always)]
    fn text_tag<S: Sink + ?Sized>(&mut self, b: u8, i: usize, sink: &mut S) -> usize {
        let mut probe = [0u8; 16];
        let n = self.held.len();
        probe[..n].copy_from_slice(self.held.as_bytes());
        probe[n] = b;
        let prefix = &probe[..=n];
        match match_prefix(prefix, self.open_markers()) {
            Match::Partial => {
                self.held.push(b as char);
                i + 1
            }
            Match::Full(m) if m == OPEN_THINK => {
                self.held.clear();
                self.state = State::Think { matched: 0 };
                self.line = None;
                i + 1
            }
            Match::Full(m) if m == OPEN_FUNCTION => {
                self.held.push(b as char);
                self.state = State::FunctionHead;
                i + 1
            }
            Match::Full(_) => {
                self.held.push(b as char);
                self.state = State::TagSpace;
                i + 1
            }
            Match::None => {
                self.release_held(sink);
                i
            }
        }
    }

    /// After an open tag: whitespace is held, `{` or `[` opens a block, anything else was text.
    #[inline(always)]
    fn tag_space<S: Sink + ?Sized>(&mut self, b: u8, i: usize, sink: &mut S) -> usize {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' if self.held.len() < MAX_TAG_SPACE => {
                self.held.push(b as char);
                i + 1
            }
            // A function's arguments are an object, never an array of calls.
            b'[' if self.function.is_some() => {
                self.release_held(sink);
                i
            }
            b'{' | b'[' => {
                self.buf.clear();
                self.buf.push_str(&self.held);
                self.held.clear();
                self.start_block(sink);
                i
            }
            _ => {
                self.release_held(sink);
                i
            }
        }
    }

    /// `<function=` and the name so far: `>` ends the tag, a name byte extends the name.
    #[inline(always)]
    fn function_head<S: Sink + ?Sized>(&mut self, b: u8, i: usize, sink: &mut S) -> usize {
        let name_len = self.held.len() - OPEN_FUNCTION.len();
        match b {
            b'>' if name_len > 0 => {
                self.function = Some(self.held[OPEN_FUNCTION.len()..].to_owned());
                self.held.push('>');
                self.state = State::TagSpace;
                i + 1
            }
            b if is_name_byte(b) && name_len < MAX_FUNCTION_NAME => {
                self.held.push(b as char);
                i + 1
            }
            _ => {
                self.release_held(sink);
                i
            }
        }
    }

    /// A backtick run at the start of a line: three or more open a fence (when fences are on),
    /// fewer a code span.
    #[inline(always)]
    fn line_ticks<S: Sink + ?Sized>(&mut self, b: u8, i: usize, sink: &mut S) -> usize {
        if b == b'`' {
            self.held.push('`');
            return i + 1;
        }
        let ticks = self.held.len();
        if ticks >= 3 && self.config.fences {
            self.state = State::FenceInfo { ticks };
        } else {
            let held = std::mem::take(&mut self.held);
            self.emit_text(&held, sink);
            self.line = None;
            self.state = State::CodeSpan { ticks, run: 0 };
        }
        i
    }

    /// A fence's info string, up to the end of its line (or a backtick, which makes it text).
    #[inline(always)]
    fn fence_info<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        b: u8,
        ticks: usize,
        sink: &mut S,
    ) -> usize {
        match b {
            b'\n' => {
                self.open_fence(ticks);
                i + 1
            }
            b'`' => {
                self.not_a_fence(ticks, sink);
                i
            }
            _ if self.held.len() >= MAX_FENCE_INFO => {
                self.not_a_fence(ticks, sink);
                i
            }
            _ => {
                // Copy the whole run up to the end of the line (or a backtick) at once.
                let rest = &s.as_bytes()[i..];
                let room = MAX_FENCE_INFO.saturating_sub(self.held.len()).max(1);
                let end = memchr::memchr2(b'\n', b'`', &rest[..rest.len().min(room)])
                    .unwrap_or(rest.len().min(room));
                let end = floor_char_boundary(s, i + end);
                if end == i {
                    // A multi-byte character straddles the cap: take it whole.
                    let c = s[i..].chars().next().map_or(1, char::len_utf8);
                    self.held.push_str(&s[i..i + c]);
                    return i + c;
                }
                self.held.push_str(&s[i..end]);
                end
            }
        }
    }

    /// A backtick run in the middle of a line, already emitted: it grows, or opens a code span of
    /// its length.
    #[inline(always)]
    fn tick_run<S: Sink + ?Sized>(&mut self, b: u8, i: usize, run: usize, sink: &mut S) -> usize {
        if b == b'`' {
            self.state = State::Ticks { run: run + 1 };
            self.emit_text("`", sink);
            i + 1
        } else {
            self.state = State::CodeSpan { ticks: run, run: 0 };
            i
        }
    }

    /// Inside a code span: text up to a backtick run, which closes it when it is as long as the
    /// opening one, or a newline, which ends it.
    #[inline(always)]
    fn code_span<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        b: u8,
        ticks: usize,
        run: usize,
        sink: &mut S,
    ) -> usize {
        if run > 0 {
            if b == b'`' {
                self.state = State::CodeSpan {
                    ticks,
                    run: run + 1,
                };
                self.emit_text("`", sink);
                return i + 1;
            }
            self.state = if run == ticks {
                State::Text
            } else {
                State::CodeSpan { ticks, run: 0 }
            };
            return i;
        }
        let rest = &s.as_bytes()[i..];
        match memchr::memchr2(b'`', b'\n', rest) {
            None => {
                self.emit_text(&s[i..], sink);
                s.len()
            }
            Some(off) => {
                let j = i + off;
                self.emit_text(&s[i..=j], sink);
                if rest[off] == b'\n' {
                    self.state = State::Text;
                    self.line = Some(0);
                } else {
                    self.state = State::CodeSpan { ticks, run: 1 };
                }
                j + 1
            }
        }
    }

    /// Inside `<think>`: reasoning up to a `<`, then `matched` bytes of `</think>` held until the
    /// tag is complete or turns out to be reasoning.
    #[inline(always)]
    fn think<S: Sink + ?Sized>(
        &mut self,
        s: &str,
        i: usize,
        b: u8,
        matched: usize,
        sink: &mut S,
    ) -> usize {
        if matched > 0 {
            if b == CLOSE_THINK[matched] {
                if matched + 1 == CLOSE_THINK.len() {
                    self.state = State::Text;
                    self.line = None;
                } else {
                    self.state = State::Think {
                        matched: matched + 1,
                    };
                }
                return i + 1;
            }
            sink.reasoning(as_str(&CLOSE_THINK[..matched]));
            self.state = State::Think { matched: 0 };
            return i;
        }
        match memchr::memchr(b'<', &s.as_bytes()[i..]) {
            None => {
                sink.reasoning(&s[i..]);
                s.len()
            }
            Some(off) => {
                sink.reasoning(&s[i..i + off]);
                self.state = State::Think { matched: 1 };
                i + off + 1
            }
        }
    }

    /// The hot path: plain text up to the next marker that needs the state machine.
    ///
    /// Within one chunk, a `<` that the following bytes already rule out and a complete inline code
    /// span are plain text too: they are skipped here and emitted as part of one slice, so ordinary
    /// prose costs one `memchr` scan and one sink call per chunk. Anything undecided at the end of
    /// the chunk is left to the state machine, which gives the same result.
    #[inline]
    pub(super) fn text<S: Sink + ?Sized>(&mut self, s: &str, i: usize, sink: &mut S) -> usize {
        let bytes = s.as_bytes();
        let len = bytes.len();
        let mut pos = i;
        loop {
            let Some(off) = find_special(&bytes[pos..]) else {
                self.emit_text(&s[i..], sink);
                return len;
            };
            let j = pos + off;
            if bytes[j] == b'<' {
                let window = &bytes[j..len.min(j + OPEN_CALL.len())];
                let Some(&marker) = self.open_markers().iter().find(|m| agrees(window, m)) else {
                    pos = j + 1;
                    continue;
                };
                if window.len() < marker.len() || marker == OPEN_FUNCTION {
                    // The chunk ends inside what may be a marker (or a `<function=NAME>` tag,
                    // whose name the state machine reads).
                    self.emit_text(&s[i..j], sink);
                    self.held.clear();
                    self.held.push('<');
                    self.state = State::TextTag;
                    return j + 1;
                }
                let after = j + marker.len();
                if marker == OPEN_THINK {
                    self.emit_text(&s[i..j], sink);
                    self.state = State::Think { matched: 0 };
                    self.line = None;
                    return after;
                }
                // An open tag: it opens a block only if `{` or `[` follows its whitespace.
                let space = bytes[after..].iter().take_while(|&&b| is_ws(b)).count();
                if space > MAX_TAG_SPACE - marker.len() {
                    pos = j + 1;
                    continue;
                }
                match bytes.get(after + space) {
                    Some(b'{' | b'[') => {
                        self.emit_text(&s[i..j], sink);
                        self.buf.clear();
                        self.buf.push_str(&s[j..after + space]);
                        self.start_block(sink);
                        return after + space;
                    }
                    Some(_) => {
                        pos = j + 1;
                        continue;
                    }
                    None => {
                        self.emit_text(&s[i..j], sink);
                        self.held.clear();
                        self.held.push_str(&s[j..]);
                        self.state = State::TagSpace;
                        return len;
                    }
                }
            }
            // A backtick run.
            let run = bytes[j..].iter().take_while(|&&b| b == b'`').count();
            let line = advance_line(self.line, &bytes[i..j]);
            if matches!(line, Some(n) if n <= 3) || j + run == len {
                // A possible fence, or a run the next chunk may extend: the state machine decides.
                self.emit_text(&s[i..j], sink);
                return self.backtick(j, sink);
            }
            match code_span_end(bytes, j + run, run) {
                Some(end) => pos = end,
                None => {
                    // The span runs past this chunk: continue it in the code-span state.
                    self.emit_text(&s[i..j + run], sink);
                    self.state = State::CodeSpan { ticks: run, run: 0 };
                    return j + run;
                }
            }
        }
    }

    /// A backtick at `j` handled by the state machine.
    fn backtick<S: Sink + ?Sized>(&mut self, j: usize, sink: &mut S) -> usize {
        if matches!(self.line, Some(n) if n <= 3) {
            self.held.clear();
            self.held.push('`');
            self.state = State::LineTicks;
        } else {
            self.emit_text("`", sink);
            self.state = State::Ticks { run: 1 };
        }
        j + 1
    }
}

/// The first `<` or backtick.
fn find_special(bytes: &[u8]) -> Option<usize> {
    // memchr's setup costs more than a short loop on the tiny chunks of token streaming.
    if bytes.len() < 16 {
        bytes.iter().position(|&b| b == b'<' || b == b'`')
    } else {
        memchr::memchr2(b'<', b'`', bytes)
    }
}

/// Where an inline code span of `ticks` backticks whose content starts at `from` ends (just after
/// its closing run, or just after the newline that ends it), if that is known within `bytes`.
fn code_span_end(bytes: &[u8], from: usize, ticks: usize) -> Option<usize> {
    let mut k = from;
    loop {
        let off = memchr::memchr2(b'`', b'\n', &bytes[k..])?;
        let at = k + off;
        if bytes[at] == b'\n' {
            return Some(at + 1);
        }
        let run = bytes[at..].iter().take_while(|&&b| b == b'`').count();
        if at + run == bytes.len() {
            return None; // the run may continue in the next chunk
        }
        if run == ticks {
            return Some(at + run);
        }
        k = at + run;
    }
}

pub(super) fn advance_line(line: Option<u8>, text: &[u8]) -> Option<u8> {
    // Most text ends in neither a space nor a newline.
    if let Some(&last) = text.last() {
        if last != b' ' && last != b'\n' {
            return None;
        }
    }
    let spaces = text
        .iter()
        .rev()
        .take(4)
        .take_while(|&&b| b == b' ')
        .count();
    if spaces == text.len() {
        return line.and_then(|n| {
            let n = n as usize + spaces;
            (n <= 3).then_some(n as u8)
        });
    }
    (spaces <= 3 && text[text.len() - 1 - spaces] == b'\n').then_some(spaces as u8)
}

/// A byte of a tool name in `<function=NAME>`.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
