//! Words: quote removal and escapes as bash does them, read into a [`WordBuf`].
//!
//! A word is read up to the next metacharacter: backslashes, single quotes, double quotes and
//! ANSI-C `$'…'` quoting (decoded, so `$'\x72\x6d'` reads as `rm`) are resolved; `$` and
//! backquotes are handed to `expand.rs`. The buffer remembers which characters were unquoted, so
//! that a glob or brace expansion in them marks the word [`Word::dynamic`], and how long its
//! unquoted literal prefix is (an assignment's name must lie in it).

use super::lex::Lexer;
use super::{err, ParseError, Word};

/// A word being read.
#[derive(Default)]
pub(super) struct WordBuf {
    word: Word,
    started: bool,
    literal_broken: bool,
    /// The unquoted characters, quoted ones as NUL: where globs and brace expansions are looked for.
    unquoted: String,
}

impl WordBuf {
    pub(super) fn literal(&mut self, c: char) {
        self.started = true;
        self.word.text.push(c);
        self.unquoted.push(c);
        if !self.literal_broken {
            self.word.literal_prefix += 1;
        }
        if c == '*' || c == '?' {
            self.word.dynamic = true;
        }
    }

    pub(super) fn quoted(&mut self, c: char) {
        self.started = true;
        self.word.text.push(c);
        self.unquoted.push('\0');
        self.word.quoted = true;
        self.literal_broken = true;
    }

    pub(super) fn mark_quoted(&mut self) {
        self.started = true;
        self.word.quoted = true;
        self.literal_broken = true;
    }

    pub(super) fn expansion(&mut self, text: &str) {
        self.started = true;
        self.word.text.push_str(text);
        self.unquoted.push('\0');
        self.word.dynamic = true;
        self.literal_broken = true;
    }

    pub(super) fn finish(mut self) -> Option<Word> {
        if !self.started {
            return None;
        }
        if has_bracket_glob(&self.unquoted) || has_brace_expansion(&self.unquoted) {
            self.word.dynamic = true;
        }
        Some(self.word)
    }
}

fn has_bracket_glob(s: &str) -> bool {
    s.find('[')
        .is_some_and(|open| s.len() > 1 && s[open + 1..].contains(']') && s != "[[")
}

fn has_brace_expansion(s: &str) -> bool {
    let Some(open) = s.find('{') else {
        return false;
    };
    let rest = &s[open + 1..];
    let Some(close) = rest.rfind('}') else {
        return false;
    };
    let inner = &rest[..close];
    inner.contains(',') || inner.contains("..")
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

impl Lexer {
    /// One word at `pos` (`None` if a metacharacter or the end comes first).
    pub(super) fn word(&mut self) -> Result<Option<Word>, ParseError> {
        let mut w = WordBuf::default();
        while let Some(c) = self.peek() {
            if is_meta(c) {
                // `name=(…)`: an array assignment keeps its parenthesised list in the word.
                if c == '(' && w.word.text.ends_with('=') && w.word.assignment_name().is_some() {
                    self.pos += 1;
                    self.tokens(true)?;
                    w.expansion("(…)");
                    continue;
                }
                break;
            }
            match c {
                '\\' => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(e) => {
                            self.pos += 1;
                            w.quoted(e);
                        }
                        None => w.literal('\\'),
                    }
                }
                '\'' => {
                    self.pos += 1;
                    w.mark_quoted();
                    loop {
                        match self.peek() {
                            None => return err("an unclosed single quote"),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(q) => {
                                self.pos += 1;
                                w.quoted(q);
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(&mut w)?;
                }
                '`' => {
                    self.pos += 1;
                    self.backticks()?;
                    w.expansion("`…`");
                }
                '$' => self.dollar(&mut w, false)?,
                _ => {
                    self.pos += 1;
                    w.literal(c);
                }
            }
        }
        Ok(w.finish())
    }

    /// After an opening `"`: up to the closing one.
    pub(super) fn double_quoted(&mut self, w: &mut WordBuf) -> Result<(), ParseError> {
        self.enter()?;
        let result = self.double_quoted_inner(w);
        self.depth -= 1;
        result
    }

    fn double_quoted_inner(&mut self, w: &mut WordBuf) -> Result<(), ParseError> {
        w.mark_quoted();
        loop {
            match self.peek() {
                None => return err("an unclosed double quote"),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.peek() {
                        Some('\n') => self.pos += 1,
                        Some(e @ ('$' | '`' | '"' | '\\')) => {
                            self.pos += 1;
                            w.quoted(e);
                        }
                        _ => w.quoted('\\'),
                    }
                }
                Some('`') => {
                    self.pos += 1;
                    self.backticks()?;
                    w.expansion("`…`");
                }
                Some('$') => self.dollar(w, true)?,
                Some(c) => {
                    self.pos += 1;
                    w.quoted(c);
                }
            }
        }
    }

    /// After `$'`: ANSI-C quoting, decoded (so `$'\x72\x6d'` reads as `rm`).
    pub(super) fn ansi_c(&mut self, w: &mut WordBuf) -> Result<(), ParseError> {
        w.mark_quoted();
        loop {
            let Some(c) = self.peek() else {
                return err("an unclosed $'");
            };
            self.pos += 1;
            match c {
                '\'' => return Ok(()),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return err("an unclosed $'");
                    };
                    self.pos += 1;
                    let decoded = match e {
                        'n' => Some('\n'),
                        't' => Some('\t'),
                        'r' => Some('\r'),
                        'a' => Some('\u{7}'),
                        'b' => Some('\u{8}'),
                        'e' | 'E' => Some('\u{1b}'),
                        'f' => Some('\u{c}'),
                        'v' => Some('\u{b}'),
                        'x' => self.radix_digits(16, 2),
                        'u' => self.radix_digits(16, 4),
                        'U' => self.radix_digits(16, 8),
                        '0'..='7' => {
                            self.pos -= 1;
                            self.radix_digits(8, 3)
                        }
                        'c' => {
                            let ctl = self
                                .peek()
                                .and_then(|c| char::from_u32(u32::from(c) & 0x1f));
                            self.pos += 1;
                            ctl
                        }
                        other => Some(other),
                    };
                    if let Some(d) = decoded {
                        w.quoted(d);
                    }
                }
                other => w.quoted(other),
            }
        }
    }

    fn radix_digits(&mut self, radix: u32, max: usize) -> Option<char> {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match self.peek().and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    self.pos += 1;
                    n += 1;
                }
                None => break,
            }
        }
        if n == 0 {
            return None;
        }
        char::from_u32(value)
    }
}
