//! Skills from folders in the Agent Skills convention, and the SKILL.md format (YAML front
//! matter, then the body).

use std::path::{Path, PathBuf};

use super::{Skill, SkillError};

/// The file a skill folder holds (the Agent Skills convention).
const SKILL_FILE: &str = "SKILL.md";

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
pub(super) fn split_front_matter(text: &str) -> Result<(String, String), String> {
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
pub(super) fn parse_front_matter(path: &Path, yaml: &str) -> Result<(String, String), SkillError> {
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
pub(super) async fn read_body(path: &Path) -> Result<String, String> {
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
