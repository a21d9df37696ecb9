//! Where a user's message names a call's parameter, and what it says of it.
//!
//! Under a grammar a small model leaves out the optional parameters a user asked for (on BFCL v4
//! `simple_python`, 57 of 400 calls missed one), and offered every number of the message it
//! often writes the wrong one. So a parameter the message *names* is settled from the message:
//! - a parameter is named when a word of its name (snake_case and camelCase split, digits and
//!   [`FUNCTION_WORDS`] aside) occurs in the message, compared on the first [`STEM`] letters (so
//!   `bedrooms` names `bedroom`, and a misspelt `acceleeration` still names `acceleration`);
//! - a boolean takes `true`, or `false` when a negation (`not`, `without`, `don't`, …) is among
//!   the [`NEAR`] words before the naming word;
//! - an optional number takes the number written right before the naming word (`3 bedrooms`),
//!   else the first within [`NEAR`] words after it (`a radius of 4 inches`); else the number
//!   right before the unit its description gives it in (`(in miles)`: `within 10 miles`), else
//!   one a few words before what it counts (`three personality traits` for `trait_count`,
//!   `ten major events` for "Number of events"), else — the object's one year parameter — the
//!   one year the message writes; two number parameters of one object named by the same word
//!   (`temperature1`, `temperature2`; a required one counts) take none;
//! - the object's one start and one end number (`start_year`/`end_year`) take the range the
//!   message writes (`from 2010 to 2015`, `between x = -1 and x = 2`), required or not;
//! - a string enum takes those of its values the message writes as whole words (any case);
//! - a list of options (an array whose items are a string enum) takes those the message writes
//!   (singular or plural, `_` read as a space), in the message's order, as the whole list;
//! - a currency parameter takes the codes of the currencies the message names (`500 US
//!   dollars`: `USD`), and of a source and a target, the source the amount's (`currency.rs`);
//! - a plain string takes those of the values its description quotes (`'Celsius' or
//!   'Fahrenheit'`) that the message writes as whole tokens (any case).
//!
//! An optional parameter settled so is written: the generation schema requires it.
//! The rules were measured on the ground truth of BFCL v4 `simple_python` and `multiple` before
//! they were used (docs/src/embedded.md has the figures and what they cost).

use serde_json::{Map, Number, Value};

use super::currency::{self, currencies};
use super::numbers::{number_at, number_for, number_word, percent_at};
use super::{plain, split_camel, within};

mod quantities;

/// Letters of a name word compared with a message word.
const STEM: usize = 5;
/// How far, in words, a negation or a number is looked for from a naming word.
const NEAR: usize = 4;
/// Words of a parameter's name that say nothing of which parameter it is.
const FUNCTION_WORDS: &[&str] = &[
    "type", "value", "name", "data", "info", "the", "of", "for", "and", "is", "in", "to", "by",
    "at", "on", "with", "or",
];
/// Words that turn what follows them into its negation.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "without",
    "never",
    "exclude",
    "excluding",
    "dont",
    "don't",
    "doesnt",
    "doesn't",
    "isnt",
    "isn't",
    "neither",
    "nor",
];

#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// Lower case, apostrophes kept (`don't`).
    Word(String),
    Number(Number),
}

/// The message read as words and numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct Mentions {
    /// The message in lower case, for finding an enum's values.
    lower: String,
    tokens: Vec<Token>,
    /// The numbers the message writes as percentages (see [`number_for`]).
    percents: Vec<Number>,
    /// Per token: whether only whitespace and commas (a sign aside) come between it and the
    /// token before, as between the items of a list.
    listed: Vec<bool>,
    /// The currencies the message names (see `currency.rs`).
    currencies: Vec<currency::Named>,
}

/// How the message settles one parameter.
enum Settled {
    Named(Value),
    Values(Vec<Value>),
}

/// What the message says of one property by itself.
enum Found {
    Settled(Settled),
    /// An optional number and the place of the word that names it.
    Number(usize, Number),
}

