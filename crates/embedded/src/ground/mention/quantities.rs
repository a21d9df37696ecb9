//! What a message says of a call's numbers and currencies beyond a parameter's name: the
//! unit a description gives a number in, what it counts, the one year, a range's two ends, and
//! the currencies of a conversion. Each rule was checked on the ground truth of BFCL v4
//! `simple_python` and `multiple` before it was used (docs/src/embedded.md has the figures).

use serde_json::{Map, Number, Value};

use super::super::currency::{self, conversion, is_currency_parameter};
use super::super::{plain, split_camel};
use super::{is_number, same_stem, takes, Mentions, Settled, Token, FUNCTION_WORDS};

impl Mentions {
    /// Token positions of the message's words that write a unit the parameter's description
    /// gives its number in: the word after `in` in `(in miles)`, `in minutes.`
    pub(super) fn unit_places(&self, map: &Map<String, Value>) -> Vec<usize> {
        let units = description_units(map.get("description"));
        if units.is_empty() {
            return Vec::new();
        }
        self.word_places(|t| units.iter().any(|u| same_stem(u, t)))
    }

    /// The values the message gives the object's currency parameters (plain strings whose
    /// name says currency): the codes of the currencies it names, or, for a source and a
    /// target, the one code each of a conversion.
    pub(super) fn currency_values(
        &self,
        properties: &Map<String, Value>,
    ) -> Vec<(String, Settled)> {
        if self.currencies.is_empty() {
            return Vec::new();
        }
        let keys: Vec<&String> = properties
            .iter()
            .filter(|(key, schema)| {
                is_currency_parameter(key)
                    && schema.as_object().is_some_and(|map| {
                        map.get("type").and_then(Value::as_str) == Some("string")
                            && plain(map)
                            && !map.contains_key("enum")
                            && !map.contains_key("const")
                    })
            })
            .map(|(key, _)| key)
            .collect();
        let code = |c: &str| Value::String(c.to_owned());
        if let ([a, b], Some((from, to))) = (keys.as_slice(), conversion(&self.currencies)) {
            match (currency::is_source(a), currency::is_source(b)) {
                (true, false) => {
                    return vec![
                        ((*a).clone(), Settled::Named(code(from))),
                        ((*b).clone(), Settled::Named(code(to))),
                    ]
                }
                (false, true) => {
                    return vec![
                        ((*b).clone(), Settled::Named(code(from))),
                        ((*a).clone(), Settled::Named(code(to))),
                    ]
                }
                _ => {}
            }
        }
        let codes: Vec<Value> = self.currencies.iter().map(|n| code(n.code)).collect();
        keys.into_iter()
            .map(|key| (key.clone(), Settled::Values(codes.clone())))
            .collect()
    }

    /// The object's numbered number parameters — one-letter names (`a`, `b`, `c`) or one stem
    /// with the digits 1, 2, … (`num1`, `num2`) — each with its number of the one list of as
    /// many numbers the message writes, in order; empty unless every required number parameter
    /// is one of them, there are two or more, and the message writes exactly one such list.
    pub(super) fn numbered(
        &self,
        properties: &Map<String, Value>,
        required: &[String],
    ) -> Vec<(String, Number)> {
        let mut keys: Vec<&String> = properties
            .iter()
            .filter(|(key, schema)| is_number(schema) && numbered_name(key).is_some())
            .map(|(key, _)| key)
            .collect();
        keys.sort_by_key(|key| numbered_name(key));
        let names: Vec<(&str, u32)> = keys.iter().filter_map(|k| numbered_name(k)).collect();
        // One stem, numbered one after another (`a`, `b`, `c`; `num1`, `num2`).
        let in_order = names
            .windows(2)
            .all(|w| w[0].0 == w[1].0 && w[1].1 == w[0].1 + 1)
            && names
                .first()
                .is_some_and(|(stem, i)| stem.is_empty() || *i == 1);
        let required_all = properties.iter().all(|(key, schema)| {
            !is_number(schema) || !required.contains(key) || keys.contains(&key)
        });
        if keys.len() < 2 || !in_order || !required_all {
            return Vec::new();
        }
        let lists: Vec<Vec<Number>> = self
            .number_lists()
            .into_iter()
            .filter(|l| l.len() == keys.len())
            .collect();
        let [list] = lists.as_slice() else {
            return Vec::new();
        };
        let fits = keys
            .iter()
            .zip(list)
            .all(|(key, n)| fits(properties, key, n));
        if !fits {
            return Vec::new();
        }
        keys.into_iter()
            .cloned()
            .zip(list.iter().cloned())
            .collect()
    }

