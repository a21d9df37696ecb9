//! Expansions: what follows a `$` or a backquote, skipped over (never evaluated) and counted.
//!
//! `$name`, `${…}`, `$(…)`, `` `…` ``, `$((…))` and `$[…]` become a placeholder in the word
//! (which makes it dynamic). Every command substitution adds to [`super::Script::substitutions`];
//! arithmetic naming a variable and `${…}` forms that evaluate at run time (indirection,
//! transformations, computed subscripts and offsets) add to
//! [`super::Script::late_evaluations`].

use super::lex::Lexer;
use super::word::WordBuf;
use super::{err, ParseError};

impl Lexer {
    /// At a `$`.
    pub(super) fn dollar(
        &mut self,
        w: &mut WordBuf,
        in_double_quotes: bool,
    ) -> Result<(), ParseError> {
        self.enter()?;
        let result = self.dollar_inner(w, in_double_quotes);
        self.depth -= 1;
        result
    }

    fn dollar_inner(&mut self, w: &mut WordBuf, in_double_quotes: bool) -> Result<(), ParseError> {
        self.pos += 1;
        match self.peek() {
            Some('(') if self.peek_at(1) == Some('(') => {
                self.pos += 2;
                let start = self.pos;
                self.arithmetic()?;
                if arithmetic_names_variables(&self.chars[start..self.pos]) {
                    self.late_evaluations += 1;
                }
                w.expansion("$((…))");
            }
            Some('(') => {
                self.pos += 1;
                self.substitutions += 1;
                self.tokens(true)?;
                w.expansion("$(…)");
            }
            Some('{') => {
                self.pos += 1;
                let start = self.pos;
                self.braced_parameter()?;
                let inner: String = self.chars[start..self.pos.saturating_sub(1)]
                    .iter()
                    .collect();
                if parameter_evaluates(&inner) {
                    self.late_evaluations += 1;
                }
                w.expansion(&format!("${{{inner}}}"));
            }
            Some('[') => {
                self.pos += 1;
                let start = self.pos;
                self.skip_until(']')?;
                if arithmetic_names_variables(&self.chars[start..self.pos]) {
                    self.late_evaluations += 1;
                }
                w.expansion("$[…]");
            }
            Some('\'') if !in_double_quotes => {
                self.pos += 1;
                self.ansi_c(w)?;
            }
            Some('"') if !in_double_quotes => {
                self.pos += 1;
                self.double_quoted(w)?;
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                {
                    self.pos += 1;
                }
                let name: String = self.chars[start..self.pos].iter().collect();
                w.expansion(&format!("${name}"));
            }
            Some(c) if c.is_ascii_digit() || "@*#?-$!".contains(c) => {
                self.pos += 1;
                w.expansion(&format!("${c}"));
            }
            _ => {
                if in_double_quotes {
                    w.quoted('$');
                } else {
                    w.literal('$');
                }
            }
        }
        Ok(())
    }

    /// After `` ` ``: up to the closing one (`\`` escapes it).
    pub(super) fn backticks(&mut self) -> Result<(), ParseError> {
        self.substitutions += 1;
        loop {
            match self.peek() {
                None => return err("an unclosed backquote"),
                Some('\\') => self.pos += 2,
                Some('`') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// After `$((`: up to the matching `))`, noting substitutions inside.
    fn arithmetic(&mut self) -> Result<(), ParseError> {
        self.enter()?;
        let result = self.arithmetic_inner();
        self.depth -= 1;
        result
    }

    fn arithmetic_inner(&mut self) -> Result<(), ParseError> {
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return err("an unclosed $(("),
                Some('(') => {
                    self.pos += 1;
                    depth += 1;
                }
                Some(')') if depth == 0 => {
                    if self.peek_at(1) == Some(')') {
                        self.pos += 2;
                        return Ok(());
                    }
                    // `$((a); (b))` is a command substitution of subshells, not arithmetic.
                    return err("an ambiguous $((");
                }
                Some(')') => {
                    self.pos += 1;
                    depth -= 1;
                }
                Some('$') if self.peek_at(1) == Some('(') => {
                    self.pos += 2;
                    if self.peek() == Some('(') {
                        self.pos += 1;
                        self.arithmetic()?;
                    } else {
                        self.substitutions += 1;
                        self.tokens(true)?;
                    }
                }
                Some('`') => {
                    self.pos += 1;
                    self.backticks()?;
                }
                Some(_) => self.pos += 1,
            }
        }
    }

    /// After `${`: up to the matching `}`, with quotes and nested expansions inside.
    fn braced_parameter(&mut self) -> Result<(), ParseError> {
        self.enter()?;
        let result = self.braced_parameter_inner();
        self.depth -= 1;
        result
    }

    fn braced_parameter_inner(&mut self) -> Result<(), ParseError> {
        let mut scratch = WordBuf::default();
        loop {
            match self.peek() {
                None => return err("an unclosed ${"),
                Some('}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => self.pos += 2,
                Some('\'') => {
                    self.pos += 1;
                    self.skip_until('\'')?;
                }
                Some('"') => {
                    self.pos += 1;
                    self.double_quoted(&mut scratch)?;
                }
                Some('`') => {
                    self.pos += 1;
                    self.backticks()?;
                }
                Some('$') => self.dollar(&mut scratch, false)?,
                Some(_) => self.pos += 1,
            }
        }
    }

    fn skip_until(&mut self, end: char) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                None => return err(format!("an unclosed {end:?}")),
                Some(c) => {
                    self.pos += 1;
                    if c == end {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Arithmetic text naming a variable (or anything but digits, operators and blanks): bash
/// evaluates a variable's value as an expression, and `a[$(cmd)]` in it runs `cmd`.
fn arithmetic_names_variables(text: &[char]) -> bool {
    text.iter()
        .any(|c| c.is_alphabetic() || matches!(c, '_' | '$' | '`' | '[' | '\\' | '\'' | '"'))
}

/// The inside of `${…}` evaluates something at run time beyond plain expansion: `${!x}`
/// (indirection), `${x@P}` (transformations), `${a[i]}` with a computed subscript, `${x:o:l}`
/// with a computed offset or length.
fn parameter_evaluates(inner: &str) -> bool {
    if inner.starts_with('!') {
        return true;
    }
    let body = inner
        .strip_prefix('#')
        .filter(|b| !b.is_empty())
        .unwrap_or(inner);
    let name_len = match body.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => body
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(body.len()),
        Some(c) if c.is_ascii_digit() => body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len()),
        Some(c) if "@*#?-$!".contains(c) => c.len_utf8(),
        _ => return true,
    };
    let mut rest = &body[name_len..];
    if let Some(after) = rest.strip_prefix('[') {
        let Some(end) = after.find(']') else {
            return true;
        };
        let subscript = &after[..end];
        let plain = subscript == "@"
            || subscript == "*"
            || (!subscript.is_empty() && subscript.chars().all(|c| c.is_ascii_digit()));
        if !plain {
            return true;
        }
        rest = &after[end + 1..];
    }
    if rest.starts_with('@') {
        return true;
    }
    if let Some(after) = rest.strip_prefix(':') {
        if !after.starts_with(['-', '=', '?', '+']) {
            let arithmetic: Vec<char> = after.chars().collect();
            return arithmetic_names_variables(&arithmetic);
        }
    }
    false
}
