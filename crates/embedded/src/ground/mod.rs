//! Argument values from the conversation, for a small model's forced calls.
//!
//! Left free under a grammar, a 135M model fills string arguments with `""`, template debris or
//! a word of the tool's description, and numbers with values the user never gave. Most values a
//! user's request needs are in it: on BFCL v4 `simple_python`, 90% of the required string
//! values are a span of the question (case aside) and 86% of the required numbers appear in it.
//! So the generation schema of a call made after a user's message ([`Grounding::ground`]) offers:
//! - for a plain string (no `enum`, `const`, `pattern` or `format` of its own) whose parameter is
//!   not free text by its name (code, a query, a message, …): the message's quoted phrases and
//!   its spans of one to [`MAX_SPAN_WORDS`] words that end where a value does (`spans.rs`), then
//!   the words of the system messages (a skill's name the instructions list, say), as an `enum`;
//! - for a number or an integer: the numbers the message holds (of that type, within the
//!   schema's bounds), when it holds any: in digits (`1,000`, `2.5`, `1e-9`, `213 million`) or
//!   as words (`three`), a percentage as the fraction it stands for unless the parameter is in
//!   percent ([`number_for`]);
//! - for an array of numbers: the lists of numbers the message writes, whole;
//! - for the other plain strings: at least one character;
//! - for a parameter the message names, required or not: the value the message gives it
//!   (`mention.rs`), and the parameter is written.
//!
//! The call is still validated against the tool's own schema afterwards. A value the message
//! does not hold (a default, a unit converted) cannot be written under this schema; measured on
//! BFCL that costs less than the free values' errors (docs/src/embedded.md has the figures).

use serde_json::{Map, Number, Value};

use crate::schema::PLAIN_STRING_PATTERN;

mod dates;
mod mention;
mod spans;

use mention::{name_words, same_stem, Mentions};
pub use spans::MAX_SPAN_WORDS;
use spans::{spans, trim_word, MAX_SPANS};

/// The longest message read, in bytes.
const MAX_MESSAGE: usize = 2000;

/// Parameter-name words that mark free text: values a user describes rather than quotes.
const FREE_TEXT: &[&str] = &[
    "code",
    "script",
    "program",
    "source",
    "content",
    "contents",
    "body",
    "text",
    "message",
    "query",
    "prompt",
    "expression",
    "formula",
    "function",
    "equation",
    "sql",
    "command",
    "cmd",
    "html",
    "markdown",
    "json",
    "description",
    "summary",
    "answer",
    "reason",
    "comment",
    "note",
    "notes",
    "instructions",
    "template",
    "pattern",
    "regex",
];

/// What a message offers to a call's arguments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grounding {
    spans: Vec<String>,
    numbers: Vec<Number>,
    /// The numbers the message writes as percentages (`5%`, `5 percent`).
    percents: Vec<Number>,
    /// The numbers the message writes at least once otherwise.
    plain: Vec<Number>,
    /// The dates the message writes (see `dates.rs`).
    dates: Vec<dates::Date>,
    mentions: Mentions,
}

impl Grounding {
    /// Reads `message`'s word spans and numbers.
    pub fn from_message(message: &str) -> Grounding {
        Grounding::from_conversation(message, &[])
    }

