//! Dialects: the native tool-call formats of open model families, parsed by one marker-driven
//! engine ([`engine`]). `hermes` (the default) is the parser in the parent module; every other
//! dialect is a set of markers plus a function that reads a closed section (see docs/src/parser.md,
//! "Dialects").

pub(crate) mod engine;
mod gpt_oss;
mod json_calls;
mod markup;
mod pythonic;
mod scan;
mod specials;
mod values;

#[cfg(test)]
pub(crate) use pythonic::python_literal;
pub use values::schema_type as parameter_type;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A tool-call format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Dialect {
    /// `<tool_call>{…}</tool_call>` (and `<tool_use>`, JSON fences): the reference protocol.
    #[default]
    #[serde(rename = "hermes")]
    Hermes,
    /// `{"name": …, "parameters": …}`, as the whole reply or after `<|python_tag|>`.
    #[serde(rename = "llama3-json")]
    Llama3Json,
    /// `[f(a=1), g(b="x")]` with Python literals, optionally in `<|python_start|>…<|python_end|>`.
    #[serde(rename = "pythonic")]
    Pythonic,
    /// `[TOOL_CALLS][{…}]` and `[TOOL_CALLS]name[ARGS]{…}` (with an optional `[CALL_ID]`).
    #[serde(rename = "mistral")]
    Mistral,
    /// `<tool_call><function=NAME><parameter=KEY>VALUE</parameter></function></tool_call>`.
    #[serde(rename = "qwen3-coder")]
    Qwen3Coder,
    /// DeepSeek V3/R1 and V3.1: `<｜tool▁call▁begin｜>…<｜tool▁sep｜>…<｜tool▁call▁end｜>`.
    #[serde(rename = "deepseek-v3")]
    DeepseekV3,
    /// GLM-4.5: `<tool_call>NAME<arg_key>…</arg_key><arg_value>…</arg_value></tool_call>`.
    #[serde(rename = "glm45")]
    Glm45,
    /// Kimi K2: `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>`.
    #[serde(rename = "kimi-k2")]
    KimiK2,
    /// gpt-oss harmony channels: analysis, final, and `commentary to=functions.NAME` calls.
    #[serde(rename = "gpt-oss")]
    GptOss,
    /// Granite: `<|tool_call|>[{…}]`.
    #[serde(rename = "granite")]
    Granite,
    /// Phi-4-mini: `functools[{…}]`.
    #[serde(rename = "phi4-mini")]
    Phi4Mini,
}

impl Dialect {
    /// Every dialect, in the order the documentation lists them.
    pub const ALL: [Dialect; 11] = [
        Dialect::Hermes,
        Dialect::Llama3Json,
        Dialect::Pythonic,
        Dialect::Mistral,
        Dialect::Qwen3Coder,
        Dialect::DeepseekV3,
        Dialect::Glm45,
        Dialect::KimiK2,
        Dialect::GptOss,
        Dialect::Granite,
        Dialect::Phi4Mini,
    ];

    /// The dialect's name, as configured and printed.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Hermes => "hermes",
            Dialect::Llama3Json => "llama3-json",
            Dialect::Pythonic => "pythonic",
            Dialect::Mistral => "mistral",
            Dialect::Qwen3Coder => "qwen3-coder",
            Dialect::DeepseekV3 => "deepseek-v3",
            Dialect::Glm45 => "glm45",
            Dialect::KimiK2 => "kimi-k2",
            Dialect::GptOss => "gpt-oss",
            Dialect::Granite => "granite",
            Dialect::Phi4Mini => "phi4-mini",
        }
    }

    /// Whether the dialect writes values as bare text, typed by the declared schemas
    /// ([`ParserConfig::schemas`](crate::parser::ParserConfig::schemas)).
    pub fn types_values(self) -> bool {
        matches!(self, Dialect::Qwen3Coder | Dialect::Glm45)
    }

    /// The dialect a model family writes natively, from the upstream model's name (`auto`);
    /// `hermes` when the name belongs to no known family. A pure function of the name: case,
    /// an organisation prefix (`meta-llama/…`) and `_`/`.`/`-` spelling do not matter.
    pub fn for_model(model: &str) -> Dialect {
        let name = model.to_ascii_lowercase();
        // The part after the last `/`, with separators unified: `Llama-3.1` and `llama3_1` alike.
        let base = name.rsplit('/').next().unwrap_or(&name);
        let flat: String = base
            .chars()
            .filter(|c| !matches!(c, '-' | '_' | '.' | ' ' | ':'))
            .collect();
        let has = |needle: &str| flat.contains(needle);
        if has("hermes") {
            // Hermes fine-tunes of other families write the reference protocol.
            Dialect::Hermes
        } else if has("gptoss") {
            Dialect::GptOss
        } else if has("kimik2") {
            Dialect::KimiK2
        } else if has("glm45") || has("glm46") || has("glm47") {
            Dialect::Glm45
        } else if has("qwen3coder") {
            Dialect::Qwen3Coder
        } else if has("distill") {
            // DeepSeek-R1-Distill-Qwen/Llama keep the base model's template, without tool calls.
            Dialect::Hermes
        } else if has("deepseekv3") || has("deepseekr1") || has("deepseekchat") {
            Dialect::DeepseekV3
        } else if has("phi4mini") {
            Dialect::Phi4Mini
        } else if has("granite") {
            Dialect::Granite
        } else if has("llama4") {
            Dialect::Pythonic
        } else if has("llama3") {
            Dialect::Llama3Json
        } else if [
            "mistral",
            "mixtral",
            "magistral",
            "devstral",
            "ministral",
            "codestral",
        ]
        .iter()
        .any(|family| has(family))
        {
            Dialect::Mistral
        } else {
            Dialect::Hermes
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no dialect.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown dialect \"{0}\"; known dialects: {known}", known = known_names())]
pub struct UnknownDialect(pub String);

