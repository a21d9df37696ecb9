//! Skills: progressive disclosure (seed 004, seed 000's `use_skill`, DESIGN.md §4).
//!
//! A skill is a name, a description and a body that is fetched only when asked for. The names and
//! descriptions go into the system prompt as a listing (cut at [`LISTING_LIMIT`] characters); the
//! bodies do not. One skill tool ([`SkillTool`], `use_skill` by default) loads a body on demand, so
//! sixty skills cost one entry in the tool array, and the tool array stays byte-identical across
//! callers (it is the front of the provider's cached prefix).
//!
//! Guarantees (seed 004):
//! - a skill loaded twice in a run returns a note the second time, not the body again;
//! - a body that failed to load is not marked loaded, so the model can retry;
//! - two skills with the same name, a skill with an empty name, or a tool already carrying the
//!   skill tool's name are refused when the run starts ([`SkillSet::validate`]).
//!
//! Skills load from folders in the Agent Skills convention ([`load_dirs`]): a `SKILL.md` file with
//! YAML front matter (`name`, `description`) followed by the body. The built-in
//! `document-generation` skill (seed 000) is [`Skill::document_generation`]; an administrator's
//! skill of the same name shadows it ([`SkillSet::with_builtin`]). A model without the skill tool
//! gets the bodies inline ([`SkillSet::inline_bodies`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use serde_json::Value;
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;

use crate::tool::{Tool, ToolContext, ToolError};

/// The most characters (not bytes) of the combined listing entries in the system prompt (seed 004).
pub const LISTING_LIMIT: usize = 1536;

/// The skill tool's default name (seed 000).
pub const DEFAULT_SKILL_TOOL: &str = "use_skill";

/// The file a skill folder holds (the Agent Skills convention).
const SKILL_FILE: &str = "SKILL.md";

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
    fn origin(&self) -> String {
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

/// Why a set of skills cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    #[error("skill folder {} does not exist", path.display())]
    MissingDir { path: PathBuf },
    #[error("skill folder {} is not a folder", path.display())]
    NotADir { path: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    FrontMatter { path: PathBuf, message: String },
    #[error("two skills are named \"{name}\" ({first} and {second}); skill names must be unique")]
    Duplicate {
        name: String,
        first: String,
        second: String,
    },
    #[error("a skill has an empty name ({origin}); every skill needs a name")]
    EmptyName { origin: String },
    #[error("a tool is already called \"{0}\", the name of the skill tool; rename that tool or give the skill tool another name")]
    ToolNameTaken(String),
}

/// Skills from folders (the Agent Skills convention): each folder is either a skill folder itself
/// (holding `SKILL.md`) or a folder of skill folders (each subfolder holding `SKILL.md`; hidden
/// subfolders and subfolders without one are skipped). `SKILL.md` starts with YAML front matter
/// between `---` lines with `name` and `description` (both required, non-empty strings; other keys
/// such as `license`, `allowed-tools`, `metadata` are ignored). Skills come sorted by name within
/// each folder, folders in the order given. The bodies are read when loaded, not here.
pub fn load_dirs(dirs: &[PathBuf]) -> Result<Vec<Skill>, SkillError> {
    let mut out = Vec::new();
    for dir in dirs {
        out.extend(load_dir(dir)?);
    }
    Ok(out)
}

fn load_dir(dir: &Path) -> Result<Vec<Skill>, SkillError> {
    let meta = std::fs::metadata(dir).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            SkillError::MissingDir {
                path: dir.to_path_buf(),
            }
        } else {
            SkillError::Io {
                path: dir.to_path_buf(),
                source,
            }
        }
    })?;
    if !meta.is_dir() {
        return Err(SkillError::NotADir {
            path: dir.to_path_buf(),
        });
    }
    let own = dir.join(SKILL_FILE);
    if own.is_file() {
        return Ok(vec![Skill::from_file(own)?]);
    }
    let io = |source| SkillError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') || !path.is_dir() {
            continue;
        }
        let file = path.join(SKILL_FILE);
        if file.is_file() {
            files.push(file);
        } else {
            tracing::debug!(folder = %path.display(), "no SKILL.md; not a skill folder");
        }
    }
    if files.is_empty() {
        tracing::warn!(folder = %dir.display(), "skill folder holds no SKILL.md");
    }
    let mut skills = files
        .into_iter()
        .map(|file| Skill::from_file(file.clone()).map(|skill| (skill, file)))
        .collect::<Result<Vec<_>, _>>()?;
    skills.sort_by(|(a, fa), (b, fb)| a.name.cmp(&b.name).then_with(|| fa.cmp(fb)));
    Ok(skills.into_iter().map(|(skill, _)| skill).collect())
}