    /// Reads the user's `message` (word spans, numbers, what it names) and the words of the
    /// conversation's `instructions` (its system messages), offered after the message's spans:
    /// a name the instructions list (a skill's, say) is a value a call may need.
    pub fn from_conversation(message: &str, instructions: &[&str]) -> Grounding {
        let message = head(message);
        let mut spans = spans(message);
        for text in instructions {
            for word in head(text).split_whitespace().map(trim_word) {
                if spans.len() >= MAX_SPANS {
                    break;
                }
                let plain = !word.contains(['<', '>', '{', '}', '[', ']', '\\', '"', '`']);
                if plain && word.chars().count() > 1 && !spans.iter().any(|s| s == word) {
                    spans.push(word.to_owned());
                }
            }
        }
        Grounding {
            spans,
            numbers: numbers(message, Written::Any),
            percents: numbers(message, Written::AsPercentage),
            plain: numbers(message, Written::Plain),
            dates: dates::dates(message),
            mentions: Mentions::from_message(message),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty() && self.numbers.is_empty()
    }

    /// Rewrites a generation schema (see [`crate::schema::for_generation`]) of a call's arguments
    /// so its plain strings and numbers take values from the message.
    pub fn ground(&self, arguments: &mut Value, max_string_length: usize) {
        self.node(arguments, "", true, max_string_length);
    }

    /// `required`: whether the value must be written. An optional one stays free: when the user
    /// did not give it, the model may still write a default it knows (seen: `gravity: 9.81`),
    /// which the message's numbers would replace with a wrong one.
    fn node(&self, schema: &mut Value, name: &str, required: bool, max: usize) {
        let Value::Object(map) = schema else {
            return;
        };
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(options)) = map.get_mut(key) {
                for o in options {
                    self.node(o, name, required, max);
                }
            }
        }
        let needed: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if let Some(Value::Object(props)) = map.get_mut("properties") {
            // What the message says of a parameter settles it, and an optional one is written.
            let settled = if required {
                self.mentions.settle(props, &needed)
            } else {
                Vec::new()
            };
            for (key, value) in props.iter_mut() {
                let must = required && (needed.contains(key) || settled.contains(key));
                self.node(value, key, must, max);
            }
            let promoted: Vec<Value> = settled
                .into_iter()
                .filter(|k| !needed.contains(k))
                .map(Value::String)
                .collect();
            if !promoted.is_empty() {
                match map.get_mut("required") {
                    Some(Value::Array(required)) => required.extend(promoted),
                    _ => {
                        map.insert("required".into(), Value::Array(promoted));
                    }
                }
            }
        }
        if let Some(items) = map.get_mut("items") {
            self.node(items, name, required, max);
        }
        if !required {
            return;
        }
        let fixed = ["enum", "const"].iter().any(|k| map.contains_key(*k));
        let ty = map.get("type").and_then(Value::as_str).map(str::to_owned);
        match ty.as_deref() {
            Some("string") if !fixed && plain(map) => {
                let bound = |k: &str| map.get(k).and_then(Value::as_u64).map(|n| n as usize);
                let (least, most) = (
                    bound("minLength").unwrap_or(0),
                    bound("maxLength").unwrap_or(max),
                );
                // A span that writes the parameter's own name in lower case labels the value
                // rather than being it: "a deluxe room" for `room_type` is "deluxe", "Chinese
                // cuisine" for `cuisine` is "Chinese". (A capital one may be a name: "Premier
                // League" for `league`.) Measured on BFCL v4's required plain strings: no
                // accepted value is such a span, and 1.2 fewer spans are offered per parameter.
                let labels = name_words(name);
                let labelled = |span: &str| {
                    span.split_whitespace().map(trim_word).any(|w| {
                        w.starts_with(char::is_lowercase)
                            && labels.iter().any(|n| same_stem(n, &w.to_lowercase()))
                    })
                };
                // A place the description's example writes with its state's code ("The city
                // and state, e.g. New York, NY") is offered in that form when the message names
                // it (see `place_example`).
                let description = map.get("description").and_then(Value::as_str);
                let example = description.and_then(place_example);
                let offered: Vec<String> =
                    if dates::is_date_parameter(name) && !self.dates.is_empty() {
                        // A date: one the message writes, in the description's form.
                        let form = dates::Form::of(description.unwrap_or_default());
                        self.dates.iter().map(|&d| form.write(d)).collect()
                    } else {
                        self.spans
                            .iter()
                            .filter(|s| !labelled(s))
                            .map(|s| match example {
                                Some((place, code)) if s == place => format!("{s}, {code}"),
                                _ => s.clone(),
                            })
                            .collect()
                    };
                let offered: Vec<Value> = offered
                    .into_iter()
                    .filter(|s| (least..=most.min(max)).contains(&s.chars().count()))
                    .map(Value::String)
                    .collect();
                if free_text(name) || offered.is_empty() {
                    map.insert("minLength".into(), 1.into());
                } else {
                    for k in ["pattern", "maxLength", "minLength"] {
                        map.remove(k);
                    }
                    map.insert("enum".into(), Value::Array(offered));
                }
            }
            Some("array") if !fixed => {
                // A list of numbers: one of the lists the message writes, whole.
                let item = map.get("items").and_then(Value::as_object);
                let item_type = item.and_then(|i| i.get("type")).and_then(Value::as_str);
                let Some(t @ ("number" | "integer")) = item_type else {
                    return;
                };
                let bound = |k: &str| map.get(k).and_then(Value::as_u64).map(|n| n as usize);
                let (least, most) = (
                    bound("minItems").unwrap_or(0),
                    bound("maxItems").unwrap_or(usize::MAX),
                );
                let offered: Vec<Value> = self
                    .mentions
                    .number_lists()
                    .into_iter()
                    .filter(|l| (least..=most).contains(&l.len()))
                    .filter(|l| {
                        l.iter().all(|n| {
                            (t == "number" || !n.is_f64()) && item.is_none_or(|i| within(i, n))
                        })
                    })
                    .map(|l| Value::Array(l.into_iter().map(Value::Number).collect()))
                    .collect();
                if !offered.is_empty() {
                    for k in ["items", "minItems", "maxItems"] {
                        map.remove(k);
                    }
                    map.insert("enum".into(), Value::Array(offered));
                }
            }
            Some(t @ ("number" | "integer")) if !fixed => {
                // A rate takes one of the percentages the message writes; an integer that is no
                // rate (a count, a year, a period) takes none that is only a percentage (see
                // [`RATE_WORDS`]). Either falls back to every number when nothing else fits.
                let rate = rate_named(name);
                let sorts = [true, false].map(|sorted| {
                    let mut offered: Vec<Value> = Vec::new();
                    for n in &self.numbers {
                        let skip = sorted
                            && if rate && !self.percents.is_empty() {
                                !self.percents.contains(n)
                            } else {
                                !rate && t == "integer" && !self.plain.contains(n)
                            };
                        let n = number_for(n, &self.percents, name, map);
                        let fits = (t == "number" || n.is_i64() || n.is_u64()) && within(map, &n);
                        let n = Value::Number(n);
                        if !skip && fits && !offered.contains(&n) {
                            offered.push(n);
                        }
                    }
                    offered
                });
                let [sorted, every] = sorts;
                let offered = if sorted.is_empty() { every } else { sorted };
                if !offered.is_empty() {
                    map.insert("enum".into(), Value::Array(offered));
                }
            }
            _ => {}
        }
    }
}

