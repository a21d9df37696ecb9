//! pythonic: `[f(a=1), g(b="x")]` with Python literals (Llama 3.2/4), as the whole reply (from a
//! reply-start `[`) or inside `<|python_start|>…<|python_end|>`.

use serde_json::{Map, Number, Value};

use super::engine::{Action, Piece, SectionCtx, Spec, SpecBuilder};
use crate::parser::{ParseProblem, PythonicProblem};

pub(super) fn spec(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[("<|python_end|>", false)]);
    b.open("<|python_start|>", Action::Section(set));
    // As for llama3-json, a repeated `<|python_tag|>` ends the section and opens the next.
    let tag = b.closers(&[
        ("<|eom_id|>", false),
        ("<|eot_id|>", false),
        ("<|python_tag|>", true),
    ]);
    b.open("<|python_tag|>", Action::Section(tag));
    b.build(Some(b'['), section, None)
}

fn section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    let reply = ctx.opener.is_empty();
    let mut r = Reader::new(body);
    r.space();
    let calls = match r.call_list() {
        Ok(calls) => calls,
        Err(Fail { at_end, reason }) => {
            // A bare list that is no call list is just text; a cut-off one is reported.
            if !reply || (at_end && !ctx.closed) {
                out.push(ctx.error(body, reason, at_end));
            }
            return;
        }
    };
    let mut pieces = Vec::new();
    for (name, args) in calls {
        match ctx.check_name(&name) {
            Ok(()) => pieces.push(Piece::Call {
                name,
                arguments: Value::Object(args).to_string(),
            }),
            Err(_) if reply => return,
            Err(reason) => pieces.push(ctx.error(body, reason, false)),
        }
    }
    out.extend(pieces);
    if r.pos < body.len() {
        out.push(Piece::Text(body[r.pos..].to_owned()));
    }
}

/// The JSON value of a Python literal (`None`, `True`, `'str'`, `(1, 2)`, `{'a': [1]}` …).
pub(crate) fn python_literal(text: &str) -> Option<Value> {
    let mut r = Reader::new(text);
    r.space();
    let v = r.value().ok()?;
    r.space();
    (r.pos == text.len()).then_some(v)
}

struct Fail {
    /// The text ended before the construct did.
    at_end: bool,
    reason: ParseProblem,
}

type Read<T> = Result<T, Fail>;