/// Splits a SKILL.md text into its front matter (YAML, without the `---` lines) and its body
/// (line endings normalised to `\n`, leading blank lines and trailing whitespace removed).
fn split_front_matter(text: &str) -> Result<(String, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text
        .split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line));
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(
            "no YAML front matter: SKILL.md must start with a `---` line, then `name:` \
                    and `description:`, then another `---` line"
                .to_owned(),
        );
    }
    let mut yaml = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push(line);
    }
    if !closed {
        return Err("the YAML front matter is not closed by a `---` line".to_owned());
    }
    let body: Vec<&str> = lines.skip_while(|line| line.trim().is_empty()).collect();
    Ok((yaml.join("\n"), body.join("\n").trim_end().to_owned()))
}

/// The `name` and `description` of a front matter.
fn parse_front_matter(path: &Path, yaml: &str) -> Result<(String, String), SkillError> {
    use serde_yaml_ng::Value as Yaml;
    let error = |message: String| SkillError::FrontMatter {
        path: path.to_path_buf(),
        message,
    };
    let value: Yaml = serde_yaml_ng::from_str(yaml)
        .map_err(|e| error(format!("the front matter is not valid YAML: {e}")))?;
    let map = match value {
        Yaml::Mapping(map) => map,
        Yaml::Null => serde_yaml_ng::Mapping::new(),
        _ => {
            return Err(error(
                "the front matter must be a YAML mapping with `name` and `description`".to_owned(),
            ))
        }
    };
    let field = |key: &str| match map.get(key) {
        None | Some(Yaml::Null) => Err(error(format!("the front matter has no `{key}`"))),
        Some(Yaml::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
        Some(Yaml::String(_)) => Err(error(format!("the front matter's `{key}` is empty"))),
        Some(_) => Err(error(format!(
            "the front matter's `{key}` must be a string"
        ))),
    };
    Ok((field("name")?, field("description")?))
}

/// The body of a SKILL.md file, read now.
async fn read_body(path: &Path) -> Result<String, String> {
    let text = read_text(path.to_path_buf())
        .await
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let (_yaml, body) =
        split_front_matter(&text).map_err(|m| format!("{}: {m}", path.display()))?;
    Ok(body)
}

/// Reads a file off the async threads when there is a Tokio runtime, in place otherwise.
async fn read_text(path: PathBuf) -> std::io::Result<String> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(move || std::fs::read_to_string(path))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e))),
        Err(_) => std::fs::read_to_string(path),
    }
}

/// A description on one line: line breaks (a YAML block scalar, say) become single spaces.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    std::borrow::Cow::Owned(parts.join(" "))
}

/// The skills of an agent, in a stable order.
#[derive(Clone, Default)]
pub struct SkillSet {
    skills: Vec<Skill>,
}

impl fmt::Debug for SkillSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.skills).finish()
    }
}

impl SkillSet {
    pub fn new(skills: Vec<Skill>) -> Self {
        SkillSet { skills }
    }

    /// The configured skills plus the built-in document-generation skill when `include_builtin`
    /// (first, so it is never cut from the listing); a configured skill with the same name shadows
    /// the built-in, which is then left out.
    pub fn with_builtin(configured: Vec<Skill>, include_builtin: bool) -> Self {
        let mut skills = Vec::with_capacity(configured.len() + 1);
        if include_builtin {
            let builtin = Skill::document_generation();
            if configured.iter().any(|s| s.name == builtin.name) {
                tracing::debug!(skill = %builtin.name, "a configured skill shadows the built-in one");
            } else {
                skills.push(builtin);
            }
        }
        skills.extend(configured);
        SkillSet { skills }
    }

    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    pub fn len(&self) -> usize {
        self.skills.len()
    }

    pub fn names(&self) -> Vec<&str> {
        self.skills.iter().map(|s| s.name.as_str()).collect()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter()
    }

    /// Refused when the run starts: two skills with the same name, a skill with an empty (or
    /// whitespace-only) name, or a tool in `tool_names` already called `skill_tool` (checked only
    /// when the set is non-empty and `skill_tool` is not empty).
    pub fn validate(&self, tool_names: &[&str], skill_tool: &str) -> Result<(), SkillError> {
        let mut seen: HashMap<&str, &Skill> = HashMap::with_capacity(self.skills.len());
        for skill in &self.skills {
            if skill.name.trim().is_empty() {
                return Err(SkillError::EmptyName {
                    origin: skill.origin(),
                });
            }
            if let Some(first) = seen.insert(skill.name.as_str(), skill) {
                return Err(SkillError::Duplicate {
                    name: skill.name.clone(),
                    first: first.origin(),
                    second: skill.origin(),
                });
            }
        }
        if !self.skills.is_empty() && !skill_tool.is_empty() && tool_names.contains(&skill_tool) {
            return Err(SkillError::ToolNameTaken(skill_tool.to_owned()));
        }
        Ok(())
    }