/// A string the schema leaves free: no pattern or format of its own (the generation schema's
/// markup-free pattern aside).
pub(super) fn plain(map: &Map<String, Value>) -> bool {
    !map.contains_key("format")
        && map
            .get("pattern")
            .is_none_or(|p| p == &Value::String(PLAIN_STRING_PATTERN.into()))
}

fn free_text(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .any(|w| FREE_TEXT.contains(&w.as_str()))
}

/// `camelCase` → `camel`, `case` (lower case).
fn split_camel(word: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for c in word.chars() {
        if c.is_uppercase() && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

fn within(map: &Map<String, Value>, n: &Number) -> bool {
    let Some(x) = n.as_f64() else {
        return false;
    };
    let bound = |k: &str| map.get(k).and_then(Value::as_f64);
    bound("minimum").is_none_or(|m| x >= m)
        && bound("maximum").is_none_or(|m| x <= m)
        && bound("exclusiveMinimum").is_none_or(|m| x > m)
        && bound("exclusiveMaximum").is_none_or(|m| x < m)
}

/// The place and the code of a description's example written as a place with its state's or
/// country's two-letter code: "e.g. New York, NY" gives `("New York", "NY")`. Measured on BFCL
/// v4's required plain strings of `simple_python` and `multiple` before use: where the message
/// names the example's place (26 parameters), the example's form is accepted every time, and
/// the place alone in only 19 of them. An example that lists options ("e.g. oil, acrylic, etc")
/// is none.
fn place_example(description: &str) -> Option<(&str, &str)> {
    const MARKS: [&str; 4] = ["e.g.,", "e.g.", "for example,", "for example"];
    let lower = description.to_ascii_lowercase();
    let (at, mark) = MARKS
        .iter()
        .filter_map(|m| lower.find(m).map(|at| (at, m.len())))
        .min_by_key(|&(at, len)| (at, usize::MAX - len))?;
    let rest = description.get(at + mark..)?.trim_start();
    let rest = rest.trim_start_matches(['\'', '"']);
    let (place, after) = rest.split_once(", ")?;
    let code = after.get(..2)?;
    let ends = after[2..]
        .chars()
        .next()
        .is_none_or(|c| !c.is_alphanumeric());
    let place_ok = !place.is_empty()
        && place.len() <= 40
        && place.starts_with(char::is_uppercase)
        && !place.contains(['.', ';', '(', ')']);
    (place_ok && ends && code.chars().all(|c| c.is_ascii_uppercase())).then_some((place, code))
}

/// The first [`MAX_MESSAGE`] bytes of `text` (to a character boundary).
fn head(text: &str) -> &str {
    let mut end = text.len().min(MAX_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Which of a message's numbers [`numbers`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Written {
    Any,
    AsPercentage,
    /// Not as a percentage.
    Plain,
}

/// The numbers written in the message, each once, in order (see [`number_at`]), written as
/// `which` says.
fn numbers(message: &str, which: Written) -> Vec<Number> {
    let mut out: Vec<Number> = Vec::new();
    for (_, n, percent) in scan_numbers(message) {
        let wanted = match which {
            Written::Any => true,
            Written::AsPercentage => percent,
            Written::Plain => !percent,
        };
        if wanted && !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

/// Words of a parameter's name that make it a rate: measured on BFCL v4 `simple_python` and
/// `multiple`, every required number parameter so named in a message that writes a percentage
/// takes one of the percentages (24 of 24), and no integer parameter named otherwise takes a
/// number the message writes only as a percentage.
const RATE_WORDS: &[&str] = &[
    "rate",
    "rates",
    "return",
    "returns",
    "interest",
    "discount",
    "yield",
    "growth",
    "percent",
    "percentage",
    "pct",
];

fn rate_named(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .any(|w| RATE_WORDS.contains(&w.as_str()))
}

/// Whether the number whose digits end at `i` is written as a percentage: `%`, `percent` or
/// `per cent` right after it (a space between allowed).
pub(super) fn percent_at(bytes: &[u8], i: usize) -> bool {
    let rest = bytes.get(i..).unwrap_or_default();
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    if rest.first() == Some(&b'%') {
        return true;
    }
    [&b"percent"[..], b"per cent"].iter().any(|word| {
        rest.len() >= word.len()
            && rest[..word.len()].eq_ignore_ascii_case(word)
            && rest
                .get(word.len())
                .is_none_or(|b| !b.is_ascii_alphabetic())
    })
}

/// The value a parameter takes from a number the message writes: a percentage is the fraction
/// it stands for (`5%` is 0.05) where the parameter is a `number` that does not say it is in
/// percent by its name or description (`percent`, `percentage`, `pct`). Measured on BFCL v4
/// `simple_python` and `multiple`: of the 24 rates and yields a percentage gives, 17 take the
/// fraction, and all 7 that take the percentage are integers or say "percentage".
pub(super) fn number_for(
    n: &Number,
    percents: &[Number],
    name: &str,
    map: &Map<String, Value>,
) -> Number {
    let says_percent = |text: &str| {
        let text = text.to_ascii_lowercase();
        text.contains("percent")
            || text
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "pct")
    };
    let is_number = map.get("type").and_then(Value::as_str) == Some("number");
    let in_percent = says_percent(name)
        || map
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(says_percent);
    if is_number && !in_percent && percents.contains(n) {
        if let Some(fraction) = hundredth(n) {
            return fraction;
        }
    }
    n.clone()
}

/// `n / 100`, by moving the decimal point of its decimal form (so `5` gives the same `0.05` a
/// JSON text writes, not a division's rounding).
fn hundredth(n: &Number) -> Option<Number> {
    let text = n.to_string();
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.as_str()),
    };
    if digits.contains(['e', 'E']) {
        return n.as_f64().and_then(|x| Number::from_f64(x / 100.0));
    }
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let whole = format!("{whole:0>3}");
    let (int, moved) = whole.split_at(whole.len() - 2);
    format!("{sign}{int}.{moved}{fraction}")
        .parse::<f64>()
        .ok()
        .and_then(Number::from_f64)
}

/// Cardinal numbers written as words, which a request uses for small counts ("three days", "two
/// adults"): on BFCL v4 `simple_python` and `multiple`, 20 of the numbers a call needs are
/// written so, against 476 in digits. Ordinals are left out: "second" is also a unit.
const NUMBER_WORDS: &[(&str, u32)] = &[
    ("zero", 0),
    ("one", 1),
    ("two", 2),
    ("three", 3),
    ("four", 4),
    ("five", 5),
    ("six", 6),
    ("seven", 7),
    ("eight", 8),
    ("nine", 9),
    ("ten", 10),
    ("eleven", 11),
    ("twelve", 12),
    ("thirteen", 13),
    ("fourteen", 14),
    ("fifteen", 15),
    ("sixteen", 16),
    ("seventeen", 17),
    ("eighteen", 18),
    ("nineteen", 19),
    ("twenty", 20),
    ("thirty", 30),
    ("forty", 40),
    ("fifty", 50),
    ("sixty", 60),
    ("seventy", 70),
    ("eighty", 80),
    ("ninety", 90),
    ("hundred", 100),
    ("thousand", 1000),
    ("dozen", 12),
];

/// The number a whole word writes (see [`NUMBER_WORDS`]), in any case.
pub(super) fn number_word(word: &str) -> Option<Number> {
    NUMBER_WORDS
        .iter()
        .find(|(w, _)| w.eq_ignore_ascii_case(word))
        .map(|&(_, n)| n.into())
}

/// Every number written in the message, in digits or as a word, with the byte offset where it
/// starts.
pub(crate) fn scan_numbers(message: &str) -> Vec<(usize, Number, bool)> {
    let bytes = message.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let glued = |b: u8| is_word_byte(b) || b.is_ascii_digit() || !b.is_ascii();
        if bytes[i].is_ascii_alphabetic() && (i == 0 || !glued(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphabetic() {
                i += 1;
            }
            let whole = bytes.get(i).is_none_or(|&b| !glued(b));
            if let Some(n) = number_word(&message[start..i]).filter(|_| whole) {
                out.push((start, n, percent_at(bytes, i)));
            }
            continue;
        }
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        let (next, number) = number_at(bytes, i);
        if let Some(n) = number {
            out.push((start, n, percent_at(bytes, next)));
        }
        i = next;
    }
    out
}

/// Reads the number whose first digit is at `i`: an optional sign (a `-` right before the
/// digits, not after a letter or digit), digits with optional thousands commas (not in a list
/// written without spaces, `[200,300]`), an optional fraction, an optional exponent (`1e-9`),
/// and a scale word after it (`213 million`). Returns where reading stopped and the number, if
/// the digits are one: digits inside a word (`DNA123`, `x2`) or glued to a word that is no unit
/// (`3x`) are not.
fn number_at(bytes: &[u8], mut i: usize) -> (usize, Option<Number>) {
    let glued = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if i > 0 && is_word_byte(bytes[i - 1]) {
        while i < bytes.len() && glued(bytes[i]) {
            i += 1;
        }
        return (i, None);
    }
    let negative = i > 0
        && bytes[i - 1] == b'-'
        && (i < 2 || !(bytes[i - 2].is_ascii_alphanumeric() || bytes[i - 2] == b')'));
    let listed = i > 0 && matches!(bytes[i - 1], b'[' | b',');
    let mut text = String::new();
    if negative {
        text.push('-');
    }
    while i < bytes.len() {
        let b = bytes[i];
        let thousands = !listed
            && b == b','
            && bytes
                .get(i + 1..i + 4)
                .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            && bytes.get(i + 4).is_none_or(|d| !d.is_ascii_digit());
        if b.is_ascii_digit() {
            text.push(b as char);
        } else if !thousands {
            break;
        }
        i += 1;
    }
    let mut fraction = false;
    if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
        fraction = true;
        text.push('.');
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            text.push(bytes[i] as char);
            i += 1;
        }
    }
    // An exponent: `e`, an optional sign, digits, and nothing glued after them.
    if let Some(exponent) = exponent_at(bytes, i) {
        fraction = true;
        text.push_str(as_text(&bytes[i..exponent]));
        i = exponent;
    }
    let mut scale = 1;
    if let Some((factor, end)) = scale_at(bytes, i) {
        scale = factor;
        i = end;
    }
    if bytes.get(i).is_some_and(u8::is_ascii_alphabetic) && !unit_follows(&bytes[i..]) {
        // `3x`, `4th`-like words: part of an expression or a name, not a value.
        while i < bytes.len() && glued(bytes[i]) {
            i += 1;
        }
        return (i, None);
    }
    let number = if fraction {
        text.parse::<f64>()
            .ok()
            .map(|x| x * scale as f64)
            .and_then(|x| {
                if scale > 1 && x.fract() == 0.0 && x.abs() < 9.0e15 {
                    Some(Number::from(x as i64))
                } else {
                    Number::from_f64(x)
                }
            })
    } else {
        text.parse::<i64>()
            .ok()
            .and_then(|x| x.checked_mul(scale))
            .map(Number::from)
    };
    (i, number)
}

