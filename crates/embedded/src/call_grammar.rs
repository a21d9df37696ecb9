//! How one forced call is written in each dialect, as grammar rules: the model's chat template
//! teaches its own family's call format, so a forced call is made in that format — written
//! exactly as the history writes the call back in the next round (`CallFormat::assistant_text`
//! with no text before it), so the KV cache stays valid across rounds.
//!
//! JSON dialects put the arguments object (`%json`) in their frame. The XML-like dialects
//! (qwen3-coder, glm45) and pythonic write one value per parameter: a string as bare text
//! (qwen3-coder, glm45) or a JSON string (a valid Python literal), a boolean as `True`/`False` and
//! null as `None` in pythonic, anything else as JSON (compact in qwen3-coder and glm45, as their
//! history writes it) — each one what the dialect's parser reads back as the same value.

use serde_json::{json, Value};
use toolbridge_protocol::parser::{parameter_type, Dialect};
use toolbridge_protocol::texts::CallTag;
use toolbridge_protocol::types::ToolSpec;

use crate::schema;

/// What comes before and after the call (the name alternatives) in `dialect`.
pub fn frame(dialect: Dialect) -> (String, &'static str) {
    match dialect {
        Dialect::Hermes => {
            let tag = CallTag::default();
            (format!("<{}>", tag.name()), tag.stop_sequence())
        }
        Dialect::Llama3Json => (String::new(), ""),
        Dialect::Mistral => ("[TOOL_CALLS][".into(), "]"),
        Dialect::Granite => ("<|tool_call|>[".into(), "]"),
        Dialect::Phi4Mini => ("functools[".into(), "]"),
        Dialect::Pythonic => ("[".into(), "]"),
        Dialect::Qwen3Coder => ("<tool_call>\n".into(), "</tool_call>"),
        Dialect::Glm45 => ("<tool_call>".into(), "\n</tool_call>"),
        Dialect::DeepseekV3 => (
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>".into(),
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        ),
        Dialect::KimiK2 => (
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.".into(),
            "<|tool_call_end|><|tool_calls_section_end|>",
        ),
        Dialect::GptOss => ("<|channel|>commentary to=functions.".into(), "<|call|>"),
    }
}

/// The JSON layout options given to llguidance for every schema: the separators the history
/// writes calls with (`", "` and `": "`).
pub fn layout(lenient: bool) -> Value {
    json!({
        "item_separator": ", ",
        "key_separator": ": ",
        "whitespace_flexible": false,
        "lenient": lenient,
    })
}

/// The schema of a JSON call object: the name as a constant, then the arguments under `key`.
pub fn call_schema(tool: &ToolSpec, key: &str, arguments: &Value, lenient: bool) -> Value {
    json!({
        "x-guidance": layout(lenient),
        "type": "object",
        "properties": {
            "name": {"const": tool.name},
            key: arguments,
        },
        "required": ["name", key],
        "additionalProperties": false,
    })
}

/// The rules of call `i` (named `c{i}`, helpers `c{i}_…`), one line each.
pub fn call_rules(
    dialect: Dialect,
    i: usize,
    tool: &ToolSpec,
    arguments: &Value,
    lenient: bool,
) -> String {
    let framed = |between: &str| {
        format!(
            "c{i}: {} {} {}\n",
            lark_string(&tool.name),
            lark_string(between),
            json_value(arguments, lenient)
        )
    };
    match dialect {
        Dialect::Hermes
        | Dialect::Mistral
        | Dialect::Granite
        | Dialect::Phi4Mini
        | Dialect::Llama3Json => {
            let key = if dialect == Dialect::Llama3Json {
                "parameters"
            } else {
                "arguments"
            };
            format!(
                "c{i}: %json {}\n",
                call_schema(tool, key, arguments, lenient)
            )
        }
        Dialect::DeepseekV3 => framed("<｜tool▁sep｜>"),
        Dialect::KimiK2 => framed(":0<|tool_call_argument_begin|>"),
        Dialect::GptOss => framed(" <|constrain|>json<|message|>"),
        Dialect::Qwen3Coder | Dialect::Glm45 | Dialect::Pythonic => {
            per_parameter(dialect, i, tool, arguments, lenient)
        }
    }
}

