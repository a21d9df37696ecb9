//! What a required leaf of a call's arguments is offered from the message: a plain string the
//! message's spans (or dates), a list of numbers one of the lists it writes, a number one of its
//! numbers (see the module doc of [`super`]).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::dates;
use super::mention::{name_words, same_stem};
use super::numbers::{is_rate, number_for};
use super::place::place_example;
use super::spans::trim_word;
use super::{free_text, joins_a_date, plain, within, Grounding};

impl Grounding {
    /// Offers the required value `name` values from the message, by its type (a value already
    /// fixed by `enum` or `const` keeps it).
    pub(super) fn offer(&self, map: &mut Map<String, Value>, name: &str, max: usize) {
        let fixed = ["enum", "const"].iter().any(|k| map.contains_key(*k));
        let ty = map.get("type").and_then(Value::as_str).map(str::to_owned);
        match ty.as_deref() {
            Some("string") if !fixed && plain(map) => self.offer_string(map, name, max),
            Some("array") if !fixed => self.offer_number_list(map),
            Some(t @ ("number" | "integer")) if !fixed => self.offer_number(map, name, t),
            _ => {}
        }
    }

    /// A plain string: the message's spans that are not labels of the parameter, or its dates
    /// for a date parameter.
    fn offer_string(&self, map: &mut Map<String, Value>, name: &str, max: usize) {
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
        // Only words of letters count (`image.png` is no label of `image_path`), and a
        // quoted phrase is offered as the user quoted it.
        let labels = name_words(name);
        let labelled = |span: &String| {
            !self.quoted.contains(span)
                && span.split_whitespace().map(trim_word).any(|w| {
                    w.starts_with(char::is_lowercase)
                        && w.chars().all(char::is_alphabetic)
                        && labels.iter().any(|n| same_stem(n, &w.to_lowercase()))
                })
        };
        // A place the description's example writes with its state's code ("The city
        // and state, e.g. New York, NY") is offered in that form when the message names
        // it (see `place_example`).
        let description = map.get("description").and_then(Value::as_str);
        let example = description.and_then(|d| place_example(name, d));
        let offered: Vec<String> = if dates::is_date_parameter(name) && !self.dates.is_empty() {
            // A date: one the message writes, in the description's form.
            let form = dates::Form::of(description.unwrap_or_default());
            self.dates.iter().map(|&d| form.write(d)).collect()
        } else {
            self.spans
                .iter()
                .filter(|s| !labelled(s) && !joins_a_date(s))
                .map(|s| match example {
                    Some((place, code)) if s == place => format!("{s}, {code}"),
                    _ => s.clone(),
                })
                .collect()
        };
        let mut seen = HashSet::new();
        let offered: Vec<Value> = offered
            .into_iter()
            .filter(|s| (least..=most.min(max)).contains(&s.chars().count()))
            .filter(|s| seen.insert(s.clone()))
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

    /// A list of numbers: one of the lists the message writes, whole.
    fn offer_number_list(&self, map: &mut Map<String, Value>) {
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
                l.iter()
                    .all(|n| (t == "number" || !n.is_f64()) && item.is_none_or(|i| within(i, n)))
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

    /// A number (`t`: `number` or `integer`): one of the message's numbers.
    fn offer_number(&self, map: &mut Map<String, Value>, name: &str, t: &str) {
        // A rate takes one of the percentages the message writes; an integer that is no
        // rate (a count, a year, a period) takes none that is only a percentage (see
        // `numbers.rs`), and a number that is no rate takes a number written both ways
        // both as written and as a fraction. Either falls back to every number when
        // nothing else fits.
        let rate = is_rate(name, map);
        let only_percentages = rate && !self.percents.is_empty();
        let sorts = [true, false].map(|sorted| {
            let mut offered: Vec<Value> = Vec::new();
            for n in &self.numbers {
                let plain = self.plain.contains(n);
                let skip = sorted
                    && if only_percentages {
                        !self.percents.contains(n)
                    } else {
                        !rate && t == "integer" && !plain
                    };
                if skip {
                    continue;
                }
                let as_written = (!only_percentages && plain).then(|| n.clone());
                let values =
                    as_written
                        .into_iter()
                        .chain([number_for(n, &self.percents, name, map)]);
                for n in values {
                    let fits = (t == "number" || n.is_i64() || n.is_u64()) && within(map, &n);
                    let n = Value::Number(n);
                    if fits && !offered.contains(&n) {
                        offered.push(n);
                    }
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
}
