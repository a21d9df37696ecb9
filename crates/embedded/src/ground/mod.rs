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
//!   the words of the system messages (a skill's name the instructions list, say), as an `enum`
//!   — less the spans that write the parameter's own name in lower case ("deluxe room" for
//!   `room_type`), and with a place the description's example writes with its code in that form
//!   ("e.g. New York, NY"); for a parameter named as a date, the dates the message writes, in the
//!   form the description names (`dates.rs`);
//! - for a number or an integer: the numbers the message holds (of that type, within the
//!   schema's bounds), when it holds any: in digits (`1,000`, `2.5`, `1e-9`, `213 million`) or
//!   as words (`three`), a percentage as the fraction it stands for unless the parameter is in
//!   percent, only the percentages for a rate and none that is only a percentage for an integer
//!   that is no rate (`numbers.rs`);
//! - for an array of numbers: the lists of numbers the message writes, whole;
//! - for the other plain strings: at least one character;
//! - for a parameter the message names, required or not: the value the message gives it
//!   (`mention.rs`), and the parameter is written; likewise a list of options the message
//!   writes, an optional number at its unit or before what it counts, the one year, a range's
//!   start and end, numbered parameters (`a`, `b`, `c`) in order, and currencies as their codes
//!   (`mention/quantities.rs`, `currency.rs`);
//! - spans that join words to a date or a numeric range ("London 2022/08/16") are not offered.
//!
//! The call is still validated against the tool's own schema afterwards. A value the message
//! does not hold (a default, a unit converted) cannot be written under this schema; measured on
//! BFCL that costs less than the free values' errors (docs/src/embedded.md has the figures).

use serde_json::{Map, Number, Value};

use crate::schema::PLAIN_STRING_PATTERN;

mod currency;
mod dates;
mod mention;
mod numbers;
mod offer;
mod place;
mod spans;

use mention::Mentions;
pub(crate) use numbers::scan_numbers;
use numbers::{numbers, Written};
pub use spans::MAX_SPAN_WORDS;
use spans::{quoted_phrases, spans, trim_word, MAX_SPANS};

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
    /// The message's quoted phrases (among the spans): written as the user quoted them.
    quoted: Vec<String>,
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
            quoted: quoted_phrases(message)
                .into_iter()
                .map(str::to_owned)
                .collect(),
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
        self.properties(map, required, max);
        if let Some(items) = map.get_mut("items") {
            self.node(items, name, required, max);
        }
        if required {
            self.offer(map, name, max);
        }
    }

    /// An object's properties: those the message settles (in a required object) become
    /// required, and each is grounded in turn.
    fn properties(&self, map: &mut Map<String, Value>, required: bool, max: usize) {
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
        let Some(Value::Object(props)) = map.get_mut("properties") else {
            return;
        };
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
}

/// Whether a span joins words to a date or a range of numbers at its start or end ("London
/// 2022/08/16", "La Liga 2020-2021"): each is a value of its own. Measured on BFCL v4's
/// required plain strings: 24 such spans offered, none accepted.
fn joins_a_date(span: &str) -> bool {
    let words: Vec<&str> = span.split_whitespace().collect();
    let dated = |w: &&str| {
        let mut parts = w.split(['/', '-']);
        let all_digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
        let first = parts.next().is_some_and(all_digits);
        let rest: Vec<&str> = parts.collect();
        first && !rest.is_empty() && rest.len() <= 2 && rest.iter().all(|p| all_digits(p))
    };
    words.len() >= 2 && (words.first().is_some_and(dated) || words.last().is_some_and(dated))
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

/// The first [`MAX_MESSAGE`] bytes of `text` (to a character boundary).
fn head(text: &str) -> &str {
    let mut end = text.len().min(MAX_MESSAGE);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::numbers::hundredth;
    use super::*;
    use serde_json::json;

    #[test]
    fn a_string_is_not_offered_words_joined_to_a_date() {
        let g = Grounding::from_message("The air quality in London 2022/08/16, La Liga 2020-2021");
        let mut args = json!({"type": "object", "properties": {
            "location": {"type": "string"}}, "required": ["location"]});
        g.ground(&mut args, 100);
        let offered = args["properties"]["location"]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(offered.contains(&json!("London")), "{offered:?}");
        assert!(
            !offered.contains(&json!("London 2022/08/16")),
            "{offered:?}"
        );
        assert!(
            !offered.contains(&json!("La Liga 2020-2021")),
            "{offered:?}"
        );
        assert!(joins_a_date("2020-2021 season") && !joins_a_date("2020-2021"));
        assert!(!joins_a_date("Windows 10") && !joins_a_date("Model 3-series"));
    }

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
        // A rate (by name, or saying it is in percent) takes only the percentages; an integer
        // that is no rate none that is only one.
        assert_eq!(p["rate"]["enum"], json!([0.05, 0.025, 0.6]));
        assert_eq!(p["yield_pct"]["enum"], json!([5, 2.5, 60]));
        assert_eq!(p["fee"]["enum"], json!([5, 2.5, 60]));
        assert_eq!(p["lightness"]["enum"], json!([3]));
        // A number that is no rate takes them all, as fractions; a rate in units is no rate.
        let g = Grounding::from_message("Export at 60 fps with 20% compression, 5 years at 5%");
        let mut args = json!({"type": "object", "properties": {
            "frame_rate": {"type": "integer"},
            "quality": {"type": "number"},
            "years": {"type": "number"},
            "tax": {"type": "integer", "description": "Tax in percent"}
        }, "required": ["frame_rate", "quality", "years", "tax"]});
        g.ground(&mut args, 200);
        let p = &args["properties"];
        assert_eq!(p["frame_rate"]["enum"], json!([60, 5]));
        assert_eq!(p["quality"]["enum"], json!([60, 0.2, 5, 0.05]));
        assert_eq!(p["years"]["enum"], json!([60, 0.2, 5, 0.05]));
        assert_eq!(p["tax"]["enum"], json!([20, 5]));
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
        let g = Grounding::from_message("Find a vegan restaurant in New York, NY or New York");
        let mut args = json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. New York, NY"},
            "area": {"type": "string", "description": "The area, e.g. Boston, MA"}
        }, "required": ["location", "area"]});
        g.ground(&mut args, 200);
        let location = args["properties"]["location"]["enum"].as_array().unwrap();
        assert!(location.contains(&json!("New York, NY")), "{location:?}");
        assert!(!location.contains(&json!("New York")), "{location:?}");
        // Offered once, though the message writes it too.
        let written = location.iter().filter(|v| *v == "New York, NY").count();
        assert_eq!(written, 1, "{location:?}");
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