    /// The object's one start and one end number (`start_year`/`end_year`, `from_x`/`to_x`,
    /// `min_price`/`max_price`) with the range the message writes for them: `from A to B`,
    /// `between A and B` (a variable's name before a bound and one word after the first aside:
    /// `from x = -2 to x = 3`, `from 1 pm to 3 pm`), when it writes one and both fit.
    pub(super) fn range_pair(
        &self,
        properties: &Map<String, Value>,
    ) -> Option<[(String, Number); 2]> {
        let with = |ends: &[&str]| -> Option<&String> {
            let mut keys = properties.iter().filter(|(key, schema)| {
                is_number(schema)
                    && key
                        .split(|c: char| !c.is_alphanumeric())
                        .flat_map(split_camel)
                        .any(|w| ends.contains(&w.as_str()))
            });
            let first = keys.next()?;
            keys.next().is_none().then_some(first.0)
        };
        let start = with(RANGE_STARTS)?;
        let end = with(RANGE_ENDS)?;
        if start == end {
            return None;
        }
        let (from, to) = self.written_range()?;
        (fits(properties, start, &from) && fits(properties, end, &to))
            .then(|| [(start.clone(), from), (end.clone(), to)])
    }

    /// The first range the message writes: `from|between [v] A [word] to|and|through|until [v] B`,
    /// where `v` is a one-letter name.
    pub(super) fn written_range(&self) -> Option<(Number, Number)> {
        let word = |i: usize| match self.tokens.get(i) {
            Some(Token::Word(w)) => Some(w.as_str()),
            _ => None,
        };
        let number = |i: usize| match self.tokens.get(i) {
            Some(Token::Number(n)) => Some(n.clone()),
            _ => None,
        };
        // Past a one-letter name (`x` of `x = 3`) to the number at or after `i`.
        let bound = |i: usize| match word(i) {
            Some(w) if w.chars().count() == 1 => number(i + 1).map(|n| (i + 1, n)),
            _ => number(i).map(|n| (i, n)),
        };
        (0..self.tokens.len()).find_map(|i| {
            if !matches!(word(i), Some("from" | "between")) {
                return None;
            }
            let (at, from) = bound(i + 1)?;
            let joins = |w: Option<&str>| matches!(w, Some("to" | "and" | "through" | "until"));
            let join = if joins(word(at + 1)) {
                at + 1
            } else if word(at + 1).is_some() && joins(word(at + 2)) {
                at + 2
            } else {
                return None;
            };
            let (_, to) = bound(join + 1)?;
            Some((from, to))
        })
    }

    /// Token positions of the message's words that write what the parameter's description
    /// says it is the number of (`Number of events to return`, `The number of top traits`).
    pub(super) fn counted_places(&self, map: &Map<String, Value>) -> Vec<usize> {
        let Some(counted) = counted_word(map.get("description")) else {
            return Vec::new();
        };
        self.word_places(|t| same_stem(&counted, t))
    }

    /// A number at most [`COUNT_GAP`] words before the word at `at`, with only words between
    /// and none of them a [`FUNCTION_WORDS`] word ("three personality traits", not "3 of the
    /// traits").
    pub(super) fn number_shortly_before(&self, at: usize) -> Option<Number> {
        (1..=COUNT_GAP + 1).find_map(|back| {
            let i = at.checked_sub(back)?;
            match &self.tokens[i] {
                Token::Number(n) => Some(Some(n.clone())),
                Token::Word(w) if FUNCTION_WORDS.contains(&w.as_str()) => Some(None),
                Token::Word(_) => None,
            }
        })?
    }

