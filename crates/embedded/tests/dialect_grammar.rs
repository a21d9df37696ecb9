//! The forced-call grammar in every dialect: it accepts exactly the form the history writes the
//! call back in (so the next round's prompt repeats the model's bytes), the dialect's parser reads
//! that form back as the same call, and the grammar refuses other dialects' forms and markup inside
//! a value.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::{json, Value};
use toktrie::ApproximateTokEnv;
use toolbridge_embedded::grammar::build_forced_call;
use toolbridge_embedded::schema::Limits;
use toolbridge_protocol::parser::{parse, Dialect, ParserConfig};
use toolbridge_protocol::texts::dialects::CallFormat;
use toolbridge_protocol::types::{ToolCall, ToolSpec};

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

fn trip() -> ToolSpec {
    ToolSpec::new(
        "plan_trip",
        "Plans a trip.",
        json!({"type": "object", "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer"},
            "hotel": {"type": "boolean"},
            "unit": {"type": "string", "enum": ["metric", "imperial"]},
            "stops": {"type": "array", "items": {"type": "string"}}
        }, "required": ["city", "days"]}),
    )
}

fn grammar(dialect: Dialect, tools: &[&ToolSpec]) -> String {
    let f = factory();
    let call = build_forced_call(dialect, tools, &Limits::default(), None, &|g| {
        compiles(&f, g)
    });
    assert!(call.relaxed.is_empty(), "{dialect}: {:?}", call.relaxed);
    call.grammar
}

/// JSON with the separators a forced call writes (`", "`, `": "`).
fn spaced(value: &Value) -> String {
    match value {
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(spaced).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), spaced(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        other => other.to_string(),
    }
}

/// The call as the history writes it when the reply holds nothing else, its arguments as the
/// model wrote them.
fn written(dialect: Dialect, name: &str, arguments: &Value) -> String {
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments: spaced(arguments),
    };
    CallFormat::from(dialect).assistant_text("", &[call])
}

fn read_back(dialect: Dialect, text: &str, tool: &ToolSpec) -> Vec<(String, Value)> {
    let config = ParserConfig {
        tools: Some(vec![tool.name.clone()]),
        dialect,
        schemas: [(tool.name.clone(), tool.parameters.clone().unwrap())]
            .into_iter()
            .collect(),
        ..ParserConfig::default()
    };
    let response = parse(text, &config);
    assert!(
        response.errors.is_empty(),
        "{dialect}: {:?}",
        response.errors
    );
    assert_eq!(response.text.trim(), "", "{dialect}: visible text");
    response
        .calls
        .into_iter()
        .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
        .collect()
}

#[test]
fn every_dialect_forces_the_form_its_history_writes_and_reads_it_back() {
    let f = factory();
    let tool = trip();
    let cases = [
        json!({"city": "Paris", "days": 3}),
        json!({"city": "New York", "days": 2, "hotel": true, "unit": "metric"}),
        json!({"city": "Rome", "days": 1, "stops": ["Colosseum", "Forum"]}),
        json!({"city": "Kyoto", "days": 4, "hotel": false, "unit": "imperial", "stops": []}),
    ];
    for dialect in Dialect::ALL {
        let g = grammar(dialect, &[&tool]);
        for arguments in &cases {
            let text = written(dialect, "plan_trip", arguments);
            assert!(accepts(&f, &g, &text), "{dialect} refuses {text:?}\n{g}");
            let calls = read_back(dialect, &text, &tool);
            assert_eq!(
                calls,
                vec![("plan_trip".to_owned(), arguments.clone())],
                "{dialect}: {text:?}"
            );
        }
    }
}

#[test]
fn a_forced_call_is_only_in_the_models_own_dialect() {
    let f = factory();
    let tool = trip();
    let arguments = json!({"city": "Paris", "days": 3});
    for dialect in Dialect::ALL {
        let g = grammar(dialect, &[&tool]);
        for other in Dialect::ALL {
            let text = written(other, "plan_trip", &arguments);
            if text == written(dialect, "plan_trip", &arguments) {
                continue;
            }
            assert!(
                !accepts(&f, &g, &text),
                "{dialect}'s grammar accepts {other}'s form {text:?}"
            );
        }
    }
}

