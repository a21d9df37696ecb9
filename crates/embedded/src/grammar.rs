//! Grammars for constrained tool calls (llguidance's Lark-like syntax with `%json` schemas).
//!
//! A forced call is exactly the block prompt mode teaches, `<tool_call>{"name": …, "arguments":
//! …}</tool_call>`, written with the separators `call_block` uses (`", "` and `": "`), so the call
//! the model makes re-renders byte for byte in the next round's history (which keeps the KV cache
//! valid across rounds).

use serde_json::{json, Value};
use toolbridge_protocol::texts::CallTag;
use toolbridge_protocol::types::ToolSpec;

/// Prose without markup: text that never contains `<` (so no tag can be echoed or opened).
pub const PROSE: &str = "start: /[^<\\s][^<]*/\n";

/// The JSON layout options given to llguidance for every schema.
fn layout(lenient: bool) -> Value {
    json!({
        "item_separator": ", ",
        "key_separator": ": ",
        "whitespace_flexible": false,
        "lenient": lenient,
    })
}

/// The schema of one call object: the name as a constant, then the arguments. An arguments schema
/// that lists `properties` without saying `additionalProperties` gets `false`: a small model
/// constrained to the declared keys cannot wander off into invented ones.
pub fn call_schema(tool: &ToolSpec, lenient: bool) -> Value {
    let arguments = match &tool.parameters {
        Some(Value::Object(map)) if !map.is_empty() => {
            let mut map = map.clone();
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(map)
        }
        _ => json!({"type": "object"}),
    };
    json!({
        "x-guidance": layout(lenient),
        "type": "object",
        "properties": {
            "name": {"const": tool.name},
            "arguments": arguments,
        },
        "required": ["name", "arguments"],
        "additionalProperties": false,
    })
}

/// The grammar of one forced call to one of `tools`.
pub fn forced_call(tools: &[&ToolSpec], lenient: bool) -> String {
    let tag = CallTag::default();
    let open = format!("<{}>", tag.name());
    let mut g = format!(
        "start: {} call {}\n",
        lark_string(&open),
        lark_string(tag.stop_sequence())
    );
    let alternatives: Vec<String> = (0..tools.len()).map(|i| format!("c{i}")).collect();
    g.push_str(&format!("call: {}\n", alternatives.join(" | ")));
    for (i, tool) in tools.iter().enumerate() {
        g.push_str(&format!("c{i}: %json {}\n", call_schema(tool, lenient)));
    }
    g
}

fn lark_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_names_every_tool() {
        let a = ToolSpec::new("a", "", json!({"type": "object"}));
        let b = ToolSpec::new("b", "", json!({}));
        let g = forced_call(&[&a, &b], false);
        assert!(g.starts_with("start: \"<tool_call>\" call \"</tool_call>\"\n"));
        assert!(g.contains("call: c0 | c1\n"));
        assert!(g.contains("\"const\":\"b\""));
    }
}