impl Mentions {
    pub(super) fn from_message(message: &str) -> Mentions {
        let bytes = message.as_bytes();
        let mut tokens = Vec::new();
        let mut listed = Vec::new();
        let mut plain_gap = false;
        let mut percents = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b.is_ascii_digit() {
                let (next, number) = number_at(bytes, i);
                i = next.max(i + 1);
                match number {
                    Some(n) => {
                        // An ordinal's suffix is part of it: `2nd, 3rd and 4th` are numbers.
                        if let Some(end) = ordinal_suffix(bytes, next) {
                            i = end;
                        }
                        if percent_at(bytes, next) {
                            percents.push(n.clone());
                        }
                        tokens.push(Token::Number(n));
                        listed.push(plain_gap);
                        plain_gap = true;
                    }
                    None => plain_gap = false,
                }
            } else if let Some(c) = message[i..].chars().next().filter(|c| c.is_alphabetic()) {
                let end = message[i..]
                    .char_indices()
                    .find(|&(k, c)| {
                        !(c.is_alphabetic()
                            || (c == '\'' && message[i + k + 1..].starts_with(char::is_alphabetic)))
                    })
                    .map_or(message.len(), |(k, _)| i + k);
                let word = &message[i..end];
                tokens.push(match number_word(word) {
                    Some(n) => Token::Number(n),
                    None => Token::Word(word.to_lowercase()),
                });
                listed.push(plain_gap);
                plain_gap = true;
                i = end.max(i + c.len_utf8());
            } else {
                let c = message[i..].chars().next().unwrap_or(' ');
                plain_gap &= c.is_whitespace() || c == ',' || c == '-';
                i += c.len_utf8();
            }
        }
        Mentions {
            currencies: currencies(message),
            lower: message.to_lowercase(),
            tokens,
            percents,
            listed,
        }
    }

    /// Settles the properties of one object the message names (see the module doc) and
    /// returns their keys. A `required` number is left to the model, which chooses among the
    /// message's numbers: measured on BFCL v4, the number at the naming word is more often
    /// wrong where the model is right (25 parameters) than the other way round (12).
    pub(super) fn settle(
        &self,
        properties: &mut Map<String, Value>,
        required: &[String],
    ) -> Vec<String> {
        let (mut others, done) = self.settle_together(properties, required);
        // The naming word of each number the message gives, to find two parameters sharing one.
        let mut numbers: Vec<(String, usize, Number)> = Vec::new();
        let year_keys: Vec<&str> = properties
            .iter()
            .filter(|(key, schema)| {
                is_number(schema) && name_words(key).iter().any(|w| w == "year")
            })
            .map(|(key, _)| key.as_str())
            .collect();
        for (key, schema) in properties.iter() {
            let Value::Object(map) = schema else {
                continue;
            };
            if done.contains(key) || map.contains_key("const") {
                continue;
            }
            match self.settle_one(key, map, required, &year_keys) {
                Some(Found::Settled(settled)) => others.push((key.clone(), settled)),
                Some(Found::Number(at, n)) => numbers.push((key.clone(), at, n)),
                None => {}
            }
        }
        others.extend(self.unshared_numbers(properties, numbers));
        pin(properties, others)
    }

    /// What settles several properties at once: a range (start and end), a list of numbered
    /// parameters, the currencies. The settled properties, and the keys no other rule settles.
    fn settle_together(
        &self,
        properties: &Map<String, Value>,
        required: &[String],
    ) -> (Vec<(String, Settled)>, Vec<String>) {
        let mut others: Vec<(String, Settled)> = Vec::new();
        // A range the message writes ("from 2010 to 2015") settles the object's one start and
        // one end number, required or not.
        let range = self.range_pair(properties);
        if let Some([(start, from), (end, to)]) = &range {
            others.push((start.clone(), Settled::Named(Value::Number(from.clone()))));
            others.push((end.clone(), Settled::Named(Value::Number(to.clone()))));
        }
        let mut done: Vec<String> = range
            .iter()
            .flat_map(|pair| pair.iter().map(|(k, _)| k.clone()))
            .collect();
        // Numbered parameters (`a`, `b`, `c`; `num1`, `num2`) take the one list of as many
        // numbers the message writes, in order ("coefficients 5, 20, and -25").
        if range.is_none() {
            for (key, n) in self.numbered(properties, required) {
                others.push((key.clone(), Settled::Named(Value::Number(n))));
                done.push(key);
            }
        }
        // Currencies the message names settle the currency parameters, as codes; of two, the
        // source takes the one the amount is in (see `currency.rs`).
        for (key, value) in self.currency_values(properties) {
            others.push((key.clone(), value));
            done.push(key);
        }
        (others, done)
    }

    /// What the message says of one property by itself: a list of options, enum values, a
    /// boolean, quoted values of a plain string, or an optional number and where it is named.
    fn settle_one(
        &self,
        key: &str,
        map: &Map<String, Value>,
        required: &[String],
        year_keys: &[&str],
    ) -> Option<Found> {
        if let Some(values) = item_options(map) {
            // A list of options: those the message writes, in the message's order.
            let mut written: Vec<(usize, &Value)> = values
                .iter()
                .filter_map(|v| Some((self.written_at(v.as_str()?)?, v)))
                .collect();
            written.sort_by_key(|&(at, _)| at);
            let least = map.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            if written.len() as u64 >= least.max(1) {
                let list = written.into_iter().map(|(_, v)| v.clone()).collect();
                return Some(Found::Settled(Settled::Named(Value::Array(list))));
            }
            return None;
        }
        if let Some(Value::Array(values)) = map.get("enum") {
            return self.enum_values(values).map(Found::Settled);
        }
        match map.get("type").and_then(Value::as_str) {
            Some("boolean") => {
                let at = *self.naming(key).first()?;
                Some(Found::Settled(Settled::Named(Value::Bool(
                    !self.negated(at),
                ))))
            }
            Some("string") if plain(map) => {
                let written: Vec<Value> = quoted_options(map.get("description"))
                    .into_iter()
                    .filter(|o| self.writes_token(o))
                    .map(|o| Value::String(o.to_owned()))
                    .collect();
                (!written.is_empty()).then_some(Found::Settled(Settled::Values(written)))
            }
            Some("number" | "integer") if !required.iter().any(|r| r == key) => {
                let (at, n) = self.optional_number(key, map, year_keys)?;
                Some(Found::Number(at, n))
            }
            _ => None,
        }
    }

    /// The values of a string enum the message writes; else the one one-word value a message
    /// word shares its stem with ("in detail" for `detailed`, "annual" for `Annually`).
    fn enum_values(&self, values: &[Value]) -> Option<Settled> {
        let mut named: Vec<Value> = values
            .iter()
            .filter(|v| v.as_str().is_some_and(|s| self.writes(s)))
            .cloned()
            .collect();
        if named.is_empty() {
            let stems: Vec<&Value> = values
                .iter()
                .filter(|v| v.as_str().is_some_and(|s| self.writes_stem(s)))
                .collect();
            if let [one] = stems.as_slice() {
                named.push((*one).clone());
            }
        }
        (!named.is_empty()).then_some(Settled::Values(named))
    }

    /// An optional number's value and where it is named: the number at a naming word, else
    /// before the unit, else before what it counts, else the object's one year.
    fn optional_number(
        &self,
        key: &str,
        map: &Map<String, Value>,
        year_keys: &[&str],
    ) -> Option<(usize, Number)> {
        let fits = |n: &Number| takes(map, n);
        let value = |n: Number| number_for(&n, &self.percents, key, map);
        let near = self.naming(key).into_iter().find_map(|at| {
            self.number_near(at)
                .map(value)
                .filter(|n| fits(n))
                .map(|n| (at, n))
        });
        // Else a number written right before the unit the description gives
        // ("(in miles)": "within 10 miles").
        let by_unit = || {
            self.unit_places(map).into_iter().find_map(|at| {
                self.number_right_before(at)
                    .map(value)
                    .filter(|n| fits(n))
                    .map(|n| (at, n))
            })
        };
        // Else a number a few words before what it counts ("ten major events"
        // for "Number of events", "three personality traits" for `trait_count`).
        let by_count = || {
            let mut places = self.naming(key);
            places.extend(self.counted_places(map));
            places.into_iter().find_map(|at| {
                self.number_shortly_before(at)
                    .map(value)
                    .filter(|n| fits(n))
                    .map(|n| (at, n))
            })
        };
        // Else, for the one year of an object, the one year the message writes.
        let by_year = || {
            (year_keys == [key])
                .then(|| self.the_year())
                .flatten()
                .filter(|(_, n)| fits(n))
        };
        near.or_else(by_unit).or_else(by_count).or_else(by_year)
    }

    /// The numbers found whose naming word names no other number parameter.
    fn unshared_numbers(
        &self,
        properties: &Map<String, Value>,
        numbers: Vec<(String, usize, Number)>,
    ) -> Vec<(String, Settled)> {
        // Every number parameter's naming words, required ones included: a word that names two
        // ("4 light years" names both `distance_in_light_years` and `speed_of_light`) says
        // which number is whose no more than it does for two optional ones.
        let named_numbers: Vec<(&String, Vec<usize>)> = properties
            .iter()
            .filter(|(_, schema)| is_number(schema))
            .map(|(key, schema)| {
                let mut places = self.naming(key);
                if let Value::Object(map) = schema {
                    places.extend(self.unit_places(map));
                    places.extend(self.counted_places(map));
                }
                (key, places)
            })
            .collect();
        numbers
            .into_iter()
            .filter(|(key, at, _)| {
                !named_numbers
                    .iter()
                    .any(|(other, places)| *other != key && places.contains(at))
            })
            .map(|(key, _, n)| (key, Settled::Named(Value::Number(n))))
            .collect()
    }

    /// The lists of numbers the message writes: runs of two or more numbers with no word
    /// between them (`[10, 15, 12]`, `12, 24, 36`), in order, each once.
    pub(super) fn number_lists(&self) -> Vec<Vec<Number>> {
        let mut lists: Vec<Vec<Number>> = Vec::new();
        let mut run: Vec<Number> = Vec::new();
        let mut close = |run: &mut Vec<Number>| {
            let list = std::mem::take(run);
            if list.len() >= 2 && !lists.contains(&list) {
                lists.push(list);
            }
        };
        for (k, (token, listed)) in self.tokens.iter().zip(&self.listed).enumerate() {
            if !listed {
                close(&mut run);
            }
            match token {
                Token::Number(n) => run.push(n.clone()),
                // `2, 3 and 4`: an `and` between two listed numbers joins the last item.
                Token::Word(w)
                    if w == "and"
                        && !run.is_empty()
                        && matches!(self.tokens.get(k + 1), Some(Token::Number(_)))
                        && self.listed.get(k + 1) == Some(&true) => {}
                Token::Word(_) => close(&mut run),
            }
        }
        close(&mut run);
        lists
    }

    /// Token positions of the message's words that name the parameter `key`.
    fn naming(&self, key: &str) -> Vec<usize> {
        let words = name_words(key);
        self.word_places(|t| words.iter().any(|w| same_stem(w, t)))
    }

    /// Token positions of the message's words that `matches` takes.
    fn word_places(&self, matches: impl Fn(&str) -> bool) -> Vec<usize> {
        self.tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| matches!(t, Token::Word(w) if matches(w)))
            .map(|(i, _)| i)
            .collect()
    }

    /// Where the message first writes `option` as whole words, any case, `_` read as a space,
    /// in the singular or the plural (`toll` for `tolls`, `ratings` for `rating`).
    fn written_at(&self, option: &str) -> Option<usize> {
        let phrase = option.trim().replace('_', " ").to_lowercase();
        if phrase.chars().count() < 2 {
            return None;
        }
        let singular = phrase.strip_suffix('s').map(str::to_owned);
        [Some(phrase.clone()), Some(format!("{phrase}s")), singular]
            .into_iter()
            .flatten()
            .filter_map(|p| self.word_at(&p))
            .min()
    }

    /// Where the message first writes `phrase` (lower case) as whole words.
    fn word_at(&self, phrase: &str) -> Option<usize> {
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        self.lower
            .match_indices(phrase)
            .map(|(at, _)| at)
            .find(|&at| {
                !word(self.lower[..at].chars().next_back())
                    && !word(self.lower[at + phrase.len()..].chars().next())
            })
    }

    fn negated(&self, at: usize) -> bool {
        self.tokens[at.saturating_sub(NEAR)..at]
            .iter()
            .any(|t| matches!(t, Token::Word(w) if NEGATIONS.contains(&w.as_str()) || w.ends_with("n't")))
    }

    /// The number right before the word at `at`, else the first within [`NEAR`] words after.
    fn number_near(&self, at: usize) -> Option<Number> {
        if let Some(n) = self.number_right_before(at) {
            return Some(n);
        }
        self.tokens
            .iter()
            .skip(at + 1)
            .take(NEAR)
            .find_map(|t| match t {
                Token::Number(n) => Some(n.clone()),
                Token::Word(_) => None,
            })
    }

    /// Whether a word of the message shares its first [`STEM`] letters with `value`, a single
    /// word of at least four letters.
    fn writes_stem(&self, value: &str) -> bool {
        let value = value.to_lowercase();
        let one_word = value.chars().count() >= 4 && value.chars().all(char::is_alphabetic);
        one_word
            && self
                .tokens
                .iter()
                .any(|t| matches!(t, Token::Word(w) if same_stem(&value, w)))
    }

    /// Whether the message writes `phrase` as whole words, any case.
    fn writes(&self, phrase: &str) -> bool {
        let phrase = phrase.trim().to_lowercase();
        !phrase.is_empty() && self.word_at(&phrase).is_some()
    }

    /// Whether the message writes `phrase` as a whole token or run of tokens (any case): not
    /// glued to a letter, a digit or a sign such as the `#` of `C#`.
    fn writes_token(&self, phrase: &str) -> bool {
        let phrase = phrase.trim().to_lowercase();
        if phrase.is_empty() {
            return false;
        }
        let opens = |c: Option<char>| {
            c.is_none_or(|c| c.is_whitespace() || matches!(c, '(' | '\'' | '"' | '“' | '‘'))
        };
        let closes = |c: Option<char>| {
            c.is_none_or(|c| {
                c.is_whitespace()
                    || matches!(
                        c,
                        '.' | ',' | ';' | ':' | '!' | '?' | ')' | '\'' | '"' | '”' | '’'
                    )
            })
        };
        self.lower.match_indices(&phrase).any(|(at, _)| {
            opens(self.lower[..at].chars().next_back())
                && closes(self.lower[at + phrase.len()..].chars().next())
        })
    }
}

