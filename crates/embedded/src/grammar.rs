//! Grammars for constrained tool calls (llguidance's Lark-like syntax with `%json` schemas).
//!
//! A forced call is exactly the call prompt mode teaches in the model's dialect — for hermes
//! `<tool_call>{"name": …, "arguments": …}</tool_call>` — written with the separators the history
//! uses (`", "` and `": "`), so the call the model makes re-renders byte for byte in the next
//! round's history (which keeps the KV cache valid across rounds). [`crate::call_grammar`] holds
//! each dialect's form.

use serde_json::{json, Value};
use toolbridge_protocol::parser::Dialect;
use toolbridge_protocol::types::ToolSpec;

use crate::call_grammar;
use crate::ground::Grounding;
use crate::schema::{self, Limits};

/// Prose without markup: text that never contains `<` (so no tag can be echoed or opened).
pub const PROSE: &str = "start: /[^<\\s][^<]*/\n";

pub use crate::call_grammar::layout;

/// The schema of one hermes call object: the name as a constant, then `arguments` (a generation
/// schema, see [`crate::schema`]).
pub fn call_schema(tool: &ToolSpec, arguments: &Value, lenient: bool) -> Value {
    crate::call_grammar::call_schema(tool, "arguments", arguments, lenient)
}

/// The arguments schema a tool's calls are generated from: its parameters rewritten under
/// `limits` (a tool without parameters takes an empty object).
pub fn arguments_schema(tool: &ToolSpec, limits: &Limits, notes: &mut Vec<String>) -> Value {
    match &tool.parameters {
        Some(Value::Object(map)) if !map.is_empty() => {
            let mut schema = Value::Object(map.clone());
            // The arguments are an object whatever the schema says about its top level.
            if let Some(m) = schema.as_object_mut() {
                if m.get("type").and_then(Value::as_str) != Some("object") {
                    m.insert("type".into(), "object".into());
                }
            }
            schema::for_generation(&schema, limits, notes)
        }
        _ => closed_empty(),
    }
}

fn closed_empty() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

/// The grammar of one forced call to one of `tools` written in `dialect`, whose arguments
/// follow `arguments` (one generation schema per tool).
pub fn forced_call_with(
    dialect: Dialect,
    tools: &[&ToolSpec],
    arguments: &[Value],
    lenient: bool,
) -> String {
    let (open, close) = call_grammar::frame(dialect);
    let mut g = String::from("start: ");
    if !open.is_empty() {
        g.push_str(&lark_string(&open));
        g.push(' ');
    }
    g.push_str("call");
    if !close.is_empty() {
        g.push(' ');
        g.push_str(&lark_string(close));
    }
    g.push('\n');
    let alternatives: Vec<String> = (0..tools.len()).map(|i| format!("c{i}")).collect();
    g.push_str(&format!("call: {}\n", alternatives.join(" | ")));
    for (i, (tool, args)) in tools.iter().zip(arguments).enumerate() {
        g.push_str(&call_grammar::call_rules(dialect, i, tool, args, lenient));
    }
    g
}

/// The grammar of one forced call to one of `tools`, under the default limits.
pub fn forced_call(tools: &[&ToolSpec], lenient: bool) -> String {
    forced_call_in(Dialect::Hermes, tools, lenient)
}

/// The grammar of one forced call to one of `tools` in `dialect`, under the default limits.
pub fn forced_call_in(dialect: Dialect, tools: &[&ToolSpec], lenient: bool) -> String {
    let mut notes = Vec::new();
    let arguments: Vec<Value> = tools
        .iter()
        .map(|t| arguments_schema(t, &Limits::default(), &mut notes))
        .collect();
    forced_call_with(dialect, tools, &arguments, lenient)
}

/// A forced call ready to decode: its grammar, the dialect it is written in, the tokens to keep
/// for closing it (see [`schema::closing_cost`]) and what had to be relaxed for the grammar to
/// compile.
#[derive(Clone, Debug, PartialEq)]
pub struct ForcedCall {
    pub grammar: String,
    pub dialect: Dialect,
    pub reserve: usize,
    pub relaxed: Vec<String>,
}