    /// The system-prompt listing: `skill_listing_header(skill_tool)`, a newline, then one
    /// `name: description` line per skill, in order. The entries (everything after the header
    /// line) are cut at [`LISTING_LIMIT`] characters, on a character boundary, without an
    /// ellipsis. Empty when the set is empty.
    pub fn listing(&self, skill_tool: &str) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut entries = String::new();
        for (i, skill) in self.skills.iter().enumerate() {
            if i > 0 {
                entries.push('\n');
            }
            entries.push_str(&skill.name);
            entries.push_str(": ");
            entries.push_str(&one_line(&skill.description));
        }
        if let Some((cut, _)) = entries.char_indices().nth(LISTING_LIMIT) {
            entries.truncate(cut);
        }
        let mut out = texts::skill_listing_header(skill_tool);
        out.push('\n');
        out.push_str(&entries);
        out
    }

    /// For a model without the skill tool: `SKILLS_INLINE_HEADER`, a blank line, then the bodies
    /// in order separated by blank lines. A body that fails to load (or is empty) is left out, with
    /// a warning in the log; empty when there is no body.
    pub async fn inline_bodies(&self) -> String {
        // One after the other, in order (a plain loop keeps the future `Send` for any caller).
        let mut bodies = Vec::with_capacity(self.skills.len());
        for skill in &self.skills {
            match skill.body().await {
                Ok(body) if body.trim().is_empty() => {
                    tracing::warn!(skill = %skill.name, "skill body is empty; left out");
                }
                Ok(body) => bodies.push(body),
                Err(error) => {
                    tracing::warn!(skill = %skill.name, %error, "skill body could not be loaded; left out");
                }
            }
        }
        if bodies.is_empty() {
            return String::new();
        }
        let mut out = String::from(texts::SKILLS_INLINE_HEADER);
        out.push_str("\n\n");
        out.push_str(&bodies.join("\n\n"));
        out
    }
}

/// The one skill tool (progressive disclosure). One instance per run: it remembers what this run
/// loaded.
pub struct SkillTool {
    spec: ToolSpec,
    state: Arc<SkillToolState>,
}

struct SkillToolState {
    skills: Arc<SkillSet>,
    /// The names loaded so far, in load order.
    loaded: Mutex<Vec<String>>,
    /// One gate per skill: concurrent loads of the same skill run one after the other, so the
    /// second sees the first's result (the note, or a retry after a failure).
    gates: HashMap<String, Arc<tokio::sync::Mutex<()>>>,
}

impl fmt::Debug for SkillTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkillTool")
            .field("name", &self.spec.name)
            .field("skills", &self.state.skills.names())
            .field("loaded", &self.loaded())
            .finish()
    }
}

impl SkillTool {
    /// `name` is the tool's name ([`DEFAULT_SKILL_TOOL`] by default); the description and schema
    /// are the seed's `use_skill` texts exactly.
    pub fn new(name: &str, skills: Arc<SkillSet>) -> Self {
        let schema = serde_json::from_str(texts::USE_SKILL_SCHEMA).unwrap_or_else(|e| {
            // The schema is a seed constant covered by tests; this cannot happen.
            tracing::error!(error = %e, "the use_skill schema does not parse");
            Value::Object(serde_json::Map::new())
        });
        let gates = skills
            .iter()
            .map(|s| (s.name.clone(), Arc::new(tokio::sync::Mutex::new(()))))
            .collect();
        SkillTool {
            spec: ToolSpec::new(name, texts::USE_SKILL_DESCRIPTION, schema),
            state: Arc::new(SkillToolState {
                skills,
                loaded: Mutex::new(Vec::new()),
                gates,
            }),
        }
    }

    /// The tool's spec, owned.
    pub fn spec_owned(&self) -> ToolSpec {
        self.spec.clone()
    }

    /// Names loaded so far in this run, in load order.
    pub fn loaded(&self) -> Vec<String> {
        self.state.loaded_names()
    }
}

