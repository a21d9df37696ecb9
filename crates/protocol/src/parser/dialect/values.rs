//! Typed parameter values for the XML-like dialects (qwen3-coder, glm45): a value is written as
//! bare text, and the declared schema says what JSON it stands for.

use std::collections::HashMap;

use serde_json::Value;

use super::pythonic::python_literal;
use crate::parser::{DialectProblem, ParseProblem};

/// The JSON Schema `type` of each declared tool's parameters.
#[derive(Debug, Default)]
pub(crate) struct ParamTypes(HashMap<String, HashMap<String, String>>);

impl ParamTypes {
    /// From tool name → parameters schema (`{"type": "object", "properties": {…}}`).
    pub(crate) fn from_schemas(schemas: &HashMap<String, Value>) -> Self {
        let mut tools = HashMap::new();
        for (tool, schema) in schemas {
            let mut params = HashMap::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (key, prop) in props {
                    if let Some(ty) = schema_type(prop) {
                        params.insert(key.clone(), ty);
                    }
                }
            }
            tools.insert(tool.clone(), params);
        }
        ParamTypes(tools)
    }

    pub(crate) fn get(&self, tool: &str, param: &str) -> Option<&str> {
        self.0.get(tool)?.get(param).map(String::as_str)
    }
}

/// A property's type as the XML-like dialects read it: `"type": "x"`, the first non-null of
/// `"type": [...]`, or the same inside the first `anyOf`/`oneOf` branch that has one. (The
/// embedded model's grammar writes each value in the type it will be read as.)
pub fn schema_type(prop: &Value) -> Option<String> {
    match prop.get("type") {
        Some(Value::String(t)) => return Some(t.clone()),
        Some(Value::Array(list)) => {
            return list
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .map(str::to_owned)
        }
        _ => {}
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|k| prop.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(schema_type)
        .find(|t| t != "null")
}

/// The JSON text of a parameter value written as `raw`, given its declared type. One newline
/// right after the opening tag and one right before the closing tag belong to the markup, not to
/// the value. A value that does not fit its type stays a string (the tool's own validation then
/// says what is wrong). An undeclared parameter is a string, or with `bare_json` (GLM, whose
/// models write numbers and booleans bare) the JSON value its text spells, if it spells one.
pub(crate) fn typed_value(raw: &str, ty: Option<&str>, bare_json: bool) -> String {
    let raw = raw.strip_prefix('\n').unwrap_or(raw);
    let raw = raw.strip_suffix('\n').unwrap_or(raw);
    let trimmed = raw.trim();
    let converted = match ty {
        Some("integer" | "int") => trimmed
            .parse::<i64>()
            .ok()
            .map(|n| n.to_string())
            .or_else(|| integral_float(trimmed)),
        Some("number" | "float" | "double") => number(trimmed),
        Some("boolean" | "bool") => match trimmed.to_ascii_lowercase().as_str() {
            "true" => Some("true".to_owned()),
            "false" => Some("false".to_owned()),
            _ => None,
        },
        Some("null") => matches!(trimmed, "null" | "None" | "").then(|| "null".to_owned()),
        Some("object") => structured(trimmed, Value::is_object),
        Some("array") => structured(trimmed, Value::is_array),
        None if bare_json => serde_json::from_str::<Value>(trimmed)
            .ok()
            .filter(|v| !v.is_string())
            .map(|v| v.to_string()),
        _ => None,
    };
    converted.unwrap_or_else(|| Value::String(raw.to_owned()).to_string())
}

/// `5.0` for an integer parameter is 5.
fn integral_float(text: &str) -> Option<String> {
    let f: f64 = text.parse().ok()?;
    (f.fract() == 0.0 && f.abs() < 9.0e15).then(|| format!("{}", f as i64))
}

fn number(text: &str) -> Option<String> {
    // A JSON number as written keeps its text; otherwise what Rust reads as a finite float.
    if let Ok(Value::Number(n)) = serde_json::from_str::<Value>(text) {
        return Some(n.to_string());
    }
    let f: f64 = text.parse().ok()?;
    serde_json::Number::from_f64(f).map(|n| n.to_string())
}

/// JSON text, else a Python literal (models write `{'a': 1}`), of the wanted shape.
fn structured(text: &str, shape: fn(&Value) -> bool) -> Option<String> {
    let value = serde_json::from_str::<Value>(text)
        .ok()
        .or_else(|| python_literal(text))?;
    shape(&value).then(|| value.to_string())
}

/// Writes `{"k":v,…}` (compact, as serde_json writes) from keys and JSON value texts, in order; a repeated key is an error.
pub(crate) fn object_text(members: &[(String, String)]) -> Result<String, ParseProblem> {
    let mut out = String::from("{");
    for (i, (key, value)) in members.iter().enumerate() {
        if members[..i].iter().any(|(k, _)| k == key) {
            return Err(DialectProblem::DuplicateParameter(key.to_owned()).into());
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(key.clone()).to_string());
        out.push(':');
        out.push_str(value);
    }
    out.push('}');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_follow_their_declared_type() {
        assert_eq!(typed_value("\nParis\n", Some("string"), false), "\"Paris\"");
        assert_eq!(typed_value("\n 5 \n", Some("integer"), false), "5");
        assert_eq!(typed_value("5.0", Some("integer"), false), "5");
        assert_eq!(typed_value("five", Some("integer"), false), "\"five\"");
        assert_eq!(typed_value("2.50", Some("number"), false), "2.5");
        assert_eq!(typed_value("True", Some("boolean"), false), "true");
        assert_eq!(typed_value("[1, 2]", Some("array"), false), "[1,2]");
        assert_eq!(
            typed_value("{'a': None}", Some("object"), false),
            "{\"a\":null}"
        );
        assert_eq!(typed_value("42", None, false), "\"42\"");
        assert_eq!(typed_value("a\nb", Some("string"), false), "\"a\\nb\"");
        // GLM: an undeclared value is the JSON it spells, else a string.
        assert_eq!(typed_value("3.14", None, true), "3.14");
        assert_eq!(typed_value("true", None, true), "true");
        assert_eq!(typed_value("2025-08-01", None, true), "\"2025-08-01\"");
        assert_eq!(typed_value("\"q\"", None, true), r#""\"q\"""#);
    }

    #[test]
    fn schema_types_are_read_from_properties() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "a": {"type": "integer"},
            "b": {"type": ["null", "boolean"]},
            "c": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            "d": {"description": "untyped"}
        }});
        let types = ParamTypes::from_schemas(&HashMap::from([("f".to_owned(), schema)]));
        assert_eq!(types.get("f", "a"), Some("integer"));
        assert_eq!(types.get("f", "b"), Some("boolean"));
        assert_eq!(types.get("f", "c"), Some("number"));
        assert_eq!(types.get("f", "d"), None);
        assert_eq!(types.get("g", "a"), None);
    }
}
