//! `auto` tool choice for a small model: whether to call a tool at all, and which one.
//!
//! Left to itself (free decoding, or a grammar allowing text or a call) a 135M model never starts
//! a call; forced to call, it calls even for "Hello", and under a grammar over several tools it
//! often picks the wrong one. So `auto` asks the model's likelihoods instead of its samples, in
//! two stages (measured by `examples/auto_eval.rs`; docs/src/embedded.md has the figures):
//!
//! 1. **Gate**: the log-probability of `<tool_call>` as the answer's start against that of the
//!    model's own favourite first token. The call is never the favourite, but it is far less
//!    unlikely after a request a tool serves; a call is made when it is within `margin` nats.
//! 2. **Pick**: one tool is chosen by scoring the tool names (see [`Pick`]), and only that tool is
//!    offered to the grammar, which then fills its arguments.
//!
//! After a tool result the model answers in prose.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use toolbridge_protocol::texts::{self, CallTag};
use toolbridge_protocol::types::ToolSpec;

use crate::engine::Engine;
use crate::error::EmbeddedError;
use crate::template::{literal, TemplateMessage};

/// The gate's default margin in nats, calibrated on `auto_eval`'s development prompts (system
/// prompt, preamble and three tools as there). The call-vs-greedy gap ran from about -6 to -13.6
/// after requests that need a tool and from -7 to -21 after ones that do not.
pub const DEFAULT_MARGIN: f32 = 11.5;

/// How `auto` decides between answering and calling.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoStrategy {
    /// Free decoding with the tools in the prompt; a `<tool_call>` the model writes is parsed.
    /// (A 135M model almost never starts one on its own.)
    Free,
    /// After a user message, call (grammar-forced, any tool); after a tool result, answer in
    /// prose.
    CallThenAnswer,
    /// After a user message, the gate decides; a call goes to the tool `pick` chooses. After a
    /// tool result, answer in prose.
    Route { margin: f32, pick: Pick },
}

impl Default for AutoStrategy {
    fn default() -> Self {
        AutoStrategy::Route {
            margin: DEFAULT_MARGIN,
            pick: Pick::UseChannel,
        }
    }
}

/// How the gate's call picks its tool (with one tool offered, that tool).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// The grammar offers every tool; the model's constrained decoding chooses.
    Grammar,
    /// The log-probability of `<tool_call>{"name": "TOOL"` after the conversation, per token of
    /// the name.
    Name,
    /// [`Pick::Name`] plus one nat per word the request shares with the tool's name and
    /// description (a deterministic prior).
    NameLexical,
    /// The log-probability of "I will use the tool TOOL" as the answer.
    Use,
    /// Noisy channel: the log-probability of the user's message after a system prompt that
    /// offers only TOOL ([`texts::ROUTER_CHANNEL_SYSTEM`]), on a scratch KV cache.
    Channel,
    /// [`Pick::Use`] + [`Pick::Channel`].
    UseChannel,
}

/// The strategy names accepted in configuration.
pub const STRATEGY_NAMES: &[&str] = &[
    "route",
    "gate",
    "route_use",
    "route_channel",
    "route_name",
    "route_name_lexical",
    "call_then_answer",
    "free",
];

impl FromStr for AutoStrategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let route = |pick| AutoStrategy::Route {
            margin: DEFAULT_MARGIN,
            pick,
        };
        Ok(match s {
            "free" => AutoStrategy::Free,
            "call_then_answer" => AutoStrategy::CallThenAnswer,
            "route" => route(Pick::UseChannel),
            "gate" => route(Pick::Grammar),
            "route_use" => route(Pick::Use),
            "route_channel" => route(Pick::Channel),
            "route_name" => route(Pick::Name),
            "route_name_lexical" => route(Pick::NameLexical),
            other => {
                return Err(format!(
                    "unknown auto strategy `{other}` (expected one of: {})",
                    STRATEGY_NAMES.join(", ")
                ))
            }
        })
    }
}

impl fmt::Display for AutoStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            AutoStrategy::Free => "free",
            AutoStrategy::CallThenAnswer => "call_then_answer",
            AutoStrategy::Route { pick, .. } => match pick {
                Pick::UseChannel => "route",
                Pick::Grammar => "gate",
                Pick::Use => "route_use",
                Pick::Channel => "route_channel",
                Pick::Name => "route_name",
                Pick::NameLexical => "route_name_lexical",
            },
        };
        match self {
            AutoStrategy::Route { margin, .. } if *margin != DEFAULT_MARGIN => {
                write!(f, "{name} (margin {margin})")
            }
            _ => f.write_str(name),
        }
    }
}

/// Stage 1: whether the model's likelihood of starting a call is within `margin` nats of its
/// favourite first token.
pub fn gate(engine: &Engine, prompt: &str, margin: f32) -> Result<bool, EmbeddedError> {
    let open = format!("<{}>", CallTag::default().name());
    let (call, greedy) = engine.score(prompt, &open)?;
    Ok(call >= greedy - margin)
}

