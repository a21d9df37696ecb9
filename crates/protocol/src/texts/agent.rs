//! The agent's own texts: the default system prompt, the results of calls the agent answers
//! itself (unknown tool, invalid arguments, not approved) and the skill texts.

use super::fill;

/// Ours: the system prompt of an agent run when none is configured (the prompt-mode preamble and the
/// skill listing follow it).
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are a helpful assistant.";

/// Ours: the result of a call to a tool that does not exist; placeholders `<TOOL_NAME>`,
/// `<TOOL_NAMES>` (the valid names, comma-separated).
pub const UNKNOWN_TOOL: &str =
    "There is no tool named \"<TOOL_NAME>\". The available tools are: <TOOL_NAMES>.";

/// Ours: the result of a call whose arguments do not match the tool's schema; placeholders
/// `<TOOL_NAME>`, `<PROBLEMS>`.
pub const INVALID_ARGUMENTS: &str = "The arguments for <TOOL_NAME> are invalid: <PROBLEMS>. Call it again with arguments that match its input schema.";

/// Ours: the `<PROBLEMS>` of [`INVALID_ARGUMENTS`] when the arguments are not JSON; placeholder
/// `<DETAIL>` (the JSON reader's message).
pub const ARGUMENTS_NOT_JSON: &str = "the arguments are not valid JSON (<DETAIL>)";

/// Ours: the `<PROBLEMS>` of [`INVALID_ARGUMENTS`] when the arguments are JSON but not an object.
pub const ARGUMENTS_NOT_OBJECT: &str = "the arguments must be a JSON object";

/// Ours: one schema violation among the `<PROBLEMS>` of [`INVALID_ARGUMENTS`], where it is not at
/// the top level; placeholders `<PROBLEM>` (the validator's message), `<PATH>` (a JSON pointer).
pub const SCHEMA_PROBLEM_AT: &str = "<PROBLEM> (at <PATH>)";

/// Ours: between the schema violations of [`INVALID_ARGUMENTS`].
pub const SCHEMA_PROBLEM_SEPARATOR: &str = "; ";

/// Ours: the result of a call the user (or the approval policy) did not allow.
pub const APPROVAL_DENIED: &str = "This tool call was not approved, so it was not run. Do not retry it; continue without it or ask the user.";

/// Ours: the header of the skill listing in the system prompt; placeholder `<SKILL_TOOL>`.
pub const SKILL_LISTING_HEADER: &str =
    "Skills you can load with the <SKILL_TOOL> tool (load a skill before following it):";

/// Ours: the result of loading a skill that is already loaded in this run; placeholder `<SKILL_NAME>`.
pub const SKILL_ALREADY_LOADED: &str = "The skill \"<SKILL_NAME>\" is already loaded earlier in this conversation; use those instructions.";

/// Ours: the result of loading a skill that does not exist; placeholders `<SKILL_NAME>`,
/// `<SKILL_NAMES>`.
pub const SKILL_NOT_FOUND: &str =
    "There is no skill named \"<SKILL_NAME>\". The available skills are: <SKILL_NAMES>.";

/// Ours: the header before skill bodies given inline to a model that has no skill tool.
pub const SKILLS_INLINE_HEADER: &str =
    "The following skill instructions apply to this conversation.";

/// Ours: the result of loading a skill whose body could not be fetched (a file that cannot be read,
/// a loader that failed); placeholder `<SKILL_NAME>`. The skill is not marked loaded, so the model
/// may try again.
pub const SKILL_LOAD_FAILED: &str = "The skill \"<SKILL_NAME>\" could not be loaded right now. You can try loading it again, or continue without it.";

/// The result of a call to an unknown tool.
pub fn unknown_tool(name: &str, valid: &[&str]) -> String {
    let names = if valid.is_empty() {
        "(none)".to_owned()
    } else {
        valid.join(", ")
    };
    fill(
        UNKNOWN_TOOL,
        &[("<TOOL_NAME>", name), ("<TOOL_NAMES>", &names)],
    )
}

/// The result of a call with arguments that do not match the schema.
pub fn invalid_arguments(name: &str, problems: &str) -> String {
    fill(
        INVALID_ARGUMENTS,
        &[("<TOOL_NAME>", name), ("<PROBLEMS>", problems)],
    )
}

/// The skill listing header for a skill tool name.
pub fn skill_listing_header(skill_tool: &str) -> String {
    fill(SKILL_LISTING_HEADER, &[("<SKILL_TOOL>", skill_tool)])
}

pub fn skill_already_loaded(name: &str) -> String {
    fill(SKILL_ALREADY_LOADED, &[("<SKILL_NAME>", name)])
}

pub fn skill_not_found(name: &str, valid: &[&str]) -> String {
    let names = if valid.is_empty() {
        "(none)".to_owned()
    } else {
        valid.join(", ")
    };
    fill(
        SKILL_NOT_FOUND,
        &[("<SKILL_NAME>", name), ("<SKILL_NAMES>", &names)],
    )
}

/// The result of a skill load whose body could not be fetched.
pub fn skill_load_failed(name: &str) -> String {
    fill(SKILL_LOAD_FAILED, &[("<SKILL_NAME>", name)])
}

/// [`ARGUMENTS_NOT_JSON`] filled.
pub fn arguments_not_json(detail: &str) -> String {
    fill(ARGUMENTS_NOT_JSON, &[("<DETAIL>", detail)])
}

/// One schema violation: the message alone at the top level (`path` empty), else
/// [`SCHEMA_PROBLEM_AT`].
pub fn schema_problem(problem: &str, path: &str) -> String {
    if path.is_empty() {
        problem.to_owned()
    } else {
        fill(
            SCHEMA_PROBLEM_AT,
            &[("<PROBLEM>", problem), ("<PATH>", path)],
        )
    }
}

/// The `<PROBLEMS>` of [`INVALID_ARGUMENTS`] from [`schema_problem`]s.
pub fn schema_problems(problems: &[String]) -> String {
    problems.join(SCHEMA_PROBLEM_SEPARATOR)
}
