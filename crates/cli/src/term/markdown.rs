//! Markdown on a terminal, for an answer that streams: a small renderer of our own (headings,
//! bold, italic, strike-through, inline code, fenced code blocks, lists, quotes, rules, links).
//!
//! Why our own: the crates that render Markdown to a terminal (termimad, mdcat) take a whole
//! document, and an answer arrives a few characters at a time. Here each line is rendered when it
//! is complete; until then its text is shown raw as it comes, and when the line ends it is redrawn
//! rendered (the cursor goes back over the rows the raw text took, computed from the terminal's
//! width). Without a known width nothing is shown before the line ends. Model output is
//! untrusted: control characters are shown escaped, so the model cannot move the cursor or
//! restyle the terminal itself.

use unicode_width::UnicodeWidthChar;

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
/// Ends bold and dim alike.
const NORMAL: &str = "\x1b[22m";
const ITALIC: &str = "\x1b[3m";
const NO_ITALIC: &str = "\x1b[23m";
const UNDERLINE: &str = "\x1b[4m";
const NO_UNDERLINE: &str = "\x1b[24m";
const STRIKE: &str = "\x1b[9m";
const NO_STRIKE: &str = "\x1b[29m";
const CODE: &str = "\x1b[36m";
const NO_CODE: &str = "\x1b[39m";

/// An open fenced code block: its marker (` or ~) and how many of them opened it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fence {
    marker: char,
    len: usize,
}

/// The renderer of one streamed answer.
#[derive(Debug)]
pub struct MarkdownStream {
    /// The terminal's (columns, rows); `None`: lines are written only once complete.
    size: Option<(usize, usize)>,
    /// The current line so far, made safe to print.
    line: String,
    /// Bytes of `line` already written raw.
    shown: usize,
    fence: Option<Fence>,
}

impl MarkdownStream {
    pub fn new(size: Option<(usize, usize)>) -> MarkdownStream {
        MarkdownStream {
            size,
            line: String::new(),
            shown: 0,
            fence: None,
        }
    }

    /// A piece of the answer; returns what to write.
    pub fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        for piece in text.split_inclusive('\n') {
            let (body, ended) = match piece.strip_suffix('\n') {
                Some(body) => (body, true),
                None => (piece, false),
            };
            push_safe(&mut self.line, body);
            if ended {
                self.end_line(&mut out);
                out.push('\n');
            }
        }
        if self.size.is_some() && self.shown < self.line.len() {
            let raw = &self.line[self.shown..];
            if self.fence.is_some() {
                out.push_str(CODE);
                out.push_str(raw);
                out.push_str(NO_CODE);
            } else {
                out.push_str(raw);
            }
            self.shown = self.line.len();
        }
        out
    }

    /// The end of the answer (or of the text before a tool call): the last line, rendered and
    /// ended, when there is one. The next answer starts outside any code block.
    pub fn finish(&mut self) -> String {
        let mut out = String::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
            out.push('\n');
        }
        self.fence = None;
        out
    }

    /// Renders the current line into `out` (without its newline): over its raw text if part of
    /// it was written and the rendering differs, else after it.
    fn end_line(&mut self, out: &mut String) {
        let line = std::mem::take(&mut self.line);
        let shown = std::mem::take(&mut self.shown);
        // Code-block state changes only here, so it is the state the raw text was written in.
        let in_code = self.fence.is_some();
        let rendered = self.render_line(&line);
        if shown == 0 {
            out.push_str(&rendered);
            return;
        }
        let as_raw = if in_code {
            format!("{CODE}{line}{NO_CODE}")
        } else {
            line.clone()
        };
        let redraw = if rendered == as_raw {
            None
        } else {
            self.size.and_then(|size| erase(&line[..shown], size))
        };
        match redraw {
            Some(erase) => {
                out.push_str(&erase);
                out.push_str(&rendered);
            }
            // The raw text is what the rendering shows, or too tall to go back over: the rest
            // of the line joins it.
            None => {
                let rest = &line[shown..];
                if !rest.is_empty() {
                    if in_code {
                        out.push_str(CODE);
                        out.push_str(rest);
                        out.push_str(NO_CODE);
                    } else {
                        out.push_str(rest);
                    }
                }
            }
        }
    }

    /// One complete line, rendered; opens and closes code blocks.
    fn render_line(&mut self, line: &str) -> String {
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if let Some(fence) = self.fence {
            if indent < 4 && closes(trimmed, fence) {
                self.fence = None;
                return format!("{DIM}{line}{NORMAL}");
            }
            return format!("{CODE}{line}{NO_CODE}");
        }
        if indent < 4 {
            if let Some(fence) = opens(trimmed) {
                self.fence = Some(fence);
                return format!("{DIM}{line}{NORMAL}");
            }
            if let Some((level, text)) = heading(trimmed) {
                let underline = if level == 1 { UNDERLINE } else { "" };
                let end = if level == 1 { NO_UNDERLINE } else { "" };
                return format!("{BOLD}{underline}{}{end}{NORMAL}", inline(text));
            }
            if is_rule(trimmed) {
                let width = self.size.map_or(40, |(cols, _)| cols.min(40));
                return format!("{DIM}{}{NORMAL}", "─".repeat(width));
            }
        }
        let pad = &line[..indent];
        if let Some(rest) = trimmed.strip_prefix('>') {
            let rest = rest.strip_prefix(' ').unwrap_or(rest);
            return format!("{pad}{DIM}│{NORMAL} {}", inline(rest));
        }
        if let Some(rest) = ["- ", "* ", "+ "]
            .iter()
            .find_map(|bullet| trimmed.strip_prefix(bullet))
        {
            return format!("{pad}• {}", inline(rest));
        }
        if let Some((number, rest)) = ordered(trimmed) {
            return format!("{pad}{number} {}", inline(rest));
        }
        inline(line)
    }
}