/// Stage 2: the index of the tool to call. `message` is the user's latest message (for the
/// channel score and the lexical prior).
pub fn pick(
    engine: &Engine,
    prompt: &str,
    message: &str,
    tools: &[&ToolSpec],
    how: Pick,
) -> Result<usize, EmbeddedError> {
    if tools.len() < 2 {
        return Ok(0);
    }
    let scores: Vec<f32> = match how {
        Pick::Grammar => return Ok(0),
        Pick::Name => name_scores(engine, prompt, tools)?,
        Pick::NameLexical => name_scores(engine, prompt, tools)?
            .into_iter()
            .zip(tools)
            .map(|(s, t)| s + shared_words(message, t) as f32)
            .collect(),
        Pick::Use => use_scores(engine, prompt, tools)?,
        Pick::Channel => channel_scores(engine, message, tools)?,
        Pick::UseChannel => use_scores(engine, prompt, tools)?
            .into_iter()
            .zip(channel_scores(engine, message, tools)?)
            .map(|(a, b)| a + b)
            .collect(),
    };
    Ok(argmax(&scores))
}

fn argmax(scores: &[f32]) -> usize {
    scores
        .iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (i, &s)| {
            if s > best.1 {
                (i, s)
            } else {
                best
            }
        })
        .0
}

fn name_scores(
    engine: &Engine,
    prompt: &str,
    tools: &[&ToolSpec],
) -> Result<Vec<f32>, EmbeddedError> {
    let open = format!("{prompt}<{}>{{\"name\": \"", CallTag::default().name());
    tools
        .iter()
        .map(|t| {
            let n = engine.tokenizer().encode(&literal(&t.name))?.len().max(1);
            let (lp, _) = engine.score(&open, &literal(&t.name))?;
            Ok(lp / n as f32)
        })
        .collect()
}

fn use_scores(
    engine: &Engine,
    prompt: &str,
    tools: &[&ToolSpec],
) -> Result<Vec<f32>, EmbeddedError> {
    tools
        .iter()
        .map(|t| {
            let (lp, _) = engine.score(
                prompt,
                &format!("{}{}", texts::ROUTER_USE_PREFIX, literal(&t.name)),
            )?;
            Ok(lp)
        })
        .collect()
}

/// The longest description the channel context keeps (the first sentence, at most this many
/// bytes): long descriptions cost time and say more about arguments than about purpose.
const CHANNEL_DESCRIPTION_MAX: usize = 200;
/// The longest message the channel scores, in bytes.
const CHANNEL_MESSAGE_MAX: usize = 400;

fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text
        .find(". ")
        .map(|i| i + 1)
        .or_else(|| text.find('\n'))
        .unwrap_or(text.len());
    clip(&text[..end], CHANNEL_DESCRIPTION_MAX)
}

fn channel_scores(
    engine: &Engine,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<Vec<f32>, EmbeddedError> {
    let message = clip(message.trim(), CHANNEL_MESSAGE_MAX);
    if message.is_empty() {
        return Ok(vec![0.0; tools.len()]);
    }
    // The template renders the user's turn around a placeholder; what comes before it is the
    // context the message is scored in.
    const HOLE: &str = "\u{FDD2}";
    let contexts: Vec<String> = tools
        .iter()
        .map(|t| {
            let system = texts::router_channel_system(&t.name, first_sentence(&t.description));
            let rendered = engine.render(&[
                TemplateMessage::new("system", system),
                TemplateMessage::new("user", HOLE),
            ]);
            match rendered.split_once(HOLE) {
                Some((before, _)) => before
                    .trim_end_matches(crate::template::LITERAL_OPEN)
                    .to_owned(),
                None => rendered,
            }
        })
        .collect();
    engine.score_detached(&contexts, &literal(message))
}

/// How many words (lower case, 3+ letters, a few stop words left out, compared on their first five
/// letters) the message shares with the tool's name and description.
pub fn shared_words(message: &str, tool: &ToolSpec) -> usize {
    const STOP: &[&str] = &[
        "the", "for", "and", "get", "what", "with", "this", "that", "from", "your",
    ];
    let words = |s: &str| -> std::collections::BTreeSet<String> {
        s.split(|c: char| !c.is_alphabetic())
            .map(str::to_lowercase)
            .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
            .map(|w| w.chars().take(5).collect())
            .collect()
    };
    let tool_words = words(&format!("{} {}", tool.name, tool.description));
    words(message).intersection(&tool_words).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategy_names_round_trip() {
        for name in STRATEGY_NAMES {
            let s: AutoStrategy = name.parse().unwrap();
            assert_eq!(s.to_string(), *name);
        }
        assert_eq!(AutoStrategy::default().to_string(), "route");
        let err = "sometimes".parse::<AutoStrategy>().unwrap_err();
        assert!(err.contains("route, gate"), "{err}");
    }

    #[test]
    fn the_lexical_prior_counts_shared_words() {
        let t = ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({}),
        );
        assert_eq!(shared_words("What is the weather in Paris?", &t), 1);
        assert_eq!(shared_words("Current weather, please", &t), 2);
        assert_eq!(shared_words("Tell me a joke", &t), 0);
    }

    #[test]
    fn descriptions_are_cut_at_the_first_sentence() {
        assert_eq!(first_sentence(" Runs code. Then more."), "Runs code.");
        assert_eq!(first_sentence("One line\nTwo"), "One line");
        assert_eq!(
            first_sentence(&"é".repeat(300)).len(),
            CHANNEL_DESCRIPTION_MAX
        );
    }
}
