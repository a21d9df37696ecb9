//! Earlier calls of a conversation written back in a dialect, for a text-mode model's history: the
//! calls the model (or a client) made come back in the format the model is taught, so the
//! conversation shows it writing its own format. Each form is one the dialect's parser reads back
//! as the same calls after the same text (the tests below and `tests/dialect_history.rs` check
//! it). A call the dialect cannot write faithfully — arguments that are not a JSON object, a name
//! or key its syntax cannot hold, a string holding one of its closing markers — makes that turn's
//! calls come back as the reference protocol's `<tool_call>` blocks instead, as hermes writes them.

use serde_json::{Map, Value};

use super::dialects::CallFormat;
use super::mode::call_block;
use crate::parser::Dialect;
use crate::types::ToolCall;

/// The assistant turn's text followed by its calls in `format`.
pub(crate) fn assistant_text(format: CallFormat, text: &str, calls: &[ToolCall]) -> String {
    let mut out = text.to_owned();
    if calls.is_empty() {
        return out;
    }
    let written = match format.dialect {
        Dialect::Hermes => None,
        dialect => write_calls(dialect, text.is_empty(), calls),
    };
    match written {
        Some(calls_text) => {
            new_line(&mut out);
            out.push_str(&calls_text);
        }
        None => {
            for call in calls {
                new_line(&mut out);
                out.push_str(&call_block(&call.name, &call.arguments, format.tag));
            }
        }
    }
    out
}

/// Calls start on a line of their own after text.
fn new_line(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// A call's arguments: the object as the client wrote it (trimmed; empty is `{}`) and parsed.
struct Args<'a> {
    text: &'a str,
    object: Map<String, Value>,
}

fn args(arguments: &str) -> Option<Args<'_>> {
    let text = arguments.trim();
    let text = if text.is_empty() { "{}" } else { text };
    let object = serde_json::from_str::<Map<String, Value>>(text).ok()?;
    Some(Args { text, object })
}

/// A name a dialect writes bare (not inside a JSON string): letters, digits, `_`, `-` and `.`.
fn bare_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// The calls of one turn in `dialect` (not hermes), or `None` when one of them cannot be written.
/// `alone`: no text comes before them (llama3-json and pythonic then write the bare form that
/// must be the whole reply, else the form after their marker).
fn write_calls(dialect: Dialect, alone: bool, calls: &[ToolCall]) -> Option<String> {
    let mut items = Vec::with_capacity(calls.len());
    for (index, call) in calls.iter().enumerate() {
        let a = args(&call.arguments)?;
        let name = &call.name;
        let json_name = serde_json::to_string(name).ok()?;
        let item = match dialect {
            Dialect::Hermes => return None,
            Dialect::Llama3Json => format!("{{\"name\": {json_name}, \"parameters\": {}}}", a.text),
            Dialect::Mistral | Dialect::Granite | Dialect::Phi4Mini => {
                format!("{{\"name\": {json_name}, \"arguments\": {}}}", a.text)
            }
            Dialect::Pythonic => pythonic_call(name, &a.object)?,
            Dialect::Qwen3Coder => qwen3_call(name, &a.object)?,
            Dialect::Glm45 => glm_call(name, &a.object)?,
            Dialect::DeepseekV3 => {
                // `function<｜tool▁sep｜>` opens the V3/R1 form instead.
                (bare_name(name) && name != "function").then_some(())?;
                format!(
                    "<｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
                    a.text
                )
            }
            Dialect::KimiK2 => {
                bare_name(name).then_some(())?;
                format!(
                    "<|tool_call_begin|>functions.{name}:{index}<|tool_call_argument_begin|>{}<|tool_call_end|>",
                    a.text
                )
            }
            Dialect::GptOss => {
                bare_name(name).then_some(())?;
                format!(
                    "<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{}<|call|>",
                    a.text
                )
            }
        };
        items.push(item);
    }
    Some(match dialect {
        Dialect::Llama3Json if alone => items.join("; "),
        Dialect::Llama3Json => format!("<|python_tag|>{}", items.join("; ")),
        Dialect::Pythonic if alone => format!("[{}]", items.join(", ")),
        Dialect::Pythonic => format!("<|python_start|>[{}]<|python_end|>", items.join(", ")),
        Dialect::Mistral => format!("[TOOL_CALLS][{}]", items.join(", ")),
        Dialect::Granite => format!("<|tool_call|>[{}]", items.join(", ")),
        Dialect::Phi4Mini => format!("functools[{}]", items.join(", ")),
        Dialect::Qwen3Coder | Dialect::Glm45 => items.join("\n"),
        Dialect::DeepseekV3 => format!(
            "<｜tool▁calls▁begin｜>{}<｜tool▁calls▁end｜>",
            items.concat()
        ),
        Dialect::KimiK2 => format!(
            "<|tool_calls_section_begin|>{}<|tool_calls_section_end|>",
            items.concat()
        ),
        Dialect::GptOss | Dialect::Hermes => items.concat(),
    })
}