/// `text` with what must not reach the terminal shown escaped (see [`push_safe`]).
pub fn safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split_inclusive('\n') {
        match piece.strip_suffix('\n') {
            Some(body) => {
                push_safe(&mut out, body);
                out.push('\n');
            }
            None => push_safe(&mut out, piece),
        }
    }
    out
}

/// Appends `text` with what must not reach the terminal as such shown escaped: control
/// characters (a tab becomes four spaces, a carriage return is dropped) and the bidirectional
/// overrides that would reorder what is shown.
fn push_safe(line: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\t' => line.push_str("    "),
            '\r' => {}
            c if c.is_control()
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') =>
            {
                line.extend(c.escape_unicode());
            }
            c => line.push(c),
        }
    }
}

/// The cursor movement back to the start of `raw` as written on a terminal of `(cols, rows)`,
/// and the erasure of what it covered; `None` when it took the whole screen (its start has
/// scrolled away).
fn erase(raw: &str, (cols, rows): (usize, usize)) -> Option<String> {
    // Where the terminal wraps: a character that does not fit on a row starts the next one.
    let mut lines = 1;
    let mut col = 0;
    for c in raw.chars() {
        let w = c.width().unwrap_or(0);
        if col + w > cols {
            lines += 1;
            col = 0;
        }
        col += w;
    }
    if lines >= rows {
        return None;
    }
    let up = if lines > 1 {
        format!("\x1b[{}A", lines - 1)
    } else {
        String::new()
    };
    Some(format!("\r{up}\x1b[J"))
}

/// A line that opens a code block: three or more ` or ~ (backtick fences take no ` after them).
fn opens(line: &str) -> Option<Fence> {
    let marker = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = line.chars().take_while(|c| *c == marker).count();
    if len < 3 || (marker == '`' && line[len..].contains('`')) {
        return None;
    }
    Some(Fence { marker, len })
}

/// A line that closes `fence`: at least as many of its marker, then only spaces.
fn closes(line: &str, fence: Fence) -> bool {
    let len = line.chars().take_while(|c| *c == fence.marker).count();
    len >= fence.len && line[len * fence.marker.len_utf8()..].trim().is_empty()
}