/// Builds the forced-call grammar for `tools`, relaxing what `compiles` refuses so that a schema
/// never fails the request: first the whole grammar as rewritten; then each argument whose own
/// grammar does not compile is relaxed (its `pattern`, `format` and `enum` dropped; then only its
/// type kept; then any bounded value); then llguidance's lenient mode; at last arguments that
/// can only be `{}`. `relaxed` says what was done.
pub fn build_forced_call(
    dialect: Dialect,
    tools: &[&ToolSpec],
    limits: &Limits,
    grounding: Option<&Grounding>,
    compiles: &dyn Fn(&str) -> Result<(), String>,
) -> ForcedCall {
    let mut relaxed = Vec::new();
    let mut arguments: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut notes = Vec::new();
            let mut a = arguments_schema(t, limits, &mut notes);
            if let Some(g) = grounding {
                g.ground(&mut a, limits.max_string_length);
            }
            relaxed.extend(notes.into_iter().map(|n| format!("{}: {n}", t.name)));
            a
        })
        .collect();
    // A call the dialect cannot write (a pythonic key that is no identifier, say) is hermes'.
    let dialect = if call_grammar::writable(dialect, tools, &arguments) {
        dialect
    } else {
        relaxed.push(format!(
            "written as a <tool_call> block: {dialect} cannot hold a name or key"
        ));
        Dialect::Hermes
    };
    let finish = |arguments: &[Value], grammar: String, relaxed: Vec<String>| {
        let reserve = tools
            .iter()
            .zip(arguments)
            .map(|(t, a)| call_grammar::closing_cost(dialect, t, a))
            .max()
            .unwrap_or(0);
        ForcedCall {
            grammar,
            dialect,
            reserve,
            relaxed,
        }
    };
    let strict = forced_call_with(dialect, tools, &arguments, false);
    let first_error = match compiles(&strict) {
        Ok(()) => return finish(&arguments, strict, relaxed),
        Err(e) => e,
    };
    relaxed.push(format!("the grammar did not compile ({first_error})"));
    for (tool, args) in tools.iter().zip(arguments.iter_mut()) {
        relax_arguments(tool, args, limits, compiles, &mut relaxed);
    }
    let grammar = forced_call_with(dialect, tools, &arguments, false);
    if compiles(&grammar).is_ok() {
        return finish(&arguments, grammar, relaxed);
    }
    let lenient = forced_call_with(dialect, tools, &arguments, true);
    if compiles(&lenient).is_ok() {
        relaxed.push("lenient JSON schema mode".into());
        return finish(&arguments, lenient, relaxed);
    }
    relaxed.push("every tool's arguments reduced to `{}`".into());
    let empty: Vec<Value> = tools.iter().map(|_| closed_empty()).collect();
    let grammar = forced_call_with(dialect, tools, &empty, false);
    finish(&empty, grammar, relaxed)
}

/// Relaxes the properties of one tool's arguments whose own grammar does not compile.
fn relax_arguments(
    tool: &ToolSpec,
    arguments: &mut Value,
    limits: &Limits,
    compiles: &dyn Fn(&str) -> Result<(), String>,
    relaxed: &mut Vec<String>,
) {
    let value_compiles = |schema: &Value| {
        let mut with_layout = schema.clone();
        if let Some(m) = with_layout.as_object_mut() {
            m.insert("x-guidance".into(), layout(false));
        }
        compiles(&format!("start: %json {with_layout}\n")).is_ok()
    };
    let Some(properties) = arguments
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (key, schema) in properties.iter_mut() {
        if value_compiles(schema) {
            continue;
        }
        let mut notes = Vec::new();
        let mut loose = schema.clone();
        if let Some(m) = loose.as_object_mut() {
            for k in ["pattern", "format", "enum", "const"] {
                m.remove(k);
            }
        }
        let loose = schema::for_generation(&loose, limits, &mut notes);
        let typed = json!({"type": schema.get("type").cloned().unwrap_or(Value::Null)});
        let typed = schema::for_generation(&typed, limits, &mut notes);
        let free = schema::for_generation(&Value::Bool(true), limits, &mut notes);
        let (what, replacement) = if value_compiles(&loose) {
            ("its pattern, format and enum dropped", loose)
        } else if value_compiles(&typed) {
            ("only its type kept", typed)
        } else {
            ("any bounded value", free)
        };
        relaxed.push(format!("{}: /properties/{key}: {what}", tool.name));
        *schema = replacement;
    }
}

use crate::call_grammar::lark_string;

#[cfg(test)]
mod tests {
    use super::*;
    use llguidance::api::TopLevelGrammar;
    use llguidance::{Matcher, ParserFactory};
    use toktrie::ApproximateTokEnv;

    fn factory() -> ParserFactory {
        let mut f = ParserFactory::new_simple(&ApproximateTokEnv::single_byte_env()).unwrap();
        f.quiet();
        f
    }

