//! Measures the `auto` tool-choice strategies on 60 prompts of our own, half of which need one of
//! three tools (weather, time, calculator). A prompt that does not need a tool is right when it
//! gets text; one that does is right when it gets a call to that tool whose arguments parse (A),
//! and stricter, whose arguments also hold what the prompt asked for: the city, the zone, the
//! numbers (B).
//!
//! The first 40 prompts ("dev") were used to design the strategies and calibrate the gate's
//! margin; the last 20 ("test") were written before any strategy was run on them and are scored
//! separately.
//!
//! `cargo run --release -p toolbridge-embedded --example auto_eval -- [MODEL.gguf] [STRATEGY…]`
//! (strategies: the names `auto` accepts in toolbridge.toml, plus `gate_margin2`, the old gate, and
//! `router`, a grammar choosing between a call's opening and a first prose token.)

use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use toolbridge_embedded::engine::{shared, Constraint, Generation, Sampling};
use toolbridge_embedded::{
    AutoStrategy, EmbeddedConfig, EmbeddedUpstream, Engine, EngineOptions, Pick,
};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Message, ToolChoice, ToolSpec};
use toolbridge_providers::Model;

/// A prompt, the tool it needs (or none) and what that tool's argument must contain.
struct Case {
    prompt: &'static str,
    tool: Option<&'static str>,
    args: &'static [&'static str],
    test: bool,
}

const fn dev(
    prompt: &'static str,
    tool: Option<&'static str>,
    args: &'static [&'static str],
) -> Case {
    Case {
        prompt,
        tool,
        args,
        test: false,
    }
}

const fn test(
    prompt: &'static str,
    tool: Option<&'static str>,
    args: &'static [&'static str],
) -> Case {
    Case {
        prompt,
        tool,
        args,
        test: true,
    }
}

const W: Option<&str> = Some("get_weather");
const T: Option<&str> = Some("get_time");
const C: Option<&str> = Some("calculate");

const CASES: &[Case] = &[
    dev("What is the weather in Paris?", W, &["paris"]),
    dev("Is it raining in London right now?", W, &["london"]),
    dev("How hot is it in Madrid today?", W, &["madrid"]),
    dev("Weather forecast for Tokyo, please.", W, &["tokyo"]),
    dev("Should I take an umbrella in Berlin today?", W, &["berlin"]),
    dev("What's the temperature in New York?", W, &["new york"]),
    dev("What time is it in Sydney?", T, &["sydney"]),
    dev("Tell me the current time in UTC.", T, &["utc"]),
    dev("What is the time in Tokyo now?", T, &["tokyo"]),
    dev("Current local time in Paris?", T, &["paris"]),
    dev("What is 1234 times 5678?", C, &["1234", "5678"]),
    dev("Compute 17 squared plus 3.", C, &["17", "3"]),
    dev("Hello! How are you?", None, &[]),
    dev("Write a haiku about the sea.", None, &[]),
    dev("What is the capital of France?", None, &[]),
    dev("Thank you, that is all.", None, &[]),
    dev("Explain what a noun is.", None, &[]),
    dev("Tell me a joke.", None, &[]),
    dev("Who wrote Romeo and Juliet?", None, &[]),
    dev("Give me three tips for better sleep.", None, &[]),
    dev("Translate 'good morning' into Spanish.", None, &[]),
    dev("What is your name?", None, &[]),
    dev(
        "Summarize the plot of Cinderella in one sentence.",
        None,
        &[],
    ),
    dev("What colour is the sky?", None, &[]),
    dev("Do I need a coat in Oslo this evening?", W, &["oslo"]),
    dev("Will it snow in Moscow tomorrow?", W, &["moscow"]),
    dev("What's the weather like in Rome?", W, &["rome"]),
    dev("What time is it in Los Angeles?", T, &["los angeles"]),
    dev("Which hour is it now in Berlin?", T, &["berlin"]),
    dev("What is 45 divided by 9?", C, &["45", "9"]),
    dev("Add 128 and 256.", C, &["128", "256"]),
    dev("How much is 15% of 80?", C, &["15", "80"]),
    dev("Write a short poem about rain.", None, &[]),
    dev("What is a time zone?", None, &[]),
    dev("Who invented the calculator?", None, &[]),
    dev("Why is the sky blue?", None, &[]),
    dev("Recommend a good book to read.", None, &[]),
    dev("How do I boil an egg?", None, &[]),
    dev("What does 'ephemeral' mean?", None, &[]),
    dev("Name three famous painters.", None, &[]),
    test("Is it sunny in Barcelona?", W, &["barcelona"]),
    test("How cold is it in Chicago right now?", W, &["chicago"]),
    test(
        "I'm flying to Dublin; what's the weather there?",
        W,
        &["dublin"],
    ),
    test("Check the weather in Cairo for me.", W, &["cairo"]),
    test("What's the time in Singapore?", T, &["singapore"]),
    test("Is it already evening in New Delhi?", T, &["delhi"]),
    test("Give me the current time in Toronto.", T, &["toronto"]),
    test("Multiply 37 by 12.", C, &["37", "12"]),
    test("What is 999 plus 1?", C, &["999", "1"]),
    test("Calculate the square root of 144.", C, &["144"]),
    test("What is the largest ocean on Earth?", None, &[]),
    test("Give me a synonym for 'happy'.", None, &[]),
    test("Write one sentence about autumn.", None, &[]),
    test("What language is spoken in Brazil?", None, &[]),
    test("Can you suggest a name for a cat?", None, &[]),
    test("What do bees make?", None, &[]),
    test("Describe a sunset in three words.", None, &[]),
    test("Is a tomato a fruit?", None, &[]),
    test("Good night!", None, &[]),
    test("What is the opposite of 'cold'?", None, &[]),
];

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolSpec::new(
            "get_time",
            "Get the current time in a city or time zone.",
            json!({"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}),
        ),
        ToolSpec::new(
            "calculate",
            "Evaluate an arithmetic expression.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
    ]
}

fn request(prompt: &str, choice: Option<ToolChoice>) -> ChatRequest {
    ChatRequest {
        messages: vec![
            Message::system("You are a helpful assistant."),
            Message::user(prompt),
        ],
        tools: tools(),
        tool_choice: choice,
        ..ChatRequest::default()
    }
}

/// What one strategy did on one prompt.
struct Outcome {
    call: Option<(String, String)>,
    text: String,
    secs: f64,
}

/// Whether the arguments parse as an object whose (only) string value holds every expected piece.
fn args_ok(arguments: &str, expected: &[&str]) -> bool {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return false;
    };
    let text = map
        .values()
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    expected.iter().all(|e| text.contains(e))
}

