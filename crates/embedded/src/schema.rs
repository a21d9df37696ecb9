//! The schema a forced call is generated from: the tool's JSON schema rewritten so that whatever a
//! small model writes under it is short, closed and parses.
//!
//! A grammar that follows a schema literally still lets a 135M model wander: an object without
//! `additionalProperties` accepts any invented key (seen: `{"type": {"type": …` nested to the
//! token limit), an unbounded string accepts `}}</tool_call>` and whatever follows, an array has
//! no end. For generation — the call is validated against the schema as given afterwards — every
//! string is bounded in length and kept free of markup and JSON debris (`<`, `>`, braces and
//! brackets) (unless the schema gives
//! its own `pattern`, `format`, `enum` or `const`), objects are closed, free-form objects and
//! arrays are capped, nesting is capped and local `$ref`s are inlined up to that cap. Parts that
//! contradict themselves (seen: `"type": "integer"` with string `enum` values) are relaxed, and
//! every relaxation is noted so the caller can log it.

use serde_json::{json, Map, Value};

/// Bounds applied to a schema for generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The longest string value, in characters.
    pub max_string_length: usize,
    /// The most items of an array.
    pub max_items: usize,
    /// The most keys of a free-form object (one without `properties`).
    pub max_free_properties: usize,
    /// The deepest nesting of objects and arrays inside the arguments.
    pub max_depth: usize,
}

/// The default longest string value, in characters.
pub const DEFAULT_MAX_STRING_LENGTH: usize = 200;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_string_length: DEFAULT_MAX_STRING_LENGTH,
            max_items: 16,
            max_free_properties: 8,
            max_depth: 6,
        }
    }
}

/// Characters a generated string may not hold unless the schema says otherwise: markup (`<`, `>`:
/// no tag can be opened or closed inside a value), braces and brackets (no `}}` or `][` debris;
/// and inside a string the only way to end is then its closing quote).
pub const PLAIN_STRING_PATTERN: &str = r"^[^<>{}\[\]]*$";

/// The JSON types a schema may name.
const JSON_TYPES: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Rewrites `schema` for generation under `limits`; what had to be relaxed (not merely bounded)
/// is added to `notes`, one line each, naming where in the schema.
pub fn for_generation(schema: &Value, limits: &Limits, notes: &mut Vec<String>) -> Value {
    let mut walk = Walk {
        root: schema,
        limits,
        notes,
    };
    walk.node(schema, 0, "")
}

struct Walk<'a> {
    root: &'a Value,
    limits: &'a Limits,
    notes: &'a mut Vec<String>,
}

