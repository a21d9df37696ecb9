//! Streamed chunks in OpenAI's exact wire form, written straight into the outgoing buffer.
//!
//! Every chunk of a response repeats the same `id`, `object`, `created` and `model`, so that
//! prefix is rendered once per response and each event adds only its delta: no per-chunk
//! structs, no copies of the event's strings (serde_json escapes them into the buffer).

use serde::Serialize;
use toolbridge_protocol::types::{FinishReason, Usage};

/// Writes the `data: …\n\n` lines of one streamed response.
pub(crate) struct ChunkWriter {
    /// `data: {"id":…,"object":"chat.completion.chunk","created":…,"model":…,"choices":[`
    prefix: Vec<u8>,
}

#[derive(Serialize)]
struct Prefix<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
}

#[derive(Serialize)]
struct CallStart<'a> {
    index: usize,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: &'static str,
}

/// Appends a JSON string (quoted and escaped).
fn json_str(out: &mut Vec<u8>, s: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn json<T: Serialize>(out: &mut Vec<u8>, value: &T) {
    // Only plain structs of strings and numbers are written here: this cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

const OPEN_DELTA: &[u8] = br#"{"index":0,"delta":{"#;
const CLOSE_DELTA: &[u8] = b"},\"finish_reason\":null}]}\n\n";

impl ChunkWriter {
    pub(crate) fn new(id: &str, created: u64, model: &str) -> Self {
        let mut prefix = b"data: ".to_vec();
        json(
            &mut prefix,
            &Prefix {
                id,
                object: "chat.completion.chunk",
                created,
                model,
            },
        );
        // Reopen the object to add `choices`.
        prefix.pop();
        prefix.extend_from_slice(br#","choices":["#);
        ChunkWriter { prefix }
    }

    fn delta(&self, out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(OPEN_DELTA);
        body(out);
        out.extend_from_slice(CLOSE_DELTA);
    }

    /// The first chunk: the role, with empty content, as OpenAI sends it.
    pub(crate) fn role(&self, out: &mut Vec<u8>) {
        self.delta(out, |o| {
            o.extend_from_slice(br#""role":"assistant","content":"""#);
        });
    }

    pub(crate) fn content(&self, out: &mut Vec<u8>, text: &str) {
        self.delta(out, |o| {
            o.extend_from_slice(br#""content":"#);
            json_str(o, text);
        });
    }

    /// Reasoning, under the `reasoning_content` key vLLM and DeepSeek use; OpenAI's clients keep
    /// unknown delta keys without complaint.
    pub(crate) fn reasoning(&self, out: &mut Vec<u8>, text: &str) {
        self.delta(out, |o| {
            o.extend_from_slice(br#""reasoning_content":"#);
            json_str(o, text);
        });
    }

    /// A call's first fragment: index, id, type, name and empty arguments.
    pub(crate) fn call_start(&self, out: &mut Vec<u8>, index: usize, id: &str, name: &str) {
        self.delta(out, |o| {
            o.extend_from_slice(br#""tool_calls":["#);
            json(
                o,
                &CallStart {
                    index,
                    id,
                    kind: "function",
                    function: Function {
                        name,
                        arguments: "",
                    },
                },
            );
            o.push(b']');
        });
    }

    /// A later fragment: only the index and a piece of the arguments.
    pub(crate) fn call_args(&self, out: &mut Vec<u8>, index: usize, fragment: &str) {
        self.delta(out, |o| {
            o.extend_from_slice(br#""tool_calls":[{"index":"#);
            o.extend_from_slice(index.to_string().as_bytes());
            o.extend_from_slice(br#","function":{"arguments":"#);
            json_str(o, fragment);
            o.extend_from_slice(b"}}]");
        });
    }

    /// The chunk with an empty delta and the finish reason.
    pub(crate) fn finish(&self, out: &mut Vec<u8>, reason: FinishReason) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(br#"{"index":0,"delta":{},"finish_reason":"#);
        json_str(out, reason.as_str());
        out.extend_from_slice(b"}]}\n\n");
    }

    /// The usage chunk (`choices: []`), sent when the client set `stream_options.include_usage`.
    pub(crate) fn usage(&self, out: &mut Vec<u8>, usage: &Usage) {
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(br#"],"usage":"#);
        json(out, usage);
        out.extend_from_slice(b"}\n\n");
    }

    pub(crate) fn done(out: &mut Vec<u8>) {
        out.extend_from_slice(b"data: [DONE]\n\n");
    }

    /// An error after streaming began, as an event of its own (`data: {"error": {…}}`).
    pub(crate) fn error(out: &mut Vec<u8>, body: &[u8]) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(body);
        out.extend_from_slice(b"\n\n");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use toolbridge_protocol::openai::ChatCompletionChunk;

    fn parse(out: &[u8]) -> Vec<ChatCompletionChunk> {
        let text = std::str::from_utf8(out).unwrap();
        text.split("\n\n")
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l.strip_prefix("data: ").unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn chunks_read_back_as_openai_chunks() {
        let w = ChunkWriter::new("chatcmpl-1", 7, "lo\"cal");
        let mut out = Vec::new();
        w.role(&mut out);
        w.content(&mut out, "hé \"x\"\n");
        w.reasoning(&mut out, "hm");
        w.call_start(&mut out, 0, "call_a", "get_weather");
        w.call_args(&mut out, 0, "{\"city\": ");
        w.finish(&mut out, FinishReason::ToolCalls);
        w.usage(
            &mut out,
            &Usage {
                prompt_tokens: 1,
                completion_tokens: 2,
                total_tokens: 3,
            },
        );
        let chunks = parse(&out);
        assert_eq!(chunks.len(), 7);
        assert!(chunks
            .iter()
            .all(|c| c.id == "chatcmpl-1" && c.model == "lo\"cal" && c.created == 7));
        assert!(chunks.iter().all(|c| c.object == "chat.completion.chunk"));
        assert_eq!(
            chunks[0].choices[0].delta.role.as_deref(),
            Some("assistant")
        );
        assert_eq!(
            chunks[1].choices[0].delta.content.as_deref(),
            Some("hé \"x\"\n")
        );
        assert_eq!(
            chunks[2].choices[0].delta.reasoning_content.as_deref(),
            Some("hm")
        );
        let start = &chunks[3].choices[0].delta.tool_calls[0];
        assert_eq!(
            (start.index, start.id.as_deref()),
            (Some(0), Some("call_a"))
        );
        let args = &chunks[4].choices[0].delta.tool_calls[0];
        assert_eq!(args.id, None);
        assert_eq!(
            args.function.as_ref().unwrap().arguments.as_deref(),
            Some("{\"city\": ")
        );
        assert_eq!(
            chunks[5].choices[0].finish_reason,
            Some(FinishReason::ToolCalls)
        );
        assert!(chunks[6].choices.is_empty());
        assert_eq!(chunks[6].usage.unwrap().total_tokens, 3);
        // The exact bytes of a delta chunk, as OpenAI writes them.
        let mut one = Vec::new();
        w.call_args(&mut one, 1, "}");
        assert_eq!(
            String::from_utf8(one).unwrap(),
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"lo\\\"cal\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"}\"}}]},\"finish_reason\":null}]}\n\n"
        );
    }
}
