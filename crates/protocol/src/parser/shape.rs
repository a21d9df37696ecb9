//! Judging a complete JSON value: is it a tool call, and with which arguments?

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::json::Member;
use super::problem::ParseProblem;

/// A call read out of a value: the name and the arguments JSON text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct CallShape<'a> {
    pub name: Cow<'a, str>,
    pub arguments: Cow<'a, str>,
}

#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default)]
    parameters: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// What the judge needs to know about the declared tools.
pub(crate) trait Declared {
    fn allows(&self, name: &str) -> bool;
    fn describe(&self) -> String;
}

/// Judges one object value. `require_arguments` is set for fences, where plain JSON data must not be
/// mistaken for a call: there an explicit, non-null arguments key is required.
pub(crate) fn judge_object<'a>(
    text: &'a str,
    declared: &dyn Declared,
    require_arguments: bool,
) -> Result<CallShape<'a>, ParseProblem> {
    if !text.starts_with('{') {
        return Err(ParseProblem::NotAnObject);
    }
    let fields: Fields<'a> = serde_json::from_str(text).map_err(|e| ParseProblem::json(&e))?;
    let name = fields.name.ok_or(ParseProblem::MissingName)?;
    check_name(&name, declared)?;
    let raw = fields.arguments.or(fields.parameters).or(fields.input);
    let arguments = match raw {
        None if require_arguments => return Err(ParseProblem::MissingArguments),
        None => Cow::Borrowed("{}"),
        Some(raw) => arguments_text(raw)?,
    };
    Ok(CallShape { name, arguments })
}

/// Judges an object from the members the scanner recorded, without parsing it again. `None` when
/// a key holds an escape sequence: then [`judge_object`] decides.
pub(crate) fn judge_members<'a>(
    text: &'a str,
    members: &[Member],
    declared: &dyn Declared,
) -> Option<Result<CallShape<'a>, ParseProblem>> {
    let mut name = None;
    let mut sources: [Option<&'a str>; 3] = [None; 3];
    for m in members {
        if m.escaped {
            return None;
        }
        let value = text.get(m.value.0..m.value.1)?;
        let slot = match text.get(m.key.0..m.key.1)? {
            "name" => &mut name,
            "arguments" => &mut sources[0],
            "parameters" => &mut sources[1],
            "input" => &mut sources[2],
            _ => continue,
        };
        if slot.is_some() {
            let key = &text[m.key.0..m.key.1];
            return Some(Err(ParseProblem::DuplicateField {
                field: key.to_owned(),
            }));
        }
        *slot = Some(value);
    }
    Some(judge_fields(name, sources, declared))
}

fn judge_fields<'a>(
    name: Option<&'a str>,
    sources: [Option<&'a str>; 3],
    declared: &dyn Declared,
) -> Result<CallShape<'a>, ParseProblem> {
    let name = match name {
        None | Some("null") => return Err(ParseProblem::MissingName),
        Some(raw) if raw.starts_with('"') => {
            if raw.contains('\\') {
                Cow::Owned(serde_json::from_str::<String>(raw).map_err(|e| ParseProblem::json(&e))?)
            } else {
                Cow::Borrowed(&raw[1..raw.len() - 1])
            }
        }
        Some(_) => return Err(ParseProblem::NameNotString),
    };
    check_name(&name, declared)?;
    // Like `Option<&RawValue>`: a null source counts as absent.
    let arguments = match sources.into_iter().flatten().find(|s| *s != "null") {
        None => Cow::Borrowed("{}"),
        Some(raw) => arguments_from_raw(raw)?,
    };
    Ok(CallShape { name, arguments })
}

/// Whether `name` may be called: a declared tool, or any name when none are declared.
pub(crate) fn check_name(name: &str, declared: &dyn Declared) -> Result<(), ParseProblem> {
    if declared.allows(name) {
        Ok(())
    } else {
        Err(ParseProblem::UnknownTool {
            name: name.to_owned(),
            declared: declared.describe(),
        })
    }
}

fn arguments_text(raw: &RawValue) -> Result<Cow<'_, str>, ParseProblem> {
    arguments_from_raw(raw.get())
}

fn arguments_from_raw(text: &str) -> Result<Cow<'_, str>, ParseProblem> {
    match text.as_bytes().first() {
        Some(b'{') => Ok(Cow::Borrowed(text)),
        Some(b'"') => {
            // Some models double-encode: a JSON string that holds the arguments object.
            let inner: String = serde_json::from_str(text).map_err(|e| ParseProblem::json(&e))?;
            let trimmed = inner.trim();
            match serde_json::from_str::<&RawValue>(trimmed) {
                Ok(v) if v.get().starts_with('{') => Ok(Cow::Owned(trimmed.to_owned())),
                _ => Err(ParseProblem::ArgumentsString),
            }
        }
        _ => Err(ParseProblem::ArgumentsNotObject),
    }
}

/// The elements of an array value, as raw text slices.
pub(crate) fn array_elements(text: &str) -> Result<Vec<&str>, ParseProblem> {
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| ParseProblem::json(&e))?;
    Ok(items.into_iter().map(RawValue::get).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Any;
    impl Declared for Any {
        fn allows(&self, _: &str) -> bool {
            true
        }
        fn describe(&self) -> String {
            String::new()
        }
    }

    struct Only(&'static [&'static str]);
    impl Declared for Only {
        fn allows(&self, n: &str) -> bool {
            self.0.contains(&n)
        }
        fn describe(&self) -> String {
            self.0.join(", ")
        }
    }

    fn ok(text: &str) -> (String, String) {
        let c = judge_object(text, &Any, false).unwrap();
        (c.name.into_owned(), c.arguments.into_owned())
    }

    #[test]
    fn argument_sources_and_defaults() {
        assert_eq!(ok(r#"{"name":"f","arguments":{"a": 1}}"#).1, r#"{"a": 1}"#);
        assert_eq!(ok(r#"{"name":"f","parameters":{"b":2}}"#).1, r#"{"b":2}"#);
        assert_eq!(ok(r#"{"name":"f","input":{"c":3}}"#).1, r#"{"c":3}"#);
        assert_eq!(ok(r#"{"name":"f"}"#).1, "{}");
        assert_eq!(ok(r#"{"name":"f","arguments":null}"#).1, "{}");
        assert_eq!(
            ok(r#"{"name":"f","arguments":" {\"x\": \"é\"} "}"#).1,
            r#"{"x": "é"}"#
        );
        assert_eq!(ok(r#"{"extra":1,"name":"f","arguments":{}}"#).0, "f");
    }

    #[test]
    fn bad_shapes_are_errors() {
        for bad in [
            r#"{"arguments":{}}"#,
            r#"{"name":3}"#,
            r#"{"name":"f","arguments":[1]}"#,
            r#"{"name":"f","arguments":"not json"}"#,
            r#"{"name":"f","name":"g"}"#,
        ] {
            assert!(judge_object(bad, &Any, false).is_err(), "{bad}");
        }
        let e = judge_object(r#"{"name":"x"}"#, &Only(&["a", "b"]), false).unwrap_err();
        assert_eq!(e.to_string(), "unknown tool \"x\"; available tools: a, b");
        assert!(judge_object(r#"{"name":"f"}"#, &Any, true).is_err());
    }
}