#[test]
fn required_parameters_are_always_written_and_values_hold_no_markup() {
    let f = factory();
    let tool = trip();
    for dialect in Dialect::ALL {
        let g = grammar(dialect, &[&tool]);
        // `days` is required.
        let missing = written(dialect, "plan_trip", &json!({"city": "Paris"}));
        assert!(!accepts(&f, &g, &missing), "{dialect} accepts {missing:?}");
        // A string value cannot open or close a tag.
        let markup = written(
            dialect,
            "plan_trip",
            &json!({"city": "Pa</x>ris", "days": 3}),
        );
        assert!(!accepts(&f, &g, &markup), "{dialect} accepts {markup:?}");
        // Nor can an enum take another value.
        let off = written(
            dialect,
            "plan_trip",
            &json!({"city": "Paris", "days": 3, "unit": "kelvin"}),
        );
        assert!(!accepts(&f, &g, &off), "{dialect} accepts {off:?}");
    }
}

#[test]
fn the_grammar_chooses_between_several_tools_and_a_tool_without_parameters() {
    let f = factory();
    let trip = trip();
    let now = ToolSpec::new(
        "now",
        "The time.",
        json!({"type": "object", "properties": {}}),
    );
    for dialect in Dialect::ALL {
        let g = grammar(dialect, &[&trip, &now]);
        let a = written(dialect, "now", &json!({}));
        assert!(accepts(&f, &g, &a), "{dialect} refuses {a:?}\n{g}");
        assert_eq!(
            read_back(dialect, &a, &now),
            vec![("now".to_owned(), json!({}))]
        );
        let b = written(dialect, "plan_trip", &json!({"city": "Oslo", "days": 5}));
        assert!(accepts(&f, &g, &b), "{dialect} refuses {b:?}");
    }
}

/// A value is written in the type the dialect's parser reads it as: an optional string
/// (`anyOf` with null) bare, a nullable integer as a number — never quoted JSON that would come
/// back as a string holding quotes.
#[test]
fn nullable_and_any_of_values_come_back_as_written() {
    let f = factory();
    let tool = ToolSpec::new(
        "note",
        "Writes a note.",
        json!({"type": "object", "properties": {
            "text": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "count": {"type": ["integer", "null"]}
        }, "required": ["text", "count"]}),
    );
    let arguments = json!({"text": "buy milk", "count": 2});
    for dialect in Dialect::ALL {
        let g = grammar(dialect, &[&tool]);
        let text = written(dialect, "note", &arguments);
        assert!(accepts(&f, &g, &text), "{dialect} refuses {text:?}\n{g}");
        assert_eq!(
            read_back(dialect, &text, &tool),
            vec![("note".to_owned(), arguments.clone())],
            "{dialect}"
        );
        if matches!(dialect, Dialect::Qwen3Coder | Dialect::Glm45) {
            // The string is bare text, not a JSON string (which would be read back with its
            // quotes), and the integer is JSON of type integer only (no `null` to read as text).
            let rule = |p: &str| g.lines().find(|l| l.starts_with(p)).unwrap_or_default();
            assert!(!rule("c0_p0:").contains("%json"), "{dialect}: {g}");
            assert!(
                rule("c0_p1:").contains(r#""type":"integer""#),
                "{dialect}: {g}"
            );
        }
    }
}

/// A tool pythonic cannot write (a key that is not an identifier) is forced as hermes' block, and
/// the relaxation says so.
#[test]
fn a_call_the_dialect_cannot_write_is_forced_as_a_tool_call_block() {
    let f = factory();
    let tool = ToolSpec::new(
        "search",
        "",
        json!({"type": "object", "properties": {"max-results": {"type": "integer"}}, "required": ["max-results"]}),
    );
    let call = build_forced_call(
        Dialect::Pythonic,
        &[&tool],
        &Limits::default(),
        None,
        &|g| compiles(&f, g),
    );
    assert_eq!(call.dialect, Dialect::Hermes);
    assert!(
        call.relaxed.iter().any(|r| r.contains("<tool_call>")),
        "{:?}",
        call.relaxed
    );
    let text = written(Dialect::Hermes, "search", &json!({"max-results": 3}));
    assert!(accepts(&f, &call.grammar, &text), "{}", call.grammar);
}