/// A call written one parameter at a time: the properties the generation schema declares, in its
/// order, the required ones always and the others optionally.
fn per_parameter(
    dialect: Dialect,
    i: usize,
    tool: &ToolSpec,
    arguments: &Value,
    lenient: bool,
) -> String {
    let required: Vec<&str> = arguments
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = serde_json::Map::new();
    let properties = arguments
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut rules = String::new();
    // (rule name, required) of each parameter.
    let mut params = Vec::with_capacity(properties.len());
    for (j, (key, schema)) in properties.iter().enumerate() {
        let rule = format!("c{i}_p{j}");
        let key_lit = |s: String| lark_string(&s);
        let body = match dialect {
            Dialect::Qwen3Coder => format!(
                "{} {}",
                key_lit(format!("<parameter={key}>\n")),
                value_rule(dialect, schema, "\n</parameter>\n", lenient)
            ),
            Dialect::Glm45 => format!(
                "{} {}",
                key_lit(format!("\n<arg_key>{key}</arg_key>\n<arg_value>")),
                value_rule(dialect, schema, "</arg_value>", lenient)
            ),
            _ => format!(
                "{} {}",
                key_lit(format!("{key}=")),
                value_rule(dialect, schema, "", lenient)
            ),
        };
        rules.push_str(&format!("{rule}: {body}\n"));
        params.push((rule, required.contains(&key.as_str())));
    }
    let name = &tool.name;
    let (open, list, close) = match dialect {
        Dialect::Qwen3Coder => (
            format!("<function={name}>\n"),
            blocks(&params),
            "</function>\n",
        ),
        Dialect::Glm45 => (name.clone(), blocks(&params), ""),
        _ => (format!("{name}("), comma_list(&params), ")"),
    };
    let close = if close.is_empty() {
        String::new()
    } else {
        lark_string(close)
    };
    format!("c{i}: {} {list} {close}\n{rules}", lark_string(&open))
}

/// Blocks that follow each other with nothing between them.
fn blocks(params: &[(String, bool)]) -> String {
    let parts: Vec<String> = params
        .iter()
        .map(|(rule, required)| {
            if *required {
                rule.clone()
            } else {
                format!("{rule}?")
            }
        })
        .collect();
    if parts.is_empty() {
        "\"\"".into()
    } else {
        parts.join(" ")
    }
}

/// `a, b, c` where the optional items may be left out: the required items in order, each optional
/// one after its predecessor with its comma; with no required item, any optional one may come
/// first.
fn comma_list(params: &[(String, bool)]) -> String {
    let item = |(rule, required): &(String, bool), first: bool| {
        let one = if first {
            rule.clone()
        } else {
            format!("\", \" {rule}")
        };
        if *required {
            one
        } else {
            format!("({one})?")
        }
    };
    if params.iter().any(|(_, r)| *r) {
        // Start at the first required item; the optional ones before it cannot be first.
        let mut out = Vec::new();
        let mut seen_first = false;
        for p in params {
            if !seen_first && !p.1 {
                // An optional item before the first required one: written with a comma after it.
                out.push(format!("({} \", \")?", p.0));
                continue;
            }
            out.push(item(p, !seen_first));
            seen_first = true;
        }
        return out.join(" ");
    }
    if params.is_empty() {
        return "\"\"".into();
    }
    // All optional: one of them first, then any of the ones after it.
    let branches: Vec<String> = (0..params.len())
        .map(|start| {
            let mut parts = vec![params[start].0.clone()];
            parts.extend(params[start + 1..].iter().map(|p| item(p, false)));
            format!("({})", parts.join(" "))
        })
        .collect();
    format!("({})?", branches.join(" | "))
}

/// The grammar of one parameter's value followed by `close` (the markup after it). The value is
/// written in the type the dialect's parser will read it as ([`parameter_type`]), so it comes back
/// as the same JSON value.
fn value_rule(dialect: Dialect, schema: &Value, close: &str, lenient: bool) -> String {
    let then_close = |value: String| {
        if close.is_empty() {
            value
        } else {
            format!("{value} {}", lark_string(close))
        }
    };
    let ty = parameter_type(schema);
    if dialect == Dialect::Pythonic {
        // The pythonic reader takes Python literals (and JSON's); the history writes these so.
        return match ty.as_deref() {
            Some("boolean") if schema_types(schema) == ["boolean"] => {
                then_close("(\"True\" | \"False\")".into())
            }
            Some("null") => then_close("\"None\"".into()),
            // A JSON number may have an exponent no float holds (`1e999`), which the pythonic
            // reader refuses: an unbounded number is written within a float's range.
            Some(t @ ("number" | "integer")) if schema_types(schema) == [t] && !bounded(schema) => {
                then_close(if t == "integer" {
                    "/-?(0|[1-9][0-9]{0,17})/".to_owned()
                } else {
                    "/-?(0|[1-9][0-9]{0,17})(\\.[0-9]{1,17})?([eE][-+]?[0-9]{1,2})?/".to_owned()
                })
            }
            _ => then_close(json_value(schema, lenient)),
        };
    }
    match ty.as_deref() {
        // qwen3-coder reads an untyped value as a string, so it is written as one.
        Some("string") => bare_string(&narrowed(schema, "string"), close),
        None if dialect == Dialect::Qwen3Coder => bare_string(schema, close),
        Some(t) => then_close(compact_json(&narrowed(schema, t), lenient)),
        None => then_close(compact_json(schema, lenient)),
    }
}

/// Whether a number schema bounds its values itself (the grammar then follows it as JSON).
fn bounded(schema: &Value) -> bool {
    [
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "enum",
        "const",
    ]
    .iter()
    .any(|k| schema.get(*k).is_some())
}

