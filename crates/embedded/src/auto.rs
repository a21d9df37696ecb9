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
use serde_json::Value;
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
    /// As [`AutoStrategy::Route`] with the relevance gate ([`relevance`]): a call is made when
    /// the gate's score plus `bias` is at least 0.
    Relevance { bias: f32, pick: Pick },
    /// As [`AutoStrategy::Relevance`] with the mutual gate ([`mutual`]): relevance measured both
    /// ways, the message given each tool and each tool given the message.
    Mutual { bias: f32, pick: Pick },
}

impl AutoStrategy {
    /// How the strategy picks among several tools: its `pick`, `None` for `free` and
    /// `call_then_answer` (the grammar's choice).
    pub fn pick(&self) -> Option<Pick> {
        match *self {
            AutoStrategy::Free | AutoStrategy::CallThenAnswer => None,
            AutoStrategy::Route { pick, .. }
            | AutoStrategy::Relevance { pick, .. }
            | AutoStrategy::Mutual { pick, .. } => Some(pick),
        }
    }
}

impl Default for AutoStrategy {
    fn default() -> Self {
        AutoStrategy::Mutual {
            bias: MUTUAL_BIAS,
            pick: Pick::Channel,
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
    "mutual",
    "route",
    "relevance",
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
            "mutual" => AutoStrategy::Mutual {
                bias: MUTUAL_BIAS,
                pick: Pick::Channel,
            },
            "relevance" => AutoStrategy::Relevance {
                bias: RELEVANCE_BIAS,
                pick: Pick::Channel,
            },
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
            AutoStrategy::Relevance { bias, pick } => {
                f.write_str("relevance")?;
                if *pick != Pick::Channel {
                    write!(f, " (pick {pick:?})")?;
                }
                if *bias != RELEVANCE_BIAS {
                    write!(f, " (bias {bias})")?;
                }
                return Ok(());
            }
            AutoStrategy::Mutual { bias, pick } => {
                f.write_str("mutual")?;
                if *pick != Pick::Channel {
                    write!(f, " (pick {pick:?})")?;
                }
                if *bias != MUTUAL_BIAS {
                    write!(f, " (bias {bias})")?;
                }
                return Ok(());
            }
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

/// The relevance gate's weights, fitted by a class-balanced logistic regression on the gate's
/// signals ([`signals`]) for BFCL v4's `simple_python`, `multiple` (a call is right) and
/// `irrelevance` (no call is right): 840 requests, `examples/bfcl_gate.rs`; two-fold
/// cross-validation agreed within 4 points per category. docs/src/embedded.md has the method
/// and the figures. Per nat of pointwise mutual information between the best tool and the user's
/// message ([`Relevance::pmi`]):
pub const RELEVANCE_PMI: f32 = 0.123;
/// Per content word the message shares with the best-matching tool's name, description and
/// parameters:
pub const RELEVANCE_SHARED: f32 = 0.449;
/// Per nat of the call-vs-greedy gap of the margin gate:
pub const RELEVANCE_GAP: f32 = 0.215;
/// The intercept: a score of at least 0 makes a call. The balanced fit's own was -0.63; moved by
/// +0.5, the development set's calls on the two call categories rise from 86%/81% to 91%/88%
/// while its irrelevance requests answered without a call fall from 88% to 84% — the trade that
/// maximised the three categories' summed accuracy, a call being right about half the time.
pub const RELEVANCE_BIAS: f32 = -0.13;

/// What the relevance gate measured for one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Relevance {
    /// Per tool: the log-probability of the user's message after a system prompt offering only
    /// that tool (the channel pick reuses them).
    pub channel: Vec<f32>,
    /// How much better the best tool's context explains the message than a context without tools,
    /// in nats: `max(channel) - neutral`.
    pub pmi: f32,
    /// The most content words the message shares with one tool's name, description and
    /// parameters.
    pub shared: usize,
    /// Log-probability of the call's opening tag minus that of the favourite first token.
    pub gap: f32,
}

impl Relevance {
    /// The gate's score without its intercept.
    pub fn score(&self) -> f32 {
        RELEVANCE_PMI * self.pmi + RELEVANCE_SHARED * self.shared as f32 + RELEVANCE_GAP * self.gap
    }
}

/// Stage 1, by relevance: how well each tool explains the user's `message` against a context
/// without tools (a 135M model's likelihood of a call's tag alone calls on almost every request),
/// how many words they share, and the margin gate's gap.
pub fn relevance(
    engine: &Engine,
    prompt: &str,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<Relevance, EmbeddedError> {
    let open = format!("<{}>", CallTag::default().name());
    let (call, greedy) = engine.score(prompt, &open)?;
    let (channel, neutral) = channel_and_neutral(engine, message, tools)?;
    Ok(Relevance {
        pmi: best_gain(channel.iter().map(|c| c - neutral)),
        channel,
        shared: tools
            .iter()
            .map(|t| shared_text_words(message, &tool_text(t)))
            .max()
            .unwrap_or(0),
        gap: call - greedy,
    })
}

/// The mutual gate's weights, fitted by a logistic regression in which each of five groups
/// weighs the same — BFCL v4 `simple_python` (first 60), `multiple` (first 27) and `irrelevance`
/// (first 60), and `examples/auto_eval.rs`'s 30 tool and 30 no-tool prompts — on the gate's
/// signals ([`signals`], `examples/bfcl_gate.rs`); two-fold cross-validation agreed within 2
/// requests per group. docs/src/embedded.md has the method and every figure. Per nat of the
/// message's pointwise mutual information with the best tool ([`Mutual::pmi`]):
pub const MUTUAL_PMI: f32 = 0.227;
/// Per nat of the best tool's use sentence's pointwise mutual information with the message
/// ([`Mutual::describe`]):
pub const MUTUAL_DESCRIBE: f32 = 0.122;
/// The intercept: a score of at least 0 makes a call. The fit's own was -0.425; moved by +0.2,
/// the development set's tool prompts of our own that get a call rise from 18 to 24 of 30 while
/// BFCL's irrelevance requests answered without one stay at 43 of 60.
pub const MUTUAL_BIAS: f32 = -0.225;

/// What the mutual gate measured for one request.
#[derive(Clone, Debug, PartialEq)]
pub struct Mutual {
    /// Per tool: the log-probability of the user's message after a system prompt offering only
    /// that tool (the channel pick reuses them).
    pub channel: Vec<f32>,
    /// How much better the best tool's context explains the message than a context without
    /// tools, in nats: `max(channel) - neutral`.
    pub pmi: f32,
    /// The other way: how much likelier the message makes "I will use the tool NAME: its
    /// description" as the answer than an empty message does, for the tool where that is most,
    /// in nats. It is measured over the description's tokens, so it still says something when the
    /// message is short and shares no word with the tool.
    pub describe: f32,
}

impl Mutual {
    /// The gate's score without its intercept.
    pub fn score(&self) -> f32 {
        MUTUAL_PMI * self.pmi + MUTUAL_DESCRIBE * self.describe
    }
}

/// Stage 1, by relevance both ways: how well each tool explains the user's `message` against a
/// context without tools, and how much the message calls for each tool's use sentence against
/// an empty message (all on scratch KV caches; the conversation's is left alone).
pub fn mutual(
    engine: &Engine,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<Mutual, EmbeddedError> {
    let (channel, neutral) = channel_and_neutral(engine, message, tools)?;
    let clipped = clip(message.trim(), CHANNEL_MESSAGE_MAX);
    let given = describe_scores(engine, clipped, tools)?;
    let alone = describe_scores(engine, "", tools)?;
    Ok(Mutual {
        pmi: best_gain(channel.iter().map(|c| c - neutral)),
        describe: best_gain(given.iter().zip(&alone).map(|(g, a)| g - a)),
        channel,
    })
}

/// The largest of a per-tool gain in nats, 0 without tools.
fn best_gain(gains: impl Iterator<Item = f32>) -> f32 {
    let best = gains.fold(f32::NEG_INFINITY, f32::max);
    if best.is_finite() {
        best
    } else {
        0.0
    }
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
    pick_with(engine, prompt, message, tools, how, None)
}

/// [`pick`], with the channel scores already measured (by [`relevance`]) when `channel` has them.
pub fn pick_with(
    engine: &Engine,
    prompt: &str,
    message: &str,
    tools: &[&ToolSpec],
    how: Pick,
    channel: Option<&[f32]>,
) -> Result<usize, EmbeddedError> {
    if tools.len() < 2 {
        return Ok(0);
    }
    let channel_scores = |engine: &Engine, message: &str, tools: &[&ToolSpec]| match channel {
        Some(known) if known.len() == tools.len() => Ok(known.to_vec()),
        _ => channel_scores(engine, message, tools),
    };
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
    let contexts: Vec<String> = tools
        .iter()
        .map(|t| {
            channel_context(
                engine,
                texts::router_channel_system(&t.name, first_sentence(&t.description)),
            )
        })
        .collect();
    engine.score_detached(&contexts, &literal(message))
}

/// What the template renders before the user's turn after `system`: the context a message is
/// scored in.
fn channel_context(engine: &Engine, system: String) -> String {
    // The template renders the user's turn around a placeholder; what comes before it is the
    // context.
    const HOLE: &str = "\u{FDD2}";
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
}

/// Per tool, the log-probability of `message` after a system prompt offering only that tool; and
/// after one offering none. All zero for an empty message.
fn channel_and_neutral(
    engine: &Engine,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<(Vec<f32>, f32), EmbeddedError> {
    let message = clip(message.trim(), CHANNEL_MESSAGE_MAX);
    if message.is_empty() {
        return Ok((vec![0.0; tools.len()], 0.0));
    }
    let mut contexts: Vec<String> = tools
        .iter()
        .map(|t| {
            channel_context(
                engine,
                texts::router_channel_system(&t.name, first_sentence(&t.description)),
            )
        })
        .collect();
    contexts.push(channel_context(
        engine,
        texts::ROUTER_NEUTRAL_SYSTEM.to_owned(),
    ));
    let mut scores = engine.score_detached(&contexts, &literal(message))?;
    let neutral = scores.pop().unwrap_or_default();
    Ok((scores, neutral))
}

/// A tool's name, description and parameters' names and descriptions, for counting shared words.
fn tool_text(tool: &ToolSpec) -> String {
    let mut text = format!("{} {}", tool.name, tool.description);
    if let Some(props) = tool
        .parameters
        .as_ref()
        .and_then(|p| p.get("properties"))
        .and_then(|p| p.as_object())
    {
        for (name, schema) in props {
            text.push(' ');
            text.push_str(&name.replace('_', " "));
            if let Some(d) = schema.get("description").and_then(|d| d.as_str()) {
                text.push(' ');
                text.push_str(d);
            }
        }
    }
    text
}

/// Everything the gate and the pick could go by, for one request: for measuring strategies on a
/// development set (`examples/bfcl_gate.rs`), not used to decide.
#[derive(Clone, Debug, Serialize)]
pub struct Signals {
    /// Log-probability of the call's opening tag as the answer's start.
    pub call: f32,
    /// Log-probability of the model's favourite first token there.
    pub greedy: f32,
    /// Per tool: log-probability of the user's message after a system prompt offering that tool.
    pub channel: Vec<f32>,
    /// The same after a system prompt offering none.
    pub neutral: f32,
    /// Per tool: log-probability of "I will use the tool TOOL" as the answer.
    pub uses: Vec<f32>,
    /// The message's length in tokens (as scored: clipped).
    pub tokens: usize,
    /// Per tool: content words the message shares with the tool's name and description.
    pub shared: Vec<usize>,
    /// Per tool: the same with the parameters' names and descriptions added.
    pub shared_params: Vec<usize>,
    /// The message's own number of content words.
    pub words: usize,
    /// Per tool: log-probability of "I will use the tool NAME: DESCRIPTION" as the answer to the
    /// message alone (a system prompt without tools), and to an empty message (`describe_null`):
    /// their difference is how much the message calls for that tool, measured over the
    /// description's tokens rather than the message's.
    pub describe: Vec<f32>,
    pub describe_null: Vec<f32>,
}

/// Measures [`Signals`] for a rendered `prompt` whose latest user message is `message`.
pub fn signals(
    engine: &Engine,
    prompt: &str,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<Signals, EmbeddedError> {
    let open = format!("<{}>", CallTag::default().name());
    let (call, greedy) = engine.score(prompt, &open)?;
    let clipped = clip(message.trim(), CHANNEL_MESSAGE_MAX);
    let (channel, neutral) = channel_and_neutral(engine, message, tools)?;
    Ok(Signals {
        call,
        greedy,
        channel,
        neutral,
        uses: use_scores(engine, prompt, tools)?,
        tokens: engine.tokenizer().encode(&literal(clipped))?.len(),
        shared: tools.iter().map(|t| shared_words(message, t)).collect(),
        shared_params: tools
            .iter()
            .map(|t| shared_text_words(message, &tool_text(t)))
            .collect(),
        words: content_words(message).len(),
        describe: describe_scores(engine, clipped, tools)?,
        describe_null: describe_scores(engine, "", tools)?,
    })
}

/// Whether calling `tool` takes a number: one of its required parameters is an `integer` or a
/// `number` (or an array of them) that the schema does not list (`enum`, `const`). `auto` does not
/// make such a call when no user message or tool result writes a number ([`writes_a_number`]):
/// a small model asked for a number nobody gave invents one. Measured on BFCL v4 before use (the tool's schema and the message only, no model run):
/// every offered tool needs a number the message does not write in 68 of the 240 `irrelevance`
/// requests, and in 4 of the 400 `simple_python` and 3 of the 200 `multiple` ones, none of which
/// the model's call got right (docs/src/embedded.md).
pub fn needs_a_number(tool: &ToolSpec) -> bool {
    let Some(schema) = tool.parameters.as_ref() else {
        return false;
    };
    let numeric = |s: &Value| {
        // A number the schema lists (`enum`, `const`) is chosen, not invented.
        if s.get("enum").is_some() || s.get("const").is_some() {
            return false;
        }
        let is_number = |t: &Value| matches!(t.as_str(), Some("integer" | "number" | "float"));
        match &s["type"] {
            Value::Array(types) => !types.is_empty() && types.iter().all(is_number),
            t if t.as_str() == Some("array") => is_number(&s["items"]["type"]),
            t => is_number(t),
        }
    };
    let required = schema["required"].as_array().into_iter().flatten();
    required
        .filter_map(Value::as_str)
        .any(|name| schema["properties"].get(name).is_some_and(numeric))
}

/// Whether `text` writes a number, in digits or as a word, as argument grounding reads them.
pub fn writes_a_number(text: &str) -> bool {
    !crate::ground::scan_numbers(text).is_empty()
}

/// Per tool, the log-probability of the use sentence with the tool's first description sentence
/// ("I will use the tool NAME: …") as the answer to `message` after the neutral system prompt.
fn describe_scores(
    engine: &Engine,
    message: &str,
    tools: &[&ToolSpec],
) -> Result<Vec<f32>, EmbeddedError> {
    let context = engine.render(&[
        TemplateMessage::new("system", texts::ROUTER_NEUTRAL_SYSTEM),
        TemplateMessage::new("user", message),
    ]);
    tools
        .iter()
        .map(|t| {
            let sentence = texts::router_describe(&t.name, first_sentence(&t.description));
            let scores =
                engine.score_detached(std::slice::from_ref(&context), &literal(&sentence))?;
            Ok(scores.first().copied().unwrap_or_default())
        })
        .collect()
}

/// How many words (lower case, 3+ letters, a few stop words left out, compared on their first five
/// letters) the message shares with the tool's name and description.
pub fn shared_words(message: &str, tool: &ToolSpec) -> usize {
    shared_text_words(message, &format!("{} {}", tool.name, tool.description))
}

fn shared_text_words(message: &str, text: &str) -> usize {
    content_words(message)
        .intersection(&content_words(text))
        .count()
}

fn content_words(s: &str) -> std::collections::BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "for", "and", "get", "what", "with", "this", "that", "from", "your",
    ];
    s.split(|c: char| !c.is_alphabetic())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !STOP.contains(&w.as_str()))
        .map(|w| w.chars().take(5).collect())
        .collect()
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
        assert_eq!(AutoStrategy::default().to_string(), "mutual");
        let err = "sometimes".parse::<AutoStrategy>().unwrap_err();
        assert!(err.contains("mutual, route, relevance, gate"), "{err}");
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
    fn a_tool_needs_a_number_when_a_required_parameter_is_one() {
        let tool = |properties: Value, required: Value| {
            ToolSpec::new(
                "t",
                "",
                json!({"type": "object", "properties": properties, "required": required}),
            )
        };
        let needs =
            |properties: Value, required: Value| needs_a_number(&tool(properties, required));
        assert!(needs(json!({"n": {"type": "integer"}}), json!(["n"])));
        assert!(needs(json!({"x": {"type": "number"}}), json!(["x"])));
        assert!(needs(
            json!({"xs": {"type": "array", "items": {"type": "number"}}}),
            json!(["xs"])
        ));
        assert!(needs(json!({"n": {"type": ["integer"]}}), json!(["n"])));
        // Optional, nullable, text, a list of words, a required name without a property, or no
        // schema at all: nothing to invent.
        assert!(!needs(json!({"n": {"type": "integer"}}), json!([])));
        assert!(!needs(
            json!({"n": {"type": "integer", "enum": [1, 2]}}),
            json!(["n"])
        ));
        assert!(!needs(
            json!({"n": {"type": "integer", "const": 3}}),
            json!(["n"])
        ));
        assert!(!needs(
            json!({"n": {"type": ["integer", "null"]}}),
            json!(["n"])
        ));
        assert!(!needs(json!({"s": {"type": "string"}}), json!(["s"])));
        assert!(!needs(
            json!({"xs": {"type": "array", "items": {"type": "string"}}}),
            json!(["xs"])
        ));
        assert!(!needs(json!({}), json!(["n"])));
        let mut bare = tool(json!({}), json!([]));
        bare.parameters = None;
        assert!(!needs_a_number(&bare));
        // Numbers as grounding reads them: digits, words; not digits inside a word.
        assert!(writes_a_number("Weather in Paris for 2 days?"));
        assert!(writes_a_number("for two days"));
        assert!(writes_a_number("a rate of 5%"));
        assert!(!writes_a_number("Look up the sample DNA123 in Paris."));
        assert!(!writes_a_number("What is the capital of France?"));
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
