//! Errors of the embedded provider.

use toolbridge_providers::ProviderError;

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("cannot read the model {path}: {reason}")]
    Io { path: String, reason: String },
    #[error("not a usable GGUF model: {0}")]
    Format(String),
    #[error("unsupported model: {0}")]
    Unsupported(String),
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("the conversation needs {needed} tokens but the model's context holds {context}")]
    ContextFull { needed: usize, context: usize },
    #[error("grammar: {0}")]
    Grammar(String),
    #[error("generation failed: {0}")]
    Generation(String),
    #[error("model download: {0}")]
    Pull(String),
}

impl From<candle_core::Error> for EmbeddedError {
    fn from(e: candle_core::Error) -> Self {
        EmbeddedError::Generation(e.to_string())
    }
}

impl From<EmbeddedError> for ProviderError {
    fn from(e: EmbeddedError) -> Self {
        match e {
            EmbeddedError::Io { .. }
            | EmbeddedError::Format(_)
            | EmbeddedError::Unsupported(_)
            | EmbeddedError::Pull(_) => ProviderError::Config(e.to_string()),
            other => ProviderError::BadResponse(other.to_string()),
        }
    }
}