/// Where an exponent that starts at `i` ends (`e-9`, `E+3`, `e10`), if one does.
fn exponent_at(bytes: &[u8], i: usize) -> Option<usize> {
    if !matches!(bytes.get(i), Some(b'e' | b'E')) {
        return None;
    }
    let mut end = i + 1;
    if matches!(bytes.get(end), Some(b'-' | b'+')) {
        end += 1;
    }
    let digits = end;
    while bytes.get(end).is_some_and(u8::is_ascii_digit) {
        end += 1;
    }
    let glued = bytes
        .get(end)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
    (end > digits && !glued).then_some(end)
}

/// A scale word after a number (`213 million`, `8.5 billion`): its factor and where it ends.
fn scale_at(bytes: &[u8], i: usize) -> Option<(i64, usize)> {
    const SCALES: &[(&[u8], i64)] = &[
        (b"thousand", 1_000),
        (b"million", 1_000_000),
        (b"billion", 1_000_000_000),
        (b"trillion", 1_000_000_000_000),
    ];
    let start = i + usize::from(bytes.get(i) == Some(&b' '));
    let rest = bytes.get(start..)?;
    SCALES.iter().find_map(|&(word, factor)| {
        let end = start + word.len();
        (rest.len() >= word.len()
            && rest[..word.len()].eq_ignore_ascii_case(word)
            && bytes.get(end).is_none_or(|b| !b.is_ascii_alphabetic()))
        .then_some((factor, end))
    })
}

