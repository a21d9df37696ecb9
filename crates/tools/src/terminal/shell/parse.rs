//! The parser: tokens into the flat list of simple [`Command`]s.
//!
//! It follows the structure only as far as classifying needs: lists and pipelines (which commands
//! read a pipe), `{ … }` groups, subshells, `if`/`fi`, `while`/`until`/`for`/`select` loops and
//! function definitions (a call to the function inside its own body is marked). Reserved words
//! count only unquoted and in command position; `case` and `coproc` are refused.

use super::lex::{Op, Token};
use super::{err, Command, ParseError, Word};

/// A group the parser is inside.
struct Group {
    kind: GroupKind,
    /// Its input is a pipe.
    piped: bool,
    /// The body of this function.
    function: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GroupKind {
    Brace,
    Paren,
    If,
    Loop,
}

#[derive(Default)]
pub(super) struct Parser {
    commands: Vec<Command>,
    current: Command,
    groups: Vec<Group>,
    pipe_pending: bool,
    /// A `for`/`select` header is being read: its words are not commands.
    in_header: bool,
    expect_function_name: bool,
    pending_function: Option<String>,
    /// The last token was an operator that needs a command after it.
    needs_command: bool,
    /// The last thing read closed a group (`} | x`, `done && y` are fine).
    closed_group: bool,
}

impl Parser {
    pub(super) fn run(mut self, tokens: Vec<Token>) -> Result<Vec<Command>, ParseError> {
        let mut tokens = tokens.into_iter().peekable();
        while let Some(token) = tokens.next() {
            let closing = matches!(&token, Token::Op(Op::Close))
                || matches!(&token, Token::Word(w) if self.at_command_position() && !self.in_header && (w.is_bare("}") || w.is_bare("fi") || w.is_bare("done")));
            match token {
                Token::Word(w) => self.word(w)?,
                Token::Redirect(r) => {
                    self.needs_command = false;
                    self.current.redirects.push(r);
                }
                Token::Op(Op::Open) => {
                    let name = match self.current.words.as_slice() {
                        [one] if self.current.assignments.is_empty() && !one.dynamic => {
                            Some(one.text.clone())
                        }
                        _ => None,
                    };
                    // `function f() {…}`: the name was taken already.
                    if self.pending_function.is_some()
                        && self.current.is_empty()
                        && tokens.peek() == Some(&Token::Op(Op::Close))
                    {
                        tokens.next();
                        continue;
                    }
                    if let (Some(name), Some(Token::Op(Op::Close))) = (name, tokens.peek()) {
                        tokens.next();
                        self.current = Command::default();
                        self.pending_function = Some(name);
                        continue;
                    }
                    if !self.current.is_empty() {
                        return err("a ( in the middle of a command");
                    }
                    self.open(GroupKind::Paren);
                }
                Token::Op(Op::Close) => {
                    self.finish()?;
                    self.close(GroupKind::Paren)?;
                }
                Token::Op(Op::Pipe) => {
                    if self.current.is_empty() && !self.closed_group {
                        return err("a | without a command before it");
                    }
                    self.finish()?;
                    self.pipe_pending = true;
                    self.needs_command = true;
                }
                Token::Op(op @ (Op::AndIf | Op::OrIf)) => {
                    if self.current.is_empty() && !self.closed_group {
                        return err(format!("{op:?} without a command before it"));
                    }
                    self.finish()?;
                    self.pipe_pending = false;
                    self.needs_command = true;
                }
                Token::Op(op @ (Op::Semi | Op::Amp | Op::Newline)) => {
                    if self.needs_command {
                        // `a &&` or `a |` followed by a newline continues on the next line.
                        if op == Op::Newline {
                            continue;
                        }
                        return err("an operator without a command after it");
                    }
                    if self.current.is_empty()
                        && !self.closed_group
                        && op != Op::Newline
                        && !self.in_header
                    {
                        return err(format!("{op:?} without a command before it"));
                    }
                    self.finish()?;
                    self.pipe_pending = false;
                    self.in_header = false;
                }
            }
            self.closed_group = closing;
        }
        if self.needs_command {
            return err("the command line ends after an operator");
        }
        self.finish()?;
        if !self.groups.is_empty() {
            return err("an unclosed group, loop or if");
        }
        Ok(self.commands)
    }

    fn at_command_position(&self) -> bool {
        self.current.words.is_empty() && self.current.assignments.is_empty()
    }

    fn word(&mut self, w: Word) -> Result<(), ParseError> {
        self.needs_command = false;
        if self.expect_function_name {
            self.expect_function_name = false;
            self.pending_function = Some(w.text);
            return Ok(());
        }
        if self.in_header {
            if w.is_bare("do") {
                self.in_header = false;
            }
            return Ok(());
        }
        if self.at_command_position() {
            let reserved = [
                "{", "}", "if", "then", "else", "elif", "fi", "while", "until", "do", "done",
                "for", "select", "case", "esac", "function", "!", "coproc",
            ]
            .into_iter()
            .find(|r| w.is_bare(r));
            match reserved {
                Some("{") => {
                    self.open(GroupKind::Brace);
                    return Ok(());
                }
                Some("}") => {
                    self.finish()?;
                    return self.close(GroupKind::Brace);
                }
                Some("if") => {
                    self.open(GroupKind::If);
                    return Ok(());
                }
                Some("fi") => {
                    self.finish()?;
                    return self.close(GroupKind::If);
                }
                Some("while" | "until") => {
                    self.open(GroupKind::Loop);
                    return Ok(());
                }
                Some("for" | "select") => {
                    self.open(GroupKind::Loop);
                    self.in_header = true;
                    return Ok(());
                }
                Some("done") => {
                    self.finish()?;
                    return self.close(GroupKind::Loop);
                }
                Some("then" | "else" | "elif" | "do" | "!") => return Ok(()),
                Some("function") => {
                    self.expect_function_name = true;
                    return Ok(());
                }
                Some(other) => return err(format!("`{other}` is not supported")),
                None => {}
            }
        }
        // `A=1 B=2 cmd`: every assignment before the command name.
        if self.current.words.is_empty() && w.assignment_name().is_some() {
            self.current.assignments.push(w);
            return Ok(());
        }
        self.current.words.push(w);
        Ok(())
    }

    fn open(&mut self, kind: GroupKind) {
        let piped = std::mem::take(&mut self.pipe_pending);
        self.groups.push(Group {
            kind,
            piped,
            function: self.pending_function.take(),
        });
    }

    fn close(&mut self, kind: GroupKind) -> Result<(), ParseError> {
        match self.groups.pop() {
            Some(g) if g.kind == kind => Ok(()),
            _ => err(format!("an unmatched end of {kind:?}")),
        }
    }

    fn finish(&mut self) -> Result<(), ParseError> {
        let mut command = std::mem::take(&mut self.current);
        if command.is_empty() {
            return Ok(());
        }
        command.piped =
            std::mem::take(&mut self.pipe_pending) || self.groups.iter().any(|g| g.piped);
        if let Some(name) = command.words.first() {
            command.recursive_call = self
                .groups
                .iter()
                .any(|g| g.function.as_deref() == Some(name.text.as_str()));
        }
        self.commands.push(command);
        Ok(())
    }
}
