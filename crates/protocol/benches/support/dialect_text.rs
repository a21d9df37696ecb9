//! The benchmark text of `benches/dialects.rs`: ~1 MB of prose holding 1,000 calls written in a
//! dialect's format. Shared by that benchmark and the profiling and tracing examples
//! (`examples/bytewise.rs`, `examples/trace_pushes.rs`), which include it with `#[path]`.

use toolbridge_protocol::parser::Dialect;

const TARGET_LEN: usize = 1_000_000;
pub const CALLS: usize = 1_000;
pub const TOOLS: [&str; 3] = ["get_weather", "web_search", "read_file"];
const WORDS: &[&str] = &[
    "the", "model", "answer", "weather", "should", "check", "first", "then", "file", "result",
    "function", "a < b", "[link]", "{x}", "`code`", "naïve", "café", "日本", "for", "if", "table",
    "<b>", "list", "value", "|", "done",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// The `i`th call: a tool name and its arguments as (key, JSON value) pairs.
fn call(i: usize) -> (&'static str, [(&'static str, String); 2]) {
    let name = TOOLS[i % TOOLS.len()];
    let args = [
        ("query", format!("\"item {i}: café \\\"{}\\\"\"", i * 7)),
        ("limit", (i % 50).to_string()),
    ];
    (name, args)
}

fn args_json(args: &[(&str, String)]) -> String {
    let members: Vec<String> = args.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!("{{{}}}", members.join(", "))
}

/// A bare-text value (for the XML-like dialects): the JSON string's content.
fn bare(v: &str) -> String {
    serde_json::from_str::<serde_json::Value>(v)
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
        .unwrap()
}

/// One call in `dialect`'s format.
fn render(dialect: Dialect, i: usize) -> String {
    let (name, args) = call(i);
    let json = args_json(&args);
    match dialect {
        Dialect::Hermes => format!("<tool_call>\n{{\"name\": \"{name}\", \"arguments\": {json}}}\n</tool_call>\n"),
        Dialect::Llama3Json => format!("<|python_tag|>{{\"name\": \"{name}\", \"parameters\": {json}}}<|eom_id|>\n"),
        Dialect::Pythonic => {
            let kw: Vec<String> = args.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("<|python_start|>[{name}({})]<|python_end|>\n", kw.join(", "))
        }
        Dialect::Mistral => format!("[TOOL_CALLS]{name}[ARGS]{json}"),
        Dialect::Qwen3Coder => {
            let params: String = args
                .iter()
                .map(|(k, v)| format!("<parameter={k}>\n{}\n</parameter>\n", bare(v)))
                .collect();
            format!("<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>\n")
        }
        Dialect::DeepseekV3 => format!(
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>{name}<｜tool▁sep｜>{json}<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n"
        ),
        Dialect::Glm45 => {
            let pairs: String = args
                .iter()
                .map(|(k, v)| format!("<arg_key>{k}</arg_key>\n<arg_value>{}</arg_value>\n", bare(v)))
                .collect();
            format!("<tool_call>{name}\n{pairs}</tool_call>\n")
        }
        Dialect::KimiK2 => format!(
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:{i}<|tool_call_argument_begin|>{json}<|tool_call_end|><|tool_calls_section_end|>\n"
        ),
        Dialect::GptOss => format!(
            "<|end|><|start|>assistant<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{json}<|call|><|start|>assistant<|channel|>final<|message|>"
        ),
        Dialect::Granite => format!("<tool_call>[{{\"name\": \"{name}\", \"arguments\": {json}}}]</tool_call>\n"),
        Dialect::Phi4Mini => format!("{{\"name\": \"{name}\", \"arguments\": {json}}}"),
    }
}

/// ~1 MB: the same prose for every dialect with [`CALLS`] calls between its paragraphs (phi4-mini's
/// format is one list at the end of the reply, so there the calls come last, as one list).
pub fn generate(dialect: Dialect) -> String {
    let calls: Vec<String> = (0..CALLS).map(|i| render(dialect, i)).collect();
    let call_bytes: usize = calls.iter().map(String::len).sum::<usize>() + "functools[]".len();
    let gap = (TARGET_LEN - call_bytes - 200) / CALLS;
    let mut rng = Rng(17);
    let mut out = String::with_capacity(TARGET_LEN + 4096);
    if dialect == Dialect::GptOss {
        out.push_str("<|channel|>final<|message|>");
    }
    let mut prose = |out: &mut String, len: usize| {
        let start = out.len();
        while out.len() - start < len {
            out.push_str(WORDS[rng.below(WORDS.len())]);
            out.push(if rng.below(12) == 0 { '\n' } else { ' ' });
        }
    };
    for (i, c) in calls.iter().enumerate() {
        prose(&mut out, gap);
        if dialect == Dialect::Phi4Mini {
            continue;
        }
        let _ = i;
        out.push_str(c);
    }
    if dialect == Dialect::Phi4Mini {
        out.push_str("functools[");
        out.push_str(&calls.join(", "));
        out.push(']');
    }
    let filler = " All done.";
    while out.len() < TARGET_LEN {
        let take = (TARGET_LEN - out.len()).min(filler.len());
        out.push_str(&filler[..take]);
    }
    out
}