/// Experiment (c): a grammar lets the model start either a call to one of the tools or prose;
/// greedy decoding takes the likelier start, and a call is then completed for that tool.
fn router(
    engine: &Engine,
    up: &EmbeddedUpstream,
    model: &Model,
    runtime: &tokio::runtime::Runtime,
    prompt: &str,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (rendered, _) = up.render(&request(prompt, None));
    let names: Vec<String> = tools().iter().map(|t| format!("{:?}", t.name)).collect();
    let grammar = format!(
        "start: call | prose\ncall: \"<tool_call>{{\\\"name\\\": \\\"\" ({}) \"\\\"\"\nprose: /[^<\\s][^<]*/\n",
        names.join(" | ")
    );
    let mut out = String::new();
    engine.generate(
        &Generation {
            prompt: rendered,
            constraint: Constraint::Grammar(grammar),
            stop: Vec::new(),
            max_tokens: 20,
            sampling: Sampling::default(),
        },
        &mut |t| {
            out.push_str(t);
            true
        },
    )?;
    let Some(chosen) = tools()
        .into_iter()
        .find(|t| out.starts_with('<') && out.contains(&format!("\"{}\"", t.name)))
    else {
        return Ok(Outcome {
            call: None,
            text: out,
            secs: start.elapsed().as_secs_f64(),
        });
    };
    let response = runtime.block_on(model.complete(request(
        prompt,
        Some(ToolChoice::Named(chosen.name.clone())),
    )))?;
    Ok(Outcome {
        call: response
            .calls
            .first()
            .map(|c| (c.name.clone(), c.arguments.clone())),
        text: response.text,
        secs: start.elapsed().as_secs_f64(),
    })
}

#[derive(Default)]
struct Tally {
    prompts: usize,
    decided: usize,
    need: usize,
    right_tool: usize,
    parsed: usize,
    args_ok: usize,
    right_parsed: usize,
    right: usize,
    secs: f64,
}

