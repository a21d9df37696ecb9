//! Helpers shared by the tools: specs from the seed texts, workspace folders, generated names.

use std::path::Path;

use rand::Rng;
use serde_json::Value;
use toolbridge_agent::{ToolContext, ToolError};
use toolbridge_protocol::texts;
use toolbridge_protocol::types::ToolSpec;
use toolbridge_sandbox::beneath::Tree;

/// Where the conversation workspace appears inside the sandbox: paths given to the model are
/// `/workspace/<folder>/<name>`; on the host the same file is `<ToolContext::workspace>/<folder>/<name>`.
pub const SANDBOX_WORKSPACE: &str = "/workspace";

/// A tool spec from the seed's description and schema text (parsed with key order preserved, so
/// it renders back byte for byte).
pub fn seed_spec(name: &str, description: &str, schema: &str) -> ToolSpec {
    let parameters: Value = serde_json::from_str(schema).unwrap_or_else(|e| {
        // The schemas are constants checked by this crate's tests; never reached.
        tracing::error!(tool = name, error = %e, "the built-in tool's schema text does not parse");
        Value::Object(Default::default())
    });
    ToolSpec::new(name, description, parameters)
}

/// `<workspace>/<folder>` held open (created if missing). A folder that is a symbolic link is
/// refused (code in the sandbox can write the workspace; it must not redirect our writes outside
/// it), and everything below it is reached through the returned tree.
pub fn workspace_dir(context: &ToolContext, folder: &str) -> Result<(Tree, String), ToolError> {
    let Some(workspace) = &context.workspace else {
        return Err(ToolError::new(texts::NO_WORKSPACE));
    };
    std::fs::create_dir_all(workspace)
        .map_err(|e| ToolError::internal(format!("creating the workspace: {e}")))?;
    let dir = Tree::open(workspace)
        .and_then(|ws| ws.dir_or_create(folder, 0o755))
        .map_err(|e| {
            ToolError::internal(format!("opening {}/{folder}: {e}", workspace.display()))
        })?;
    Ok((dir, format!("{SANDBOX_WORKSPACE}/{folder}")))
}

/// Random lower-case hex.
pub fn random_hex(chars: usize) -> String {
    let mut rng = rand::rng();
    (0..chars)
        .map(|_| char::from_digit(rng.random_range(0..16u32), 16).unwrap_or('0'))
        .collect()
}

/// A safe file stem from a model's suggestion: ASCII letters, digits, `-` and `_`, at most 40;
/// `None` when nothing is left.
pub fn safe_stem(hint: &str) -> Option<String> {
    let base = Path::new(hint)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default();
    let stem: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let stem = stem.trim_matches('_').to_owned();
    (!stem.is_empty()).then_some(stem)
}

/// Writes `bytes` to the new file `name` in `dir` (never following or overwriting anything
/// there).
pub fn write_new(dir: &Tree, name: &str, bytes: &[u8]) -> Result<(), ToolError> {
    use std::io::Write;
    let mut file = dir
        .create_new(name, 0o644)
        .map_err(|e| ToolError::internal(format!("creating {name}: {e}")))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| ToolError::internal(format!("writing {name}: {e}")))
}

/// The strings of `one` and then `many` from the arguments, without repeats.
pub fn one_or_many(args: &Value, one: &str, many: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    };
    if let Some(s) = args.get(one).and_then(Value::as_str) {
        push(s);
    }
    if let Some(list) = args.get(many).and_then(Value::as_array) {
        for s in list.iter().filter_map(Value::as_str) {
            push(s);
        }
    }
    out
}

/// Cuts text after `limit` characters with the seed's truncation note.
pub fn cap_chars(text: &str, limit: usize) -> String {
    toolbridge_agent::toolbox::truncate(text, limit)
}
