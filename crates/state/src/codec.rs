//! What every backend shares: records to and from their stored form (JSON as text), the size
//! bound on a record's JSON, and the rewrite of a dead run's body.
//!
//! JSON is stored as text in both databases, so a value comes back byte for byte as it went in
//! (`serde_json` keeps key order here): the body is "the Response object exactly as the API
//! returns it", and the store never looks inside it in SQL.

use std::io;

use serde_json::{Map, Value};

use crate::{ConversationRecord, FileRecord, ResponseRecord, StoreError, MAX_RECORD_JSON_BYTES};

// The columns both databases select, in the order their row readers take them.
pub(crate) const RESPONSE_COLUMNS: &str =
    "id, owner, status, created_at, updated_at, expires_at, instance, \
     previous_response_id, conversation_id, body, input_items, context, run";
pub(crate) const CONVERSATION_COLUMNS: &str =
    "id, owner, created_at, updated_at, metadata, items, context, version";
pub(crate) const FILE_COLUMNS: &str =
    "id, owner, filename, purpose, bytes, created_at, expires_at, media_type, container";

/// The status [`crate::Store::recover`] gives a dead run.
pub(crate) const FAILED: &str = "failed";

/// Encodes `values` as JSON texts sharing one budget of [`MAX_RECORD_JSON_BYTES`]; `what` names
/// the record in the error. Encoding stops as soon as the budget is spent, so a runaway value is
/// never copied whole.
pub(crate) fn encode_all<const N: usize>(
    values: [&Value; N],
    what: &str,
) -> Result<[String; N], StoreError> {
    let mut out = Budget {
        left: MAX_RECORD_JSON_BYTES,
        buf: Vec::new(),
    };
    let mut texts: [String; N] = std::array::from_fn(|_| String::new());
    for (value, text) in values.into_iter().zip(texts.iter_mut()) {
        serde_json::to_writer(&mut out, value).map_err(|e| {
            if e.is_io() {
                StoreError::TooLarge(format!(
                    "{what} has more than {MAX_RECORD_JSON_BYTES} bytes of JSON"
                ))
            } else {
                StoreError::Database(format!("encoding {what}: {e}"))
            }
        })?;
        // serde_json writes only UTF-8.
        *text = String::from_utf8(std::mem::take(&mut out.buf))
            .map_err(|e| StoreError::Database(format!("encoding {what}: {e}")))?;
    }
    Ok(texts)
}

/// A writer that refuses to grow past `left` bytes.
struct Budget {
    left: usize,
    buf: Vec<u8>,
}

impl io::Write for Budget {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.len() > self.left {
            return Err(io::Error::other("over the record size limit"));
        }
        self.left -= bytes.len();
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub(crate) fn decode(text: &str, column: &str) -> Result<Value, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Database(format!("stored {column} is not JSON: {e}")))
}

/// A response in its stored form: the JSON columns as text.
pub(crate) struct StoredResponse {
    pub id: String,
    pub owner: String,
    pub status: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub instance: String,
    pub previous_response_id: Option<String>,
    pub conversation_id: Option<String>,
    pub body: String,
    pub input_items: String,
    pub context: String,
    /// SQL NULL for `None`; `Some(Null)` is the text "null", so it comes back as `Some(Null)`.
    pub run: Option<String>,
}

impl StoredResponse {
    /// The stored form of `r`, written from a reference: callers keep their record (a running
    /// response is written at its start and again at its end) without a deep copy of its JSON.
    pub fn encode(r: &ResponseRecord) -> Result<Self, StoreError> {
        let what = format!("response {}", r.id);
        let null = Value::Null;
        let [body, input_items, context, run] = encode_all(
            [
                &r.body,
                &r.input_items,
                &r.context,
                r.run.as_ref().unwrap_or(&null),
            ],
            &what,
        )?;
        Ok(StoredResponse {
            run: r.run.is_some().then_some(run),
            id: r.id.clone(),
            owner: r.owner.clone(),
            status: r.status.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            expires_at: r.expires_at,
            instance: r.instance.clone(),
            previous_response_id: r.previous_response_id.clone(),
            conversation_id: r.conversation_id.clone(),
            body,
            input_items,
            context,
        })
    }

    pub fn decode(self) -> Result<ResponseRecord, StoreError> {
        Ok(ResponseRecord {
            body: decode(&self.body, "response body")?,
            input_items: decode(&self.input_items, "response input_items")?,
            context: decode(&self.context, "response context")?,
            run: self
                .run
                .as_deref()
                .map(|r| decode(r, "response run"))
                .transpose()?,
            id: self.id,
            owner: self.owner,
            status: self.status,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            instance: self.instance,
            previous_response_id: self.previous_response_id,
            conversation_id: self.conversation_id,
        })
    }
}

/// A conversation's JSON columns as text: metadata, items, context.
pub(crate) fn encode_conversation(c: &ConversationRecord) -> Result<[String; 3], StoreError> {
    encode_all(
        [&c.metadata, &c.items, &c.context],
        &format!("conversation {}", c.id),
    )
}

/// A conversation in its stored form.
pub(crate) struct StoredConversation {
    pub id: String,
    pub owner: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub metadata: String,
    pub items: String,
    pub context: String,
    pub version: i64,
}

impl StoredConversation {
    pub fn decode(self) -> Result<ConversationRecord, StoreError> {
        Ok(ConversationRecord {
            metadata: decode(&self.metadata, "conversation metadata")?,
            items: decode(&self.items, "conversation items")?,
            context: decode(&self.context, "conversation context")?,
            id: self.id,
            owner: self.owner,
            created_at: self.created_at,
            updated_at: self.updated_at,
            version: self.version,
        })
    }
}

/// The body of a run that died: `status` "failed" and a server error, the rest kept (in place:
/// the keys keep their order). A body that is not an object becomes one.
pub(crate) fn failed_body(body: Value, message: &str) -> Value {
    let mut object = match body {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    object.insert("status".into(), FAILED.into());
    let mut error = Map::new();
    error.insert("code".into(), "server_error".into());
    error.insert("message".into(), message.into());
    object.insert("error".into(), Value::Object(error));
    Value::Object(object)
}

/// The content length as stored, refusing content over `max`.
pub(crate) fn file_length(meta: &FileRecord, len: usize, max: u64) -> Result<i64, StoreError> {
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    if len > max {
        return Err(StoreError::TooLarge(format!(
            "file {} is {len} bytes (limit {max})",
            meta.id
        )));
    }
    i64::try_from(len).map_err(|_| StoreError::TooLarge(format!("file {}", meta.id)))
}

/// A stored length back as `u64`.
pub(crate) fn stored_length(len: i64) -> Result<u64, StoreError> {
    u64::try_from(len).map_err(|_| StoreError::Database(format!("negative file length {len}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_budget_is_shared_by_a_records_values() {
        let half = Value::String("x".repeat(MAX_RECORD_JSON_BYTES / 2));
        assert!(encode_all([&half], "r").is_ok());
        assert!(matches!(
            encode_all([&half, &half], "r"),
            Err(StoreError::TooLarge(_))
        ));
    }

    #[test]
    fn a_failed_body_keeps_its_keys_in_place() {
        let body = serde_json::json!({"id": "resp_1", "status": "in_progress", "output": []});
        let failed = failed_body(body, "gone");
        assert_eq!(
            serde_json::to_string(&failed).unwrap(),
            r#"{"id":"resp_1","status":"failed","output":[],"error":{"code":"server_error","message":"gone"}}"#
        );
    }
}
