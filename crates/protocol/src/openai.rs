//! OpenAI Chat Completions response types, both ways: the providers read them from upstreams, the
//! gateway writes them to clients. Unknown fields are ignored when reading.

use serde::{Deserialize, Serialize};

use crate::accumulator::ToolCallDelta;
use crate::types::{FinishReason, ToolCall, Usage};

/// A non-streamed response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    #[serde(default)]
    pub id: String,
    #[serde(default = "completion_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl Default for ChatCompletion {
    fn default() -> Self {
        ChatCompletion {
            id: String::new(),
            object: completion_object(),
            created: 0,
            model: String::new(),
            choices: Vec::new(),
            usage: None,
        }
    }
}

impl Default for ChatCompletionChunk {
    fn default() -> Self {
        ChatCompletionChunk {
            id: String::new(),
            object: chunk_object(),
            created: 0,
            model: String::new(),
            choices: Vec::new(),
            usage: None,
        }
    }
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

fn chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub index: u32,
    pub message: ResponseMessage,
    /// Always written (as `null` when unknown), as OpenAI does.
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseMessage {
    #[serde(default = "assistant_role")]
    pub role: String,
    /// `null` when the message holds only tool calls, as OpenAI writes it.
    #[serde(default)]
    pub content: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub tool_calls: Vec<ToolCall>,
    /// Reasoning text some servers (vLLM, DeepSeek, llama.cpp) return beside the content.
    #[serde(default, alias = "reasoning", skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

/// One streamed chunk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletionChunk {
    #[serde(default)]
    pub id: String,
    #[serde(default = "chunk_object")]
    pub object: String,
    #[serde(default)]
    pub created: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Present on the last chunk when `stream_options.include_usage` is set (`null` before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    #[serde(default)]
    pub index: u32,
    #[serde(default)]
    pub delta: Delta,
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(default, alias = "reasoning", skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub tool_calls: Vec<ToolCallDelta>,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// An error body in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorDetail {
    #[serde(default)]
    pub message: String,
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub param: Option<String>,
    #[serde(default)]
    pub code: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_real_server_chunks() {
        // OpenAI, vLLM (reasoning_content, null tool_calls) and llama.cpp shapes.
        let chunks = [
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt","system_fingerprint":"x","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
            r#"{"id":"c1","choices":[{"index":0,"delta":{"reasoning_content":"hm","tool_calls":null},"finish_reason":null}]}"#,
            r#"{"id":"c1","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":0}}}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        let parsed: Vec<ChatCompletionChunk> = chunks
            .iter()
            .map(|c| serde_json::from_str(c).unwrap())
            .collect();
        assert_eq!(
            parsed[0].choices[0].delta.tool_calls[0].id.as_deref(),
            Some("call_1")
        );
        assert_eq!(
            parsed[1].choices[0].delta.reasoning_content.as_deref(),
            Some("hm")
        );
        assert_eq!(parsed[2].usage.unwrap().total_tokens, 7);
        assert_eq!(
            parsed[3].choices[0].finish_reason,
            Some(FinishReason::ToolCalls)
        );
    }

    #[test]
    fn writes_openai_shapes() {
        let chunk = ChatCompletionChunk {
            id: "x".into(),
            choices: vec![ChunkChoice {
                delta: Delta {
                    content: Some("hi".into()),
                    ..Delta::default()
                },
                ..ChunkChoice::default()
            }],
            ..ChatCompletionChunk::default()
        };
        assert_eq!(
            serde_json::to_string(&chunk).unwrap(),
            r#"{"id":"x","object":"chat.completion.chunk","created":0,"model":"","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#
        );
    }
}