fn known_names() -> String {
    Dialect::ALL.map(Dialect::name).join(", ")
}

impl FromStr for Dialect {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDialect(s.to_owned()))
    }
}

/// A configured dialect: a fixed one, or `auto` (from the upstream model's name).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DialectSetting {
    #[default]
    Auto,
    Fixed(Dialect),
}

impl DialectSetting {
    /// The dialect to parse a reply of `model` with.
    pub fn resolve(self, model: &str) -> Dialect {
        match self {
            DialectSetting::Auto => Dialect::for_model(model),
            DialectSetting::Fixed(d) => d,
        }
    }
}

impl FromStr for DialectSetting {
    type Err = UnknownDialect;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "auto" {
            Ok(DialectSetting::Auto)
        } else {
            s.parse().map(DialectSetting::Fixed)
        }
    }
}

impl fmt::Display for DialectSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DialectSetting::Auto => f.write_str("auto"),
            DialectSetting::Fixed(d) => d.fmt(f),
        }
    }
}

impl Serialize for DialectSetting {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for DialectSetting {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse()
            .map_err(|e| serde::de::Error::custom(format!("{e}, or auto")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_from_str_and_serde() {
        for d in Dialect::ALL {
            assert_eq!(d.name().parse::<Dialect>(), Ok(d));
            let json = serde_json::to_string(&d).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", d.name()));
            assert_eq!(serde_json::from_str::<Dialect>(&json).ok(), Some(d));
            let setting: DialectSetting = d.name().parse().unwrap_or_default();
            assert_eq!(setting, DialectSetting::Fixed(d));
        }
        assert_eq!("auto".parse::<DialectSetting>(), Ok(DialectSetting::Auto));
        let err = "llama".parse::<Dialect>().err().map(|e| e.to_string());
        assert!(
            err.is_some_and(|e| e.contains("unknown dialect \"llama\"") && e.contains("kimi-k2"))
        );
    }

    #[test]
    fn auto_picks_the_family_from_the_model_name() {
        let cases = [
            ("openai/gpt-oss-120b", Dialect::GptOss),
            ("moonshotai/Kimi-K2-Instruct", Dialect::KimiK2),
            ("zai-org/GLM-4.5-Air", Dialect::Glm45),
            ("Qwen/Qwen3-Coder-30B-A3B-Instruct", Dialect::Qwen3Coder),
            ("Qwen/Qwen3-8B", Dialect::Hermes),
            ("deepseek-ai/DeepSeek-V3.1", Dialect::DeepseekV3),
            ("deepseek-ai/DeepSeek-R1-0528", Dialect::DeepseekV3),
            ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", Dialect::Hermes),
            ("microsoft/Phi-4-mini-instruct", Dialect::Phi4Mini),
            ("ibm-granite/granite-3.1-8b-instruct", Dialect::Granite),
            (
                "meta-llama/Llama-4-Scout-17B-16E-Instruct",
                Dialect::Pythonic,
            ),
            ("meta-llama/Llama-3.1-8B-Instruct", Dialect::Llama3Json),
            ("llama3.2:3b", Dialect::Llama3Json),
            (
                "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
                Dialect::Mistral,
            ),
            ("mistralai/Devstral-Small-2505", Dialect::Mistral),
            ("NousResearch/Hermes-3-Llama-3.1-8B", Dialect::Hermes),
            ("gpt-4o", Dialect::Hermes),
            ("", Dialect::Hermes),
        ];
        for (model, want) in cases {
            assert_eq!(Dialect::for_model(model), want, "{model}");
            assert_eq!(DialectSetting::Auto.resolve(model), want, "{model}");
        }
        assert_eq!(
            DialectSetting::Fixed(Dialect::Mistral).resolve("gpt-oss-20b"),
            Dialect::Mistral
        );
    }
}