/// `# Title` … `###### Title`: the level and the text (closing #s left out).
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let text = rest.trim();
    let text = text.trim_end_matches('#').trim_end();
    Some((level, text))
}

/// `---`, `***`, `___` (three or more, spaces allowed between).
fn is_rule(line: &str) -> bool {
    let mut marks = line.chars().filter(|c| *c != ' ');
    let Some(first) = marks.next() else {
        return false;
    };
    matches!(first, '-' | '*' | '_')
        && line.chars().filter(|c| *c == first).count() >= 3
        && line.chars().all(|c| c == first || c == ' ')
}

/// `1. item` or `1) item`: the number with its mark, and the item.
fn ordered(line: &str) -> Option<(&str, &str)> {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if !(1..=9).contains(&digits) {
        return None;
    }
    let after = &line[digits..];
    after.chars().next().filter(|c| *c == '.' || *c == ')')?;
    after[1..].strip_prefix(' ')?;
    Some((&line[..digits + 1], &line[digits + 2..]))
}

/// Inline Markdown: code spans, emphasis, strike-through, links and escapes. A marker with no
/// partner on the line stays as written.
pub fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    render_span(&chars, &mut out);
    out
}

fn render_span(chars: &[char], out: &mut String) {
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if chars.get(i + 1).is_some_and(char::is_ascii_punctuation) => {
                out.push(chars[i + 1]);
                i += 2;
            }
            '`' => {
                let run = run_length(chars, i, '`');
                match find_run(chars, i + run, '`', run) {
                    Some(end) => {
                        let code: String = chars[i + run..end].iter().collect();
                        let code = strip_one_space(&code);
                        out.push_str(CODE);
                        out.push_str(code);
                        out.push_str(NO_CODE);
                        i = end + run;
                    }
                    None => {
                        out.extend(&chars[i..i + run]);
                        i += run;
                    }
                }
            }
            '*' | '_' => {
                let run = run_length(chars, i, c);
                match emphasis(chars, i, c, run) {
                    Some(end) => {
                        let (on, off) = match run {
                            1 => (ITALIC.to_owned(), NO_ITALIC.to_owned()),
                            2 => (BOLD.to_owned(), NORMAL.to_owned()),
                            _ => (format!("{BOLD}{ITALIC}"), format!("{NO_ITALIC}{NORMAL}")),
                        };
                        out.push_str(&on);
                        render_span(&chars[i + run..end], out);
                        out.push_str(&off);
                        i = end + run;
                    }
                    None => {
                        out.extend(&chars[i..i + run]);
                        i += run;
                    }
                }
            }
            '~' if chars.get(i + 1) == Some(&'~') => {
                match find_run(chars, i + 2, '~', 2).filter(|end| *end > i + 2) {
                    Some(end) => {
                        out.push_str(STRIKE);
                        render_span(&chars[i + 2..end], out);
                        out.push_str(NO_STRIKE);
                        i = end + 2;
                    }
                    None => {
                        out.push_str("~~");
                        i += 2;
                    }
                }
            }
            '[' => match link(chars, i) {
                Some((label, url, next)) => {
                    out.push_str(UNDERLINE);
                    render_span(label, out);
                    out.push_str(NO_UNDERLINE);
                    let url: String = url.iter().collect();
                    let label: String = label.iter().collect();
                    if url != label {
                        out.push_str(&format!(" {DIM}({url}){NORMAL}"));
                    }
                    i = next;
                }
                None => {
                    out.push('[');
                    i += 1;
                }
            },
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

fn run_length(chars: &[char], at: usize, c: char) -> usize {
    chars[at..].iter().take_while(|x| **x == c).count()
}

/// The start of the next run of exactly `len` `c`s at or after `from`.
fn find_run(chars: &[char], from: usize, c: char, len: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        if chars[j] == c {
            let run = run_length(chars, j, c);
            if run == len {
                return Some(j);
            }
            j += run;
        } else {
            j += 1;
        }
    }
    None
}