struct Reader<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(s: &'a str) -> Self {
        Reader { s, pos: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn fail<T>(&self, problem: PythonicProblem) -> Read<T> {
        Err(Fail {
            at_end: self.pos >= self.s.len(),
            reason: ParseProblem::Pythonic {
                problem,
                position: self.s[..self.pos.min(self.s.len())].chars().count(),
            },
        })
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Read<()> {
        self.space();
        if self.eat(b) {
            Ok(())
        } else {
            self.fail(PythonicProblem::ExpectedChar(b as char))
        }
    }

    /// `[call, call, …]`
    fn call_list(&mut self) -> Read<Vec<(String, Map<String, Value>)>> {
        self.expect(b'[')?;
        let mut calls = Vec::new();
        loop {
            self.space();
            if self.eat(b']') {
                break;
            }
            if !calls.is_empty() {
                self.expect(b',')?;
                self.space();
                if self.eat(b']') {
                    break;
                }
            }
            calls.push(self.call()?);
        }
        if calls.is_empty() {
            return self.fail(PythonicProblem::EmptyList);
        }
        Ok(calls)
    }

    /// `name(key=value, …)`
    fn call(&mut self) -> Read<(String, Map<String, Value>)> {
        self.space();
        let name = self.ident(true)?;
        self.expect(b'(')?;
        let mut args = Map::new();
        loop {
            self.space();
            if self.eat(b')') {
                break;
            }
            if !args.is_empty() {
                self.expect(b',')?;
                self.space();
                if self.eat(b')') {
                    break;
                }
            }
            let key = self.ident(false)?;
            self.expect(b'=')?;
            self.space();
            let value = self.value()?;
            if args.insert(key.clone(), value).is_some() {
                return self.fail(PythonicProblem::DuplicateArgument(key.to_string()));
            }
        }
        Ok((name, args))
    }

    fn ident(&mut self, dotted: bool) -> Read<String> {
        let start = self.pos;
        while let Some(b) = self.peek() {
            let ok = b.is_ascii_alphanumeric() || b == b'_' || (dotted && (b == b'.' || b == b'-'));
            if !ok || (self.pos == start && b.is_ascii_digit()) {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return self.fail(PythonicProblem::ExpectedName);
        }
        Ok(self.s[start..self.pos].to_owned())
    }

    fn value(&mut self) -> Read<Value> {
        match self.peek() {
            None => self.fail(PythonicProblem::ExpectedValue),
            Some(b'"' | b'\'') => self.string().map(Value::String),
            Some(b'[') => self.sequence(b'[', b']'),
            Some(b'(') => self.sequence(b'(', b')'),
            Some(b'{') => self.dict(),
            Some(b) if b == b'-' || b == b'+' || b == b'.' || b.is_ascii_digit() => self.number(),
            Some(_) => {
                let word = self.ident(false)?;
                match word.as_str() {
                    "True" | "true" => Ok(Value::Bool(true)),
                    "False" | "false" => Ok(Value::Bool(false)),
                    "None" | "null" => Ok(Value::Null),
                    _ => self.fail(PythonicProblem::UnknownName(word.to_string())),
                }
            }
        }
    }

    fn sequence(&mut self, open: u8, close: u8) -> Read<Value> {
        self.expect(open)?;
        let mut items = Vec::new();
        loop {
            self.space();
            if self.eat(close) {
                return Ok(Value::Array(items));
            }
            if !items.is_empty() {
                self.expect(b',')?;
                self.space();
                if self.eat(close) {
                    return Ok(Value::Array(items));
                }
            }
            items.push(self.value()?);
        }
    }

    fn dict(&mut self) -> Read<Value> {
        self.expect(b'{')?;
        let mut map = Map::new();
        loop {
            self.space();
            if self.eat(b'}') {
                return Ok(Value::Object(map));
            }
            if !map.is_empty() {
                self.expect(b',')?;
                self.space();
                if self.eat(b'}') {
                    return Ok(Value::Object(map));
                }
            }
            let key = match self.value()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.expect(b':')?;
            self.space();
            let value = self.value()?;
            map.insert(key, value);
        }
    }

    fn number(&mut self) -> Read<Value> {
        let start = self.pos;
        while self.peek().is_some_and(|b| {
            b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'_')
        }) {
            self.pos += 1;
        }
        let text: String = self.s[start..self.pos]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        if let Ok(n) = text.parse::<i64>() {
            return Ok(Value::Number(n.into()));
        }
        match text.parse::<f64>().ok().and_then(Number::from_f64) {
            Some(n) => Ok(Value::Number(n)),
            None if self.pos >= self.s.len() => self.fail(PythonicProblem::NumberCutOff),
            None => self.fail(PythonicProblem::BadNumber),
        }
    }

    /// A Python string literal, single or double quoted (triple quotes too), with escapes.
    fn string(&mut self) -> Read<String> {
        let Some(quote) = self.peek() else {
            return self.fail(PythonicProblem::ExpectedString);
        };
        let triple = self.s[self.pos..].starts_with(if quote == b'"' { "\"\"\"" } else { "'''" });
        self.pos += if triple { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let Some(c) = self.s[self.pos..].chars().next() else {
                return self.fail(PythonicProblem::UnterminatedString);
            };
            if c as u32 == u32::from(quote) {
                if !triple {
                    self.pos += 1;
                    return Ok(out);
                }
                let q = if quote == b'"' { "\"\"\"" } else { "'''" };
                if self.s[self.pos..].starts_with(q) {
                    self.pos += 3;
                    return Ok(out);
                }
            }
            if c == '\n' && !triple {
                return self.fail(PythonicProblem::NewlineInString);
            }
            self.pos += c.len_utf8();
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.s[self.pos..].chars().next() else {
                return self.fail(PythonicProblem::UnterminatedString);
            };
            self.pos += e.len_utf8();
            match e {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' => out.push(e),
                '\n' => {}
                'x' | 'u' | 'U' => {
                    let len = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let hex = self.s.get(self.pos..self.pos + len);
                    let ch = hex
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32);
                    match ch {
                        Some(ch) => {
                            out.push(ch);
                            self.pos += len;
                        }
                        None => return self.fail(PythonicProblem::BadEscape),
                    }
                }
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_become_json() {
        let v = python_literal("{'a': [1, 2.5, None], \"b\": (True, 'x\\'y'), 'c': -3}");
        assert_eq!(
            v.map(|v| v.to_string()),
            Some(r#"{"a":[1,2.5,null],"b":[true,"x'y"],"c":-3}"#.to_owned())
        );
        assert!(python_literal("[1, 2").is_none());
        assert!(python_literal("open('x')").is_none());
    }
}
