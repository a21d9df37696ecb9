//! Tests of the skills, one file per part: `tool` (the skill tool), `set` (validation, the
//! listing, the built-in skill, inline bodies) and `load` (skill folders and SKILL.md files).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod load;
mod set;
mod tool;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolbridge_protocol::texts;

use super::*;
use crate::tool::{Tool, ToolContext, ToolError};
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