impl SkillToolState {
    // A poisoned lock only means a panic elsewhere while it was held; the list of names is
    // still consistent (pushes are atomic with respect to it), so it is used as is.
    fn loaded_names(&self) -> Vec<String> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn is_loaded(&self, name: &str) -> bool {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|n| n == name)
    }

    fn mark_loaded(&self, name: &str) {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if !loaded.iter().any(|n| n == name) {
            loaded.push(name.to_owned());
        }
    }

    async fn load(&self, arguments: Value, context: ToolContext) -> Result<String, ToolError> {
        let requested = match arguments.get("name") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let skill = self
            .skills
            .get(&requested)
            .or_else(|| self.skills.get(requested.trim()));
        let Some(skill) = skill else {
            return Err(ToolError::Tool(texts::skill_not_found(
                &requested,
                &self.skills.names(),
            )));
        };
        let work = async {
            let _gate = match self.gates.get(&skill.name) {
                Some(gate) => Some(gate.lock().await),
                None => None,
            };
            if self.is_loaded(&skill.name) {
                return Ok(texts::skill_already_loaded(&skill.name));
            }
            match skill.body().await {
                Ok(body) => {
                    self.mark_loaded(&skill.name);
                    Ok(body)
                }
                Err(error) => {
                    tracing::warn!(skill = %skill.name, %error, "skill body could not be loaded");
                    Err(ToolError::Tool(texts::skill_load_failed(&skill.name)))
                }
            }
        };
        tokio::select! {
            biased;
            () = context.cancel.cancelled() => Err(ToolError::Tool(texts::ERROR_CANCELED.to_owned())),
            result = work => result,
        }
    }
}