/// A value of the XML-like dialects: a string as plain text, anything else as compact JSON; `None`
/// when a string holds one of the dialect's markers (it would end the value early).
fn bare_value(value: &Value, markers: &[&str]) -> Option<String> {
    match value {
        Value::String(s) if markers.iter().any(|m| s.contains(m)) => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A key of the XML-like dialects: read back trimmed, and ended by `>` or `<`.
fn bare_key(key: &str) -> bool {
    !key.is_empty() && key.trim() == key && !key.contains(['<', '>'])
}

/// `<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n…</function>\n</tool_call>`,
/// as Qwen3-Coder's chat template writes it (the parser takes one newline on each side of a value
/// as markup).
fn qwen3_call(name: &str, object: &Map<String, Value>) -> Option<String> {
    const MARKERS: [&str; 4] = ["</parameter>", "<parameter=", "</function>", "</tool_call>"];
    bare_name(name).then_some(())?;
    let mut out = format!("<tool_call>\n<function={name}>\n");
    for (key, value) in object {
        bare_key(key).then_some(())?;
        let value = bare_value(value, &MARKERS)?;
        out.push_str(&format!("<parameter={key}>\n{value}\n</parameter>\n"));
    }
    out.push_str("</function>\n</tool_call>");
    Some(out)
}

/// `<tool_call>NAME\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>…\n</tool_call>`, as
/// GLM-4.5's chat template writes it; a value starting or ending with a newline gets one more
/// there (the parser takes one on each side as markup).
fn glm_call(name: &str, object: &Map<String, Value>) -> Option<String> {
    const MARKERS: [&str; 2] = ["</arg_value>", "</tool_call>"];
    bare_name(name).then_some(())?;
    let mut out = format!("<tool_call>{name}");
    for (key, value) in object {
        (bare_key(key) && !key.contains("</arg_key>")).then_some(())?;
        let mut value = bare_value(value, &MARKERS)?;
        if value.starts_with('\n') {
            value.insert(0, '\n');
        }
        if value.ends_with('\n') {
            value.push('\n');
        }
        out.push_str(&format!(
            "\n<arg_key>{key}</arg_key>\n<arg_value>{value}</arg_value>"
        ));
    }
    out.push_str("\n</tool_call>");
    Some(out)
}

/// `NAME(key=value, …)` with Python literals; keys must be identifiers.
fn pythonic_call(name: &str, object: &Map<String, Value>) -> Option<String> {
    let starts_ok = |s: &str| s.bytes().next().is_some_and(|b| !b.is_ascii_digit());
    (bare_name(name) && starts_ok(name)).then_some(())?;
    let mut out = format!("{name}(");
    for (i, (key, value)) in object.iter().enumerate() {
        let identifier =
            starts_ok(key) && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        identifier.then_some(())?;
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(key);
        out.push('=');
        python_literal(value, &mut out);
    }
    out.push(')');
    Some(out)
}

/// A JSON value as the Python literal the pythonic reader turns back into it.
fn python_literal(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_literal(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                python_string(key, out);
                out.push_str(": ");
                python_literal(item, out);
            }
            out.push('}');
        }
    }
}

