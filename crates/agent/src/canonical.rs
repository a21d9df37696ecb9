//! Canonical call keys for duplicate detection: two calls are the same when their names are equal
//! and their arguments are the same JSON value, whatever the key order, spacing or number spelling.

use serde_json::Value;

/// The key of a call: its name and its arguments in canonical JSON (keys sorted at every level).
pub fn call_key(name: &str, arguments: &str) -> String {
    let text = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let canonical = match serde_json::from_str::<Value>(text) {
        Ok(value) => {
            let mut out = String::with_capacity(text.len());
            write_canonical(&value, &mut out);
            out
        }
        // Unparsable arguments are compared as written.
        Err(_) => text.trim().to_owned(),
    };
    format!("{name}\u{0}{canonical}")
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(v, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            // 1, 1.0 and 1e0 are the same argument.
            Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 => {
                out.push_str(&format!("{}", f as i64));
            }
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_value_same_key() {
        assert_eq!(
            call_key("f", r#"{"a": 1, "b": [1.0, {"y": 2, "x": "é"}]}"#),
            call_key("f", r#"{"b":[1,{"x":"\u00e9","y":2e0}],"a":1}"#)
        );
        assert_ne!(call_key("f", r#"{"a": 1}"#), call_key("g", r#"{"a": 1}"#));
        assert_ne!(call_key("f", r#"{"a": 1}"#), call_key("f", r#"{"a": 2}"#));
        assert_eq!(call_key("f", ""), call_key("f", "{}"));
    }
}