/// The part of `schema` of type `ty`: its own keywords with `type` set to `ty`, or the first
/// `anyOf`/`oneOf` branch of that type (a value the parser reads as `ty` must be one).
fn narrowed(schema: &Value, ty: &str) -> Value {
    match schema.get("type") {
        Some(Value::String(_)) => return schema.clone(),
        Some(Value::Array(_)) => {
            let mut one = schema.clone();
            one["type"] = ty.into();
            return one;
        }
        _ => {}
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find(|branch| parameter_type(branch).as_deref() == Some(ty))
        .map(|branch| narrowed(branch, ty))
        .unwrap_or_else(|| schema.clone())
}

/// Whether every tool's call can be written in `dialect` and read back: names (and pythonic's
/// keys) its syntax holds bare. Otherwise the forced call is written as hermes' block.
pub fn writable(dialect: Dialect, tools: &[&ToolSpec], arguments: &[Value]) -> bool {
    let bare = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    };
    let identifier = |s: &str| {
        s.bytes().next().is_some_and(|b| !b.is_ascii_digit())
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
    };
    let keys = |a: &Value| -> Vec<String> {
        a.get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    };
    tools
        .iter()
        .zip(arguments)
        .all(|(tool, args)| match dialect {
            Dialect::Pythonic => identifier(&tool.name) && keys(args).iter().all(|k| identifier(k)),
            Dialect::Qwen3Coder | Dialect::Glm45 => {
                bare(&tool.name)
                    && keys(args)
                        .iter()
                        .all(|k| !k.is_empty() && k.trim() == k && !k.contains(['<', '>']))
            }
            Dialect::DeepseekV3 => bare(&tool.name) && tool.name != "function",
            Dialect::KimiK2 | Dialect::GptOss => bare(&tool.name),
            _ => true,
        })
}

/// A string written bare (qwen3-coder, glm45), then `close`: one of its `enum`/`const` values,
/// else text of the generation schema's length without markup (see
/// [`schema::PLAIN_STRING_PATTERN`]) and with no newline at either end (the parser takes one
/// there as markup). Free text and its close are one regex: the grammar's lexer is greedy, so a
/// value that may hold a newline cannot end where a close starting with one begins.
fn bare_string(schema: &Value, close: &str) -> String {
    let listed: Option<Vec<&str>> = match (schema.get("const"), schema.get("enum")) {
        (Some(Value::String(c)), _) => Some(vec![c.as_str()]),
        (_, Some(Value::Array(values))) => values.iter().map(Value::as_str).collect(),
        _ => None,
    };
    if let Some(values) = listed.filter(|v| !v.is_empty()) {
        let alternatives: Vec<String> = values.iter().map(|v| lark_string(v)).collect();
        return format!("({}) {}", alternatives.join(" | "), lark_string(close));
    }
    let max = schema
        .get("maxLength")
        .and_then(Value::as_u64)
        .unwrap_or(schema::DEFAULT_MAX_STRING_LENGTH as u64);
    let min = schema
        .get("minLength")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(max);
    const EDGE: &str = r"[^<>{}\[\]\n]";
    const MIDDLE: &str = r"[^<>{}\[\]]";
    let text = match (min, max) {
        (_, 0) => String::new(),
        (0, 1) => format!("({EDGE})?"),
        (_, 1) => EDGE.to_owned(),
        (0, _) => format!("({EDGE}({MIDDLE}{{0,{}}}{EDGE})?)?", max - 2),
        (1, _) => format!("{EDGE}({MIDDLE}{{0,{}}}{EDGE})?", max - 2),
        _ => format!("{EDGE}{MIDDLE}{{{},{}}}{EDGE}", min - 2, max - 2),
    };
    format!("/{text}{}/", regex_literal(close))
}

/// `text` as a regex matching itself, inside a lark `/…/`.
fn regex_literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '/' => out.push_str("\\/"),
            c if "\\.+*?()|[]{}^$-".contains(c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// The JSON types a schema names (empty: any).
fn schema_types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// `%json` of `schema` with the history's layout.
fn json_value(schema: &Value, lenient: bool) -> String {
    json_with(schema, layout(lenient))
}

/// `%json` of `schema` written compactly (`,` and `:`), as the XML-like dialects' history writes
/// a value that is not a string.
fn compact_json(schema: &Value, lenient: bool) -> String {
    let mut compact = layout(lenient);
    compact["item_separator"] = ",".into();
    compact["key_separator"] = ":".into();
    json_with(schema, compact)
}

fn json_with(schema: &Value, layout: Value) -> String {
    let mut with_layout = schema.clone();
    if let Some(m) = with_layout.as_object_mut() {
        m.insert("x-guidance".into(), layout);
    }
    format!("%json {with_layout}")
}

/// The bytes of the rest of a forced call from anywhere in it, its very start included: the
/// frame, the name, the per-parameter markup and the arguments' closing cost.
pub fn closing_cost(dialect: Dialect, tool: &ToolSpec, arguments: &Value) -> usize {
    let (open, close) = frame(dialect);
    let keys: usize = arguments
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().map(|k| k.len() + 40).sum())
        .unwrap_or(0);
    let markup = match dialect {
        Dialect::Qwen3Coder | Dialect::Glm45 | Dialect::Pythonic => keys,
        _ => "{\"name\": , \"parameters\": }<|constrain|>json<|message|>".len(),
    };
    open.len() + tool.name.len() + 2 + markup + schema::closing_cost(arguments) + close.len()
}

pub fn lark_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}
