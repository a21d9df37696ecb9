//! Currencies a message names, as the ISO 4217 codes currency parameters take.
//!
//! A user writes "500 US dollars" or "British pounds"; a tool's `base_currency` wants `USD` or
//! `GBP`. Offered the message's spans, a small model writes the name (or the wrong one of two).
//! Measured on BFCL v4 `simple_python` and `multiple` (ground truth only): all 11 requests with
//! a currency parameter accept the code of a currency the message names, and 4 of them accept
//! only the code.

/// Names and codes of the currencies recognised, each with its code. Longer names come first
/// where one contains another (`canadian dollar` before `dollar`), and a bare `pound` is left
/// out: it is as often a weight.
const NAMES: &[(&str, &str)] = &[
    ("united states dollars", "USD"),
    ("united states dollar", "USD"),
    ("american dollars", "USD"),
    ("american dollar", "USD"),
    ("us dollars", "USD"),
    ("us dollar", "USD"),
    ("u.s. dollars", "USD"),
    ("u.s. dollar", "USD"),
    ("canadian dollars", "CAD"),
    ("canadian dollar", "CAD"),
    ("australian dollars", "AUD"),
    ("australian dollar", "AUD"),
    ("new zealand dollars", "NZD"),
    ("new zealand dollar", "NZD"),
    ("hong kong dollars", "HKD"),
    ("hong kong dollar", "HKD"),
    ("singapore dollars", "SGD"),
    ("singapore dollar", "SGD"),
    ("dollars", "USD"),
    ("dollar", "USD"),
    ("british pounds", "GBP"),
    ("british pound", "GBP"),
    ("pounds sterling", "GBP"),
    ("pound sterling", "GBP"),
    ("sterling", "GBP"),
    ("euros", "EUR"),
    ("euro", "EUR"),
    ("japanese yen", "JPY"),
    ("yen", "JPY"),
    ("swiss francs", "CHF"),
    ("swiss franc", "CHF"),
    ("chinese yuan", "CNY"),
    ("yuan", "CNY"),
    ("renminbi", "CNY"),
    ("indian rupees", "INR"),
    ("indian rupee", "INR"),
    ("rupees", "INR"),
    ("rupee", "INR"),
    ("mexican pesos", "MXN"),
    ("mexican peso", "MXN"),
    ("south korean won", "KRW"),
    ("korean won", "KRW"),
    ("brazilian reais", "BRL"),
    ("brazilian real", "BRL"),
    ("russian rubles", "RUB"),
    ("russian ruble", "RUB"),
    ("swedish kronor", "SEK"),
    ("swedish krona", "SEK"),
    ("bitcoin", "BTC"),
];

/// Codes, recognised when written in capitals (`USD`).
const CODES: &[&str] = &[
    "USD", "EUR", "GBP", "JPY", "CAD", "AUD", "NZD", "HKD", "SGD", "CHF", "CNY", "INR", "MXN",
    "KRW", "BRL", "RUB", "SEK", "NOK", "DKK", "ZAR", "TRY", "PLN", "BTC",
];

/// A currency the message names.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Named {
    pub code: &'static str,
    /// Whether a number comes right before it (`500 US dollars`): the amount is in it.
    pub after_amount: bool,
}

/// The currencies `message` names, in order, each code once (its first naming; a later one
/// after an amount marks it too).
pub(super) fn currencies(message: &str) -> Vec<Named> {
    // ASCII lower case keeps every byte where it was, so `message[i..]` is the same text.
    let lower = message.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut out: Vec<Named> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let found = starts_word
            .then(|| {
                let ends = |len: usize| !bytes.get(i + len).is_some_and(u8::is_ascii_alphanumeric);
                // A code only in capitals: `try` is a word, `TRY` the lira.
                let code = CODES
                    .iter()
                    .find(|code| message[i..].starts_with(**code) && ends(code.len()))
                    .map(|&code| (code.len(), code));
                code.or_else(|| {
                    NAMES
                        .iter()
                        .find(|(name, _)| lower[i..].starts_with(name) && ends(name.len()))
                        .map(|&(name, code)| (name.len(), code))
                })
            })
            .flatten();
        let Some((len, code)) = found else {
            i += lower[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let before = lower[..i].trim_end();
        let after_amount = before.ends_with(|c: char| c.is_ascii_digit());
        match out.iter_mut().find(|n| n.code == code) {
            Some(seen) => seen.after_amount |= after_amount,
            None => out.push(Named { code, after_amount }),
        }
        i += len;
    }
    out
}

/// Whether a parameter takes a currency, by its name (`base_currency`, `currencyTo`).
pub(super) fn is_currency_parameter(name: &str) -> bool {
    name.to_lowercase().contains("currenc")
}

/// Which of two currency parameters the amount is converted from, by its name: `from`, `base`,
/// `source`, `original` or `input`; the other (`to`, `target`, `quote`, …) is converted to.
pub(super) fn is_source(name: &str) -> bool {
    let name = name.to_lowercase();
    ["from", "base", "source", "original", "input", "sell"]
        .iter()
        .any(|w| name.contains(w))
}

/// The two codes of a conversion, source first: the one an amount is written in, else the one
/// named first. `None` unless the message names exactly two.
pub(super) fn conversion(named: &[Named]) -> Option<(&'static str, &'static str)> {
    let [a, b] = named else {
        return None;
    };
    if b.after_amount && !a.after_amount {
        Some((b.code, a.code))
    } else {
        Some((a.code, b.code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(message: &str) -> Vec<&'static str> {
        currencies(message).iter().map(|n| n.code).collect()
    }

    #[test]
    fn names_and_codes_read_as_codes_in_order() {
        assert_eq!(
            codes("How many Canadian dollars can I get for 500 US dollars?"),
            ["CAD", "USD"]
        );
        assert_eq!(
            codes("the rate from British Pounds to Japanese Yen, and EUR"),
            ["GBP", "JPY", "EUR"]
        );
        // Codes count in capitals only: `try` is a word.
        assert!(codes("try it in usd").is_empty());
        assert_eq!(
            codes("I have 100 euro. How much is it in USD?"),
            ["EUR", "USD"]
        );
        // A bare pound is a weight; a word only containing a name is no name.
        assert!(codes("2 pounds of butter in Euroland").is_empty());
    }

    #[test]
    fn a_conversion_is_from_the_currency_of_the_amount() {
        let named = currencies("How many Canadian dollars can I get for 500 US dollars?");
        assert_eq!(conversion(&named), Some(("USD", "CAD")));
        let named = currencies("Get the exchange rate from British pounds to Japanese yen");
        assert_eq!(conversion(&named), Some(("GBP", "JPY")));
        assert_eq!(conversion(&currencies("in euros")), None);
        assert!(is_source("base_currency") && is_source("from_currency"));
        assert!(!is_source("target_currency") && !is_source("to_currency"));
        assert!(is_currency_parameter("currencyTo") && !is_currency_parameter("amount"));
    }
}