/// ASCII bytes as text (an exponent's: digits, a sign and `e`).
fn as_text(ascii: &[u8]) -> &str {
    std::str::from_utf8(ascii).unwrap_or_default()
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

/// A unit written right after a number (`100g`, `5km`, `10kg`, `3pm`): the number is a value.
fn unit_follows(rest: &[u8]) -> bool {
    let word: Vec<u8> = rest
        .iter()
        .take_while(|b| b.is_ascii_alphabetic())
        .map(u8::to_ascii_lowercase)
        .collect();
    const UNITS: &[&[u8]] = &[
        b"g", b"kg", b"mg", b"lb", b"lbs", b"oz", b"m", b"km", b"cm", b"mm", b"ft", b"mi", b"s",
        b"ms", b"h", b"hr", b"hrs", b"min", b"am", b"pm", b"k", b"l", b"ml", b"c", b"f", b"v",
        b"w", b"kw", b"hz", b"khz", b"mhz", b"gb", b"mb", b"kb", b"th", b"st", b"nd", b"rd", b"d",
        b"yr", b"yrs", b"n", b"j", b"pa", b"atm", b"mph", b"kmh",
    ];
    // Ordinals (`2nd`) are listed too: `2nd` says 2.
    UNITS.contains(&word.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_read_with_their_sign_fraction_and_unit() {
        let n = |s: &str| -> Vec<String> {
            numbers(s, Written::Any)
                .iter()
                .map(|n| n.to_string())
                .collect()
        };
        assert_eq!(n("a = 3, b = -11, and c = -4"), ["3", "-11", "-4"]);
        assert_eq!(n("from x = -2 to x = 3"), ["-2", "3"]);
        assert_eq!(n("1,000 people and 2.5 kg"), ["1000", "2.5"]);
        assert_eq!(n("100g of water, 5km"), ["100", "5"]);
        assert_eq!(n("id DNA123 and x2"), Vec::<String>::new());
        assert_eq!(n("3x^2 - 1"), ["2", "1"]);
        assert_eq!(n("the years 2010-2015"), ["2010", "2015"]);
        // Cardinals written as words, whole words only.
        assert_eq!(n("two adults and one child, Ten days"), ["2", "1", "10"]);
        assert_eq!(
            n("someone often tenfold twos 3ten éten"),
            Vec::<String>::new()
        );
        assert_eq!(n("a six-sided die, 3 times"), ["6", "3"]);
        // Exponents, scale words, and lists written without spaces.
        assert_eq!(
            n("charges of 1e-9 and 2.5E+3, not 3e or 1e5x"),
            ["1e-9", "2500.0"]
        );
        assert_eq!(
            n("213 million people on 8.5 million km"),
            ["213000000", "8500000"]
        );
        assert_eq!(
            n("cash_flows=[200,300,400,500], $2,000,000"),
            ["200", "300", "400", "500", "2000000"]
        );
    }

    proptest::proptest! {
        /// Whatever a user writes, grounding reads it without failing: every span it offers is
        /// text of the message, and every number it offers a parameter fits the parameter.
        #[test]
        fn any_message_grounds_to_its_own_text_and_fitting_numbers(
            message in r#"(?s)[a-zA-Z0-9 ,.%$'"“”‘’`\[\]()éß日\-+\n]{0,120}"#,
        ) {
            let g = Grounding::from_conversation(&message, &["skill-a: does x"]);
            for span in &g.spans {
                proptest::prop_assert!(message.contains(span.as_str()) || span == "skill-a" || span == "does");
            }
            let mut args = json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "pattern": PLAIN_STRING_PATTERN},
                    "count": {"type": "integer", "minimum": 0, "maximum": 1000},
                    "rate": {"type": "number"},
                    "unit": {"type": "string", "description": "'km' or 'mi'"}
                },
                "required": ["city", "count", "rate"]
            });
            g.ground(&mut args, 200);
            let p = &args["properties"];
            for n in p["count"]["enum"].as_array().into_iter().flatten() {
                let n = n.as_i64();
                proptest::prop_assert!(n.is_some_and(|n| (0..=1000).contains(&n)), "{n:?}");
            }
            for n in p["rate"]["enum"].as_array().into_iter().flatten() {
                proptest::prop_assert!(n.is_number());
            }
        }
    }

    #[test]
    fn a_percentage_is_a_fraction_unless_the_parameter_is_in_percent() {
        let g = Grounding::from_message("a rate of 5% over 3 years, 2.5 percent fee, 60 % light");
        assert_eq!(
            numbers(
                "a rate of 5% over 3 years, 2.5 percent fee, 60 % light",
                Written::AsPercentage
            ),
            [
                Number::from(5),
                Number::from_f64(2.5).unwrap(),
                Number::from(60)
            ]
        );
        let mut args = json!({
            "type": "object",
            "properties": {
                "rate": {"type": "number", "description": "The annual interest rate."},
                "yield_pct": {"type": "number"},
                "fee": {"type": "number", "description": "The fee as a percentage."},
                "lightness": {"type": "integer"}
            },
            "required": ["rate", "yield_pct", "fee", "lightness"]
        });
        g.ground(&mut args, 200);
        let p = &args["properties"];
        // A rate takes only the percentages; an integer that is no rate none that is only one; a
        // number that is no rate all of them.
        assert_eq!(p["rate"]["enum"], json!([0.05, 0.025, 0.6]));
        assert_eq!(p["yield_pct"]["enum"], json!([5, 2.5, 60]));
        assert_eq!(p["fee"]["enum"], json!([5, 3, 2.5, 60]));
        assert_eq!(p["lightness"]["enum"], json!([3]));
        // Written both ways, a number is offered to both; with nothing else, to either.
        let g = Grounding::from_message("5 years at 5%");
        let mut args = json!({"type": "object",
            "properties": {"years": {"type": "integer"}, "rate": {"type": "number"}},
            "required": ["years", "rate"]});
        g.ground(&mut args, 200);
        assert_eq!(args["properties"]["years"]["enum"], json!([5]));
        assert_eq!(args["properties"]["rate"]["enum"], json!([0.05]));
        let g = Grounding::from_message("only 7%");
        let mut args = json!({"type": "object", "properties": {"count": {"type": "integer"}},
            "required": ["count"]});
        g.ground(&mut args, 200);
        assert_eq!(args["properties"]["count"]["enum"], json!([7]));
        assert_eq!(hundredth(&Number::from(150)), Number::from_f64(1.5));
        assert_eq!(hundredth(&Number::from(-3)), Number::from_f64(-0.03));
    }

    #[test]
    fn strings_and_numbers_take_the_messages_values() {
        let g = Grounding::from_message("Weather in Paris for 3 days at 2.5 metres");
        let mut args = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 200, "pattern": PLAIN_STRING_PATTERN},
                "days": {"type": "integer", "minimum": 1},
                "height": {"type": "number"},
                "unit": {"type": "string", "enum": ["metric", "imperial"]},
                "query": {"type": "string", "maxLength": 200, "pattern": PLAIN_STRING_PATTERN},
                "when": {"type": "string", "format": "date"},
                "cities": {"type": "array", "items": {"type": "string"}},
                "optional": {"type": "integer"}
            },
            "required": ["city", "days", "height", "unit", "query", "when", "cities"]
        });
        g.ground(&mut args, 200);
        let p = &args["properties"];
        let city = p["city"]["enum"].as_array().unwrap();
        assert!(city.contains(&json!("Paris")) && city.contains(&json!("3 days")));
        assert!(p["city"].get("pattern").is_none());
        assert_eq!(p["days"]["enum"], json!([3]));
        assert_eq!(p["height"]["enum"], json!([3, 2.5]));
        assert_eq!(p["unit"]["enum"], json!(["metric", "imperial"]));
        // Free text by its name, and a string with a format of its own, stay free (not empty).
        assert!(p["query"].get("enum").is_none());
        assert_eq!(p["query"]["minLength"], 1);
        assert!(p["when"].get("enum").is_none());
        assert!(p["cities"]["items"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("Paris")));
    }

    #[test]
    fn a_span_that_writes_the_parameters_name_in_lower_case_is_not_its_value() {
        let g = Grounding::from_message(
            "Book a deluxe room at Hotel Paradise with Chinese cuisine and a your_room_id label",
        );
        let string = json!({"type": "string", "maxLength": 200, "pattern": PLAIN_STRING_PATTERN});
        let mut args = json!({
            "type": "object",
            "properties": {"roomType": string, "hotel_name": string, "cuisine": string},
            "required": ["roomType", "hotel_name", "cuisine"]
        });
        g.ground(&mut args, 200);
        let offered = |key: &str| -> Vec<String> {
            let values = args["properties"][key]["enum"].as_array().unwrap();
            values
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let room = offered("roomType");
        assert!(room.contains(&"deluxe".to_owned()), "{room:?}");
        assert!(room.contains(&"your_room_id".to_owned()), "{room:?}");
        for labelled in ["room", "deluxe room", "Book a deluxe room"] {
            assert!(!room.contains(&labelled.to_owned()), "{labelled}: {room:?}");
        }
        // A capital name word may be part of the name; other parameters keep every span.
        assert!(offered("hotel_name").contains(&"Hotel Paradise".to_owned()));
        let cuisine = offered("cuisine");
        assert!(cuisine.contains(&"Chinese".to_owned()), "{cuisine:?}");
        assert!(
            !cuisine.contains(&"Chinese cuisine".to_owned()),
            "{cuisine:?}"
        );
        assert!(offered("hotel_name").contains(&"Chinese cuisine".to_owned()));
    }

    #[test]
    fn a_place_the_descriptions_example_writes_with_its_code_is_offered_so() {
        assert_eq!(
            place_example("The city and state, e.g. New York, NY, you should format it"),
            Some(("New York", "NY"))
        );
        assert_eq!(
            place_example("The city, e.g., 'Chicago, IL.'"),
            Some(("Chicago", "IL"))
        );
        assert_eq!(
            place_example("For example London, UK"),
            Some(("London", "UK"))
        );
        for none in [
            "The medium, e.g. oil, acrylic, etc.",
            "e.g. Windows 10, PS5",
            "The platform, e.g. PC, Xbox",
            "The city and state, like New York, NY",
            "e.g. NY",
        ] {
            assert_eq!(place_example(none), None, "{none}");
        }
        let g = Grounding::from_message("Find a vegan restaurant in New York, thanks");
        let mut args = json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. New York, NY"},
            "area": {"type": "string", "description": "The area, e.g. Boston, MA"}
        }, "required": ["location", "area"]});
        g.ground(&mut args, 200);
        let location = args["properties"]["location"]["enum"].as_array().unwrap();
        assert!(location.contains(&json!("New York, NY")), "{location:?}");
        assert!(!location.contains(&json!("New York")), "{location:?}");
        // Another place than the example's is offered as written.
        let area = args["properties"]["area"]["enum"].as_array().unwrap();
        assert!(area.contains(&json!("New York")), "{area:?}");
    }

    #[test]
    fn a_date_parameter_takes_the_messages_dates_in_its_descriptions_form() {
        let g = Grounding::from_message("Book from July 10, 2022 to July 20, 2022 in Paris");
        let mut args = json!({"type": "object", "properties": {
            "from_date": {"type": "string", "description": "The format is MM-DD-YYYY."},
            "to_date": {"type": "string"},
            "city": {"type": "string"}
        }, "required": ["from_date", "to_date", "city"]});
        g.ground(&mut args, 200);
        let p = &args["properties"];
        assert_eq!(p["from_date"]["enum"], json!(["07-10-2022", "07-20-2022"]));
        assert_eq!(p["to_date"]["enum"], json!(["2022-07-10", "2022-07-20"]));
        assert!(p["city"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("Paris")));
        // Without a date in the message, a date parameter takes the spans as any string does.
        let g = Grounding::from_message("Book for next weekend");
        let mut args = json!({"type": "object", "properties": {"date": {"type": "string"}},
            "required": ["date"]});
        g.ground(&mut args, 200);
        assert!(args["properties"]["date"]["enum"]
            .as_array()
            .unwrap()
            .contains(&json!("next weekend")));
    }

    #[test]
    fn the_instructions_words_are_offered_after_the_messages_spans() {
        let g = Grounding::from_conversation(
            "Plan a short trip to Paris",
            &["Skills you can load:\ntrip-planner: Plans a trip. <b>x</b>"],
        );
        let mut args = json!({
            "type": "object",
            "properties": {"name": {"type": "string", "pattern": PLAIN_STRING_PATTERN}},
            "required": ["name"]
        });
        g.ground(&mut args, 200);
        let offered = args["properties"]["name"]["enum"].as_array().unwrap();
        let at = |s: &str| offered.iter().position(|v| v == s);
        assert!(
            at("trip-planner").unwrap() > at("Paris").unwrap(),
            "{offered:?}"
        );
        assert!(at("Plans").is_some() && at("<b>x</b>").is_none());
        // Numbers and named parameters come from the user's message alone.
        let g = Grounding::from_conversation("hello", &["limit 5"]);
        assert!(g.numbers.is_empty());
    }

    #[test]
    fn an_optional_parameter_the_message_names_is_written() {
        let g = Grounding::from_message("Find all the roots, with details, for a = 3");
        let mut args = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "root_type": {"type": "string", "enum": ["real", "all"]},
                "details": {"type": "boolean"},
                "precision": {"type": "integer"}
            },
            "required": ["a"]
        });
        g.ground(&mut args, 200);
        assert_eq!(args["required"], json!(["a", "root_type", "details"]));
        assert_eq!(args["properties"]["root_type"]["enum"], json!(["all"]));
        assert_eq!(args["properties"]["details"]["enum"], json!([true]));
        assert_eq!(args["properties"]["a"]["enum"], json!([3]));
        assert!(args["properties"]["precision"].get("enum").is_none());
        // Inside an optional object nothing is settled: the object need not be written.
        let mut nested = json!({
            "type": "object",
            "properties": {"o": {"type": "object", "properties": {"details": {"type": "boolean"}}}}
        });
        g.ground(&mut nested, 200);
        assert!(nested.get("required").is_none());
        assert!(nested["properties"]["o"].get("required").is_none());
    }

    #[test]
    fn a_message_without_numbers_leaves_numbers_free_and_bounds_hold() {
        let g = Grounding::from_message("Hello there");
        let mut args =
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]});
        g.ground(&mut args, 200);
        assert!(args["properties"]["n"].get("enum").is_none());
        let g = Grounding::from_message("take 5 or 500");
        let mut args = json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 100}}, "required": ["n"]});
        g.ground(&mut args, 200);
        assert_eq!(args["properties"]["n"]["enum"], json!([5]));
    }

    #[test]
    fn free_text_names_are_recognised_in_every_case_style() {
        for name in [
            "code",
            "sql_query",
            "searchQuery",
            "message_body",
            "Expression",
        ] {
            assert!(free_text(name), "{name}");
        }
        for name in ["city", "location", "dna_id", "unit", "destination"] {
            assert!(!free_text(name), "{name}");
        }
    }
}
