//! The gateway's wire format as data: each `scenarios/NAME.json` scripts one or more upstreams
//! (testkit replies), the models in front of them and a list of client exchanges;
//! `scenarios/NAME.expected.json` holds, for every exchange, the status, the content type, the
//! response (a JSON body, or the SSE body as its events, `\n\n` kept, so joined they are the exact
//! bytes) and the requests each upstream received meanwhile (path and JSON body).
//!
//! A scenario: `about` (what it checks), `server` (overrides of the test server configuration),
//! `upstreams` (name → `replies`, a queue, and `default`, the reply once it is empty; a reply is
//! testkit's `Reply` as JSON, or `{"status": 503, "message": …}`), `models` (`[[models]]` entries
//! as JSON: an object with `"upstream": NAME` gets the test arm's settings for that upstream, and
//! `{anthropic:NAME}` in a string is that upstream's Anthropic base URL), and `exchanges`: each
//! `{"request": BODY}` (POST /v1/chat/completions; a string in its `tools` names a tool of the
//! test catalogue, `get_weather` or `get_time`), `{"messages": BODY}` (POST /v1/messages, the
//! Anthropic Messages API; catalogue tools in Anthropic's form), `{"count_tokens": BODY}` (POST
//! /v1/messages/count_tokens) or `{"get": PATH}` (`lines`: record only the lines of a text
//! response that start with one of these); `headers` adds request headers to any of them.
//!
//! Normalized, because they are random: completion ids (`chatcmpl-` and 24 letters or digits →
//! `chatcmpl-<N>`), the per-response prefix of the gateway's call ids (`call_` and 12 → `call_<N>`,
//! the `_index` suffix kept), numbered by first appearance in the scenario, and `"created"`
//! timestamps (→ 0); on the Messages API likewise message ids (`msg_` and 24 → `msg_<N>`) and
//! tool-use ids (`toolu_` and 12 → `toolu_<N>`), and the test upstream's native call ids, which it
//! counts across the test binary (`testkit` and 6 digits → `testkit<N>`). Every JSON completion must also read as the
//! protocol's `ChatCompletion`, and every stream as OpenAI chunks assembled in order
//! (`common::chunks`, `common::assemble`); every Messages stream as named events whose `data`
//! has the event's name as its `type` (`common::anthropic_events`).
//! `TOOLBRIDGE_BLESS=1` rewrites the expected files after a deliberate change; review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::*;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolbridge_gateway::ServerConfig;
use toolbridge_protocol::openai::ChatCompletion;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    /// What the scenario checks (documentation only).
    #[allow(dead_code)]
    about: String,
    #[serde(default)]
    server: Map<String, Value>,
    upstreams: BTreeMap<String, UpstreamScript>,
    models: Vec<Value>,
    exchanges: Vec<Exchange>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamScript {
    #[serde(default)]
    replies: Vec<Scripted>,
    #[serde(default)]
    default: Option<Scripted>,
}

/// One behaviour of a scripted upstream.
#[derive(Deserialize)]
#[serde(untagged)]
enum Scripted {
    Status { status: u16, message: String },
    Reply(ScriptedReply),
}

/// testkit's [`Reply`], field for field.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ScriptedReply {
    text: String,
    reasoning: String,
    /// (name, arguments as JSON text) pairs.
    tool_calls: Vec<(String, String)>,
    chunk_size: usize,
    finish_reason: Option<String>,
    cut_at: Option<usize>,
    ignore_stop: bool,
    usage: Option<(u64, u64)>,
}

