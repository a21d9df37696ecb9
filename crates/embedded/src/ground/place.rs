//! A place as a tool's description writes its example: "The city and state, e.g. New York, NY".

use super::split_camel;

/// The place and the code of a description's example written as a place with its state's or
/// country's two-letter code: "e.g. New York, NY" gives `("New York", "NY")`. Measured on BFCL
/// v4's required plain strings of `simple_python` and `multiple` before use: where the message
/// names the example's place (26 parameters), the example's form is accepted every time, and
/// the place alone in only 19 of them. An example that lists options ("e.g. oil, acrylic, etc")
/// is none.
pub(super) fn place_example<'d>(name: &str, description: &'d str) -> Option<(&'d str, &'d str)> {
    const MARKS: [&str; 4] = ["e.g.,", "e.g.", "for example,", "for example"];
    // Only a place's parameter: its name or description says so.
    const PLACE_WORDS: [&str; 8] = [
        "city", "state", "location", "place", "address", "town", "region", "where",
    ];
    let lower = description.to_ascii_lowercase();
    let says_place = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .flat_map(split_camel)
            .any(|w| PLACE_WORDS.contains(&w.as_str()))
    };
    if !says_place(name) && !says_place(&lower) {
        return None;
    }
    let (at, mark) = MARKS
        .iter()
        .filter_map(|m| lower.find(m).map(|at| (at, m.len())))
        .min_by_key(|&(at, len)| (at, usize::MAX - len))?;
    let rest = description.get(at + mark..)?.trim_start();
    let rest = rest.trim_start_matches(['\'', '"']);
    let (place, after) = rest.split_once(", ")?;
    let code = after.get(..2)?;
    // The code ends its word and no further item follows it ("e.g. US, UK, CA" lists options).
    let tail = &after[2..];
    let ends = tail.chars().next().is_none_or(|c| !c.is_alphanumeric());
    let listed = tail
        .strip_prefix(", ")
        .is_some_and(|t| t.starts_with(char::is_uppercase));
    let place_ok = !place.is_empty()
        && place.len() <= 40
        && place.starts_with(char::is_uppercase)
        && place.contains(char::is_lowercase)
        && !place.contains(['.', ';', '(', ')']);
    let code_ok = code.chars().all(|c| c.is_ascii_uppercase());
    (place_ok && ends && !listed && code_ok).then_some((place, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_example_is_a_place_with_a_two_letter_code() {
        let example = |d| place_example("where", d);
        assert_eq!(
            example("The city and state, e.g. New York, NY, you should format it"),
            Some(("New York", "NY"))
        );
        assert_eq!(
            example("The city, e.g., 'Chicago, IL.'"),
            Some(("Chicago", "IL"))
        );
        assert_eq!(example("For example London, UK"), Some(("London", "UK")));
        for none in [
            "The medium, e.g. oil, acrylic, etc.",
            "e.g. Windows 10, PS5",
            "The platform, e.g. PC, Xbox",
            "The city and state, like New York, NY",
            "e.g. NY",
            "e.g. US, UK, CA",
            "e.g. Tesla, GM, Ford",
        ] {
            assert_eq!(example(none), None, "{none}");
        }
        // Only for a place: by the parameter's name or its description.
        assert_eq!(
            place_example("platform", "The platform, e.g. Xbox, PC"),
            None
        );
        assert_eq!(
            place_example("venue", "The city, e.g. Xbox, PC"),
            Some(("Xbox", "PC"))
        );
    }
}