impl Tool for SkillTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// `{"name": …}`: the body the first time in this run, a note after that. An unknown name is
    /// answered with the valid names; a body that fails to load is reported and not marked loaded.
    fn invoke(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> BoxFuture<'static, Result<String, ToolError>> {
        let state = Arc::clone(&self.state);
        Box::pin(async move { state.load(arguments, context).await })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
    }

    /// A scratch folder removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> Self {
            static N: AtomicUsize = AtomicUsize::new(0);
            let path = std::env::temp_dir().join(format!(
                "toolbridge-skills-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::SeqCst)
            ));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }

        fn write(&self, relative: &str, content: &str) -> PathBuf {
            let path = self.0.join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, content).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn tool(skills: Vec<Skill>) -> SkillTool {
        SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(SkillSet::new(skills)))
    }

    async fn call(tool: &SkillTool, name: &str) -> Result<String, ToolError> {
        tool.invoke(serde_json::json!({ "name": name }), ToolContext::default())
            .await
    }

    fn entries(listing: &str) -> &str {
        listing.split_once('\n').unwrap().1
    }

    // ---- the tool ------------------------------------------------------------------------------

    #[tokio::test]
    async fn second_load_returns_the_note_not_the_body() {
        let t = tool(vec![Skill::text(
            "commit-style",
            "How commits are written.",
            "BODY",
        )]);
        assert_eq!(call(&t, "commit-style").await.unwrap(), "BODY");
        assert_eq!(
            call(&t, "commit-style").await.unwrap(),
            texts::skill_already_loaded("commit-style")
        );
        assert_eq!(t.loaded(), vec!["commit-style".to_owned()]);
    }

    #[tokio::test]
    async fn a_new_tool_instance_is_a_new_run() {
        let skills = Arc::new(SkillSet::new(vec![Skill::text("a", "A.", "BODY")]));
        let first = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::clone(&skills));
        assert_eq!(call(&first, "a").await.unwrap(), "BODY");
        let second = SkillTool::new(DEFAULT_SKILL_TOOL, skills);
        assert_eq!(call(&second, "a").await.unwrap(), "BODY");
        assert!(call(&first, "a").await.unwrap().contains("already loaded"));
    }

    #[tokio::test]
    async fn a_failed_body_is_not_marked_loaded_and_a_retry_succeeds() {
        let failed_once = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let (flag, count) = (Arc::clone(&failed_once), Arc::clone(&calls));
        let skill = Skill::loader("flaky", "Fails once.", move || {
            let (flag, count) = (Arc::clone(&flag), Arc::clone(&count));
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                if flag.swap(true, Ordering::SeqCst) {
                    Ok("RECOVERED".to_owned())
                } else {
                    Err("database unavailable".to_owned())
                }
            }
        });
        let t = tool(vec![skill]);
        let err = call(&t, "flaky").await.unwrap_err();
        assert_eq!(err.to_string(), texts::skill_load_failed("flaky"));
        assert!(
            !err.to_string().contains("database"),
            "the detail stays in the log"
        );
        assert!(t.loaded().is_empty());
        assert_eq!(call(&t, "flaky").await.unwrap(), "RECOVERED");
        assert_eq!(t.loaded(), vec!["flaky".to_owned()]);
        assert_eq!(
            call(&t, "flaky").await.unwrap(),
            texts::skill_already_loaded("flaky")
        );
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "the loader runs only on demand"
        );
    }

    #[tokio::test]
    async fn loaders_run_only_when_loaded() {
        let calls = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&calls);
        let skill = Skill::loader("lazy", "Lazy.", move || {
            let count = Arc::clone(&count);
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                Ok("LAZY".to_owned())
            }
        });
        let set = SkillSet::new(vec![skill]);
        let _ = set.listing(DEFAULT_SKILL_TOOL);
        set.validate(&[], DEFAULT_SKILL_TOOL).unwrap();
        let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set));
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert_eq!(call(&t, "lazy").await.unwrap(), "LAZY");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn unknown_name_lists_the_valid_names() {
        let t = tool(vec![
            Skill::text("a", "A.", "A"),
            Skill::text("b", "B.", "B"),
        ]);
        assert_eq!(
            call(&t, "c").await.unwrap_err().to_string(),
            texts::skill_not_found("c", &["a", "b"])
        );
        let odd = t
            .invoke(serde_json::json!({ "name": 5 }), ToolContext::default())
            .await;
        assert_eq!(
            odd.unwrap_err().to_string(),
            texts::skill_not_found("5", &["a", "b"])
        );
        let missing = t
            .invoke(serde_json::json!({}), ToolContext::default())
            .await;
        assert_eq!(
            missing.unwrap_err().to_string(),
            texts::skill_not_found("", &["a", "b"])
        );
        assert!(t.loaded().is_empty());
        // Stray whitespace around a valid name is forgiven.
        assert_eq!(call(&t, " a ").await.unwrap(), "A");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_loads_of_one_skill_give_one_body_and_one_note() {
        let skill = Skill::loader("slow", "Slow.", || async {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            Ok("SLOW".to_owned())
        });
        let t = tool(vec![skill]);
        let (a, b) = tokio::join!(call(&t, "slow"), call(&t, "slow"));
        let mut results = vec![a.unwrap(), b.unwrap()];
        results.sort();
        assert_eq!(
            results,
            vec!["SLOW".to_owned(), texts::skill_already_loaded("slow")]
        );
    }

    #[tokio::test]
    async fn a_cancelled_load_is_not_marked_loaded() {
        let skill = Skill::loader("never", "Hangs.", || async {
            futures::future::pending::<()>().await;
            Ok("NEVER".to_owned())
        });
        let t = tool(vec![skill]);
        let context = ToolContext::default();
        context.cancel.cancel();
        let err = t
            .invoke(serde_json::json!({"name": "never"}), context)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), texts::ERROR_CANCELED);
        assert!(t.loaded().is_empty());
    }

    #[test]
    fn the_tool_spec_is_the_seeds_use_skill_exactly() {
        let t = tool(vec![]);
        let spec = t.spec();
        assert_eq!(spec.name, "use_skill");
        assert_eq!(spec.description, texts::USE_SKILL_DESCRIPTION);
        let schema = serde_json::to_string(spec.parameters.as_ref().unwrap()).unwrap();
        assert_eq!(schema, texts::USE_SKILL_SCHEMA);
        assert_eq!(t.spec_owned().name, "use_skill");
        let custom = SkillTool::new("Skill", Arc::new(SkillSet::default()));
        assert_eq!(custom.spec().name, "Skill");
        assert_eq!(custom.spec().description, texts::USE_SKILL_DESCRIPTION);
        assert!(!t.requires_approval());
    }

    // ---- validation ----------------------------------------------------------------------------

    #[test]
    fn duplicate_names_are_refused() {
        let set = SkillSet::new(vec![
            Skill::text("a", "First.", "1"),
            Skill::text("b", "B.", "2"),
            Skill::text("a", "Second.", "3"),
        ]);
        let err = set.validate(&[], DEFAULT_SKILL_TOOL).unwrap_err();
        assert!(matches!(&err, SkillError::Duplicate { name, .. } if name == "a"));
        let message = err.to_string();
        assert!(
            message.contains("\"a\"") && message.contains("First.") && message.contains("Second.")
        );
    }

    #[test]
    fn empty_and_whitespace_names_are_refused() {
        for name in ["", "  ", "\t\n"] {
            let set = SkillSet::new(vec![Skill::text(name, "Nameless.", "x")]);
            let err = set.validate(&[], DEFAULT_SKILL_TOOL).unwrap_err();
            assert!(matches!(err, SkillError::EmptyName { .. }), "{name:?}");
            assert!(err.to_string().contains("Nameless."));
        }
    }

    #[test]
    fn a_tool_carrying_the_skill_tools_name_is_refused() {
        let set = SkillSet::new(vec![Skill::text("a", "A.", "x")]);
        let err = set
            .validate(&["web_search", "use_skill"], DEFAULT_SKILL_TOOL)
            .unwrap_err();
        assert!(matches!(&err, SkillError::ToolNameTaken(n) if n == "use_skill"));
        assert!(err.to_string().contains("use_skill"));
        // A custom skill tool name is checked instead of the default.
        assert!(set.validate(&["use_skill"], "Skill").is_ok());
        assert!(matches!(
            set.validate(&["Skill"], "Skill"),
            Err(SkillError::ToolNameTaken(_))
        ));
        // No skills, no skill tool: nothing to collide with.
        assert!(SkillSet::default()
            .validate(&["use_skill"], DEFAULT_SKILL_TOOL)
            .is_ok());
        // No skill tool (bodies inline): any tool name is fine.
        assert!(set.validate(&["use_skill"], "").is_ok());
        assert!(set.validate(&["web_search"], DEFAULT_SKILL_TOOL).is_ok());
    }

    // ---- listing -------------------------------------------------------------------------------

    #[test]
    fn the_listing_is_the_header_then_one_line_per_skill() {
        let set = SkillSet::new(vec![
            Skill::text("commit-style", "How commits are written here.", "x"),
            Skill::text("pdf", "Fill PDF forms.", "y"),
        ]);
        assert_eq!(
            set.listing("use_skill"),
            format!(
                "{}\ncommit-style: How commits are written here.\npdf: Fill PDF forms.",
                texts::skill_listing_header("use_skill")
            )
        );
        assert!(set
            .listing("Skill")
            .starts_with(&texts::skill_listing_header("Skill")));
        assert_eq!(SkillSet::default().listing("use_skill"), "");
    }

    #[test]
    fn descriptions_with_line_breaks_are_listed_on_one_line() {
        let set = SkillSet::new(vec![Skill::text(
            "a",
            "First line,\r\n  second line.\n",
            "x",
        )]);
        assert_eq!(
            entries(&set.listing("use_skill")),
            "a: First line, second line."
        );
    }

    #[test]
    fn the_listing_entries_are_cut_at_1536_characters() {
        // Multi-byte names and descriptions: 2-, 3- and 4-byte characters.
        let skills: Vec<Skill> = (0..40)
            .map(|i| {
                Skill::text(
                    format!("skill-é{i}"),
                    format!("説明 🦀 {}", "ß".repeat(30)),
                    "x",
                )
            })
            .collect();
        let set = SkillSet::new(skills);
        let listing = set.listing("use_skill");
        let header = texts::skill_listing_header("use_skill");
        assert!(listing.starts_with(&format!("{header}\n")));
        let cut = entries(&listing);
        assert_eq!(cut.chars().count(), LISTING_LIMIT);
        let full: String = set
            .iter()
            .map(|s| format!("{}: {}", s.name, s.description))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(full.chars().count() > LISTING_LIMIT);
        assert!(full.starts_with(cut), "a plain cut, no ellipsis");
        // Exactly at the limit: nothing is cut.
        let small = SkillSet::new(vec![Skill::text("é", "🦀".repeat(LISTING_LIMIT - 3), "x")]);
        assert_eq!(
            entries(&small.listing("use_skill")).chars().count(),
            LISTING_LIMIT
        );
        assert!(entries(&small.listing("use_skill")).ends_with('🦀'));
        let over = SkillSet::new(vec![Skill::text("é", "🦀".repeat(LISTING_LIMIT), "x")]);
        assert_eq!(
            entries(&over.listing("use_skill")).chars().count(),
            LISTING_LIMIT
        );
    }

    // ---- the built-in skill --------------------------------------------------------------------

    #[tokio::test]
    async fn the_builtin_entry_is_the_seeds_index_entry_byte_for_byte() {
        let set = SkillSet::with_builtin(vec![], true);
        assert_eq!(set.names(), vec!["document-generation"]);
        assert_eq!(
            entries(&set.listing("use_skill")),
            texts::DOCGEN_INDEX_ENTRY
        );
        let skill = Skill::document_generation();
        assert_eq!(skill.name, "document-generation");
        assert_eq!(
            format!("{}: {}", skill.name, skill.description),
            texts::DOCGEN_INDEX_ENTRY
        );
        assert_eq!(skill.body().await.unwrap(), texts::DOCGEN_BODY);
        let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set));
        assert_eq!(
            call(&t, "document-generation").await.unwrap(),
            texts::DOCGEN_BODY
        );
    }

    #[test]
    fn the_builtin_comes_first_and_only_when_asked_for() {
        let configured = vec![Skill::text("a", "A.", "x")];
        let with = SkillSet::with_builtin(configured.clone(), true);
        assert_eq!(with.names(), vec!["document-generation", "a"]);
        assert_eq!(
            entries(&with.listing("use_skill")).lines().next().unwrap(),
            texts::DOCGEN_INDEX_ENTRY
        );
        let without = SkillSet::with_builtin(configured, false);
        assert_eq!(without.names(), vec!["a"]);
        assert!(SkillSet::with_builtin(vec![], false).is_empty());
    }

    #[tokio::test]
    async fn a_configured_skill_shadows_the_builtin() {
        let set = SkillSet::with_builtin(
            vec![
                Skill::text("a", "A.", "x"),
                Skill::text("document-generation", "Our own document rules.", "OURS"),
            ],
            true,
        );
        assert_eq!(set.len(), 2);
        assert_eq!(set.names(), vec!["a", "document-generation"]);
        set.validate(&[], DEFAULT_SKILL_TOOL).unwrap();
        let listing = set.listing("use_skill");
        assert!(listing.ends_with("\ndocument-generation: Our own document rules."));
        assert!(!listing.contains(texts::DOCGEN_INDEX_ENTRY));
        let t = SkillTool::new(DEFAULT_SKILL_TOOL, Arc::new(set.clone()));
        assert_eq!(call(&t, "document-generation").await.unwrap(), "OURS");
        assert!(!set.inline_bodies().await.contains(texts::DOCGEN_BODY));
    }

    // ---- inline bodies -------------------------------------------------------------------------

    #[tokio::test]
    async fn inline_bodies_are_the_header_then_the_bodies() {
        let set = SkillSet::with_builtin(
            vec![
                Skill::text("a", "A.", "BODY A"),
                Skill::loader("broken", "Broken.", || async { Err("offline".to_owned()) }),
                Skill::text("b", "B.", "BODY B"),
            ],
            true,
        );
        let inline = set.inline_bodies().await;
        assert!(inline.contains(texts::DOCGEN_BODY));
        assert_eq!(
            inline,
            format!(
                "{}\n\n{}\n\nBODY A\n\nBODY B",
                texts::SKILLS_INLINE_HEADER,
                texts::DOCGEN_BODY
            )
        );
        assert_eq!(SkillSet::default().inline_bodies().await, "");
    }

    #[tokio::test]
    async fn the_futures_can_be_spawned() {
        let set = Arc::new(SkillSet::with_builtin(vec![], true));
        let shared = Arc::clone(&set);
        let inline = tokio::spawn(async move { shared.inline_bodies().await });
        assert!(inline.await.unwrap().contains(texts::DOCGEN_BODY));
        let shared = Arc::clone(&set);
        let body = tokio::spawn(async move { shared.iter().next().unwrap().body().await });
        assert_eq!(body.await.unwrap().unwrap(), texts::DOCGEN_BODY);
        let t = SkillTool::new(DEFAULT_SKILL_TOOL, set);
        let call = t.invoke(
            serde_json::json!({"name": "document-generation"}),
            ToolContext::default(),
        );
        assert_eq!(
            tokio::spawn(call).await.unwrap().unwrap(),
            texts::DOCGEN_BODY
        );
    }

    // ---- folders -------------------------------------------------------------------------------

    #[tokio::test]
    async fn a_folder_of_skill_folders_loads_sorted_by_name() {
        let dir = fixtures().join("library");
        let skills = load_dirs(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        // Folders are commit-style/, pdf-forms/, release/ (named "changelog"); assets/ has no
        // SKILL.md and .hidden/ is hidden.
        assert_eq!(names, vec!["changelog", "commit-style", "pdf-forms"]);
        let pdf = &skills[2];
        assert_eq!(
            pdf.description,
            "Fill in PDF forms. Use when the user uploads a PDF with form fields."
        );
        assert!(
            matches!(&pdf.source, SkillSource::File(p) if p == &dir.join("pdf-forms").join("SKILL.md"))
        );
        assert_eq!(
            pdf.body().await.unwrap(),
            "# PDF forms\n\nRead the fields first, then fill them."
        );
        assert_eq!(
            skills[0].description,
            "How release notes are written. Use before writing a changelog entry."
        );
    }

    #[test]
    fn a_single_skill_folder_and_folder_order() {
        let skills = load_dirs(&[fixtures().join("single"), fixtures().join("library")]).unwrap();
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["single-skill", "changelog", "commit-style", "pdf-forms"]
        );
        assert_eq!(skills[0].description, "A skill folder on its own.");
        SkillSet::with_builtin(skills, true)
            .validate(&["web_search"], DEFAULT_SKILL_TOOL)
            .unwrap();
        assert!(load_dirs(&[]).unwrap().is_empty());
    }

    #[test]
    fn a_missing_description_is_an_error_naming_the_file() {
        let dir = fixtures().join("broken-missing-description");
        let err = load_dirs(std::slice::from_ref(&dir)).unwrap_err();
        assert!(
            matches!(&err, SkillError::FrontMatter { path, .. } if path == &dir.join("SKILL.md"))
        );
        let message = err.to_string();
        assert!(
            message.contains(&dir.join("SKILL.md").display().to_string()),
            "{message}"
        );
        assert!(message.contains("description"), "{message}");
    }

    #[test]
    fn a_skill_md_without_front_matter_is_an_error_naming_the_file() {
        let dir = fixtures().join("broken-no-front-matter");
        let err = load_dirs(std::slice::from_ref(&dir)).unwrap_err();
        assert!(
            matches!(&err, SkillError::FrontMatter { path, .. } if path == &dir.join("SKILL.md"))
        );
        assert!(err.to_string().contains("front matter"), "{err}");
    }

    #[test]
    fn a_missing_folder_is_an_error() {
        let dir = fixtures().join("does-not-exist");
        let err = load_dirs(&[fixtures().join("single"), dir.clone()]).unwrap_err();
        assert!(matches!(&err, SkillError::MissingDir { path } if path == &dir));
        assert!(err.to_string().contains("does-not-exist"));
        let file = fixtures().join("single").join("SKILL.md");
        assert!(matches!(
            load_dirs(&[file]),
            Err(SkillError::NotADir { .. })
        ));
    }

    #[test]
    fn bad_front_matter_values_are_refused() {
        let cases = [
            (
                "unclosed",
                "---\nname: x\ndescription: y\n# body\n",
                "not closed",
            ),
            (
                "empty-name",
                "---\nname: \"  \"\ndescription: y\n---\nbody\n",
                "`name` is empty",
            ),
            (
                "number",
                "---\nname: 5\ndescription: y\n---\nbody\n",
                "must be a string",
            ),
            ("no-name", "---\ndescription: y\n---\nbody\n", "no `name`"),
            ("not-a-map", "---\n- a\n- b\n---\nbody\n", "mapping"),
            (
                "bad-yaml",
                "---\nname: [x\ndescription: y\n---\n",
                "not valid YAML",
            ),
            ("empty", "---\n---\nbody\n", "no `name`"),
        ];
        for (tag, content, expected) in cases {
            let tmp = TempDir::new(tag);
            let file = tmp.write("SKILL.md", content);
            let err = load_dirs(std::slice::from_ref(&tmp.0)).unwrap_err();
            let message = err.to_string();
            assert!(
                message.contains(&file.display().to_string()),
                "{tag}: {message}"
            );
            assert!(message.contains(expected), "{tag}: {message}");
        }
    }

    #[tokio::test]
    async fn crlf_line_endings_and_a_bom_are_understood() {
        let tmp = TempDir::new("crlf");
        tmp.write(
            "crlf/SKILL.md",
            "\u{feff}---\r\nname: crlf-skill\r\ndescription: Written on Windows.\r\nlicense: MIT\r\n---\r\n\r\n# Title\r\n\r\nLine one.\r\nLine two.\r\n",
        );
        let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].name, "crlf-skill");
        assert_eq!(skills[0].description, "Written on Windows.");
        assert_eq!(
            skills[0].body().await.unwrap(),
            "# Title\n\nLine one.\nLine two."
        );
    }

    #[tokio::test]
    async fn folded_descriptions_and_extra_keys() {
        let tmp = TempDir::new("folded");
        tmp.write(
            "s/SKILL.md",
            "---\nname: folded\ndescription: >\n  A long description\n  over two lines.\nallowed-tools: [Read, Bash]\nmetadata:\n  version: \"1.0\"\n---\nBody.\n",
        );
        let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
        assert_eq!(skills[0].description, "A long description over two lines.");
        assert_eq!(
            entries(&SkillSet::new(skills).listing("use_skill")),
            "folded: A long description over two lines."
        );
    }

    #[tokio::test]
    async fn file_bodies_are_read_when_loaded() {
        let tmp = TempDir::new("live");
        let file = tmp.write(
            "live/SKILL.md",
            "---\nname: live\ndescription: Changes.\n---\nOLD BODY\n",
        );
        let skills = load_dirs(std::slice::from_ref(&tmp.0)).unwrap();
        std::fs::write(
            &file,
            "---\nname: live\ndescription: Changes.\n---\n\nNEW BODY\n",
        )
        .unwrap();
        assert_eq!(skills[0].body().await.unwrap(), "NEW BODY");

        // A file gone at load time: reported to the model, not marked loaded, retry works.
        let t = tool(skills);
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            call(&t, "live").await.unwrap_err().to_string(),
            texts::skill_load_failed("live")
        );
        assert!(t.loaded().is_empty());
        std::fs::write(&file, "---\nname: live\ndescription: Changes.\n---\nBACK\n").unwrap();
        assert_eq!(call(&t, "live").await.unwrap(), "BACK");
        assert_eq!(t.loaded(), vec!["live".to_owned()]);
    }

    #[test]
    fn file_bodies_load_without_a_tokio_runtime() {
        let skills = load_dirs(&[fixtures().join("single")]).unwrap();
        let body = futures::executor::block_on(skills[0].body()).unwrap();
        assert_eq!(body, "Single skill body.");
    }
}