impl Scripted {
    fn behavior(&self) -> Behavior {
        match self {
            Scripted::Status { status, message } => Behavior::status(*status, message.clone()),
            Scripted::Reply(r) => Behavior::Reply(Reply {
                text: r.text.clone(),
                reasoning: r.reasoning.clone(),
                tool_calls: r.tool_calls.clone(),
                chunk_size: r.chunk_size,
                finish_reason: r.finish_reason.clone(),
                cut_at: r.cut_at,
                ignore_stop: r.ignore_stop,
                usage: r.usage,
            }),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Exchange {
    /// A chat completion request body.
    request: Option<Value>,
    /// A Messages API request body.
    messages: Option<Value>,
    /// A Messages API token-count request body.
    count_tokens: Option<Value>,
    /// A GET, by path from the server's root.
    get: Option<String>,
    /// Extra request headers.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// For a GET with a text answer: only the lines starting with one of these are recorded.
    #[serde(default)]
    lines: Vec<String>,
}

/// The test catalogue's tools, named by a string in a request's `tools`.
fn catalogue_tool(name: &str) -> Value {
    match name {
        "get_weather" => weather_tool(),
        "get_time" => time_tool(),
        other => panic!("no catalogue tool `{other}` (scenarios.rs: fn catalogue_tool)"),
    }
}

/// A catalogue tool in the Messages API's form.
fn anthropic_tool(name: &str) -> Value {
    let openai = catalogue_tool(name);
    let f = &openai["function"];
    json!({"name": f["name"], "description": f["description"], "input_schema": f["parameters"]})
}

fn messages_body(mut body: Value) -> Value {
    if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools {
            if let Value::String(name) = tool {
                *tool = anthropic_tool(name);
            }
        }
    }
    body
}

fn request_body(mut body: Value) -> Value {
    if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools {
            if let Value::String(name) = tool {
                *tool = catalogue_tool(name);
            }
        }
    }
    body
}

/// A `[[models]]` entry with the test arm's settings merged into every object naming an
/// upstream, and `{anthropic:NAME}` replaced by that upstream's Anthropic base URL.
fn model_config(value: &Value, upstreams: &BTreeMap<String, TestUpstream>) -> Value {
    match value {
        Value::Object(o) => {
            let mut out = Map::new();
            if let Some(name) = o.get("upstream").and_then(Value::as_str) {
                let up = upstreams
                    .get(name)
                    .unwrap_or_else(|| panic!("no upstream `{name}`"));
                let mode = o
                    .get("tool_mode")
                    .and_then(Value::as_str)
                    .unwrap_or("prompt");
                if let Value::Object(defaults) = arm(up, mode) {
                    out.extend(defaults);
                }
            }
            for (k, v) in o {
                if k != "upstream" {
                    out.insert(k.clone(), model_config(v, upstreams));
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| model_config(v, upstreams)).collect()),
        Value::String(s) => {
            let mut s = s.clone();
            for (name, up) in upstreams {
                s = s.replace(&format!("{{anthropic:{name}}}"), &up.anthropic_base_url());
            }
            Value::String(s)
        }
        other => other.clone(),
    }
}

/// Replaces the random values of a response or request text (see the file's header).
struct Normalizer {
    completion_ids: Vec<String>,
    call_prefixes: Vec<String>,
    message_ids: Vec<String>,
    testkit_ids: Vec<String>,
}

impl Normalizer {
    fn number(seen: &mut Vec<String>, value: &str) -> usize {
        match seen.iter().position(|v| v == value) {
            Some(i) => i + 1,
            None => {
                seen.push(value.to_owned());
                seen.len()
            }
        }
    }

    /// `prefix` followed by exactly `len` ASCII letters or digits (then `then`, if given) is
    /// replaced by `prefix<N>`.
    fn replace_random(
        text: &str,
        prefix: &str,
        len: usize,
        then: Option<char>,
        seen: &mut Vec<String>,
    ) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(prefix) {
            let after = &rest[at + prefix.len()..];
            let random_len = after.bytes().take_while(u8::is_ascii_alphanumeric).count();
            let follows = after[random_len..].chars().next();
            let matches = random_len == len && then.is_none_or(|c| follows == Some(c));
            out.push_str(&rest[..at + prefix.len()]);
            if matches {
                let n = Self::number(seen, &after[..len]);
                out.push_str(&format!("<{n}>"));
                rest = &after[len..];
            } else {
                rest = after;
            }
        }
        out.push_str(rest);
        out
    }

    fn text(&mut self, text: &str) -> String {
        let text = Self::replace_random(text, "chatcmpl-", 24, None, &mut self.completion_ids);
        let text = Self::replace_random(&text, "call_", 12, Some('_'), &mut self.call_prefixes);
        let text = Self::replace_random(&text, "toolu_", 12, Some('_'), &mut self.call_prefixes);
        let text = Self::replace_random(&text, "msg_", 24, None, &mut self.message_ids);
        // The test upstream numbers its native call ids across the whole test binary.
        let text = Self::replace_random(&text, "testkit", 6, None, &mut self.testkit_ids);
        // `"created":` then digits, as serde_json writes it.
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\"created\":") {
            let after = &rest[at + "\"created\":".len()..];
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            out.push_str(&rest[..at]);
            out.push_str("\"created\":0");
            rest = &after[digits..];
        }
        out.push_str(rest);
        out
    }