    fn compiles(f: &ParserFactory, grammar: &str) -> Result<(), String> {
        let parser = f
            .create_parser(TopLevelGrammar::from_lark(grammar.to_owned()))
            .map_err(|e| e.to_string())?;
        match Matcher::new(Ok(parser)).get_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Whether the grammar accepts `text` whole (one token per byte).
    fn accepts(f: &ParserFactory, grammar: &str, text: &str) -> bool {
        let parser = f
            .create_parser(TopLevelGrammar::from_lark(grammar.to_owned()))
            .unwrap();
        let mut m = Matcher::new(Ok(parser));
        let tokens: Vec<u32> = text.bytes().map(u32::from).collect();
        m.validate_tokens(&tokens).unwrap() == tokens.len()
            && m.consume_tokens(&tokens).is_ok()
            && m.is_accepting().unwrap()
    }

    fn weather() -> ToolSpec {
        ToolSpec::new(
            "get_weather",
            "",
            json!({"type": "object", "properties": {"city": {"type": "string"}, "extra": {"type": "object", "properties": {"unit": {"type": "string"}}}}}),
        )
    }

    #[test]
    fn the_grammar_names_every_tool() {
        let a = ToolSpec::new("a", "", json!({"type": "object"}));
        let b = ToolSpec::new("b", "", json!({}));
        let g = forced_call(&[&a, &b], false);
        assert!(g.starts_with("start: \"<tool_call>\" call \"</tool_call>\"\n"));
        assert!(g.contains("call: c0 | c1\n"));
        assert!(g.contains("\"const\":\"b\""));
    }

    /// The hermes forced call of `tool` grounded in `message`, which compiles unrelaxed.
    fn grounded_call(f: &ParserFactory, tool: &ToolSpec, message: &str) -> ForcedCall {
        let g = Grounding::from_message(message);
        let call = build_forced_call(
            Dialect::Hermes,
            &[tool],
            &Limits::default(),
            Some(&g),
            &|g| compiles(f, g),
        );
        assert!(call.relaxed.is_empty(), "{:?}", call.relaxed);
        call
    }

    #[test]
    fn a_grounded_call_takes_the_messages_spans_and_numbers_only() {
        let f = factory();
        let tool = ToolSpec::new(
            "get_weather",
            "",
            json!({"type": "object", "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "code": {"type": "string"}
            }, "required": ["city", "days"]}),
        );
        let call = grounded_call(&f, &tool, "Weather in New York for 3 days?");
        let with = |args: &str| {
            format!(r#"<tool_call>{{"name": "get_weather", "arguments": {args}}}</tool_call>"#)
        };
        for ok in [
            r#"{"city": "New York", "days": 3}"#,
            r#"{"city": "New", "days": 3, "code": "print(1)"}"#,
        ] {
            assert!(accepts(&f, &call.grammar, &with(ok)), "{ok}");
        }
        for bad in [
            r#"{"city": "Paris", "days": 3}"#,
            r#"{"city": "York", "days": 3}"#,
            r#"{"city": "", "days": 3}"#,
            r#"{"city": "New York", "days": 4}"#,
            r#"{"city": "New York", "code": ""}"#,
        ] {
            assert!(!accepts(&f, &call.grammar, &with(bad)), "{bad}");
        }
    }

    #[test]
    fn a_grounded_call_writes_what_the_message_names_and_its_lists() {
        let f = factory();
        let tool = ToolSpec::new(
            "t_test",
            "",
            json!({"type": "object", "properties": {
                "group_a": {"type": "array", "items": {"type": "integer"}},
                "alpha": {"type": "number"},
                "equal_variance": {"type": "boolean"},
                "tail": {"type": "string", "enum": ["one", "two"]}
            }, "required": ["group_a"]}),
        );
        let call = grounded_call(
            &f,
            &tool,
            "Compare [3, 4, 5] with [7, 8] at alpha 0.05, two tail, not assuming equal variance",
        );
        let with = |args: &str| {
            format!(r#"<tool_call>{{"name": "t_test", "arguments": {args}}}</tool_call>"#)
        };
        for ok in [
            r#"{"group_a": [3, 4, 5], "alpha": 0.05, "equal_variance": false, "tail": "two"}"#,
            r#"{"group_a": [7, 8], "alpha": 0.05, "equal_variance": false, "tail": "two"}"#,
        ] {
            assert!(accepts(&f, &call.grammar, &with(ok)), "{ok}");
        }
        for bad in [
            // Named optional parameters are written, with the values the message gives.
            r#"{"group_a": [3, 4, 5]}"#,
            r#"{"group_a": [3, 4], "alpha": 0.05, "equal_variance": false, "tail": "two"}"#,
            r#"{"group_a": [3, 4, 5], "alpha": 3, "equal_variance": false, "tail": "two"}"#,
            r#"{"group_a": [3, 4, 5], "alpha": 0.05, "equal_variance": true, "tail": "two"}"#,
            r#"{"group_a": [3, 4, 5], "alpha": 0.05, "equal_variance": false, "tail": "one"}"#,
        ] {
            assert!(!accepts(&f, &call.grammar, &with(bad)), "{bad}");
        }
    }

    #[test]
    fn a_forced_call_takes_plain_values_and_refuses_markup_debris_and_invented_keys() {
        let f = factory();
        let tool = weather();
        let call = build_forced_call(Dialect::Hermes, &[&tool], &Limits::default(), None, &|g| {
            compiles(&f, g)
        });
        assert!(call.relaxed.is_empty(), "{:?}", call.relaxed);
        let g = &call.grammar;
        let ok = r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris, France", "extra": {"unit": "C"}}}</tool_call>"#;
        assert!(accepts(&f, g, ok));
        for bad in [
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "x}}</tool_call>"}}</tool_call>"#,
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "<input>"}}</tool_call>"#,
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "]["}}</tool_call>"#,
            r#"<tool_call>{"name": "get_weather", "arguments": {"town": "Paris"}}</tool_call>"#,
            r#"<tool_call>{"name": "get_weather", "arguments": {"extra": {"type": {"type": "x"}}}}</tool_call>"#,
        ] {
            assert!(!accepts(&f, g, bad), "{bad}");
        }
    }

    #[test]
    fn the_string_limit_is_configurable() {
        let f = factory();
        let tool = weather();
        let limits = Limits {
            max_string_length: 4,
            ..Limits::default()
        };
        let call = build_forced_call(Dialect::Hermes, &[&tool], &limits, None, &|g| {
            compiles(&f, g)
        });
        let call_with = |city: &str| {
            format!(
                r#"<tool_call>{{"name": "get_weather", "arguments": {{"city": "{city}"}}}}</tool_call>"#
            )
        };
        assert!(accepts(&f, &call.grammar, &call_with("Rome")));
        assert!(!accepts(&f, &call.grammar, &call_with("Paris")));
    }

    #[test]
    fn a_schema_the_grammar_engine_refuses_is_relaxed_not_an_error() {
        let f = factory();
        // A look-behind is not a regular expression llguidance compiles.
        let tool = ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {
                "code": {"type": "string", "pattern": "(?<=a)b"},
                "n": {"type": "integer"},
            }, "required": ["code", "n"]}),
        );
        let strict = forced_call(&[&tool], false);
        assert!(
            compiles(&f, &strict).is_err(),
            "the case must really fail to compile"
        );
        let call = build_forced_call(Dialect::Hermes, &[&tool], &Limits::default(), None, &|g| {
            compiles(&f, g)
        });
        assert!(compiles(&f, &call.grammar).is_ok());
        assert!(
            call.relaxed.iter().any(|r| r.contains("/properties/code")),
            "{:?}",
            call.relaxed
        );
        assert!(!call.relaxed.iter().any(|r| r.contains("/properties/n")));
        assert!(accepts(
            &f,
            &call.grammar,
            r#"<tool_call>{"name": "t", "arguments": {"code": "b", "n": 3}}</tool_call>"#
        ));
    }

    #[test]
    fn an_integer_with_string_enum_values_compiles_and_takes_the_values() {
        let f = factory();
        let tool = ToolSpec::new(
            "t",
            "",
            json!({"type": "object", "properties": {"level": {"type": "integer", "enum": ["1", "2"]}}, "required": ["level"]}),
        );
        let call = build_forced_call(Dialect::Hermes, &[&tool], &Limits::default(), None, &|g| {
            compiles(&f, g)
        });
        assert!(
            call.relaxed.iter().any(|r| r.contains("enum values")),
            "{:?}",
            call.relaxed
        );
        assert!(accepts(
            &f,
            &call.grammar,
            r#"<tool_call>{"name": "t", "arguments": {"level": "2"}}</tool_call>"#
        ));
    }

    #[test]
    fn the_reserve_covers_the_tag_and_the_arguments() {
        let f = factory();
        let tool = weather();
        let call = build_forced_call(Dialect::Hermes, &[&tool], &Limits::default(), None, &|g| {
            compiles(&f, g)
        });
        let args = r#"{"city": "", "extra": {"unit": ""}}"#;
        assert!(
            call.reserve >= args.len() + "}</tool_call>".len(),
            "{}",
            call.reserve
        );
    }
}
