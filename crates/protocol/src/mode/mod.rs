//! Tool modes as pure request transforms (ARCHITECTURE.md, `protocol`: tool modes).
//!
//! Every attempt encodes the client's *original* request for the arm it goes to, so nothing one mode
//! adds (a preamble, an in-band tool block) can leak into the request of another arm.

mod prompt;
mod verbatim;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::parser::Dialect;
use crate::texts::{CallFormat, CallTag};
use crate::types::{ChatRequest, ToolChoice, ToolSpec};

pub use prompt::{encode_prompt, prompt_addition, reencode_history};
pub use verbatim::{encode_verbatim, verbatim_gate};

/// How tools reach a model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolMode {
    /// Tools in the provider's own field; the provider's tool calls come back.
    Native,
    /// Tools as text in the system prompt; calls parsed out of the reply.
    Prompt,
    /// Tools in the API field and in-band as JSON (seed 003); text parsed, native calls accepted.
    Verbatim,
    /// Native where the provider supports it, else prompt.
    #[default]
    Auto,
}

impl ToolMode {
    /// The concrete mode for a provider; `Auto` becomes native or prompt.
    pub fn resolve(self, native_supported: bool) -> ToolMode {
        match self {
            ToolMode::Auto if native_supported => ToolMode::Native,
            ToolMode::Auto => ToolMode::Prompt,
            other => other,
        }
    }

    /// Whether the reply's text must be run through the parser.
    pub fn parses_text(self) -> bool {
        matches!(self, ToolMode::Prompt | ToolMode::Verbatim)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolMode::Native => "native",
            ToolMode::Prompt => "prompt",
            ToolMode::Verbatim => "verbatim",
            ToolMode::Auto => "auto",
        }
    }
}

impl fmt::Display for ToolMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown tool mode name.
#[derive(Debug, thiserror::Error)]
#[error("unknown tool mode `{0}` (expected native, prompt, verbatim or auto)")]
pub struct UnknownMode(pub String);

impl FromStr for ToolMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "native" => Ok(ToolMode::Native),
            "prompt" => Ok(ToolMode::Prompt),
            "verbatim" => Ok(ToolMode::Verbatim),
            "auto" => Ok(ToolMode::Auto),
            other => Err(UnknownMode(other.to_owned())),
        }
    }
}

/// Options of the text-based modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EncodeOptions {
    /// The tag the model is taught to write (hermes).
    pub tag: CallTag,
    /// The call format the model is taught, its history is written in and its reply is read in.
    pub dialect: Dialect,
}

impl EncodeOptions {
    /// The dialect and tag as one value.
    pub fn format(&self) -> CallFormat {
        CallFormat::new(self.dialect, self.tag)
    }
}

/// Encodes a request for an upstream in a concrete mode (`Auto` is treated as native: resolve it
/// first with [`ToolMode::resolve`]).
pub fn encode(request: &ChatRequest, mode: ToolMode, options: &EncodeOptions) -> ChatRequest {
    match mode {
        ToolMode::Native | ToolMode::Auto => request.clone(),
        ToolMode::Prompt => encode_prompt(request, options),
        ToolMode::Verbatim => encode_verbatim(request, options),
    }
}

/// The tools a text mode offers for a tool choice: none for `none`, the named one for a named
/// choice, all otherwise (in the client's order, which keeps the rendering byte-stable).
pub fn offered_tools<'a>(tools: &'a [ToolSpec], choice: Option<&ToolChoice>) -> Vec<&'a ToolSpec> {
    match choice {
        Some(ToolChoice::None) => Vec::new(),
        Some(ToolChoice::Named(name)) => tools.iter().filter(|t| &t.name == name).collect(),
        _ => tools.iter().collect(),
    }
}

/// Adds a stop sequence to a list unless it is already there; ours goes first, so a provider that
/// caps the number of stop sequences keeps it.
pub(crate) fn merge_stop(stop: &[String], ours: &str) -> Vec<String> {
    let mut out = Vec::with_capacity(stop.len() + 1);
    out.push(ours.to_owned());
    out.extend(stop.iter().filter(|s| s.as_str() != ours).cloned());
    out
}

#[cfg(test)]
mod tests;
