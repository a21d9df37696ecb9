//! Workspace preparation: the three folders, and ownership for the sandbox uid.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

use crate::beneath::Tree;
use crate::error::SandboxError;

pub const FOLDERS: &[&str] = &["uploads", "downloads", "outputs"];

/// Name of the per-workspace temporary directory backends without a private `/tmp` use.
pub const PRIVATE_TMP: &str = ".tmp";

pub fn prepare(
    host: &Path,
    run_as: Option<(u32, u32)>,
    check_reachable: bool,
) -> Result<(), SandboxError> {
    let err = |reason: String| SandboxError::Workspace {
        path: host.to_path_buf(),
        reason,
    };
    std::fs::create_dir_all(host).map_err(|e| err(e.to_string()))?;
    let tree = Tree::open(host).map_err(|e| err(e.to_string()))?;
    for folder in FOLDERS {
        own_folder(&tree, folder).map_err(|e| err(format!("{folder}: {e}")))?;
    }
    if let Some((uid, gid)) = run_as {
        if check_reachable {
            let parent = host.parent().unwrap_or(host);
            if !world_reachable(parent) {
                return Err(err(format!(
                    "the sandboxed code runs as uid {uid} and, under Landlock (no mount \
                     namespace), cannot reach this folder: a parent directory is not searchable \
                     by others (e.g. /root is mode 700); put the workspaces under a directory \
                     such as /var/lib/toolbridge/workspaces ([tools.workspaces] root), or install \
                     bubblewrap"
                )));
            }
        }
        chown_tree(host, uid, gid).map_err(|e| err(format!("giving it to uid {uid}: {e}")))?;
    }
    Ok(())
}

/// Whether every ancestor of `path` is searchable by "others".
pub fn world_reachable(path: &Path) -> bool {
    path.ancestors()
        .skip(1)
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.mode() & 0o001 != 0))
}

/// The first existing directory above `path` (or `path` itself, when it is an existing directory)
/// that other users cannot search; folders not created yet do not count (we create them
/// searchable).
pub fn first_closed_ancestor(path: &Path) -> Option<PathBuf> {
    path.ancestors()
        .filter_map(|dir| std::fs::metadata(dir).ok().map(|m| (dir, m)))
        .filter(|(_, m)| m.is_dir())
        .find(|(_, m)| m.mode() & 0o001 == 0)
        .map(|(dir, _)| dir.to_path_buf())
}

/// The permission bits of a path (0 when unreadable).
pub fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).map(|m| m.mode()).unwrap_or(0)
}

/// A fresh path for a probe's throwaway workspace: unique per process and call, since probes
/// of several sandboxes may run at once.
pub fn scratch_dir(what: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("toolbridge-{what}-{}-{n}", std::process::id()))
}

/// `<workspace>/.tmp`, created if needed and owned by the sandbox uid.
pub fn private_tmp(workspace: &Path, run_as: Option<(u32, u32)>) -> Result<PathBuf, SandboxError> {
    let tmp = workspace.join(PRIVATE_TMP);
    let io = |e: std::io::Error| SandboxError::io(format!("creating {}", tmp.display()), e);
    let dir = own_folder(&Tree::open(workspace).map_err(io)?, PRIVATE_TMP).map_err(io)?;
    if let Some((uid, gid)) = run_as {
        rustix::fs::fchown(dir.fd(), Some(uid_of(uid)), Some(gid_of(gid)))
            .map_err(|e| io(e.into()))?;
    }
    Ok(tmp)
}

/// The folder `name` directly below `tree`, created when missing. Sandboxed code could have
/// replaced it with a link or a file: that is removed (never followed) and the folder made
/// afresh.
fn own_folder(tree: &Tree, name: &str) -> std::io::Result<Tree> {
    match tree.dir_or_create(name, 0o755) {
        Ok(dir) => Ok(dir),
        Err(_) => {
            tree.remove(name)?;
            tree.dir_or_create(name, 0o755)
        }
    }
}

/// Changes the owner of `root` and everything below it, never following a symlink: sandboxed
/// code (a live interpreter) may swap a directory for a symlink while we walk, so each step is
/// relative to an already-open directory with `O_NOFOLLOW` / `AT_SYMLINK_NOFOLLOW`.
fn chown_tree(root: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    let dir = open_dir_nofollow(rustix::fs::CWD, root)?;
    chown_dir(dir, uid, gid, 0)
}

fn chown_dir(dir: OwnedFd, uid: u32, gid: u32, depth: usize) -> std::io::Result<()> {
    // Deeper trees than this are the sandboxed code's own business; it owns the parents.
    if depth > 64 {
        return Ok(());
    }
    let owner = (Some(uid_of(uid)), Some(gid_of(gid)));
    rustix::fs::fchown(&dir, owner.0, owner.1)?;
    let entries = rustix::fs::Dir::read_from(&dir)?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        if entry.file_type() == rustix::fs::FileType::Directory {
            match open_dir_nofollow(&dir, name) {
                Ok(child) => chown_dir(child, uid, gid, depth + 1)?,
                // Replaced by a symlink or removed since the listing: leave it.
                Err(_) => continue,
            }
        } else {
            let stat = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW);
            if stat.is_ok_and(|s| s.st_uid != uid || s.st_gid != gid) {
                let _ =
                    rustix::fs::chownat(&dir, name, owner.0, owner.1, AtFlags::SYMLINK_NOFOLLOW);
            }
        }
    }
    Ok(())
}

fn open_dir_nofollow<Fd: std::os::fd::AsFd, P: rustix::path::Arg>(
    at: Fd,
    path: P,
) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn uid_of(uid: u32) -> rustix::fs::Uid {
    rustix::fs::Uid::from_raw(uid)
}

fn gid_of(gid: u32) -> rustix::fs::Gid {
    rustix::fs::Gid::from_raw(gid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_first_folder_others_cannot_search_is_found_and_missing_folders_do_not_count() {
        let tmp = tempfile::tempdir().unwrap();
        let closed = tmp.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let below = closed.join("not").join("yet");
        assert_eq!(first_closed_ancestor(&below), Some(closed.clone()));
        assert_eq!(mode_of(&closed) & 0o7777, 0o700);
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(first_closed_ancestor(&below), None);
    }

    #[test]
    fn folders_replaced_by_links_are_made_afresh_and_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let host = tmp.path().join("host");
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("keep"), "host").unwrap();
        let ws = tmp.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::os::unix::fs::symlink(&host, ws.join("outputs")).unwrap();
        std::os::unix::fs::symlink(&host, ws.join(PRIVATE_TMP)).unwrap();
        prepare(&ws, None, false).unwrap();
        private_tmp(&ws, None).unwrap();
        for folder in FOLDERS.iter().chain([&PRIVATE_TMP]) {
            let meta = std::fs::symlink_metadata(ws.join(folder)).unwrap();
            assert!(meta.is_dir(), "{folder}");
        }
        assert_eq!(std::fs::read_to_string(host.join("keep")).unwrap(), "host");
        assert_eq!(std::fs::read_dir(&host).unwrap().count(), 1);
    }
}
