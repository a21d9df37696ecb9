//! A reader of POSIX shell (bash) command lines, just deep enough to classify them: quotes,
//! escapes, `$'…'`, expansions, command and process substitution, arithmetic, redirections,
//! here-documents, comments, lists, pipelines, groups, subshells, loops and function definitions.
//!
//! It never runs or expands anything. What it cannot follow (`case`, an unclosed quote, a stray
//! `)`) is a [`ParseError`], which the classifier treats as unknown. It is conservative where bash
//! would decide at run time: a word whose value is computed (`$x`, `"${x}"`, an unquoted glob or
//! brace expansion) is marked [`Word::dynamic`], and every command substitution anywhere (also
//! inside double quotes, parameter expansions and unquoted here-documents) is counted.
//!
//! This file holds the public surface — [`parse`] and the types it returns, which the risk rules
//! read — and the work is split by stage, each in its own file:
//!
//! - `lex.rs`: the `Lexer` turning text into tokens — operators, redirections (with the
//!   descriptor number before them), here-document bodies and comments; the nesting limit.
//! - `word.rs`: one word and its quoting — backslashes, single and double quotes, `$'…'` — and
//!   what makes a word dynamic (unquoted globs and brace expansions).
//! - `expand.rs`: what follows a `$` or a backquote — parameters, command substitution,
//!   arithmetic — counting substitutions and the expansions that evaluate code late.
//! - `parse.rs`: the `Parser` turning tokens into simple commands — lists, pipelines,
//!   groups, subshells, `if`, loops, function definitions and the recursive calls in them.
//! - `tests.rs`: the unit tests.

mod expand;
mod lex;
mod parse;
#[cfg(test)]
mod tests;
mod word;

use std::fmt;

use lex::Lexer;
use parse::Parser;

/// Longer input is refused (unknown) rather than read.
const MAX_INPUT: usize = 64 * 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

fn err<T>(what: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError(what.into()))
}

/// One word after quote removal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The text with quotes removed and escapes resolved; expansions are kept as written (`$x`).
    pub text: String,
    /// Its value is only known at run time (an expansion, an unquoted glob or brace expansion).
    pub dynamic: bool,
    /// Some part of it was quoted or escaped.
    pub quoted: bool,
    /// How many leading characters are plain unquoted literals (an assignment's name must be).
    literal_prefix: usize,
}

impl Word {
    /// A word cut out of another (an option's value): no assignment, no `~`.
    pub fn part(text: &str, dynamic: bool) -> Word {
        Word {
            text: text.to_owned(),
            dynamic,
            quoted: false,
            literal_prefix: 0,
        }
    }

    /// `NAME=value` (also `NAME+=value`, `NAME[i]=value`) with the name unquoted: the variable's
    /// name, or `None`.
    pub fn assignment_name(&self) -> Option<&str> {
        let eq = self.text.find('=')?;
        if self.text[..eq].chars().count() >= self.literal_prefix {
            return None;
        }
        let name = self.text[..eq].trim_end_matches('+');
        let name = match name.find('[') {
            Some(i) if name.ends_with(']') => &name[..i],
            Some(_) => return None,
            None => name,
        };
        let mut chars = name.chars();
        let first = chars.next()?;
        if !(first.is_ascii_alphabetic() || first == '_')
            || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return None;
        }
        Some(name)
    }

    /// An unquoted `~` or `~/…` (the sandbox's home, which is the workspace).
    pub fn starts_with_home(&self) -> bool {
        self.literal_prefix > 0 && (self.text == "~" || self.text.starts_with("~/"))
    }

    /// A plain unquoted word equal to `s` (reserved words must be unquoted).
    fn is_bare(&self, s: &str) -> bool {
        !self.quoted && !self.dynamic && self.text == s
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`, `>|`
    Write,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `&>`, `>&file`, `&>>`
    WriteBoth,
    /// `<&n`, `>&n`, `<&-`
    Duplicate,
    /// `<<`, `<<-`
    HereDoc,
    /// `<<<`
    HereString,
}

impl RedirectOp {
    /// Whether it opens its target for writing.
    pub fn writes(self) -> bool {
        matches!(
            self,
            RedirectOp::Write | RedirectOp::Append | RedirectOp::ReadWrite | RedirectOp::WriteBoth
        )
    }

    /// Whether it gives the command's standard input.
    pub fn feeds_stdin(self, fd: Option<u32>) -> bool {
        matches!(fd, None | Some(0))
            && matches!(
                self,
                RedirectOp::Read | RedirectOp::HereDoc | RedirectOp::HereString
            )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    pub fd: Option<u32>,
    pub op: RedirectOp,
    /// The file, fd number, here-string or here-document delimiter.
    pub target: Word,
}

/// One simple command with what surrounds it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    /// `NAME=value` words before the command name.
    pub assignments: Vec<Word>,
    /// The command name and its arguments.
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Its standard input comes from a pipe (it, or a group around it, follows `|`).
    pub piped: bool,
    /// It calls a function from inside that function's own body (the fork-bomb shape).
    pub recursive_call: bool,
}

impl Command {
    fn is_empty(&self) -> bool {
        self.assignments.is_empty() && self.words.is_empty() && self.redirects.is_empty()
    }

    /// Whether standard input is a here-document, here-string or file.
    pub fn stdin_redirected(&self) -> bool {
        self.redirects.iter().any(|r| r.op.feeds_stdin(r.fd))
    }
}

/// A parsed command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command, in order (also those inside groups, loops and function bodies).
    pub commands: Vec<Command>,
    /// Command substitutions `$(…)`, `` `…` `` and process substitutions `<(…)`, `>(…)` anywhere.
    pub substitutions: usize,
    /// Expansions that evaluate a variable's value as code at run time: arithmetic with a name in
    /// it (`$((x))`, `$[x]`, `((…))`; `x='a[$(cmd)]'` runs `cmd`), `${x@P}`-style transformations,
    /// indirection `${!x}`, computed subscripts and substring offsets.
    pub late_evaluations: usize,
}

/// Parses a command line.
pub fn parse(src: &str) -> Result<Script, ParseError> {
    if src.len() > MAX_INPUT {
        return err(format!("longer than {MAX_INPUT} bytes"));
    }
    let mut lexer = Lexer::new(src);
    let tokens = lexer.tokens(false)?;
    let commands = Parser::default().run(tokens)?;
    Ok(Script {
        commands,
        substitutions: lexer.substitutions,
        late_evaluations: lexer.late_evaluations,
    })
}
