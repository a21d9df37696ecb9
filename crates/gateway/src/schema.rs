//! The shape checks a tool's JSON Schema gets before it is written into a prompt or sent
//! upstream, beyond what `toolbridge_protocol::validate` checks (a name, an object schema).

use serde_json::Value;

use crate::error::ApiError;

/// `properties`, where a schema has them, must map names to schemas (objects, or `true` /
/// `false`); `param` is where the schema is (`tools[0].function.parameters`).
pub(crate) fn check_properties(schema: &Value, param: &str) -> Result<(), ApiError> {
    let Some(properties) = schema.get("properties") else {
        return Ok(());
    };
    let Some(properties) = properties.as_object() else {
        let param = format!("{param}.properties");
        let message = format!("Invalid '{param}': expected an object mapping names to schemas.");
        return Err(ApiError::bad_param(param, message));
    };
    for (name, property) in properties {
        if !(property.is_object() || property.is_boolean()) {
            let param = format!("{param}.properties.{name}");
            let message = format!("Invalid '{param}': expected a JSON Schema (an object).");
            return Err(ApiError::bad_param(param, message));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn properties_must_be_schemas() {
        let at = "tools[0].function.parameters";
        assert!(check_properties(&json!({"type": "object"}), at).is_ok());
        let ok = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": true}});
        assert!(check_properties(&ok, at).is_ok());
        let e = check_properties(&json!({"properties": 5}), at).unwrap_err();
        assert_eq!(
            e.param.as_deref(),
            Some("tools[0].function.parameters.properties")
        );
        let e = check_properties(&json!({"properties": {"a": "string"}}), at).unwrap_err();
        assert_eq!(
            e.param.as_deref(),
            Some("tools[0].function.parameters.properties.a")
        );
    }
}
