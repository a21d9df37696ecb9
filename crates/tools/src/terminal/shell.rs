//! A reader of POSIX shell (bash) command lines, just deep enough to classify them: quotes,
//! escapes, `$'…'`, expansions, command and process substitution, arithmetic, redirections,
//! here-documents, comments, lists, pipelines, groups, subshells, loops and function definitions.
//!
//! It never runs or expands anything. What it cannot follow (`case`, an unclosed quote, a stray
//! `)`) is a [`ParseError`], which the classifier treats as unknown. It is conservative where bash
//! would decide at run time: a word whose value is computed (`$x`, `"${x}"`, an unquoted glob or
//! brace expansion) is marked [`Word::dynamic`], and every command substitution anywhere (also
//! inside double quotes, parameter expansions and unquoted here-documents) is counted.

use std::fmt;

/// Longer input is refused (unknown) rather than read.
const MAX_INPUT: usize = 64 * 1024;
/// Deeper nesting of substitutions, quotes, parameter expansions and arithmetic (counted together)
/// is refused: every recursive step of the lexer counts, so no input can exhaust the stack.
const MAX_DEPTH: usize = 64;

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
    let mut lexer = Lexer {
        chars: src.chars().collect(),
        pos: 0,
        substitutions: 0,
        late_evaluations: 0,
        pending_heredocs: Vec::new(),
        depth: 0,
    };
    let tokens = lexer.tokens(false)?;
    let commands = Parser::default().run(tokens)?;
    Ok(Script {
        commands,
        substitutions: lexer.substitutions,
        late_evaluations: lexer.late_evaluations,
    })
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
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
enum Token {
    Word(Word),
    Op(Op),
    Redirect(Redirect),
}

struct PendingHereDoc {
    delimiter: String,
    strip_tabs: bool,
    expands: bool,
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
    substitutions: usize,
    late_evaluations: usize,
    pending_heredocs: Vec<PendingHereDoc>,
    depth: usize,
}

/// A word being read.
#[derive(Default)]
struct WordBuf {
    word: Word,
    started: bool,
    literal_broken: bool,
    /// The unquoted characters, quoted ones as NUL: where globs and brace expansions are looked for.
    unquoted: String,
}

