//! Listing files that sandboxed code may have arranged: the walk opens every folder with
//! `O_NOFOLLOW | O_DIRECTORY` relative to its parent's descriptor and stats entries without
//! following links, so a symbolic link planted anywhere — the root included — cannot lead it
//! outside the tree (as `std::fs::read_dir` on a path would, since it resolves every component).

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};

/// What identifies one version of a file: size, modification time (s, ns), inode.
pub type Stamp = (u64, i64, i64, u64);

/// Bounds of a walk (a cell could create a huge or deep tree).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_entries: usize,
    pub max_depth: usize,
}

/// The regular files under `root` (paths relative to it) with their stamps; nothing when `root`
/// is not a real folder.
pub fn regular_files(root: &Path, limits: Limits) -> HashMap<PathBuf, Stamp> {
    let mut files = HashMap::new();
    if let Ok(dir) = open_dir(rustix::fs::CWD, root) {
        let mut seen = 0usize;
        walk(dir, PathBuf::new(), 0, limits, &mut seen, &mut files);
    }
    files
}

fn open_dir<Fd: AsFd, P: rustix::path::Arg>(at: Fd, path: P) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        at,
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

fn walk(
    dir: OwnedFd,
    prefix: PathBuf,
    depth: usize,
    limits: Limits,
    seen: &mut usize,
    files: &mut HashMap<PathBuf, Stamp>,
) {
    if depth > limits.max_depth {
        return;
    }
    let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        *seen += 1;
        if *seen > limits.max_entries {
            return;
        }
        let Ok(stat) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let Ok(name_str) = name.to_str() else {
            continue;
        };
        let path = prefix.join(name_str);
        match rustix::fs::FileType::from_raw_mode(stat.st_mode) {
            rustix::fs::FileType::Directory => {
                if let Ok(child) = open_dir(&dir, name) {
                    walk(child, path, depth + 1, limits, seen, files);
                }
            }
            rustix::fs::FileType::RegularFile => {
                let stamp = (
                    u64::try_from(stat.st_size).unwrap_or(0),
                    stat.st_mtime,
                    i64::try_from(stat.st_mtime_nsec).unwrap_or(0),
                    stat.st_ino,
                );
                files.insert(path, stamp);
            }
            _ => {}
        }
    }
}

/// Creates `dir/name` as a new file, refusing to follow a link at either step: `dir` is opened
/// with `O_NOFOLLOW | O_DIRECTORY` and the file created relative to that handle with
/// `O_CREAT | O_EXCL | O_NOFOLLOW`. Sandboxed code can rename or replace the workspace's folders
/// at any moment; checking `dir` by path and then creating by path would let a folder swapped
/// for a link in between put our file anywhere on the host.
pub fn create_new_in(dir: &Path, name: &str) -> std::io::Result<std::fs::File> {
    let fd = open_in(
        dir,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    Ok(std::fs::File::from(fd))
}

/// Opens `dir/name` for reading when it is a regular file, refusing to follow a link at either
/// step (`dir` opened with `O_NOFOLLOW | O_DIRECTORY`, the file relative to that handle with
/// `O_NOFOLLOW`, then checked to be a regular file): sandboxed code must not make the host read
/// (and send on) a host file through a link planted in the workspace.
pub fn open_regular_in(dir: &Path, name: &str) -> std::io::Result<std::fs::File> {
    let fd = open_in(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )?;
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name:?} is not a regular file"),
        ));
    }
    Ok(std::fs::File::from(fd))
}

/// `name` (a plain file name, never a path) opened with `flags` relative to `dir`, itself opened
/// with `O_NOFOLLOW | O_DIRECTORY`: the step both [`create_new_in`] and [`open_regular_in`] take
/// so that no link on the way is followed.
fn open_in(dir: &Path, name: &str, flags: OFlags, mode: Mode) -> std::io::Result<OwnedFd> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{name:?} is not a plain file name"),
        ));
    }
    let parent = open_dir(rustix::fs::CWD, dir)?;
    Ok(rustix::fs::openat(&parent, name, flags, mode)?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    const L: Limits = Limits {
        max_entries: 100,
        max_depth: 8,
    };

    #[test]
    fn lists_files_without_following_links_even_at_the_root() {
        let d = tempfile::tempdir().unwrap();
        let secret = d.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("id_rsa"), "key").unwrap();
        let out = d.path().join("outputs");
        std::fs::create_dir_all(out.join("sub")).unwrap();
        std::fs::write(out.join("a.txt"), "a").unwrap();
        std::fs::write(out.join("sub/b.txt"), "bb").unwrap();
        std::os::unix::fs::symlink(&secret, out.join("link")).unwrap();
        std::os::unix::fs::symlink(secret.join("id_rsa"), out.join("file-link")).unwrap();
        let files = regular_files(&out, L);
        let mut names: Vec<String> = files
            .keys()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["a.txt", "sub/b.txt"]);
        assert_eq!(files[Path::new("sub/b.txt")].0, 2);

        // The root itself replaced by a link to a host folder: nothing is listed.
        let planted = d.path().join("planted");
        std::os::unix::fs::symlink(&secret, &planted).unwrap();
        assert!(regular_files(&planted, L).is_empty());
    }

    #[test]
    fn create_new_in_refuses_links_and_existing_names() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("downloads");
        std::fs::create_dir(&dir).unwrap();
        use std::io::Write;
        create_new_in(&dir, "a.png")
            .unwrap()
            .write_all(b"png")
            .unwrap();
        assert_eq!(std::fs::read(dir.join("a.png")).unwrap(), b"png");
        assert!(create_new_in(&dir, "a.png").is_err());
        assert!(create_new_in(&dir, "../escape").is_err());
        // A link planted where the file would go, and the folder itself swapped for a link.
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("x"), dir.join("b.png")).unwrap();
        assert!(create_new_in(&dir, "b.png").is_err());
        assert!(!elsewhere.join("x").exists());
        std::fs::rename(&dir, d.path().join("old")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        assert!(create_new_in(&dir, "c.png").is_err());
        assert!(!elsewhere.join("c.png").exists());
    }

    #[test]
    fn open_regular_in_refuses_links_folders_and_fifos() {
        use std::io::Read;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("uploads");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.png"), "png").unwrap();
        let mut s = String::new();
        open_regular_in(&dir, "a.png")
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "png");
        let secret = d.path().join("secret");
        std::fs::write(&secret, "key").unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("link.png")).unwrap();
        assert!(open_regular_in(&dir, "link.png").is_err());
        std::fs::create_dir(dir.join("sub")).unwrap();
        assert!(open_regular_in(&dir, "sub").is_err());
        assert!(open_regular_in(&dir, "../secret").is_err());
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("fifo"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        assert!(open_regular_in(&dir, "fifo").is_err());
        // The folder swapped for a link to a folder holding a file of the same name.
        let elsewhere = d.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("a.png"), "host").unwrap();
        std::fs::rename(&dir, d.path().join("old")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        assert!(open_regular_in(&dir, "a.png").is_err());
    }

    #[test]
    fn the_walk_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..50 {
            std::fs::write(d.path().join(format!("f{i}")), "x").unwrap();
        }
        let few = Limits {
            max_entries: 10,
            max_depth: 8,
        };
        assert_eq!(regular_files(d.path(), few).len(), 10);
        let mut deep = d.path().to_path_buf();
        for i in 0..12 {
            deep = deep.join(format!("d{i}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("bottom.txt"), "x").unwrap();
        assert!(!regular_files(d.path(), L)
            .keys()
            .any(|p| p.ends_with("bottom.txt")));
    }
}