/// The closing run of an emphasis opened at `at` by `run` `c`s: the opening run is followed by
/// a non-space, the closing one preceded by one; `_` does not work inside words (snake_case).
fn emphasis(chars: &[char], at: usize, c: char, run: usize) -> Option<usize> {
    if run > 3 {
        return None;
    }
    let after = chars.get(at + run)?;
    if after.is_whitespace() {
        return None;
    }
    if c == '_' && at > 0 && chars[at - 1].is_alphanumeric() {
        return None;
    }
    let mut from = at + run;
    loop {
        let end = find_run(chars, from, c, run)?;
        let before_ok = end > at + run && !chars[end - 1].is_whitespace();
        let after_ok = c != '_' || !chars.get(end + run).is_some_and(|x| x.is_alphanumeric());
        if before_ok && after_ok {
            return Some(end);
        }
        from = end + run;
    }
}

/// `[label](url)` at `at`: the label, the URL and where the link ends.
fn link(chars: &[char], at: usize) -> Option<(&[char], &[char], usize)> {
    let close = at + 1 + chars[at + 1..].iter().position(|c| *c == ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let start = close + 2;
    let end = start + chars[start..].iter().position(|c| *c == ')')?;
    let url = &chars[start..end];
    if url.is_empty() || url.iter().any(|c| c.is_whitespace()) || close == at + 1 {
        return None;
    }
    Some((&chars[at + 1..close], url, end + 1))
}

/// A code span's content loses one space at each end when it has both.
fn strip_one_space(code: &str) -> &str {
    match code.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
        Some(inner) if !inner.trim().is_empty() => inner,
        _ => code,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// Renders a whole text line by line, as a stream with no known width does.
    fn whole(text: &str) -> String {
        let mut md = MarkdownStream::new(None);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    }

    #[test]
    fn inline_styles() {
        assert_eq!(
            inline("a **b** *c* `d` ~~e~~"),
            "a \x1b[1mb\x1b[22m \x1b[3mc\x1b[23m \x1b[36md\x1b[39m \x1b[9me\x1b[29m"
        );
        assert_eq!(inline("***both***"), "\x1b[1m\x1b[3mboth\x1b[23m\x1b[22m");
        assert_eq!(
            inline("see [the docs](https://x.dev/a) now"),
            "see \x1b[4mthe docs\x1b[24m \x1b[2m(https://x.dev/a)\x1b[22m now"
        );
        // Code spans keep what is inside them.
        assert_eq!(inline("`a **b**`"), "\x1b[36ma **b**\x1b[39m");
        assert_eq!(inline("`` a`b ``"), "\x1b[36ma`b\x1b[39m");
    }

    #[test]
    fn markers_without_a_partner_stay_as_written() {
        for plain in [
            "2 * 3 * 4",
            "snake_case_name and __init__",
            "a ** b",
            "an `unclosed span",
            "[not a link] (x)",
            "[label](has space)",
            "~~ nothing",
            "\\*escaped\\*",
        ] {
            let expected = plain.replace('\\', "");
            let got = inline(plain);
            if plain == "snake_case_name and __init__" {
                // `__init__` is bold in Markdown too; the words with inner underscores are not.
                assert!(got.starts_with("snake_case_name and "), "{got:?}");
                continue;
            }
            assert_eq!(got, expected, "{plain}");
        }
    }

    #[test]
    fn block_elements() {
        let got =
            whole("# Title\n## Sub ##\n- one\n  * two\n3. three\n> quoted **b**\n---\nplain\n");
        assert_eq!(
            got,
            "\x1b[1m\x1b[4mTitle\x1b[24m\x1b[22m\n\x1b[1mSub\x1b[22m\n• one\n  • two\n3. three\n\x1b[2m│\x1b[22m quoted \x1b[1mb\x1b[22m\n\x1b[2m────────────────────────────────────────\x1b[22m\nplain\n"
        );
    }

    #[test]
    fn code_blocks_are_not_rendered_inside() {
        let got = whole("```rust\nlet x = **y**; # not a heading\n```\n**after**\n");
        assert_eq!(
            got,
            "\x1b[2m```rust\x1b[22m\n\x1b[36mlet x = **y**; # not a heading\x1b[39m\n\x1b[2m```\x1b[22m\n\x1b[1mafter\x1b[22m\n"
        );
        // A shorter fence does not close a longer one; an unclosed block ends with the answer.
        let mut md = MarkdownStream::new(None);
        let out = md.push("````\n```\n");
        assert!(out.ends_with("\x1b[36m```\x1b[39m\n"), "{out:?}");
        md.finish();
        assert_eq!(md.push("**b**\n"), "\x1b[1mb\x1b[22m\n");
    }

    #[test]
    fn the_result_does_not_depend_on_how_the_text_is_split() {
        let text =
            "# Plan\nSome **bold** and `code`.\n```sh\nls -la\n```\n- [link](http://a.b/c)\nend";
        let expected = whole(text);
        for size in [1, 2, 3, 7, 13] {
            let mut md = MarkdownStream::new(None);
            let mut out = String::new();
            let chars: Vec<char> = text.chars().collect();
            for piece in chars.chunks(size) {
                out.push_str(&md.push(&piece.iter().collect::<String>()));
            }
            out.push_str(&md.finish());
            assert_eq!(out, expected, "pieces of {size}");
        }
    }

    #[test]
    fn on_a_terminal_a_partial_line_shows_raw_then_is_redrawn() {
        let mut md = MarkdownStream::new(Some((80, 24)));
        assert_eq!(md.push("Hello **wor"), "Hello **wor");
        assert_eq!(md.push("ld**"), "ld**");
        // The line ends: back to its start, erase, the rendered line.
        assert_eq!(
            md.push("\n"),
            "\r\x1b[J".to_owned() + "Hello \x1b[1mworld\x1b[22m\n"
        );
        // The rest of a line that ends in the same piece is drawn with it.
        assert_eq!(md.push("a **b"), "a **b");
        assert_eq!(md.push("** c\n"), "\r\x1b[Ja \x1b[1mb\x1b[22m c\n");
        // A plain line is not redrawn.
        assert_eq!(md.push("plain"), "plain");
        assert_eq!(md.push(" text\n"), " text\n");
        // Inside a code block the raw text is already styled as code.
        md.push("```\n");
        assert_eq!(md.push("co"), "\x1b[36mco\x1b[39m");
        assert_eq!(md.push("de\n"), "\x1b[36mde\x1b[39m\n");
    }

    #[test]
    fn a_wrapped_line_is_redrawn_from_its_first_row() {
        let mut md = MarkdownStream::new(Some((10, 24)));
        md.push("**abcdefghijkl** mnopqrstu");
        // 26 columns on a 10-column terminal: three rows, so two up.
        let out = md.push("\n");
        assert!(out.starts_with("\r\x1b[2A\x1b[J"), "{out:?}");
        // Wide characters wrap early: 6 of width 2 on 10 columns is two rows.
        let mut md = MarkdownStream::new(Some((10, 24)));
        md.push("*漢字漢字漢字*");
        assert!(md.push("\n").starts_with("\r\x1b[1A\x1b[J"));
        // A line taller than the screen is left raw.
        let mut md = MarkdownStream::new(Some((10, 3)));
        md.push(&format!("**{}**", "x".repeat(40)));
        assert_eq!(md.push("\n"), "\n");
    }

    #[test]
    fn control_characters_from_the_model_are_shown_escaped() {
        let got = whole("red \x1b[31mtext\x1b[0m\ttab\u{202e}x\r\n");
        assert_eq!(got, "red \\u{1b}[31mtext\\u{1b}[0m    tab\\u{202e}x\n");
    }
}