impl Walk<'_> {
    fn note(&mut self, path: &str, what: impl std::fmt::Display) {
        let at = if path.is_empty() { "/" } else { path };
        self.notes.push(format!("{at}: {what}"));
    }

    /// A bounded value of any scalar type, for parts of a schema that allow anything.
    fn free_value(&self) -> Value {
        json!({
            "type": ["string", "number", "boolean"],
            "maxLength": self.limits.max_string_length,
            "pattern": PLAIN_STRING_PATTERN,
        })
    }

    fn node(&mut self, schema: &Value, depth: usize, path: &str) -> Value {
        let map = match schema {
            Value::Object(map) => map,
            // `true` (anything) becomes a bounded scalar; `false` stays unsatisfiable.
            Value::Bool(true) => return self.free_value(),
            other => return other.clone(),
        };
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(map, reference, depth, path);
        }
        let mut out = Map::new();
        for (key, value) in map {
            match key.as_str() {
                "properties"
                | "items"
                | "prefixItems"
                | "additionalProperties"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "$defs"
                | "definitions"
                | "patternProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "dependentSchemas"
                | "x-guidance" => {}
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(options)) = map.get(key) {
                let walked = options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| self.node(o, depth, &format!("{path}/{key}/{i}")))
                    .collect();
                out.insert(key.into(), Value::Array(walked));
            }
        }
        for key in [
            "not",
            "if",
            "then",
            "else",
            "patternProperties",
            "dependentSchemas",
        ] {
            if map.contains_key(key) {
                self.note(path, format_args!("`{key}` ignored for generation"));
            }
        }
        self.fix_type(&mut out, path);
        let types = declared_types(&out, map);
        let composite = ["anyOf", "oneOf", "allOf"]
            .iter()
            .any(|k| out.contains_key(*k));
        let fixed = out.contains_key("enum") || out.contains_key("const");
        if types.is_empty() && !composite && !fixed {
            // No type at all: anything — a bounded scalar.
            let mut free = self.free_value();
            if let (Some(f), Some(d)) = (free.as_object_mut(), map.get("description")) {
                f.insert("description".into(), d.clone());
            }
            return free;
        }
        if types.iter().any(|t| t == "object") {
            self.object(map, &mut out, depth, path);
        }
        if types.iter().any(|t| t == "array") {
            self.array(map, &mut out, depth, path);
        }
        if types.iter().any(|t| t == "string") && !fixed {
            self.string(&mut out);
        }
        Value::Object(out)
    }

    /// A local `$ref` inlined (its siblings laid over it), up to the depth cap.
    fn reference(
        &mut self,
        map: &Map<String, Value>,
        reference: &str,
        depth: usize,
        path: &str,
    ) -> Value {
        let target = reference
            .strip_prefix('#')
            .and_then(|pointer| self.root.pointer(pointer))
            .cloned();
        let Some(Value::Object(mut target)) = target else {
            self.note(
                path,
                format_args!("`$ref` {reference} not resolved; a bounded value"),
            );
            return self.free_value();
        };
        if depth >= self.limits.max_depth {
            self.note(path, "nested past the depth limit; an empty value");
            return empty_of(&target);
        }
        for (k, v) in map {
            if k != "$ref" {
                target.insert(k.clone(), v.clone());
            }
        }
        self.node(&Value::Object(target), depth, path)
    }

    /// `type` names only JSON types; an `enum` whose values do not all have the declared type
    /// keeps its values and loses the type.
    fn fix_type(&mut self, out: &mut Map<String, Value>, path: &str) {
        if let Some(t) = out.get("type") {
            let names: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            if names.is_empty() || names.iter().any(|n| !JSON_TYPES.contains(n)) {
                self.note(path, format_args!("unknown type {t} dropped"));
                out.remove("type");
            }
        }
        let Some(Value::Array(values)) = out.get("enum") else {
            return;
        };
        let types = type_names(out.get("type"));
        if types.is_empty() {
            return;
        }
        let fits = |v: &Value| types.iter().any(|t| value_has_type(v, t));
        if !values.iter().all(fits) {
            self.note(
                path,
                format_args!(
                    "enum values do not match type {}; the type is dropped",
                    out.get("type").map(Value::to_string).unwrap_or_default()
                ),
            );
            out.remove("type");
        }
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
        path: &str,
    ) {
        if !out.contains_key("type") {
            out.insert("type".into(), "object".into());
        }
        let properties = map.get("properties").and_then(Value::as_object);
        if depth >= self.limits.max_depth {
            if properties.is_some_and(|p| !p.is_empty()) {
                self.note(path, "nested past the depth limit; an empty object");
            }
            out.insert("properties".into(), json!({}));
            out.insert("additionalProperties".into(), false.into());
            out.remove("required");
            return;
        }
        match properties.filter(|p| !p.is_empty()) {
            Some(properties) => {
                let walked: Map<String, Value> = properties
                    .iter()
                    .map(|(k, v)| {
                        let child = format!("{path}/properties/{k}");
                        (k.clone(), self.node(v, depth + 1, &child))
                    })
                    .collect();
                // Closed: the model writes the declared keys only.
                out.insert("additionalProperties".into(), false.into());
                if let Some(Value::Array(required)) = out.get("required") {
                    let (kept, dropped): (Vec<Value>, Vec<Value>) = required
                        .iter()
                        .cloned()
                        .partition(|r| r.as_str().is_some_and(|r| walked.contains_key(r)));
                    if !dropped.is_empty() {
                        self.note(
                            path,
                            format_args!(
                                "required keys without a schema dropped: {}",
                                Value::Array(dropped)
                            ),
                        );
                        out.insert("required".into(), Value::Array(kept));
                    }
                }
                out.insert("properties".into(), Value::Object(walked));
                out.remove("maxProperties");
                out.remove("minProperties");
            }
            None => {
                // A free-form object: a few keys of bounded values (or of the values' own
                // schema, when one is given).
                let values = match map.get("additionalProperties") {
                    Some(v @ Value::Object(_)) => {
                        self.node(v, depth + 1, &format!("{path}/additionalProperties"))
                    }
                    Some(Value::Bool(false)) => Value::Bool(false),
                    _ => self.free_value(),
                };
                let cap = self.limits.max_free_properties;
                let max = map
                    .get("maxProperties")
                    .and_then(Value::as_u64)
                    .map_or(cap, |m| (m as usize).min(cap));
                out.insert("additionalProperties".into(), values);
                out.insert("maxProperties".into(), max.into());
                out.remove("minProperties");
                out.remove("required");
                out.remove("properties");
            }
        }
    }

    fn array(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
        path: &str,
    ) {
        if !out.contains_key("type") {
            out.insert("type".into(), "array".into());
        }
        let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
        if depth >= self.limits.max_depth {
            self.note(path, "nested past the depth limit; an empty array");
            out.insert("maxItems".into(), 0.into());
            out.remove("minItems");
            out.remove("prefixItems");
            return;
        }
        let max = map
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(self.limits.max_items, |m| {
                (m as usize).min(self.limits.max_items)
            })
            .max(min.min(self.limits.max_items));
        if min > max {
            self.note(path, format_args!("minItems {min} lowered to {max}"));
            out.insert("minItems".into(), max.into());
        }
        out.insert("maxItems".into(), max.into());
        if let Some(Value::Array(prefix)) = map.get("prefixItems") {
            let walked = prefix
                .iter()
                .enumerate()
                .map(|(i, p)| self.node(p, depth + 1, &format!("{path}/prefixItems/{i}")))
                .collect();
            out.insert("prefixItems".into(), Value::Array(walked));
        }
        let items = match map.get("items") {
            // The draft-4 tuple form: its first schema for every item.
            Some(Value::Array(tuple)) => tuple.first().cloned().unwrap_or(Value::Bool(true)),
            Some(items) => items.clone(),
            None => Value::Bool(true),
        };
        let items = self.node(&items, depth + 1, &format!("{path}/items"));
        out.insert("items".into(), items);
    }

    /// A string (of a schema without its own `enum` or `const`): at most the length limit, and
    /// without markup unless the schema gives its own `pattern` or `format`.
    fn string(&mut self, out: &mut Map<String, Value>) {
        let cap = self.limits.max_string_length;
        let min = out.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
        let max = out
            .get("maxLength")
            .and_then(Value::as_u64)
            .map_or(cap, |m| (m as usize).min(cap))
            .max(min.min(cap));
        if min > max {
            out.insert("minLength".into(), max.into());
        }
        out.insert("maxLength".into(), max.into());
        if !out.contains_key("pattern") && !out.contains_key("format") {
            out.insert("pattern".into(), PLAIN_STRING_PATTERN.into());
        }
    }
}