impl WordBuf {
    fn literal(&mut self, c: char) {
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

    fn quoted(&mut self, c: char) {
        self.started = true;
        self.word.text.push(c);
        self.unquoted.push('\0');
        self.word.quoted = true;
        self.literal_broken = true;
    }

    fn mark_quoted(&mut self) {
        self.started = true;
        self.word.quoted = true;
        self.literal_broken = true;
    }

    fn expansion(&mut self, text: &str) {
        self.started = true;
        self.word.text.push_str(text);
        self.unquoted.push('\0');
        self.word.dynamic = true;
        self.literal_broken = true;
    }

    fn finish(mut self) -> Option<Word> {
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

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_meta(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>'
    )
}

impl Lexer {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn starts_with(&self, s: &str) -> bool {
        s.chars()
            .enumerate()
            .all(|(i, c)| self.peek_at(i) == Some(c))
    }

    /// Tokens until the end, or (when `nested`) until the `)` closing a substitution.
    fn tokens(&mut self, nested: bool) -> Result<Vec<Token>, ParseError> {
        self.enter()?;
        let result = self.tokens_inner(nested);
        self.depth -= 1;
        result
    }

    /// One more level of nesting; an error past [`MAX_DEPTH`].
    fn enter(&mut self) -> Result<(), ParseError> {
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

    /// One word at `pos` (`None` if a metacharacter or the end comes first).
    fn word(&mut self) -> Result<Option<Word>, ParseError> {
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
    fn double_quoted(&mut self, w: &mut WordBuf) -> Result<(), ParseError> {
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

    /// At a `$`.
    fn dollar(&mut self, w: &mut WordBuf, in_double_quotes: bool) -> Result<(), ParseError> {
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
    fn backticks(&mut self) -> Result<(), ParseError> {
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

    /// After `$'`: ANSI-C quoting, decoded (so `$'\x72\x6d'` reads as `rm`).
    fn ansi_c(&mut self, w: &mut WordBuf) -> Result<(), ParseError> {
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

/// Substitutions in an expanding here-document body (a `$(` or a backquote counts; escaped ones
/// are counted too, to stay on the safe side).
fn count_substitutions(body: &str) -> usize {
    body.matches("$(").count() + body.matches('`').count()
}

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
struct Parser {
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
    fn run(mut self, tokens: Vec<Token>) -> Result<Vec<Command>, ParseError> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn names(src: &str) -> Vec<Vec<String>> {
        parse(src)
            .unwrap()
            .commands
            .iter()
            .map(|c| c.words.iter().map(|w| w.text.clone()).collect())
            .collect()
    }

    #[test]
    fn quotes_and_escapes_are_removed() {
        assert_eq!(
            names(r#"echo "a b" 'c d' e\ f"#),
            vec![vec!["echo", "a b", "c d", "e f"]]
        );
        assert_eq!(names(r"\rm -rf x"), vec![vec!["rm", "-rf", "x"]]);
        assert_eq!(names(r"$'\x72\x6d' -rf x"), vec![vec!["rm", "-rf", "x"]]);
        assert_eq!(names("r''m x"), vec![vec!["rm", "x"]]);
    }

    #[test]
    fn lists_pipelines_and_groups_split_commands() {
        assert_eq!(
            names("ls; cat f && (cd x || pwd) | wc -l &"),
            vec![
                vec!["ls"],
                vec!["cat", "f"],
                vec!["cd", "x"],
                vec!["pwd"],
                vec!["wc", "-l"]
            ]
        );
        let s = parse("curl x | { cat; sh; }").unwrap();
        assert!(s.commands[1].piped && s.commands[2].piped);
        assert!(!s.commands[0].piped);
        let s = parse("for f in a b; do cat \"$f\"; done").unwrap();
        assert_eq!(s.commands.len(), 1);
        assert!(s.commands[0].words[1].dynamic);
    }

    #[test]
    fn substitutions_are_counted_everywhere() {
        for src in [
            "echo $(id)",
            "echo \"$(id)\"",
            "echo `id`",
            "echo ${x:-$(id)}",
            "diff <(ls) x",
            "cat <<EOF\n$(id)\nEOF",
            "echo $(( $(id) + 1 ))",
        ] {
            assert!(parse(src).unwrap().substitutions > 0, "{src}");
        }
        for src in ["echo '$(id)'", "cat <<'EOF'\n$(id)\nEOF", "echo $((1+2))"] {
            assert_eq!(parse(src).unwrap().substitutions, 0, "{src}");
        }
    }

    #[test]
    fn redirections_and_heredocs() {
        let s = parse("cat <<-EOF > out.txt 2>&1\n\tbody\n\tEOF\necho done").unwrap();
        assert_eq!(s.commands.len(), 2);
        let ops: Vec<RedirectOp> = s.commands[0].redirects.iter().map(|r| r.op).collect();
        assert_eq!(
            ops,
            vec![
                RedirectOp::HereDoc,
                RedirectOp::Write,
                RedirectOp::Duplicate
            ]
        );
        assert_eq!(s.commands[0].redirects[2].fd, Some(2));
        assert_eq!(s.commands[1].words[0].text, "echo");
    }

    #[test]
    fn functions_calling_themselves_are_marked() {
        let s = parse(":(){ :|:& };:").unwrap();
        assert!(s.commands.iter().any(|c| c.recursive_call));
        let s = parse("f() { echo hi; }; f").unwrap();
        assert!(s.commands.iter().all(|c| !c.recursive_call));
    }

    #[test]
    fn assignments_need_an_unquoted_name() {
        let s = parse("FOO=1 \"BAR\"=2 x").unwrap();
        assert_eq!(s.commands[0].assignments.len(), 1);
        assert_eq!(s.commands[0].words[0].text, "BAR=2");
    }

    #[test]
    fn broken_input_is_an_error() {
        for src in [
            "echo 'x",
            "echo \"x",
            "echo $(x",
            "ls |",
            "ls &&",
            "| ls",
            "(ls",
            "ls)",
            "case x in a) ls;; esac",
            "{ ls",
        ] {
            assert!(parse(src).is_err(), "{src}");
        }
    }
}