/// Whether a parameter's schema takes a number (`number` or `integer`).
fn is_number(schema: &Value) -> bool {
    matches!(
        schema.get("type").and_then(Value::as_str),
        Some("number" | "integer")
    )
}

/// Whether a number schema takes `n`: no fraction for an integer, within its bounds.
fn takes(schema: &Map<String, Value>, n: &Number) -> bool {
    let integer = schema.get("type").and_then(Value::as_str) == Some("integer");
    (!integer || !n.is_f64()) && within(schema, n)
}

/// The end of an ordinal's suffix (`st`, `nd`, `rd`, `th`) written right at `at` after a
/// number, not followed by a letter.
fn ordinal_suffix(bytes: &[u8], at: usize) -> Option<usize> {
    let suffix = bytes.get(at..at + 2)?.to_ascii_lowercase();
    let ordinal = matches!(suffix.as_slice(), b"st" | b"nd" | b"rd" | b"th");
    let ends = !bytes.get(at + 2).is_some_and(u8::is_ascii_alphabetic);
    (ordinal && ends).then_some(at + 2)
}

/// The values a parameter's description quotes (`'Celsius' or 'Fahrenheit'`, `e.g., "IPR"`):
/// short runs between quote marks, the opening one not glued to a letter (an apostrophe is not
/// a quote mark).
fn quoted_options(description: Option<&Value>) -> Vec<&str> {
    let Some(text) = description.and_then(Value::as_str) else {
        return Vec::new();
    };
    let mut out: Vec<&str> = Vec::new();
    let mut rest = text;
    let mut before: Option<char> = None;
    while let Some((at, mark)) = rest.char_indices().find(|&(k, c)| {
        matches!(c, '\'' | '"')
            && (if k == 0 {
                before
            } else {
                rest[..k].chars().next_back()
            })
            .is_none_or(|b| !b.is_alphanumeric())
    }) {
        let inner = &rest[at + 1..];
        let close = inner.find(mark).filter(|&end| {
            let after = inner[end + 1..].chars().next();
            (1..=MAX_OPTION).contains(&end)
                && !inner[..end].starts_with(char::is_whitespace)
                && !inner[..end].contains('\n')
                && after.is_none_or(|a| !a.is_alphanumeric())
        });
        match close {
            Some(end) => {
                let option = &inner[..end];
                if !out.contains(&option) {
                    out.push(option);
                }
                before = Some(mark);
                rest = &inner[end + 1..];
            }
            None => {
                before = Some(mark);
                rest = inner;
            }
        }
    }
    out
}

