//! The lexer: a command line's characters into [`Token`]s (words, operators, redirections).
//!
//! It owns the reading position and the counts [`super::Script`] reports, and the loop over the
//! top level or a `$(…)`/`<(…)` body: blanks, comments, line continuations, the list and pipe
//! operators, parentheses, redirection operators with their targets, and here-document bodies
//! after each newline. Words are read by `word.rs` and expansions by `expand.rs`, which add their
//! own `impl Lexer` blocks; every recursive step goes through [`Lexer::enter`], so nesting is
//! bounded by [`MAX_DEPTH`].

use super::word::WordBuf;
use super::{err, ParseError, Redirect, RedirectOp, Word};

/// Deeper nesting of substitutions, quotes, parameter expansions and arithmetic (counted together)
/// is refused: every recursive step of the lexer counts, so no input can exhaust the stack.
const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Semi,
    Amp,
    AndIf,
    OrIf,
    Pipe,
    Open,
    Close,
    Newline,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    Op(Op),
    Redirect(Redirect),
}

struct PendingHereDoc {
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
}

pub(super) struct Lexer {
    pub(super) chars: Vec<char>,
    pub(super) pos: usize,
    pub(super) substitutions: usize,
    pub(super) late_evaluations: usize,
    pending_heredocs: Vec<PendingHereDoc>,
    pub(super) depth: usize,
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl Lexer {
    /// A lexer at the start of `src`.
    pub(super) fn new(src: &str) -> Lexer {
        Lexer {
            chars: src.chars().collect(),
            pos: 0,
            substitutions: 0,
            late_evaluations: 0,
            pending_heredocs: Vec::new(),
            depth: 0,
        }
    }

    pub(super) fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    pub(super) fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
    }

    /// Tokens until the end, or (when `nested`) until the `)` closing a substitution.
    pub(super) fn tokens(&mut self, nested: bool) -> Result<Vec<Token>, ParseError> {
        self.enter()?;
        let result = self.tokens_inner(nested);
        self.depth -= 1;
        result
    }

