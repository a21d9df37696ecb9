//! Chat types shared by every part of toolbridge.
//!
//! Their serde form is OpenAI's Chat Completions wire format, so a client's request body deserializes
//! straight into a [`ChatRequest`] and unknown request fields survive in [`ChatRequest::extra`]. JSON
//! schemas are kept as `serde_json::Value` with the `preserve_order` feature: the key order a client
//! wrote is the key order we send, which keeps rendered tool arrays byte-stable for prompt caching.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// One chat request: the unit every tool mode transforms and every provider sends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub model: String,
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Stop sequences; the wire accepts a string or an array.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "string_or_seq"
    )]
    pub stop: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// Every other field of the request, passed through untouched to native upstreams.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ChatRequest {
    /// The most tokens the answer may have: `max_tokens`, else OpenAI's newer
    /// `max_completion_tokens` (kept in `extra`), else `None`.
    pub fn output_token_limit(&self) -> Option<u32> {
        self.max_tokens.or_else(|| {
            self.extra
                .get("max_completion_tokens")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        })
    }
}

/// A chat message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// System prompt. OpenAI's newer `developer` role is read as a system message.
    #[serde(alias = "developer")]
    System {
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    User {
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<Content>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// Signed reasoning an upstream gave with this turn (Anthropic's `thinking` and
        /// `redacted_thinking` blocks), handed back to it as it was: Anthropic requires them
        /// before the tool use of a turn when thinking is on. toolbridge's own field; no
        /// OpenAI-compatible upstream gets it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking_blocks: Vec<ThinkingBlock>,
    },
    /// A tool result. `is_error` is toolbridge's own flag (a tool's failure); it is not part of
    /// OpenAI's wire format and is only written when set.
    Tool {
        tool_call_id: String,
        content: Content,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// One block of an upstream's signed reasoning, kept to be handed back unchanged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThinkingBlock {
    /// Reasoning text with the upstream's signature over it.
    Thinking { thinking: String, signature: String },
    /// Reasoning the upstream gave only encrypted.
    RedactedThinking { data: String },
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Message::System {
            content: Content::Text(text.into()),
            name: None,
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: Content::Text(text.into()),
            name: None,
        }
    }

    pub fn assistant(text: impl Into<String>) -> Self {
        Message::Assistant {
            content: Some(Content::Text(text.into())),
            tool_calls: Vec::new(),
            thinking_blocks: Vec::new(),
        }
    }

    pub fn assistant_calls(text: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        Message::Assistant {
            content: text.map(Content::Text),
            tool_calls,
            thinking_blocks: Vec::new(),
        }
    }

    pub fn tool_result(
        call_id: impl Into<String>,
        output: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Message::Tool {
            tool_call_id: call_id.into(),
            content: Content::Text(output.into()),
            name: None,
            is_error,
        }
    }

    pub fn role(&self) -> Role {
        match self {
            Message::System { .. } => Role::System,
            Message::User { .. } => Role::User,
            Message::Assistant { .. } => Role::Assistant,
            Message::Tool { .. } => Role::Tool,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Message content: a plain string or a list of parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text of the content; image parts are left out and text parts are joined without a
    /// separator, as OpenAI concatenates them.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Text(t) => Cow::Borrowed(t),
            Content::Parts(parts) => {
                let mut texts = parts.iter().filter_map(|p| match p {
                    ContentPart::Text { text } => Some(text.as_str()),
                    ContentPart::ImageUrl { .. } => None,
                });
                match (texts.next(), texts.next()) {
                    (None, _) => Cow::Borrowed(""),
                    (Some(one), None) => Cow::Borrowed(one),
                    (Some(a), Some(b)) => {
                        let mut s = String::from(a);
                        s.push_str(b);
                        texts.for_each(|t| s.push_str(t));
                        Cow::Owned(s)
                    }
                }
            }
        }
    }

    /// Appends text: to the string, or as a new text part after the existing parts.
    pub fn push_text(&mut self, text: &str) {
        match self {
            Content::Text(t) => t.push_str(text),
            Content::Parts(parts) => match parts.last_mut() {
                Some(ContentPart::Text { text: last }) => last.push_str(text),
                _ => parts.push(ContentPart::Text {
                    text: text.to_owned(),
                }),
            },
        }
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_owned())
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ImageUrl {
    /// An `https:` URL or a `data:` URL.
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A tool call made by the assistant. `arguments` is JSON text, kept as the model wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

#[derive(Serialize, Deserialize)]
struct WireToolCall<'a> {
    #[serde(default)]
    id: Cow<'a, str>,
    #[serde(rename = "type", default = "function_type")]
    kind: Cow<'a, str>,
    function: WireFunctionCall<'a>,
}

#[derive(Serialize, Deserialize)]
struct WireFunctionCall<'a> {
    name: Cow<'a, str>,
    #[serde(default, deserialize_with = "arguments_text")]
    arguments: Cow<'a, str>,
}

fn function_type() -> Cow<'static, str> {
    Cow::Borrowed("function")
}

/// Some servers send `arguments` as a JSON object instead of a JSON string; accept both.
fn arguments_text<'de, D: Deserializer<'de>>(d: D) -> Result<Cow<'static, str>, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(Cow::Owned(s)),
        Value::Null => Ok(Cow::Borrowed("{}")),
        other => Ok(Cow::Owned(other.to_string())),
    }
}

