//! Which files under `<workspace>/outputs` a call created or changed: a snapshot before the cell,
//! compared with the folder after it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use toolbridge_sandbox::beneath::{Stamp, Tree, WalkLimits};

/// The folder, relative to the workspace, whose new files are reported.
pub const OUTPUTS: &str = "outputs";
/// A cell could create a huge tree; the walk stops after this many entries and this depth.
const LIMITS: WalkLimits = WalkLimits {
    max_entries: 10_000,
    max_depth: 16,
};

/// The regular files of a folder tree (relative paths) and their stamps.
#[derive(Debug, Default)]
pub struct Snapshot(HashMap<PathBuf, Stamp>);

impl Snapshot {
    /// The files under `dir`. Sandboxed code controls this tree, so no symbolic link is followed,
    /// the root included (`toolbridge_sandbox::beneath`).
    pub fn take(dir: &Path) -> Snapshot {
        Snapshot(
            Tree::open(dir)
                .map(|tree| tree.regular_files(LIMITS))
                .unwrap_or_default(),
        )
    }

    /// Files under `dir` that are new or changed since this snapshot, as
    /// `(outputs/<relative path>, size)`, sorted by path.
    pub fn changed(&self, dir: &Path) -> Vec<(String, u64)> {
        let after = Snapshot::take(dir);
        let mut out: Vec<(String, u64)> = after
            .0
            .into_iter()
            .filter(|(path, stamp)| self.0.get(path) != Some(stamp))
            .map(|(rel, stamp)| (format!("{OUTPUTS}/{}", rel.to_string_lossy()), stamp.0))
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_new_and_changed_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        std::fs::write(out.join("kept.txt"), "same").unwrap();
        std::fs::write(out.join("edited.txt"), "old").unwrap();
        let before = Snapshot::take(out);
        std::fs::write(out.join("edited.txt"), "new content").unwrap();
        std::fs::create_dir(out.join("sub")).unwrap();
        std::fs::write(out.join("sub/new.bin"), [0u8; 5]).unwrap();
        assert_eq!(
            before.changed(out),
            vec![
                ("outputs/edited.txt".to_owned(), 11),
                ("outputs/sub/new.bin".to_owned(), 5)
            ]
        );
    }
}
