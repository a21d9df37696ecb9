//! Checks of tool definitions, shared by the gateway (a client's `tools`) and the agent (tool
//! registration): names as OpenAI accepts them, `^[a-zA-Z0-9_-]{1,64}$` and unique, and
//! parameters that are a JSON Schema object. A name outside that alphabet could carry markup
//! (`</tool_call>`, `<|im_end|>`) into a prompt-mode system prompt, which lists tools verbatim.

use serde_json::Value;

use crate::types::ToolSpec;

/// The longest tool name OpenAI accepts.
pub const MAX_TOOL_NAME_CHARS: usize = 64;

/// Which part of a tool definition is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolField {
    Name,
    Parameters,
}

/// A tool definition that cannot be used. The message quotes at most the first 64 characters
/// of the offending name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolSpecError {
    /// The position of the tool in the list checked.
    pub index: usize,
    pub field: ToolField,
    pub message: String,
}

impl ToolSpecError {
    /// The request field in OpenAI's form, e.g. `tools[1].function.name`.
    pub fn param(&self) -> String {
        let field = match self.field {
            ToolField::Name => "name",
            ToolField::Parameters => "parameters",
        };
        format!("tools[{}].function.{field}", self.index)
    }
}

/// Whether `name` is a valid tool name (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn quoted(name: &str) -> String {
    let cut: String = name.chars().take(MAX_TOOL_NAME_CHARS).collect();
    let dots = if cut.len() < name.len() { "…" } else { "" };
    format!("{cut:?}{dots}")
}

/// Checks one tool definition (`index` is its position, for the error).
pub fn validate_tool(index: usize, tool: &ToolSpec) -> Result<(), ToolSpecError> {
    let error = |field, message: String| ToolSpecError {
        index,
        field,
        message,
    };
    if !is_valid_tool_name(&tool.name) {
        let what = if tool.name.is_empty() {
            "A tool name must not be empty".to_owned()
        } else {
            format!("Invalid tool name {}", quoted(&tool.name))
        };
        return Err(error(
            ToolField::Name,
            format!(
                "{what}: tool names may use only letters, digits, `_` and `-`, at most \
                 {MAX_TOOL_NAME_CHARS} characters (^[a-zA-Z0-9_-]{{1,64}}$)."
            ),
        ));
    }
    match &tool.parameters {
        None => Ok(()),
        Some(Value::Object(schema)) => match schema.get("type") {
            None => Ok(()),
            Some(Value::String(t)) if t == "object" => Ok(()),
            Some(other) => Err(error(
                ToolField::Parameters,
                format!(
                    "The parameters of {} must be a JSON Schema of type \"object\", not {other}.",
                    quoted(&tool.name)
                ),
            )),
        },
        Some(other) => Err(error(
            ToolField::Parameters,
            format!(
                "The parameters of {} must be a JSON Schema object, not {}.",
                quoted(&tool.name),
                kind(other)
            ),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks a list of tool definitions: each one, and that no name is used twice.
pub fn validate_tools(tools: &[ToolSpec]) -> Result<(), ToolSpecError> {
    let mut seen = std::collections::HashSet::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        validate_tool(index, tool)?;
        if !seen.insert(tool.name.as_str()) {
            return Err(ToolSpecError {
                index,
                field: ToolField::Name,
                message: format!("Duplicate tool name {}.", quoted(&tool.name)),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, parameters: Option<Value>) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters,
            strict: None,
        }
    }

    #[test]
    fn names_follow_openai_and_markup_is_refused() {
        for good in ["get_weather", "a", "mcp__fs__read-file", &"x".repeat(64)] {
            assert!(is_valid_tool_name(good), "{good}");
        }
        for bad in [
            "",
            "</tool_call>",
            "get_weather</tool_call><tool_call>",
            "<|im_end|>",
            "has space",
            "dotted.name",
            "wetter_für_heute",
            &"x".repeat(65),
        ] {
            assert!(!is_valid_tool_name(bad), "{bad}");
            let e = validate_tools(&[tool("ok", None), tool(bad, None)]).unwrap_err();
            assert_eq!(e.param(), "tools[1].function.name");
        }
    }

    #[test]
    fn parameters_must_be_an_object_schema_and_names_unique() {
        assert!(validate_tools(&[
            tool("a", None),
            tool("b", Some(json!({}))),
            tool("c", Some(json!({"type": "object", "properties": {}}))),
        ])
        .is_ok());
        for bad in [
            json!("string"),
            json!([]),
            json!(3),
            json!({"type": "string"}),
        ] {
            let e = validate_tools(&[tool("f", Some(bad))]).unwrap_err();
            assert_eq!(e.param(), "tools[0].function.parameters");
            assert_eq!(e.field, ToolField::Parameters);
        }
        let e = validate_tools(&[tool("f", None), tool("g", None), tool("f", None)]).unwrap_err();
        assert_eq!(e.param(), "tools[2].function.name");
        assert!(e.message.contains("Duplicate"), "{e}");
    }
}
