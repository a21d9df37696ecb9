//! Which files under `<workspace>/outputs` a call created or changed: a snapshot before the cell,
//! compared with the folder after it.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The folder, relative to the workspace, whose new files are reported.
pub const OUTPUTS: &str = "outputs";
/// A cell could create a huge tree; the walk stops after this many entries.
const MAX_ENTRIES: usize = 10_000;
const MAX_DEPTH: usize = 16;

/// What identifies one version of a file: size, modification time (ns), inode.
type Stamp = (u64, i64, i64, u64);

/// The regular files of a folder tree and their stamps.
#[derive(Debug, Default)]
pub struct Snapshot(HashMap<PathBuf, Stamp>);

impl Snapshot {
    /// The files under `dir` (symbolic links are not followed).
    pub fn take(dir: &Path) -> Snapshot {
        let mut files = HashMap::new();
        let mut seen = 0usize;
        walk(dir, 0, &mut seen, &mut files);
        Snapshot(files)
    }

    /// Files under `dir` that are new or changed since this snapshot, as
    /// `(outputs/<relative path>, size)`, sorted by path.
    pub fn changed(&self, dir: &Path) -> Vec<(String, u64)> {
        let after = Snapshot::take(dir);
        let mut out: Vec<(String, u64)> = after
            .0
            .into_iter()
            .filter(|(path, stamp)| self.0.get(path) != Some(stamp))
            .filter_map(|(path, stamp)| {
                let rel = path.strip_prefix(dir).ok()?;
                Some((format!("{OUTPUTS}/{}", rel.to_string_lossy()), stamp.0))
            })
            .collect();
        out.sort();
        out
    }
}

fn walk(dir: &Path, depth: usize, seen: &mut usize, files: &mut HashMap<PathBuf, Stamp>) {
    if depth > MAX_DEPTH {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        *seen += 1;
        if *seen > MAX_ENTRIES {
            return;
        }
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let path = entry.path();
        if meta.is_dir() {
            walk(&path, depth + 1, seen, files);
        } else if meta.is_file() {
            let stamp = (meta.len(), meta.mtime(), meta.mtime_nsec(), meta.ino());
            files.insert(path, stamp);
        }
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