impl Tally {
    /// Counts one outcome; returns whether it was right with the arguments as expected.
    fn add(&mut self, case: &Case, outcome: &Outcome) -> bool {
        self.prompts += 1;
        self.secs += outcome.secs;
        let called = outcome.call.as_ref().map(|c| c.0.as_str());
        if called.is_some() == case.tool.is_some() {
            self.decided += 1;
        }
        if case.tool.is_some() {
            self.need += 1;
        }
        let (parsed, ok) = match (case.tool, &outcome.call) {
            (None, None) => (true, true),
            (Some(want), Some((name, args))) if name == want => {
                self.right_tool += 1;
                let parsed = matches!(serde_json::from_str::<Value>(args), Ok(Value::Object(_)));
                let ok = parsed && args_ok(args, case.args);
                self.parsed += usize::from(parsed);
                self.args_ok += usize::from(ok);
                (parsed, ok)
            }
            _ => (false, false),
        };
        self.right_parsed += usize::from(parsed);
        self.right += usize::from(ok);
        ok
    }

    fn row(&self) -> String {
        let pct = |n: usize| 100.0 * n as f64 / self.prompts.max(1) as f64;
        format!(
            "{:>2}/{:<2} | {:>2}/{:<2} | {:>2}/{:<2} | {:>2}/{:<2} | {:>2}/{:<2} {:>5.1}% | {:>2}/{:<2} {:>5.1}% | {:.2} s",
            self.decided,
            self.prompts,
            self.right_tool,
            self.need,
            self.parsed,
            self.right_tool,
            self.args_ok,
            self.right_tool,
            self.right_parsed,
            self.prompts,
            pct(self.right_parsed),
            self.right,
            self.prompts,
            pct(self.right),
            self.secs / self.prompts.max(1) as f64,
        )
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let path = match args.peek() {
        Some(p) if p.ends_with(".gguf") => args.next().map(Into::into),
        _ => None,
    };
    let path = match path {
        Some(p) => p,
        None => {
            toolbridge_embedded::pull::default_model_path(&toolbridge_embedded::pull::models_dir()?)
        }
    };
    let mut names: Vec<String> = args.collect();
    if names.is_empty() {
        names = [
            "free",
            "call_then_answer",
            "gate_margin2",
            "router",
            "gate",
            "route_name",
            "route_name_lexical",
            "route_use",
            "route_channel",
            "route",
        ]
        .map(String::from)
        .to_vec();
    }
    let engine = shared(
        &path,
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let mut table = Vec::new();
    for name in &names {
        let strategy = match name.as_str() {
            "gate_margin2" => AutoStrategy::Route {
                margin: 2.0,
                pick: Pick::Grammar,
            },
            "router" => AutoStrategy::Free,
            other => other.parse()?,
        };
        let up = Arc::new(EmbeddedUpstream::new(
            Arc::clone(&engine),
            EmbeddedConfig {
                auto: strategy,
                // Room for a call: a forced call closes itself once only the tokens its closing
                // needs are left, so a tight limit would cut every string value to "".
                max_tokens: 160,
                ..EmbeddedConfig::default()
            },
        ));
        let model = Model::single(up.clone(), ToolMode::Auto);
        let (mut dev_t, mut test_t, mut all_t) =
            (Tally::default(), Tally::default(), Tally::default());
        for case in CASES {
            let outcome = if name == "router" {
                router(&engine, &up, &model, &runtime, case.prompt)?
            } else {
                let start = Instant::now();
                let response = runtime.block_on(model.complete(request(case.prompt, None)))?;
                Outcome {
                    call: response
                        .calls
                        .first()
                        .map(|c| (c.name.clone(), c.arguments.clone())),
                    text: response.text,
                    secs: start.elapsed().as_secs_f64(),
                }
            };
            let ok = all_t.add(case, &outcome);
            if case.test {
                test_t.add(case, &outcome);
            } else {
                dev_t.add(case, &outcome);
            }
            println!(
                "{name}\t{}\t{}\t{}\t{}",
                if case.test { "test" } else { "dev" },
                if ok { "ok" } else { "WRONG" },
                case.prompt,
                match &outcome.call {
                    Some((n, a)) => format!("call {n} {a}"),
                    None => format!(
                        "text {:?}",
                        outcome.text.chars().take(60).collect::<String>()
                    ),
                }
            );
        }
        table.push((name.clone(), dev_t, test_t, all_t));
    }
    println!("\nOverall: the call/no-call decision right and, for a prompt that needs a tool, the right tool");
    println!("with arguments that parse (A) / that also hold what the prompt asked for (B).");
    println!("strategy            set  | decided | tool  | parse | as exp | overall A      | overall B      | mean time");
    for (name, dev_t, test_t, all_t) in &table {
        for (set, t) in [("dev", dev_t), ("test", test_t), ("all", all_t)] {
            println!("{name:<19} {set:<4} | {}", t.row());
        }
    }
    Ok(())
}