    /// The year the message writes, when it writes one (four digits, 1000 to 2999) and no
    /// other.
    pub(super) fn the_year(&self) -> Option<(usize, Number)> {
        let mut years = self.tokens.iter().enumerate().filter_map(|(i, t)| match t {
            Token::Number(n) => n
                .as_u64()
                .filter(|y| (1000..3000).contains(y))
                .map(|_| (i, n)),
            Token::Word(_) => None,
        });
        let (at, first) = years.next()?;
        years.all(|(_, n)| n == first).then(|| (at, first.clone()))
    }

    /// The number right before the word at `at`.
    pub(super) fn number_right_before(&self, at: usize) -> Option<Number> {
        match at.checked_sub(1).and_then(|i| self.tokens.get(i)) {
            Some(Token::Number(n)) => Some(n.clone()),
            _ => None,
        }
    }
}

/// Whether the property `key` takes the number `n` (see [`takes`]).
fn fits(properties: &Map<String, Value>, key: &str, n: &Number) -> bool {
    properties
        .get(key)
        .and_then(Value::as_object)
        .is_some_and(|map| takes(map, n))
}

/// The units a number's description gives it in: the word after `in` that opens a parenthesis
/// or ends the description's sentence (`(in miles)`, `in minutes.`, `in square feet.`), less
/// words that say no unit (`in the`, `in which`).
fn description_units(description: Option<&Value>) -> Vec<String> {
    let Some(text) = description.and_then(Value::as_str) else {
        return Vec::new();
    };
    let lower = text.to_lowercase();
    let mut units = Vec::new();
    for (at, _) in lower.match_indices("in ") {
        let opens = lower[..at].ends_with('(');
        let rest = &lower[at + 3..];
        let end = rest.find([')', '.', ',', ';']).unwrap_or(rest.len());
        let words: Vec<&str> = rest[..end].split_whitespace().collect();
        let closes = rest[end..].starts_with(')') || rest[end..].starts_with('.');
        if !(opens || closes) || words.is_empty() || words.len() > 2 {
            continue;
        }
        if words
            .iter()
            .any(|w| NOT_UNITS.contains(w) || !w.chars().all(char::is_alphabetic))
        {
            continue;
        }
        if let Some(last) = words.last() {
            units.push((*last).to_owned());
        }
    }
    units
}

/// What a description says its number counts: the word after `number of` (`top`, `the`
/// aside).
fn counted_word(description: Option<&Value>) -> Option<String> {
    let lower = description?.as_str()?.to_lowercase();
    let at = lower.find("number of ")?;
    lower[at + "number of ".len()..]
        .split_whitespace()
        .find(|w| !matches!(*w, "top" | "the" | "most" | "best"))
        .map(|w| w.trim_matches(|c: char| !c.is_alphabetic()).to_owned())
        .filter(|w| w.chars().count() >= 3)
}

/// A numbered parameter's stem and number: `("", 1)` for `a`, `("num", 2)` for `num2`,
/// `("x", 1)` for `x1`.
fn numbered_name(key: &str) -> Option<(&str, u32)> {
    let mut chars = key.chars();
    if let (Some(c), None) = (chars.next(), chars.next()) {
        // `a`, `b`, `c` and `x`, `y`, `z`: letters in order.
        return c.is_ascii_lowercase().then(|| ("", u32::from(c)));
    }
    let stem = key.trim_end_matches(|c: char| c.is_ascii_digit());
    let digits = &key[stem.len()..];
    let stem = stem.trim_end_matches('_');
    let index = digits.parse().ok()?;
    (!stem.is_empty() && (1..=9).contains(&index)).then_some((stem, index))
}

/// Words of a parameter's name that make it a range's start or end.
const RANGE_STARTS: &[&str] = &["start", "from", "begin", "lower", "min", "low"];
const RANGE_ENDS: &[&str] = &["end", "to", "stop", "upper", "max", "high"];

/// How many words may stand between a number and what it counts ("ten major historical
/// events").
const COUNT_GAP: usize = 2;

/// Words after `in` that name no unit.
const NOT_UNITS: &[&str] = &[
    "the", "a", "an", "which", "this", "that", "its", "their", "order", "format", "total",
    "general", "case", "terms", "addition", "question", "use",
];
