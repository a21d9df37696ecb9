//! One skill: a name, a description, and where its body comes from.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use futures::future::BoxFuture;
use toolbridge_protocol::texts;

use super::load::{parse_front_matter, read_body, split_front_matter};
use super::SkillError;

/// A body loader: any async function, run only when the skill is loaded.
pub type SkillLoader = dyn Fn() -> BoxFuture<'static, Result<String, String>> + Send + Sync;

/// A skill: a name and a description the model sees up front, and a body it loads on demand.
#[derive(Clone)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub source: SkillSource,
}

/// Where a skill's body comes from.
#[derive(Clone)]
pub enum SkillSource {
    Text(String),
    /// A SKILL.md file: the body (after the front matter) is read when the skill is loaded, not at
    /// start-up.
    File(PathBuf),
    /// Any async loader (a database query, an HTTP call…), run only when the skill is loaded.
    Loader(Arc<SkillLoader>),
}

impl fmt::Debug for SkillSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillSource::Text(t) => f
                .debug_struct("Text")
                .field("chars", &t.chars().count())
                .finish(),
            SkillSource::File(p) => f.debug_tuple("File").field(p).finish(),
            SkillSource::Loader(_) => f.write_str("Loader(..)"),
        }
    }
}

impl fmt::Debug for Skill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Skill")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("source", &self.source)
            .finish()
    }
}

impl Skill {
    /// A skill whose body is a fixed text.
    pub fn text(
        name: impl Into<String>,
        description: impl Into<String>,
        body: impl Into<String>,
    ) -> Self {
        Skill {
            name: name.into(),
            description: description.into(),
            source: SkillSource::Text(body.into()),
        }
    }

    /// A skill whose body is a SKILL.md file (front matter and all), read each time it is loaded.
    /// The name and description are the ones given here; see [`Skill::from_file`] to take them
    /// from the front matter.
    pub fn file(
        name: impl Into<String>,
        description: impl Into<String>,
        path: impl Into<PathBuf>,
    ) -> Self {
        Skill {
            name: name.into(),
            description: description.into(),
            source: SkillSource::File(path.into()),
        }
    }

    /// A skill whose body comes from an async function, run only when the skill is loaded.
    pub fn loader<F, Fut>(name: impl Into<String>, description: impl Into<String>, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, String>> + Send + 'static,
    {
        let loader: Arc<SkillLoader> = Arc::new(move || Box::pin(f()));
        Skill {
            name: name.into(),
            description: description.into(),
            source: SkillSource::Loader(loader),
        }
    }

    /// One SKILL.md file: name and description from its front matter, the body read on load.
    pub fn from_file(path: impl Into<PathBuf>) -> Result<Self, SkillError> {
        let path = path.into();
        let text = std::fs::read_to_string(&path).map_err(|source| SkillError::Io {
            path: path.clone(),
            source,
        })?;
        let (yaml, _body) =
            split_front_matter(&text).map_err(|message| SkillError::FrontMatter {
                path: path.clone(),
                message,
            })?;
        let (name, description) = parse_front_matter(&path, &yaml)?;
        Ok(Skill {
            name,
            description,
            source: SkillSource::File(path),
        })
    }

    /// The built-in document-generation skill (seed 000): name "document-generation", description
    /// the rest of `DOCGEN_INDEX_ENTRY` (so the listing entry reproduces it byte for byte), body
    /// `DOCGEN_BODY`.
    pub fn document_generation() -> Self {
        let (name, description) = texts::DOCGEN_INDEX_ENTRY
            .split_once(": ")
            .unwrap_or((texts::DOCGEN_INDEX_ENTRY, ""));
        Skill::text(name, description, texts::DOCGEN_BODY)
    }

    /// Loads the body. The error is a detail for the operator's log, not for the model.
    pub async fn body(&self) -> Result<String, String> {
        match &self.source {
            SkillSource::Text(text) => Ok(text.clone()),
            SkillSource::File(path) => read_body(path).await,
            SkillSource::Loader(load) => load().await,
        }
    }

    /// Where the skill came from, for error messages.
    pub(super) fn origin(&self) -> String {
        match &self.source {
            SkillSource::File(path) => path.display().to_string(),
            SkillSource::Text(_) | SkillSource::Loader(_) => {
                let mut d: String = self.description.chars().take(60).collect();
                if d.len() < self.description.len() {
                    d.push('…');
                }
                format!("the skill described as \"{d}\"")
            }
        }
    }
}
