//! The numbers a message writes: in digits (signs, thousands commas, fractions, exponents,
//! scale words, units glued on) or as words, which of them are percentages, and the value each
//! gives a parameter (a percentage is a fraction unless the parameter is in percent; a rate takes
//! the percentages).

use serde_json::{Map, Number, Value};

use super::split_camel;

/// Which of a message's numbers [`numbers`] reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Written {
    Any,
    AsPercentage,
    /// Not as a percentage.
    Plain,
}

/// The numbers written in the message, each once, in order (see [`number_at`]), written as
/// `which` says.
pub(super) fn numbers(message: &str, which: Written) -> Vec<Number> {
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

/// Words that make a rate-named parameter something else: an amount (`discount_amount`,
/// `interest_earned`, `total_return`), a period, or a rate in units rather than percent
/// (`frame_rate`, `heart_rate`, `exchange_rate`).
const NOT_RATE_WORDS: &[&str] = &[
    "amount", "value", "count", "total", "earned", "paid", "sum", "days", "months", "years",
    "periods", "frame", "sample", "bit", "heart", "baud", "refresh", "exchange", "fps",
];

/// Whether a parameter is a rate in percent: by its name ([`RATE_WORDS`], [`NOT_RATE_WORDS`]),
/// or by saying it is in percent.
pub(super) fn is_rate(name: &str, map: &Map<String, Value>) -> bool {
    let words: Vec<String> = name
        .split(|c: char| !c.is_alphanumeric())
        .flat_map(split_camel)
        .collect();
    let named = words.iter().any(|w| RATE_WORDS.contains(&w.as_str()))
        && !words.iter().any(|w| NOT_RATE_WORDS.contains(&w.as_str()));
    named || in_percent(name, map)
}

/// Whether the parameter says, by its name or description, that it is in percent.
fn in_percent(name: &str, map: &Map<String, Value>) -> bool {
    let says_percent = |text: &str| {
        let text = text.to_ascii_lowercase();
        text.contains("percent")
            || text
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "pct")
    };
    says_percent(name)
        || map
            .get("description")
            .and_then(Value::as_str)
            .is_some_and(says_percent)
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
    let is_number = map.get("type").and_then(Value::as_str) == Some("number");
    if is_number && !in_percent(name, map) && percents.contains(n) {
        if let Some(fraction) = hundredth(n) {
            return fraction;
        }
    }
    n.clone()
}

/// `n / 100`, by moving the decimal point of its decimal form (so `5` gives the same `0.05` a
/// JSON text writes, not a division's rounding).
pub(super) fn hundredth(n: &Number) -> Option<Number> {
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
pub(super) fn number_at(bytes: &[u8], mut i: usize) -> (usize, Option<Number>) {
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