    /// One more level of nesting; an error past [`MAX_DEPTH`].
    pub(super) fn enter(&mut self) -> Result<(), ParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err("nested too deeply");
        }
        Ok(())
    }

    fn tokens_inner(&mut self, nested: bool) -> Result<Vec<Token>, ParseError> {
        let mut out = Vec::new();
        let mut parens = 0usize;
        loop {
            let Some(c) = self.peek() else {
                if nested {
                    return err("an unclosed $( or <(");
                }
                break;
            };
            match c {
                ' ' | '\t' => self.pos += 1,
                '\\' if self.peek_at(1) == Some('\n') => self.pos += 2,
                '\n' => {
                    self.pos += 1;
                    out.push(Token::Op(Op::Newline));
                    self.read_heredoc_bodies()?;
                }
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                ';' => {
                    if self.peek_at(1) == Some(';') || self.peek_at(1) == Some('&') {
                        return err("case clauses are not supported");
                    }
                    self.pos += 1;
                    out.push(Token::Op(Op::Semi));
                }
                '&' => {
                    if self.peek_at(1) == Some('&') {
                        self.pos += 2;
                        out.push(Token::Op(Op::AndIf));
                    } else if self.peek_at(1) == Some('>') {
                        // `&>` and `&>>`: stdout and stderr to a file.
                        self.pos += 2;
                        if self.peek() == Some('>') {
                            self.pos += 1;
                        }
                        let target = self.redirect_target()?;
                        out.push(Token::Redirect(Redirect {
                            fd: None,
                            op: RedirectOp::WriteBoth,
                            target,
                        }));
                    } else {
                        self.pos += 1;
                        out.push(Token::Op(Op::Amp));
                    }
                }
                '|' => {
                    if self.peek_at(1) == Some('|') {
                        self.pos += 2;
                        out.push(Token::Op(Op::OrIf));
                    } else {
                        // `|&` pipes stderr too; the same for classifying.
                        self.pos += if self.peek_at(1) == Some('&') { 2 } else { 1 };
                        out.push(Token::Op(Op::Pipe));
                    }
                }
                '(' => {
                    if self.peek_at(1) == Some('(') {
                        // `((…))`: an arithmetic command (or nested subshells; either way asked).
                        self.late_evaluations += 1;
                    }
                    self.pos += 1;
                    parens += 1;
                    out.push(Token::Op(Op::Open));
                }
                ')' => {
                    if nested && parens == 0 {
                        self.pos += 1;
                        break;
                    }
                    self.pos += 1;
                    parens = parens.saturating_sub(1);
                    out.push(Token::Op(Op::Close));
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    self.substitutions += 1;
                    self.tokens(true)?;
                    let mut w = WordBuf::default();
                    w.expansion("/dev/fd/63");
                    out.extend(w.finish().map(Token::Word));
                }
                '<' | '>' => out.push(Token::Redirect(self.redirect(None)?)),
                _ => {
                    let word = self.word()?;
                    match word {
                        Some(w) => {
                            // An unquoted run of digits right before `<` or `>` names a descriptor.
                            let digits = !w.quoted
                                && !w.dynamic
                                && !w.text.is_empty()
                                && w.text.chars().all(|c| c.is_ascii_digit());
                            if digits && matches!(self.peek(), Some('<' | '>')) {
                                let fd = w.text.parse().ok();
                                out.push(Token::Redirect(self.redirect(fd)?));
                            } else {
                                out.push(Token::Word(w));
                            }
                        }
                        None => return err(format!("unexpected character {c:?}")),
                    }
                }
            }
        }
        Ok(out)
    }

    /// A redirection operator at `pos`, then its target.
    fn redirect(&mut self, fd: Option<u32>) -> Result<Redirect, ParseError> {
        let op = if self.starts_with("<<<") {
            self.pos += 3;
            RedirectOp::HereString
        } else if self.starts_with("<<") {
            self.pos += 2;
            let strip_tabs = self.peek() == Some('-');
            if strip_tabs {
                self.pos += 1;
            }
            let target = self.redirect_target()?;
            self.pending_heredocs.push(PendingHereDoc {
                delimiter: target.text.clone(),
                strip_tabs,
                expands: !target.quoted,
            });
            return Ok(Redirect {
                fd,
                op: RedirectOp::HereDoc,
                target,
            });
        } else if self.starts_with("<>") {
            self.pos += 2;
            RedirectOp::ReadWrite
        } else if self.starts_with("<&") || self.starts_with(">&") {
            let reads = self.peek() == Some('<');
            self.pos += 2;
            let target = self.redirect_target()?;
            let numeric = !target.dynamic
                && (target.text == "-" || target.text.chars().all(|c| c.is_ascii_digit()));
            let op = if numeric {
                RedirectOp::Duplicate
            } else if reads {
                RedirectOp::Read
            } else {
                // `>&file` sends stdout and stderr to the file.
                RedirectOp::WriteBoth
            };
            return Ok(Redirect { fd, op, target });
        } else if self.starts_with(">>") {
            self.pos += 2;
            RedirectOp::Append
        } else if self.starts_with(">|") {
            self.pos += 2;
            RedirectOp::Write
        } else if self.starts_with(">") {
            self.pos += 1;
            RedirectOp::Write
        } else {
            self.pos += 1;
            RedirectOp::Read
        };
        let target = self.redirect_target()?;
        Ok(Redirect { fd, op, target })
    }

    fn redirect_target(&mut self) -> Result<Word, ParseError> {
        while self.peek().is_some_and(is_blank) {
            self.pos += 1;
        }
        match self.word()? {
            Some(w) => Ok(w),
            None => err("a redirection without a target"),
        }
    }

    /// After a newline: the bodies of the here-documents opened on that line.
    fn read_heredoc_bodies(&mut self) -> Result<(), ParseError> {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for doc in pending {
            let mut body = String::new();
            loop {
                if self.peek().is_none() {
                    // bash accepts a document ended by the end of input (with a warning).
                    break;
                }
                let start = self.pos;
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
                let line: String = self.chars[start..self.pos].iter().collect();
                if self.peek() == Some('\n') {
                    self.pos += 1;
                }
                let compared = if doc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if compared == doc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if doc.expands {
                self.substitutions += count_substitutions(&body);
                if body.contains("$((") || body.contains("$[") || body.contains("${") {
                    self.late_evaluations += 1;
                }
            }
        }
        Ok(())
    }
}

/// Substitutions in an expanding here-document body (a `$(` or a backquote counts; escaped ones
/// are counted too, to stay on the safe side).
fn count_substitutions(body: &str) -> usize {
    body.matches("$(").count() + body.matches('`').count()
}
