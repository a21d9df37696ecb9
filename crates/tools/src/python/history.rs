//! Whether a workspace had a Python session before this process: a marker file the host writes
//! when it starts an interpreter there. A new process (`run --conversation ID` again, a
//! restarted gateway) has no interpreter state to give back, so its first result says so.
//!
//! The marker lives in the workspace, which sandboxed code can write: it can only make the note
//! appear or go missing, and a marker replaced by a link is never written through.

use std::io::Write;
use std::path::Path;

/// The marker file, in the workspace's top folder.
pub const MARKER: &str = ".toolbridge-python-session";

/// Whether an interpreter was started in `workspace` before (by any process).
pub fn had_session(workspace: &Path) -> bool {
    std::fs::symlink_metadata(workspace.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// Records that an interpreter was started in `workspace`. Failure is only logged: it costs at
/// most the note of a later process.
pub fn mark(workspace: &Path) {
    if had_session(workspace) {
        return;
    }
    let path = workspace.join(MARKER);
    // Only ever created, never opened when present (nothing is written through a link).
    let written = toolbridge_sandbox::beneath::Tree::open(workspace)
        .and_then(|tree| tree.create_new(MARKER, 0o644))
        .and_then(|mut f| f.write_all(b"python_execute ran in this workspace\n"));
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not mark the workspace as having had a Python session");
        }
    }
}