/// The types a schema node declares, or implies by its keywords when it declares none.
fn declared_types(out: &Map<String, Value>, original: &Map<String, Value>) -> Vec<String> {
    let named = type_names(out.get("type"));
    if !named.is_empty() || out.contains_key("enum") || out.contains_key("const") {
        return named;
    }
    let mut implied = Vec::new();
    if original.contains_key("properties") || original.contains_key("additionalProperties") {
        implied.push("object".to_owned());
    }
    if original.contains_key("items") || original.contains_key("prefixItems") {
        implied.push("array".to_owned());
    }
    implied
}

fn type_names(t: Option<&Value>) -> Vec<String> {
    match t {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        _ => Vec::new(),
    }
}

fn value_has_type(v: &Value, t: &str) -> bool {
    match t {
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        _ => false,
    }
}

/// The smallest value of a schema's kind, for a part nested past the depth limit.
fn empty_of(target: &Map<String, Value>) -> Value {
    match type_names(target.get("type")).first().map(String::as_str) {
        Some("array") => json!({"type": "array", "maxItems": 0}),
        _ => json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

/// An upper bound, in bytes, of what it takes to finish a value of `schema` (a generation schema
/// from [`for_generation`]) from anywhere inside it, writing the shortest continuation: every
/// declared key with the longest of their shortest values (the call may be inside any of them),
/// closing quotes and brackets. A token is at least one byte, so this many tokens always suffice.
pub fn closing_cost(schema: &Value) -> usize {
    let Value::Object(map) = schema else {
        return 8;
    };
    let mut cost = 0;
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(options)) = map.get(key) {
            cost = cost.max(options.iter().map(closing_cost).max().unwrap_or(0));
        }
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        cost = cost.max(
            values
                .iter()
                .map(|v| v.to_string().len())
                .max()
                .unwrap_or(0),
        );
    }
    if let Some(c) = map.get("const") {
        cost = cost.max(c.to_string().len());
    }
    for t in type_names(map.get("type")) {
        let c = match t.as_str() {
            "string" => {
                // The closing quote, or the characters a pattern or minimum length still needs.
                let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
                let patterned = map.contains_key("pattern")
                    && map.get("pattern") != Some(&Value::String(PLAIN_STRING_PATTERN.into()));
                let patterned_max = if patterned || map.contains_key("format") {
                    map.get("maxLength").and_then(Value::as_u64).unwrap_or(32) as usize
                } else {
                    0
                };
                2 + min.max(patterned_max)
            }
            "number" | "integer" => 24,
            "boolean" => 5,
            "null" => 4,
            "object" => {
                let props = map.get("properties").and_then(Value::as_object);
                let keys: usize = props.map_or(0, |p| {
                    p.iter().map(|(k, v)| k.len() + 6 + closing_cost(v)).sum()
                });
                let free = match map.get("additionalProperties") {
                    Some(Value::Object(_)) => map
                        .get("additionalProperties")
                        .map_or(0, |v| 8 + closing_cost(v)),
                    _ => 0,
                };
                2 + keys + free
            }
            "array" => {
                let items = map.get("items").map_or(0, closing_cost);
                let prefix: usize = map
                    .get("prefixItems")
                    .and_then(Value::as_array)
                    .map_or(0, |p| p.iter().map(|v| 2 + closing_cost(v)).sum());
                let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
                2 + prefix + (items + 2) * min.max(1)
            }
            _ => 8,
        };
        cost = cost.max(c);
    }
    cost.max(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(schema: Value) -> (Value, Vec<String>) {
        let mut notes = Vec::new();
        let out = for_generation(&schema, &Limits::default(), &mut notes);
        (out, notes)
    }

    #[test]
    fn strings_are_bounded_and_kept_free_of_markup() {
        let (out, notes) = rewrite(json!({"type": "string", "description": "a city"}));
        assert_eq!(out["maxLength"], DEFAULT_MAX_STRING_LENGTH);
        assert_eq!(out["pattern"], PLAIN_STRING_PATTERN);
        assert_eq!(out["description"], "a city");
        assert!(notes.is_empty());
        // A tighter bound of the schema's own is kept; a looser one is cut.
        let (out, _) = rewrite(json!({"type": "string", "maxLength": 5}));
        assert_eq!(out["maxLength"], 5);
        let (out, _) = rewrite(json!({"type": "string", "maxLength": 5000}));
        assert_eq!(out["maxLength"], DEFAULT_MAX_STRING_LENGTH);
    }

    #[test]
    fn a_schema_pattern_format_or_enum_is_kept_as_the_schema_says() {
        let (out, _) = rewrite(json!({"type": "string", "pattern": "^<[a-z]+>$"}));
        assert_eq!(out["pattern"], "^<[a-z]+>$");
        assert_eq!(out["maxLength"], DEFAULT_MAX_STRING_LENGTH);
        let (out, _) = rewrite(json!({"type": "string", "format": "date"}));
        assert_eq!(out.get("pattern"), None);
        let (out, _) = rewrite(json!({"type": "string", "enum": ["a<b", "c"]}));
        assert_eq!(out, json!({"type": "string", "enum": ["a<b", "c"]}));
    }

    #[test]
    fn objects_without_additional_properties_are_closed_at_every_level() {
        let (out, _) = rewrite(json!({
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        }));
        assert_eq!(out["additionalProperties"], false);
        assert_eq!(out["properties"]["inner"]["additionalProperties"], false);
        // Even an explicit `true` is closed when keys are declared.
        let (out, _) = rewrite(json!({
            "type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": true,
        }));
        assert_eq!(out["additionalProperties"], false);
    }

    #[test]
    fn a_free_form_object_takes_a_few_bounded_values() {
        let (out, _) = rewrite(json!({"type": "object", "description": "headers"}));
        assert_eq!(out["maxProperties"], Limits::default().max_free_properties);
        assert_eq!(
            out["additionalProperties"]["maxLength"],
            DEFAULT_MAX_STRING_LENGTH
        );
        let (out, _) = rewrite(json!({
            "type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 2,
        }));
        assert_eq!(out["additionalProperties"], json!({"type": "integer"}));
        assert_eq!(out["maxProperties"], 2);
    }

    #[test]
    fn arrays_are_capped_and_their_items_rewritten() {
        let (out, _) = rewrite(json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(out["maxItems"], Limits::default().max_items);
        assert_eq!(out["items"]["pattern"], PLAIN_STRING_PATTERN);
        let (out, _) = rewrite(json!({"type": "array", "maxItems": 3}));
        assert_eq!(out["maxItems"], 3);
        assert_eq!(out["items"]["type"], json!(["string", "number", "boolean"]));
        let (out, notes) = rewrite(json!({"type": "array", "minItems": 100}));
        assert_eq!(out["minItems"], Limits::default().max_items);
        assert_eq!(out["maxItems"], Limits::default().max_items);
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn nesting_is_capped_and_recursive_refs_end() {
        let tree = json!({
            "$defs": {"node": {"type": "object", "properties": {
                "label": {"type": "string"},
                "child": {"$ref": "#/$defs/node"},
            }}},
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/node"}},
        });
        let (out, notes) = rewrite(tree);
        let mut node = &out["properties"]["root"];
        let mut depth = 1;
        while node["properties"].get("child").is_some() {
            node = &node["properties"]["child"];
            depth += 1;
        }
        assert_eq!(depth, Limits::default().max_depth);
        assert_eq!(node["additionalProperties"], false);
        assert!(out.get("$defs").is_none(), "refs are inlined: {out}");
        assert!(notes.iter().any(|n| n.contains("depth limit")), "{notes:?}");
    }

    #[test]
    fn a_type_that_contradicts_its_enum_is_dropped_and_noted() {
        let (out, notes) = rewrite(json!({"type": "integer", "enum": ["1", "2"]}));
        assert_eq!(out, json!({"enum": ["1", "2"]}));
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("enum values do not match"), "{notes:?}");
        let (out, notes) = rewrite(json!({"type": "integer", "enum": [1, 2]}));
        assert_eq!(out["type"], "integer");
        assert!(notes.is_empty());
    }

    #[test]
    fn unknown_types_and_untyped_values_become_bounded_scalars() {
        let (out, notes) = rewrite(json!({"type": "dict", "description": "d"}));
        assert_eq!(out["type"], json!(["string", "number", "boolean"]));
        assert_eq!(out["description"], "d");
        assert!(notes[0].contains("unknown type"), "{notes:?}");
        let (out, _) = rewrite(json!({}));
        assert_eq!(out["maxLength"], DEFAULT_MAX_STRING_LENGTH);
    }

    #[test]
    fn required_keys_without_a_schema_are_dropped_from_a_closed_object() {
        let (out, notes) = rewrite(json!({
            "type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"],
        }));
        assert_eq!(out["required"], json!(["a"]));
        assert!(notes[0].contains("\"b\""), "{notes:?}");
    }

    #[test]
    fn the_closing_cost_covers_the_shortest_ending_from_any_key() {
        let (out, _) = rewrite(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
        }));
        // `{"city": "", "n": 0}` from the start is 20 bytes; the bound is at least that and counts
        // every key's own cost.
        let cost = closing_cost(&out);
        assert!(cost >= r#"{"city": "", "n": 0}"#.len(), "{cost}");
        let (bigger, _) = rewrite(json!({
            "type": "object",
            "properties": {"city": {"type": "string"}, "n": {"type": "integer"}, "mode": {"enum": ["aaaaaaaaaaaa"]}},
        }));
        assert!(closing_cost(&bigger) >= cost + "\"mode\": \"aaaaaaaaaaaa\"".len());
    }
}
