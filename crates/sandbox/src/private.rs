//! Files that hold users' data (memories, transcripts, the chat history) are created owner-only,
//! 0600, and the folders made for them 0700, the mode given when the file or folder is created
//! (never created open and narrowed afterwards, which leaves a moment when others can open it).
//! An existing file or folder keeps its mode: the user may have chosen it.
//!
//! The exception is the way to the workspaces and the sandbox's venv: the data folder (and the
//! folders above it we create) and the workspaces' root are 0711. Sandboxed code may run as
//! another uid (`nobody`, when we are root), and under Landlock it reaches host paths only
//! through folders every user can search; 0711 lets it pass without letting anyone list what is
//! there, and every private file inside is 0600 anyway. (SQLite gives a database's `-wal` and
//! `-shm` files the database file's mode.)

use std::fs::{DirBuilder, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// A file of users' data.
pub const FILE_MODE: u32 = 0o600;
/// A folder of users' data.
pub const DIR_MODE: u32 = 0o700;
/// A folder on the way to the workspaces or the sandbox's venv: searchable, not listable.
pub const PASSAGE_MODE: u32 = 0o711;

/// Creates `dir` and its missing parents with `mode` (the umask may only narrow it).
pub fn create_dirs(dir: &Path, mode: u32) -> std::io::Result<()> {
    DirBuilder::new().recursive(true).mode(mode).create(dir)
}

/// Creates the missing folders above the private file `file`: the data folder and the folders
/// above it as passages ([`PASSAGE_MODE`]), any other as private ([`DIR_MODE`]).
pub fn create_parent(file: &Path) -> std::io::Result<()> {
    let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let on_the_way_to_workspaces =
        crate::paths::data_dir().is_some_and(|data| data.starts_with(parent));
    let mode = if on_the_way_to_workspaces {
        PASSAGE_MODE
    } else {
        DIR_MODE
    };
    create_dirs(parent, mode)
}

/// Options that create a file owner-only (add `write`, `create`, … as needed).
pub fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Writes `contents` to `path`, replacing what it held; a new file is created owner-only.
pub fn write(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let mut file = file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    file.write_all(contents.as_ref())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_and_folders_are_created_owner_only_and_existing_ones_keep_their_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a/b/transcript.json");
        create_parent(&file).unwrap();
        write(&file, "{}").unwrap();
        assert_eq!(mode(&tmp.path().join("a")), DIR_MODE);
        assert_eq!(mode(&tmp.path().join("a/b")), DIR_MODE);
        assert_eq!(mode(&file), FILE_MODE);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{}");

        let shared = tmp.path().join("shared.txt");
        std::fs::write(&shared, "old").unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o644)).unwrap();
        write(&shared, "new").unwrap();
        assert_eq!(mode(&shared), 0o644);
        assert_eq!(std::fs::read_to_string(&shared).unwrap(), "new");

        let passage = tmp.path().join("data/workspaces");
        create_dirs(&passage, PASSAGE_MODE).unwrap();
        assert_eq!(mode(&tmp.path().join("data")), PASSAGE_MODE);
        assert_eq!(mode(&passage), PASSAGE_MODE);
    }
}
