//! Model names on the command line and in `toolbridge.toml`: `provider:model`, optionally
//! `provider:model@BASE_URL` for any OpenAI-compatible (or Anthropic-compatible) server.
//!
//! | provider | base URL | key variable |
//! |---|---|---|
//! | `openai` | `https://api.openai.com/v1` | `OPENAI_API_KEY` |
//! | `anthropic` | `https://api.anthropic.com` | `ANTHROPIC_API_KEY` |
//! | `openrouter` | `https://openrouter.ai/api/v1` | `OPENROUTER_API_KEY` |
//! | `groq` | `https://api.groq.com/openai/v1` | `GROQ_API_KEY` |
//! | `deepseek` | `https://api.deepseek.com/v1` | `DEEPSEEK_API_KEY` |
//! | `mistral` | `https://api.mistral.ai/v1` | `MISTRAL_API_KEY` |
//! | `together` | `https://api.together.xyz/v1` | `TOGETHER_API_KEY` |
//! | `gemini` | `https://generativelanguage.googleapis.com/v1beta/openai` | `GEMINI_API_KEY` |
//! | `ollama` | `http://127.0.0.1:11434/v1` | — |
//! | `vllm` | `http://127.0.0.1:8000/v1` | `VLLM_API_KEY` (optional) |
//! | `llamacpp` | `http://127.0.0.1:8080/v1` | — |
//! | `lmstudio` | `http://127.0.0.1:1234/v1` | — |
//! | `scripted` | the model part is a script file | — |
//!
//! With `@BASE_URL` the provider's key variable is **not** sent (a key for one service must not go
//! to another host); give `api_key_env` in `toolbridge.toml` to send a key to a custom server.

use crate::error::ProviderError;

/// The API family an upstream speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenAi,
    Anthropic,
    Scripted,
    Embedded,
}

/// A known provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    pub name: &'static str,
    pub api: Api,
    pub base_url: &'static str,
    pub key_env: Option<&'static str>,
    /// Whether a missing key is an error (hosted services) or fine (local servers).
    pub key_required: bool,
    pub native_tools: bool,
}

const fn hosted(name: &'static str, base_url: &'static str, key: &'static str) -> Preset {
    Preset {
        name,
        api: Api::OpenAi,
        base_url,
        key_env: Some(key),
        key_required: true,
        native_tools: true,
    }
}

const fn local(name: &'static str, base_url: &'static str) -> Preset {
    Preset {
        name,
        api: Api::OpenAi,
        base_url,
        key_env: None,
        key_required: false,
        native_tools: true,
    }
}

pub const PRESETS: &[Preset] = &[
    hosted("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
    Preset {
        name: "anthropic",
        api: Api::Anthropic,
        base_url: "https://api.anthropic.com",
        key_env: Some("ANTHROPIC_API_KEY"),
        key_required: true,
        native_tools: true,
    },
    hosted(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
    ),
    hosted("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    hosted(
        "deepseek",
        "https://api.deepseek.com/v1",
        "DEEPSEEK_API_KEY",
    ),
    hosted("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    hosted(
        "together",
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
    ),
    hosted(
        "gemini",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
    ),
    local("ollama", "http://127.0.0.1:11434/v1"),
    Preset {
        name: "vllm",
        api: Api::OpenAi,
        base_url: "http://127.0.0.1:8000/v1",
        key_env: Some("VLLM_API_KEY"),
        key_required: false,
        native_tools: true,
    },
    local("llamacpp", "http://127.0.0.1:8080/v1"),
    local("lmstudio", "http://127.0.0.1:1234/v1"),
    Preset {
        name: "scripted",
        api: Api::Scripted,
        base_url: "",
        key_env: None,
        key_required: false,
        native_tools: false,
    },
    Preset {
        name: "embedded",
        api: Api::Embedded,
        base_url: "",
        key_env: None,
        key_required: false,
        native_tools: false,
    },
];

/// A parsed model name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelSpec {
    pub preset: Preset,
    /// The upstream's model name (or the script / weights path).
    pub model: String,
    /// A base URL given with `@`.
    pub base_url: Option<String>,
}

impl ModelSpec {
    /// Parses `provider:model[@BASE_URL]`.
    pub fn parse(spec: &str) -> Result<ModelSpec, ProviderError> {
        let (provider, rest) = spec.split_once(':').ok_or_else(|| {
            ProviderError::Config(format!(
                "model `{spec}` must be written provider:model (for example openai:gpt-4o-mini, ollama:qwen2.5, scripted:replies.json); providers: {}",
                provider_names()
            ))
        })?;
        let preset = PRESETS
            .iter()
            .find(|p| p.name == provider)
            .copied()
            .ok_or_else(|| {
                ProviderError::Config(format!(
                    "unknown provider `{provider}` in `{spec}`; providers: {}",
                    provider_names()
                ))
            })?;
        let (model, base_url) = match preset.api {
            // Paths may contain `@`.
            Api::Scripted | Api::Embedded => (rest.to_owned(), None),
            _ => match rest.rsplit_once('@') {
                Some((m, url)) if url.starts_with("http://") || url.starts_with("https://") => {
                    (m.to_owned(), Some(url.to_owned()))
                }
                _ => (rest.to_owned(), None),
            },
        };
        if model.is_empty() {
            return Err(ProviderError::Config(format!(
                "model `{spec}` names no model after `{provider}:`"
            )));
        }
        Ok(ModelSpec {
            preset,
            model,
            base_url,
        })
    }
}

fn provider_names() -> String {
    PRESETS
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names() {
        let s = ModelSpec::parse("openai:gpt-4o-mini").unwrap();
        assert_eq!(
            (s.preset.name, s.model.as_str(), s.base_url),
            ("openai", "gpt-4o-mini", None)
        );
        let s = ModelSpec::parse("ollama:qwen2.5:7b").unwrap();
        assert_eq!(s.model, "qwen2.5:7b");
        let s = ModelSpec::parse("openai:qwen@http://127.0.0.1:8000/v1").unwrap();
        assert_eq!(s.model, "qwen");
        assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:8000/v1"));
        let s = ModelSpec::parse("scripted:/tmp/a@b.json").unwrap();
        assert_eq!(s.model, "/tmp/a@b.json");
        assert_eq!(
            ModelSpec::parse("anthropic:claude-sonnet-4-5")
                .unwrap()
                .preset
                .api,
            Api::Anthropic
        );
    }

    #[test]
    fn bad_names_are_explained() {
        let e = ModelSpec::parse("gpt-4o").unwrap_err().to_string();
        assert!(e.contains("must be written provider:model"), "{e}");
        let e = ModelSpec::parse("foo:bar").unwrap_err().to_string();
        assert!(
            e.contains("unknown provider `foo`") && e.contains("ollama"),
            "{e}"
        );
        assert!(ModelSpec::parse("openai:").is_err());
    }
}