impl Serialize for ToolCall {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireToolCall {
            id: Cow::Borrowed(&self.id),
            kind: function_type(),
            function: WireFunctionCall {
                name: Cow::Borrowed(&self.name),
                arguments: Cow::Borrowed(&self.arguments),
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolCall {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireToolCall::deserialize(d)?;
        Ok(ToolCall {
            id: w.id.into_owned(),
            name: w.function.name.into_owned(),
            arguments: w.function.arguments.into_owned(),
        })
    }
}

/// A tool offered to the model: name, description and JSON schema of its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// The JSON schema of the arguments, key order preserved. `None` when the client sent none.
    pub parameters: Option<Value>,
    /// OpenAI's `strict` flag, passed through.
    pub strict: Option<bool>,
}

impl ToolSpec {
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: Some(parameters),
            strict: None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct WireTool<'a> {
    #[serde(rename = "type", default = "function_type")]
    kind: Cow<'a, str>,
    function: WireFunction<'a>,
}

#[derive(Serialize, Deserialize)]
struct WireFunction<'a> {
    name: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "str::is_empty")]
    description: Cow<'a, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parameters: Option<Cow<'a, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl Serialize for ToolSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        WireTool {
            kind: function_type(),
            function: WireFunction {
                name: Cow::Borrowed(&self.name),
                description: Cow::Borrowed(&self.description),
                parameters: self.parameters.as_ref().map(Cow::Borrowed),
                strict: self.strict,
            },
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ToolSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireTool::deserialize(d)?;
        if w.kind != "function" {
            return Err(serde::de::Error::custom(format!(
                "unsupported tool type `{}` (only `function` tools are supported)",
                w.kind
            )));
        }
        Ok(ToolSpec {
            name: w.function.name.into_owned(),
            description: w.function.description.into_owned(),
            parameters: w.function.parameters.map(Cow::into_owned),
            strict: w.function.strict,
        })
    }
}

/// Which tools the model may or must call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolChoice {
    None,
    Auto,
    Required,
    /// Exactly this function.
    Named(String),
}

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Named(name) => serde_json::json!({
                "type": "function",
                "function": { "name": name }
            })
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) => match s.as_str() {
                "none" => Ok(ToolChoice::None),
                "auto" => Ok(ToolChoice::Auto),
                "required" | "any" => Ok(ToolChoice::Required),
                other => Err(D::Error::custom(format!(
                    "invalid tool_choice `{other}`: expected none, auto, required or a function"
                ))),
            },
            Value::Object(o) => o
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| o.get("name"))
                .and_then(Value::as_str)
                .map(|n| ToolChoice::Named(n.to_owned()))
                .ok_or_else(|| D::Error::custom("tool_choice object without function.name")),
            _ => Err(D::Error::custom(
                "tool_choice must be a string or an object",
            )),
        }
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    /// The token limit was hit. Also the finish reason of a call cut off mid-way.
    Length,
    ToolCalls,
    ContentFilter,
    #[serde(other)]
    Other,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other => "other",
        }
    }
}

/// Token usage as OpenAI reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// What was used since `before` (a resumed run's total minus what it had already counted).
    pub fn saturating_sub(self, before: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_sub(before.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_sub(before.completion_tokens),
            total_tokens: self.total_tokens.saturating_sub(before.total_tokens),
        }
    }
}

/// Usage of several requests (retries, rounds) adds up.
impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

fn string_or_seq<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
        Null(()),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
        OneOrMany::Null(()) => Vec::new(),
    })
}

/// Parses an OpenAI `tools` array.
pub fn tools_from_json(json: &str) -> Result<Vec<ToolSpec>, serde_json::Error> {
    serde_json::from_str(json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips_with_unknown_fields_and_key_order() {
        let body = r#"{"model":"m","messages":[{"role":"developer","content":"sys"},{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"b\":1,\"a\":2}"}}]},{"role":"tool","tool_call_id":"call_1","content":"ok"}],"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer"}}}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"stop":"END","logit_bias":{"1":2},"stream":true}"#;
        let req: ChatRequest = serde_json::from_str(body).unwrap();
        assert_eq!(req.stop, vec!["END"]);
        assert_eq!(req.tool_choice, Some(ToolChoice::Named("f".into())));
        assert!(req.extra.contains_key("logit_bias"));
        assert!(matches!(req.messages[0], Message::System { .. }));
        let out = serde_json::to_string(&req).unwrap();
        assert!(out.contains(r#""properties":{"z":{"type":"string"},"a":{"type":"integer"}}"#));
        assert!(out.contains(r#""arguments":"{\"b\":1,\"a\":2}""#));
        let again: ChatRequest = serde_json::from_str(&out).unwrap();
        assert_eq!(again, req);
    }

    #[test]
    fn object_arguments_are_accepted_as_text() {
        let call: ToolCall = serde_json::from_str(
            r#"{"id":"c","type":"function","function":{"name":"f","arguments":{"x":1}}}"#,
        )
        .unwrap();
        assert_eq!(call.arguments, r#"{"x":1}"#);
    }

    #[test]
    fn bad_tool_choice_is_a_clear_error() {
        let err = serde_json::from_str::<ToolChoice>(r#""sometimes""#).unwrap_err();
        assert!(err.to_string().contains("invalid tool_choice `sometimes`"));
    }

    #[test]
    fn content_text_joins_parts() {
        let c = Content::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::ImageUrl {
                image_url: ImageUrl {
                    url: "u".into(),
                    detail: None,
                },
            },
            ContentPart::Text { text: "b".into() },
        ]);
        assert_eq!(c.text(), "ab");
    }
}
