//! Decoding client input so that an error names the field at fault (OpenAI's `param`): JSON
//! bodies through `serde_path_to_error`, query strings through the [`Query`] extractor (axum's
//! own answers a rejection in plain text, without the field), and JSON values that refuse a key
//! given twice in one object ([`unique_value`]: serde_json would keep the last one silently).

use std::fmt;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::{DeserializeOwned, DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A JSON body that did not decode, and where.
#[derive(Debug)]
pub(crate) struct JsonError {
    path: Vec<Step>,
    error: serde_json::Error,
}

#[derive(Debug)]
enum Step {
    Index(usize),
    Key(String),
}

impl JsonError {
    /// The path, unless the body is not JSON at all (a syntax error or a cut body is the
    /// body's fault, not a field's).
    fn field_path(&self) -> &[Step] {
        if self.error.is_syntax() || self.error.is_eof() {
            &[]
        } else {
            &self.path
        }
    }

    /// The field in OpenAI's form, `input[2].content`; `None` at the top of the body.
    pub(crate) fn param(&self) -> Option<String> {
        let mut out = String::new();
        for step in self.field_path() {
            match step {
                Step::Index(i) => out.push_str(&format!("[{i}]")),
                Step::Key(k) if out.is_empty() => out.push_str(k),
                Step::Key(k) => {
                    out.push('.');
                    out.push_str(k);
                }
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The field in Anthropic's form, `messages.0.content`.
    pub(crate) fn dotted(&self) -> Option<String> {
        let steps: Vec<String> = self
            .field_path()
            .iter()
            .map(|s| match s {
                Step::Index(i) => i.to_string(),
                Step::Key(k) => k.clone(),
            })
            .collect();
        (!steps.is_empty()).then(|| steps.join("."))
    }

    /// OpenAI's 400: the field named, and serde's words for what is wrong with it.
    pub(crate) fn to_openai(&self) -> ApiError {
        match self.param() {
            Some(param) => {
                let message = format!("Invalid '{param}': {}.", self.error);
                ApiError::bad_param(param, message)
            }
            None => ApiError::bad_request(format!(
                "We could not parse the JSON body of your request: {}.",
                self.error
            )),
        }
    }

    /// Anthropic's 400: its errors have no `param`, so the message starts with the field, as
    /// Anthropic's own do (`messages.0.content: …`).
    pub(crate) fn to_anthropic(&self) -> ApiError {
        match self.dotted() {
            Some(field) => {
                let message = format!("{field}: {}", self.error);
                ApiError::bad_param(field, message)
            }
            None => ApiError::bad_request(format!("Invalid request body: {}", self.error)),
        }
    }
}

/// Decodes a JSON body as `T`, noting the field where it failed.
pub(crate) fn from_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Seq { index } => Some(Step::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(Step::Key(key.clone())),
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => None,
            })
            .collect();
        JsonError {
            path,
            error: e.into_inner(),
        }
    })?;
    // Trailing bytes after the value are an error, as in `serde_json::from_slice`.
    de.end().map_err(|error| JsonError {
        path: Vec::new(),
        error,
    })?;
    Ok(value)
}

/// A JSON body as a [`Value`], refusing a key given twice in one object (naming it).
pub(crate) fn unique_value(bytes: &[u8]) -> Result<Value, JsonError> {
    from_json::<Unique>(bytes).map(|u| u.0)
}

/// A [`Value`] whose objects hold each key once.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Unique::deserialize(d).map(|u| u.0)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(Unique(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                // Failed while reading the repeated key's value, so the error's path ends
                // with that key.
                map.next_value_seed(Repeated)?;
                return Err(A::Error::custom("duplicate key"));
            }
            let Unique(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// The value of a key given a second time: always an error.
struct Repeated;

impl<'de> DeserializeSeed<'de> for Repeated {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, _: D) -> Result<(), D::Error> {
        Err(D::Error::custom(
            "this key is given more than once in its object",
        ))
    }
}

/// A query string decoded as `T`; a value that does not fit is a 400 naming its parameter.
pub(crate) struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(de)
            .map(Query)
            .map_err(|e| {
                let param = e.path().to_string();
                let message = format!("Invalid '{param}': {}.", e.inner());
                if param.is_empty() || param == "." {
                    ApiError::bad_request(message)
                } else {
                    ApiError::bad_param(param, message)
                }
            })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Body {
        items: Vec<Item>,
    }

    #[derive(Deserialize, Debug)]
    #[allow(dead_code)]
    struct Item {
        n: u32,
    }

    #[test]
    fn errors_name_the_field_in_both_forms() {
        let e = from_json::<Body>(br#"{"items":[{"n":1},{"n":"x"}]}"#).unwrap_err();
        assert_eq!(e.param().as_deref(), Some("items[1].n"));
        assert_eq!(e.dotted().as_deref(), Some("items.1.n"));
        assert_eq!(e.to_openai().param.as_deref(), Some("items[1].n"));
        assert!(e.to_anthropic().message.starts_with("items.1.n: "));
        let e = from_json::<Body>(b"{").unwrap_err();
        assert_eq!(e.param(), None);
        let e = from_json::<Body>(br#"{"items":[{"n":"#).unwrap_err();
        assert_eq!(
            (e.param(), e.dotted()),
            (None, None),
            "a cut body is the body's fault"
        );
        assert!(from_json::<Body>(br#"{"items":[]} x"#).is_err());
    }

    #[test]
    fn a_key_given_twice_is_refused_where_it_is() {
        let e = unique_value(br#"{"input":[{"type":"message","type":"x"}]}"#).unwrap_err();
        assert_eq!(e.param().as_deref(), Some("input[0].type"));
        let v = unique_value(br#"{"a":[1,2.5,"x",null,true,{"b":{}}]}"#).unwrap();
        assert_eq!(v, serde_json::json!({"a":[1,2.5,"x",null,true,{"b":{}}]}));
    }
}