/// The options of a list parameter: its items' string `enum`.
fn item_options(map: &Map<String, Value>) -> Option<&Vec<Value>> {
    if map.get("type").and_then(Value::as_str) != Some("array") {
        return None;
    }
    match map.get("items")?.get("enum")? {
        Value::Array(values) if values.iter().all(Value::is_string) => Some(values),
        _ => None,
    }
}

/// The longest value a description quotes that is taken for an option, in bytes.
const MAX_OPTION: usize = 40;

/// The words of a parameter's name that say which parameter it is: split on snake_case and
/// camelCase, lower case, digits trimmed, [`FUNCTION_WORDS`] and words under three letters left
/// out.
pub(super) fn name_words(key: &str) -> Vec<String> {
    key.split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .map(|w| w.trim_matches(|c: char| c.is_ascii_digit()).to_owned())
        .filter(|w| w.chars().count() >= 3 && !FUNCTION_WORDS.contains(&w.as_str()))
        .collect()
}

/// Whether a name word and a message word share their first [`STEM`] letters (all of a shorter
/// name word).
pub(super) fn same_stem(name: &str, word: &str) -> bool {
    let n = name.chars().count().min(STEM);
    word.chars().count() >= n && name.chars().take(n).eq(word.chars().take(n))
}

/// Pins each settled property to its value or values (an `enum`); returns the keys pinned.
fn pin(properties: &mut Map<String, Value>, settled: Vec<(String, Settled)>) -> Vec<String> {
    let mut keys = Vec::new();
    for (key, settled) in settled {
        if let Some(Value::Object(map)) = properties.get_mut(&key) {
            match settled {
                Settled::Named(value) => {
                    if value.is_array() {
                        // The list is whole: the items' own options and bounds no longer
                        // apply to generation (the call is validated afterwards).
                        for k in ["items", "minItems", "maxItems"] {
                            map.remove(k);
                        }
                    }
                    map.insert("enum".into(), Value::Array(vec![value]));
                }
                Settled::Values(values) => {
                    map.insert("enum".into(), Value::Array(values));
                }
            }
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests;
