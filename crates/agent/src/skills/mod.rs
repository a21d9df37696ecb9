//! Skills: progressive disclosure (seed 004, seed 000's `use_skill`, docs/src/agent.md, "The
//! loop").
//!
//! A skill is a name, a description and a body that is fetched only when asked for. The names and
//! descriptions go into the system prompt as a listing (each description cut at
//! [`DESCRIPTION_LIMIT`] characters, the whole listing within [`SkillSet::listing_budget`]); the
//! bodies do not. One skill tool ([`SkillTool`], `use_skill` by default) loads a body on demand, so
//! sixty skills cost one entry in the tool array, and the tool array stays byte-identical across
//! callers (it is the front of the provider's cached prefix).
//!
//! Guarantees (seed 004):
//! - a skill loaded twice in a conversation returns a note the second time, not the body again
//!   (the loaded set is the conversation's, [`LoadedSkills`]: it survives turns and rebuilds of
//!   the skill tool);
//! - a body that failed to load is not marked loaded, so the model can retry;
//! - two skills with the same name, a skill with an empty name, or a tool already carrying the
//!   skill tool's name are refused when the run starts ([`SkillSet::validate`]).
//!
//! Skills load from folders in the Agent Skills convention ([`load_dirs`]): a `SKILL.md` file with
//! YAML front matter (`name`, `description`) followed by the body. The built-in
//! `document-generation` skill (seed 000) is [`Skill::document_generation`]; an administrator's
//! skill of the same name shadows it ([`SkillSet::with_builtin`]). A model without the skill tool
//! gets the bodies inline ([`SkillSet::inline_bodies`]).
//!
//! The parts: [`Skill`] (`skill.rs`), [`load_dirs`] and the SKILL.md format (`load.rs`),
//! [`SkillSet`] (`set.rs`), [`SkillTool`] (`tool.rs`), the listing (`listing.rs`) and the
//! conversation's loaded set (`loaded.rs`).

use std::path::PathBuf;

mod listing;
mod load;
mod loaded;
mod set;
mod skill;
#[cfg(test)]
mod tests;
mod tool;

pub use listing::Listing;
pub use load::load_dirs;
pub use loaded::LoadedSkills;
pub use set::SkillSet;
pub use skill::{Skill, SkillLoader, SkillSource};
pub use tool::SkillTool;

/// The most characters (not bytes) of one skill's description in the listing, as in Claude Code;
/// a longer one is cut there (on a character boundary, without an ellipsis).
pub const DESCRIPTION_LIMIT: usize = 1536;

/// The default budget, in characters, of the whole listing's entries (names, descriptions and line
/// breaks; the header line is not counted): about 4,000 tokens, room for a hundred skills with
/// ordinary descriptions or ten at [`DESCRIPTION_LIMIT`]. Skills past it are left out whole.
pub const DEFAULT_LISTING_BUDGET: usize = 16_000;

/// The skill tool's default name (seed 000).
pub const DEFAULT_SKILL_TOOL: &str = "use_skill";

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
