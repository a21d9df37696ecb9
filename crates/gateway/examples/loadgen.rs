//! A small, bounded HTTP load generator for `scripts/bench-gateway.sh` (loopback only).
//!
//! ```text
//! loadgen --url http://127.0.0.1:PORT/v1/chat/completions --model NAME
//!         [--connections N] [--requests N] [--max-seconds S] [--stream] [--expect TEXT]
//!         [--messages | --responses]
//! ```
//!
//! `--messages` sends the same request in the Anthropic Messages API's form (for
//! `/v1/messages`), `--responses` in the OpenAI Responses API's form (for `/v1/responses`: the
//! tool is a client function, so the answer is a `function_call` item).
//!
//! Each connection is one kept-alive HTTP/1.1 connection sending requests back to back (a
//! chat request with one tool), reading each whole response. Prints one line:
//! `requests=… errors=… seconds=… rps=… p50_ms=… p99_ms=…`. Runs on one thread so it takes
//! as little of the machine as possible from the server it measures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

struct Options {
    url: String,
    model: String,
    connections: usize,
    requests: usize,
    max_seconds: f64,
    stream: bool,
    expect: Option<String>,
    messages: bool,
    responses: bool,
}

fn options() -> Options {
    let mut o = Options {
        url: String::new(),
        model: "local".into(),
        connections: 1,
        requests: 1000,
        max_seconds: 30.0,
        stream: false,
        expect: None,
        messages: false,
        responses: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().expect("a flag without its value");
        match flag.as_str() {
            "--url" => o.url = value(),
            "--model" => o.model = value(),
            "--connections" => o.connections = value().parse().unwrap(),
            "--requests" => o.requests = value().parse().unwrap(),
            "--max-seconds" => o.max_seconds = value().parse().unwrap(),
            "--stream" => o.stream = true,
            "--expect" => o.expect = Some(value()),
            "--messages" => o.messages = true,
            "--responses" => o.responses = true,
            other => panic!("unknown argument {other}"),
        }
    }
    // Loopback only, and bounded.
    assert!(
        o.url.starts_with("http://127.0.0.1:"),
        "loadgen only targets http://127.0.0.1"
    );
    o.connections = o.connections.clamp(1, 256);
    o.requests = o.requests.clamp(1, 1_000_000);
    o.max_seconds = o.max_seconds.clamp(0.1, 600.0);
    o
}

fn body(o: &Options) -> Bytes {
    if o.messages {
        return messages_body(o);
    }
    if o.responses {
        return responses_body(o);
    }
    let body = serde_json::json!({
        "model": o.model,
        "stream": o.stream,
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the weather in Paris?"}
        ],
        "tools": [{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "The city name."},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                    },
                    "required": ["city"]
                }
            }
        }]
    });
    Bytes::from(body.to_string())
}

/// The same request as a Messages API body.
fn messages_body(o: &Options) -> Bytes {
    let body = serde_json::json!({
        "model": o.model,
        "max_tokens": 1024,
        "stream": o.stream,
        "system": "You are a helpful assistant.",
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{
            "name": "get_weather",
            "description": "Current weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }
        }]
    });
    Bytes::from(body.to_string())
}

/// The same request as a Responses API body (stored, as clients send it by default).
fn responses_body(o: &Options) -> Bytes {
    let body = serde_json::json!({
        "model": o.model,
        "stream": o.stream,
        "instructions": "You are a helpful assistant.",
        "input": "What is the weather in Paris?",
        "tools": [{
            "type": "function",
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "The city name."},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }
        }]
    });
    Bytes::from(body.to_string())
}

struct Outcome {
    latencies: Vec<Duration>,
    errors: usize,
}

async fn worker(
    o: Arc<Options>,
    body: Bytes,
    tickets: Arc<AtomicUsize>,
    deadline: Instant,
) -> Outcome {
    let rest = o.url.trim_start_matches("http://");
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let mut out = Outcome {
        latencies: Vec::new(),
        errors: 0,
    };
    let stream = TcpStream::connect(authority).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    while Instant::now() < deadline {
        // Take a ticket; stop when none are left.
        if tickets
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
        {
            break;
        }
        let request = hyper::Request::post(path)
            .header("host", authority)
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .unwrap();
        let started = Instant::now();
        let ok = match sender.send_request(request).await {
            Ok(response) => {
                let status = response.status();
                match response.into_body().collect().await {
                    Ok(collected) => {
                        let bytes = collected.to_bytes();
                        status == 200
                            && o.expect
                                .as_ref()
                                .is_none_or(|e| memfind(&bytes, e.as_bytes()))
                    }
                    Err(_) => false,
                }
            }
            Err(_) => false,
        };
        if ok {
            out.latencies.push(started.elapsed());
        } else {
            out.errors += 1;
            if sender.ready().await.is_err() {
                break;
            }
        }
    }
    out
}

fn memfind(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn main() {
    let o = Arc::new(options());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let body = body(&o);
        let tickets = Arc::new(AtomicUsize::new(o.requests));
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(o.max_seconds);
        let tasks: Vec<_> = (0..o.connections)
            .map(|_| {
                tokio::spawn(worker(
                    Arc::clone(&o),
                    body.clone(),
                    Arc::clone(&tickets),
                    deadline,
                ))
            })
            .collect();
        let mut latencies = Vec::new();
        let mut errors = 0;
        for t in tasks {
            let out = t.await.unwrap();
            latencies.extend(out.latencies);
            errors += out.errors;
        }
        let seconds = started.elapsed().as_secs_f64();
        latencies.sort();
        let pct = |p: f64| -> f64 {
            if latencies.is_empty() {
                return f64::NAN;
            }
            let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
            latencies[i].as_secs_f64() * 1000.0
        };
        println!(
            "requests={} errors={} seconds={:.3} rps={:.1} p50_ms={:.3} p99_ms={:.3}",
            latencies.len(),
            errors,
            seconds,
            latencies.len() as f64 / seconds,
            pct(0.50),
            pct(0.99)
        );
    });
}
