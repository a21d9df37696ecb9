//! `[telemetry]`: `toolbridge run` exports its model-call and tool-execution spans over OTLP/HTTP
//! to an in-process receiver (a small HTTP/1.1 server on 127.0.0.1 that records the protobuf
//! bodies of `POST /v1/traces`), with the GenAI semantic conventions' attributes, and message
//! content only with `capture_content = true`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;
use toolbridge_testkit::{Behavior, Reply, TestUpstream};

const SECRET_PROMPT: &str = "walrus-opal-prompt-words";
const SECRET_ANSWER: &str = "heron-basalt-answer-words";

/// The bodies a receiver recorded: each request's path and body.
type Recorded = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// The OTLP receiver: records each `POST /v1/traces` body; stops when dropped.
struct Receiver {
    port: u16,
    bodies: Recorded,
    stop: Arc<AtomicBool>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (b, s) = (Arc::clone(&bodies), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let b = Arc::clone(&b);
                        std::thread::spawn(move || serve(conn, &b));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Receiver { port, bodies, stop }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One keep-alive connection: request line, headers, a `Content-Length` body; answers 200 with
/// an empty `ExportTraceServiceResponse`.
fn serve(conn: TcpStream, bodies: &Mutex<Vec<(String, Vec<u8>)>>) {
    conn.set_nonblocking(false).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        bodies.lock().unwrap().push((path, body));
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// A span as the test reads it: its name and its attributes as text.
#[derive(Debug)]
struct Span {
    name: String,
    span_id: Vec<u8>,
    parent_span_id: Vec<u8>,
    trace_id: Vec<u8>,
    attributes: BTreeMap<String, String>,
}

fn spans(bodies: &[(String, Vec<u8>)]) -> Vec<Span> {
    let mut out = Vec::new();
    for (path, body) in bodies {
        assert_eq!(path, "/v1/traces");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_spans {
            for scope in resource.scope_spans {
                for span in scope.spans {
                    let attributes = span
                        .attributes
                        .iter()
                        .map(|kv| {
                            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                                Some(AnyValue::StringValue(s)) => s.clone(),
                                Some(AnyValue::IntValue(i)) => i.to_string(),
                                Some(AnyValue::BoolValue(b)) => b.to_string(),
                                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                                other => format!("{other:?}"),
                            };
                            (kv.key.clone(), value)
                        })
                        .collect();
                    out.push(Span {
                        name: span.name,
                        span_id: span.span_id,
                        parent_span_id: span.parent_span_id,
                        trace_id: span.trace_id,
                        attributes,
                    });
                }
            }
        }
    }
    out
}

/// `toolbridge run` against a scripted upstream (one `use_skill` call, then an answer) with
/// `[telemetry]` pointing at a receiver; the spans it exported and every body's bytes.
fn run_with_telemetry(dir: &Path, capture_content: bool) -> (Vec<Span>, Vec<u8>) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let upstream = runtime.block_on(TestUpstream::start()).unwrap();
    upstream.push(Behavior::Reply(
        Reply::text(
            "<tool_call>{\"name\": \"use_skill\", \"arguments\": {\"name\": \"trip-planner\"}}</tool_call>",
        )
        .with_usage(21, 4),
    ));
    upstream.push(Behavior::Reply(
        Reply::text(SECRET_ANSWER).with_usage(40, 6),
    ));
    let receiver = Receiver::start();
    let config = dir.join("toolbridge.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[models]]
name = "m"
base_url = "{}"
upstream_model = "mock-model"
tool_mode = "prompt"
max_retries = 0

[telemetry]
otlp_endpoint = "http://127.0.0.1:{}"
service_name = "toolbridge-test"
capture_content = {capture_content}
"#,
            upstream.base_url(),
            receiver.port
        ),
    )
    .unwrap();
    let skills = common::repo().join("examples/demo/skills");
    let (code, out, err) = common::toolbridge(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--model",
            "m",
            "--skills",
            skills.to_str().unwrap(),
            SECRET_PROMPT,
        ],
        dir,
    );
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains(SECRET_ANSWER), "{out}");
    // The exporter flushes before the process exits; the receiver has the bodies by now.
    let bodies = receiver.bodies.lock().unwrap().clone();
    let all: Vec<u8> = bodies.iter().flat_map(|(_, b)| b.clone()).collect();
    (spans(&bodies), all)
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn a_run_exports_chat_and_execute_tool_spans_without_content() {
    let dir = common::temp_dir("telemetry", "plain");
    let (spans, bytes) = run_with_telemetry(&dir, false);
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat m").collect();
    assert_eq!(chats.len(), 2, "one chat span per model call: {spans:#?}");
    for chat in &chats {
        let a = &chat.attributes;
        assert_eq!(a["gen_ai.operation.name"], "chat", "{chat:?}");
        assert_eq!(a["gen_ai.request.model"], "m", "{chat:?}");
        assert_eq!(a["gen_ai.response.model"], "mock-model", "{chat:?}");
        assert_eq!(a["gen_ai.provider.name"], "openai", "{chat:?}");
    }
    let mut finishes: Vec<&str> = chats
        .iter()
        .map(|c| c.attributes["gen_ai.response.finish_reasons"].as_str())
        .collect();
    finishes.sort_unstable();
    assert_eq!(finishes, ["[\"stop\"]", "[\"tool_calls\"]"], "{chats:?}");
    let usage: Vec<(&str, &str)> = chats
        .iter()
        .map(|c| {
            (
                c.attributes["gen_ai.usage.input_tokens"].as_str(),
                c.attributes["gen_ai.usage.output_tokens"].as_str(),
            )
        })
        .collect();
    assert!(
        usage.contains(&("21", "4")) && usage.contains(&("40", "6")),
        "{usage:?}"
    );
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool use_skill")
        .collect();
    assert_eq!(tools.len(), 1, "{spans:#?}");
    let a = &tools[0].attributes;
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["gen_ai.tool.name"], "use_skill");
    assert!(!a["gen_ai.tool.call.id"].is_empty(), "{a:?}");
    // The run is one tree: an invoke_agent span, parent of every model call and tool execution,
    // with the run's total usage.
    let runs: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent toolbridge")
        .collect();
    assert_eq!(runs.len(), 1, "one invoke_agent span per run: {spans:#?}");
    let run = runs[0];
    assert_eq!(run.attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run.attributes["gen_ai.request.model"], "m");
    assert_eq!(run.attributes["gen_ai.usage.input_tokens"], "61");
    assert_eq!(run.attributes["gen_ai.usage.output_tokens"], "10");
    for child in chats.iter().chain(tools.iter()) {
        assert_eq!(
            (&child.parent_span_id, &child.trace_id),
            (&run.span_id, &run.trace_id),
            "{} is a child of the run's span",
            child.name
        );
    }
    for span in &spans {
        assert!(
            !span.attributes.contains_key("gen_ai.input.messages")
                && !span.attributes.contains_key("gen_ai.tool.call.arguments"),
            "no content attributes: {span:?}"
        );
    }
    assert!(!contains(&bytes, SECRET_PROMPT), "no prompt in the export");
    assert!(!contains(&bytes, SECRET_ANSWER), "no answer in the export");
    assert!(
        contains(&bytes, "toolbridge-test"),
        "the service name is sent"
    );
}

#[test]
fn capture_content_puts_messages_and_tool_arguments_in_the_spans() {
    let dir = common::temp_dir("telemetry", "capture");
    let (spans, _) = run_with_telemetry(&dir, true);
    let first = spans
        .iter()
        .find(|s| s.name == "chat m")
        .expect("a chat span");
    assert!(
        first.attributes["gen_ai.input.messages"].contains(SECRET_PROMPT),
        "{first:?}"
    );
    assert!(
        spans.iter().any(|s| s
            .attributes
            .get("gen_ai.output.messages")
            .is_some_and(|m| m.contains(SECRET_ANSWER))),
        "{spans:#?}"
    );
    let tool = spans
        .iter()
        .find(|s| s.name == "execute_tool use_skill")
        .expect("a tool span");
    assert!(
        tool.attributes["gen_ai.tool.call.arguments"].contains("trip-planner"),
        "{tool:?}"
    );
}
