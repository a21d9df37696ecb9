//! One-byte steps: what hermes's states do with a lone ASCII byte that the fast lane ([`lane`])
//! does not take, without the general path's dispatch.
//!
//! A byte at a time, the bytes that change the state (a newline at a line start, a `<`, a
//! backtick, what follows a call block's value and its closing tag) are several in every hundred,
//! and the general path's fixed cost (the chunk loop, the state dispatch, the marker search of
//! plain text, moving a block out of the state and back) is most of what they cost. Each step here
//! does exactly what the state's own handling in `text.rs` or `block.rs` does with that one byte,
//! and sets the lane up for the state it leaves; a byte no step knows goes to the general path
//! unchanged.
//!
//! [`lane`]: super::lane

use super::{Parser, Sink, State, MAX_TAG_SPACE};

impl Parser {
    /// Takes the one ASCII byte `b` in the current state, as the general path would, and sets the
    /// lane up for the state it leaves (each step knows that state: no dispatch on it, as
    /// `set_lane` has). False, with nothing changed, when the general path must take it.
    pub(super) fn byte_step<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        match self.state {
            State::Text => self.text_byte(b, sink),
            State::TagSpace if is_blank(b) && self.held.len() < MAX_TAG_SPACE => {
                self.held.push(char::from(b));
                self.lane.close();
                true
            }
            State::Ticks { .. } | State::CodeSpan { .. } => {
                self.span_byte(b, sink);
                true
            }
            State::Block(_) => {
                let taken = self.block_byte(b);
                if taken {
                    self.block_lane();
                }
                taken
            }
            _ => false,
        }
    }

    /// [`State::Text`]: blanks and newlines (which move the line state), a `<` that may open a
    /// tag, a backtick in the middle of a line.
    fn text_byte<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) -> bool {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {
                self.emit_text(ascii(&b), sink);
                self.text_lane();
            }
            b'<' => {
                // Every open marker starts with `<` and is longer: it is held (`text`).
                self.held.clear();
                self.held.push('<');
                self.state = State::TextTag;
                self.lt_lane();
            }
            // At the start of a line a backtick may open a fence (`backtick`).
            b'`' if self.line.is_none() => {
                self.emit_text("`", sink);
                self.state = State::Ticks { run: 1 };
                self.run_lane();
            }
            _ => return false,
        }
        true
    }

    /// [`State::Ticks`] and [`State::CodeSpan`]: a backtick run in a line and the inline code span
    /// it opens, byte by byte as `step` takes them (a state change that does not consume the byte
    /// is followed by the next state's handling of it).
    fn span_byte<S: Sink + ?Sized>(&mut self, b: u8, sink: &mut S) {
        let tick = b == b'`';
        loop {
            match self.state {
                State::Ticks { run } if tick => {
                    self.emit_text("`", sink);
                    self.state = State::Ticks { run: run + 1 };
                    return self.run_lane();
                }
                State::Ticks { run } => self.state = State::CodeSpan { ticks: run, run: 0 },
                State::CodeSpan { ticks, run } if run > 0 => {
                    if tick {
                        self.emit_text("`", sink);
                        self.state = State::CodeSpan {
                            ticks,
                            run: run + 1,
                        };
                        return self.run_lane();
                    }
                    if run != ticks {
                        self.state = State::CodeSpan { ticks, run: 0 };
                        continue;
                    }
                    // The span closed: the byte is text.
                    self.state = State::Text;
                    if !self.text_byte(b, sink) {
                        self.run(ascii(&b), 0, sink);
                        self.set_lane();
                    }
                    return;
                }
                State::CodeSpan { ticks, .. } => {
                    self.emit_text(ascii(&b), sink);
                    if b == b'\n' {
                        self.state = State::Text;
                        self.line = Some(0);
                        self.text_lane();
                    } else if tick {
                        self.state = State::CodeSpan { ticks, run: 1 };
                        self.run_lane();
                    } else {
                        self.span_lane();
                    }
                    return;
                }
                _ => {
                    self.run(ascii(&b), 0, sink);
                    return self.set_lane();
                }
            }
        }
    }
}

/// An ASCII byte as a one-character string.
pub(super) fn ascii(b: &u8) -> &str {
    std::str::from_utf8(std::slice::from_ref(b)).unwrap_or_default()
}

fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}