    fn json(&mut self, value: &Value) -> Value {
        serde_json::from_str(&self.text(&value.to_string())).unwrap()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Wire {
    Chat,
    Messages,
    Other,
}

async fn play(scenario: &Scenario) -> Value {
    let mut upstreams = BTreeMap::new();
    for (name, script) in &scenario.upstreams {
        let up = TestUpstream::start().await.unwrap();
        up.push_all(script.replies.iter().map(Scripted::behavior));
        up.set_default(script.default.as_ref().map(Scripted::behavior));
        upstreams.insert(name.clone(), up);
    }
    let models = scenario
        .models
        .iter()
        .map(|m| model(model_config(m, &upstreams)))
        .collect();
    let mut config = serde_json::to_value(server_config()).unwrap();
    for (k, v) in &scenario.server {
        config[k] = v.clone();
    }
    let config: ServerConfig = serde_json::from_value(config).unwrap();
    let gw = start(config, models).await;
    let client = http();
    let root = format!("http://{}", gw.addr());
    let mut normalizer = Normalizer {
        completion_ids: Vec::new(),
        call_prefixes: Vec::new(),
        message_ids: Vec::new(),
        testkit_ids: Vec::new(),
    };
    let mut seen_requests: BTreeMap<&str, usize> = BTreeMap::new();
    let mut results = Vec::new();
    for (i, exchange) in scenario.exchanges.iter().enumerate() {
        let (builder, wire) = match (
            &exchange.request,
            &exchange.messages,
            &exchange.count_tokens,
            &exchange.get,
        ) {
            (Some(body), None, None, None) => (
                client
                    .post(format!("{root}/v1/chat/completions"))
                    .json(&request_body(body.clone())),
                Wire::Chat,
            ),
            (None, Some(body), None, None) => (
                client
                    .post(format!("{root}/v1/messages"))
                    .json(&messages_body(body.clone())),
                Wire::Messages,
            ),
            (None, None, Some(body), None) => (
                client
                    .post(format!("{root}/v1/messages/count_tokens"))
                    .json(&messages_body(body.clone())),
                Wire::Other,
            ),
            (None, None, None, Some(path)) => (client.get(format!("{root}{path}")), Wire::Other),
            _ => panic!(
                "exchange {i}: give exactly one of `request`, `messages`, `count_tokens` and `get`"
            ),
        };
        let builder = exchange
            .headers
            .iter()
            .fold(builder, |b, (name, value)| b.header(name, value));
        let response = builder.send().await.unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = response.text().await.unwrap();
        let mut result = Map::new();
        result.insert("status".into(), json!(status));
        result.insert("content_type".into(), json!(content_type));
        match content_type.as_deref() {
            Some("text/event-stream") => {
                match wire {
                    // Every stream reads as OpenAI chunks, calls starting in order.
                    Wire::Chat => {
                        assemble(&chunks(&body));
                    }
                    Wire::Messages => {
                        anthropic_events(&body);
                    }
                    Wire::Other => panic!("exchange {i}: a stream from a non-streaming endpoint"),
                }
                let events: Vec<String> = body
                    .split_inclusive("\n\n")
                    .map(|e| normalizer.text(e))
                    .collect();
                result.insert("sse".into(), json!(events));
            }
            Some(t) if t.starts_with("application/json") => {
                let value: Value = serde_json::from_str(&body).unwrap();
                if wire == Wire::Chat && status == 200 {
                    let _: ChatCompletion = serde_json::from_value(value.clone())
                        .unwrap_or_else(|e| panic!("exchange {i}: not a completion: {e}"));
                }
                result.insert("body".into(), normalizer.json(&value));
            }
            _ => {
                let lines: Vec<&str> = body
                    .lines()
                    .filter(|l| exchange.lines.iter().any(|p| l.starts_with(p.as_str())))
                    .collect();
                result.insert("lines".into(), json!(lines));
            }
        }
        let mut received = Map::new();
        for (name, up) in &upstreams {
            let all = up.requests();
            let seen = seen_requests.entry(name.as_str()).or_default();
            let new: Vec<Value> = all[*seen..]
                .iter()
                .map(|r| json!({"path": r.path, "body": normalizer.json(&r.body)}))
                .collect();
            *seen = all.len();
            if !new.is_empty() {
                received.insert(name.clone(), Value::Array(new));
            }
        }
        result.insert("upstream".into(), Value::Object(received));
        results.push(Value::Object(result));
    }
    Value::Array(results)
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && !p.to_string_lossy().ends_with(".expected.json")
        })
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn every_scenario_answers_what_its_expected_file_says() {
    let files = scenario_files();
    assert!(files.len() >= 25, "the scenarios folder is missing files");
    let mut failures = Vec::new();
    for path in files {
        let scenario: Scenario = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let got = serde_json::to_string_pretty(&play(&scenario).await).unwrap() + "\n";
        let expected_path = path.with_extension("expected.json");
        failures.extend(toolbridge_testkit::blessed::compare(&expected_path, &got));
    }
    assert!(
        failures.is_empty(),
        "{}\n(TOOLBRIDGE_BLESS=1 rewrites the expected files)",
        failures.join("\n")
    );
}