fn python_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::{parse, ParserConfig};
    use crate::texts::CallTag;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn python_literals_read_back_as_the_same_json() {
        let value = serde_json::json!({
            "s": "a \"q\" \\ \n\t\r\u{1}\u{7f}\u{85} é 🦀", "n": -3, "f": 2.5, "e": 1e100,
            "b": [true, false, null], "o": {"k": [1, {"x": "y"}]}
        });
        let mut text = String::new();
        python_literal(&value, &mut text);
        let parsed = crate::parser::dialect::python_literal(&text);
        assert_eq!(parsed, Some(value), "{text}");
    }

    #[test]
    fn calls_a_dialect_cannot_hold_fall_back_to_reference_blocks() {
        let format = CallFormat::from(Dialect::Qwen3Coder);
        let calls = [call("f", r#"{"a": "x</parameter>y"}"#), call("g", "{}")];
        let text = assistant_text(format, "Hi.", &calls);
        assert_eq!(
            text,
            "Hi.\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"x</parameter>y\"}}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>"
        );
        let pythonic = CallFormat::from(Dialect::Pythonic);
        for bad in [
            call("f", r#"{"my-key": 1}"#),
            call("2f", "{}"),
            call("f", "[1]"),
        ] {
            let text = assistant_text(pythonic, "", std::slice::from_ref(&bad));
            assert!(text.starts_with("<tool_call>{"), "{text}");
        }
        // Hermes writes blocks in its tag.
        let text = assistant_text(CallFormat::from(CallTag::ToolUse), "", &[call("f", "")]);
        assert_eq!(
            text,
            "<tool_use>{\"name\": \"f\", \"arguments\": {}}</tool_use>"
        );
    }

    #[test]
    fn every_dialect_reads_its_own_history_back() {
        let calls = [
            call("get_weather", r#"{"city": "Paris", "unit": "c"}"#),
            call(
                "web.search-v2",
                r#"{"query": "a \"b\"\nc", "n": 3, "exact": false, "tags": ["x", 1], "opt": null}"#,
            ),
        ];
        let schemas = [
            (
                "get_weather".to_owned(),
                serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}}),
            ),
            (
                "web.search-v2".to_owned(),
                serde_json::json!({"type": "object", "properties": {
                    "query": {"type": "string"}, "n": {"type": "integer"}, "exact": {"type": "boolean"},
                    "tags": {"type": "array"}, "opt": {"type": "null"}
                }}),
            ),
        ];
        for dialect in Dialect::ALL {
            for text in ["", "Checking both."] {
                let written = assistant_text(CallFormat::from(dialect), text, &calls);
                let config = ParserConfig {
                    tools: Some(vec!["get_weather".into(), "web.search-v2".into()]),
                    dialect,
                    schemas: schemas.iter().cloned().collect(),
                    ..ParserConfig::default()
                };
                let out = parse(&written, &config);
                assert!(
                    out.errors.is_empty(),
                    "{dialect}: {:?}\n{written}",
                    out.errors
                );
                assert_eq!(out.text.trim_end(), text, "{dialect}: {written}");
                assert_eq!(out.calls.len(), 2, "{dialect}: {written}");
                for (got, want) in out.calls.iter().zip(&calls) {
                    assert_eq!(got.name, want.name, "{dialect}");
                    let got: Value = serde_json::from_str(&got.arguments).unwrap_or_default();
                    let want: Value = serde_json::from_str(&want.arguments).unwrap_or_default();
                    assert_eq!(got, want, "{dialect}: {written}");
                }
            }
        }
    }
}
