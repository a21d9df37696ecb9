//! Sends one request with a weather tool to a model and prints the normalized events: a quick way
//! to see how a real server behaves in each tool mode.
//!
//! ```sh
//! cargo run -p toolbridge-providers --example complete -- MODEL MODE "PROMPT"
//! cargo run -p toolbridge-providers --example complete -- openai:m@http://127.0.0.1:8080/v1 prompt "Weather in Paris?"
//! ```

use std::process::ExitCode;

use futures::StreamExt;
use serde_json::json;
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Message, ToolSpec};
use toolbridge_providers::config::{model_from_spec, ProcessEnv};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: complete MODEL MODE PROMPT");
        return ExitCode::from(2);
    }
    let mode: ToolMode = match args[2].parse() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let model = match model_from_spec(&args[1], Some(mode), &ProcessEnv) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let request = ChatRequest {
        messages: vec![Message::user(args[3].clone())],
        tools: vec![ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        )],
        max_tokens: Some(200),
        temperature: Some(0.0),
        ..ChatRequest::default()
    };
    let mut stream = model.stream(request);
    while let Some(event) = stream.next().await {
        match event {
            Ok(e) => println!("{}", serde_json::to_string(&e).unwrap_or_default()),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(arm) = stream.arm() {
        eprintln!("answered by {} ({})", arm.name, arm.mode);
    }
    ExitCode::SUCCESS
}
