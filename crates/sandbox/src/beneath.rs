//! The one way host code touches a folder tree that sandboxed code can write.
//!
//! Sandboxed code owns its workspace and can rename, replace or link anything in it at any
//! moment, including while the host is working there. A host that checks a path and then uses it,
//! or opens `a/b/c` with `O_NOFOLLOW` on `c` only, can be led through a directory swapped for a
//! symbolic link to `/` in between and made to read `/etc/shadow` or write into `/etc`. So every
//! host-side access to such a tree goes through a [`Tree`]: a directory held open as a file
//! descriptor, below which paths are resolved by the kernel with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)` —
//! no component, the last included, may be a link, and nothing resolves outside the tree — or,
//! on kernels without `openat2` (before 5.6), by a walk that opens one component at a time
//! relative to its parent's descriptor with `O_NOFOLLOW`. Files are read only after `fstat` on the
//! descriptor we opened shows a regular file; listing, size accounting and removal walk
//! descriptors, never path strings.
//!
//! The tree's root is given as a host path: it must be one sandboxed code cannot rename (a
//! workspace folder itself: under bubblewrap it is a mount point, under Landlock its parent is
//! not writable), and it is opened with `O_NOFOLLOW`.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

pub use rustix::fs::FileType;
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// What identifies one version of a file: size, modification time (s, ns), inode.
pub type Stamp = (u64, i64, i64, u64);

/// Bounds of a walk: sandboxed code can make a tree as wide or deep as it likes.
#[derive(Clone, Copy, Debug)]
pub struct WalkLimits {
    pub max_entries: usize,
    pub max_depth: usize,
}

/// How much a tree holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Bytes allocated on disk (`st_blocks * 512`) by regular files and folders.
    pub bytes: u64,
    /// Entries counted (files, folders, links and others).
    pub entries: u64,
    /// Whether the walk stopped at its limits (the figures are then a lower bound).
    pub truncated: bool,
}

/// A directory held open, below which paths are resolved without following any link.
#[derive(Debug)]
pub struct Tree {
    fd: OwnedFd,
    dev: u64,
}

/// How paths are resolved below a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolver {
    /// `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | …` (Linux 5.6 and later).
    Openat2,
    /// One component at a time, each opened relative to its parent with `O_NOFOLLOW`.
    Walk,
}

/// 0: not probed yet, 1: `openat2` works, 2: it does not (`ENOSYS`, or filtered).
static OPENAT2: AtomicU8 = AtomicU8::new(0);

fn resolver() -> Resolver {
    #[cfg(test)]
    if tests::FORCE_WALK.with(std::cell::Cell::get) {
        return Resolver::Walk;
    }
    match OPENAT2.load(Ordering::Relaxed) {
        2 => Resolver::Walk,
        _ => Resolver::Openat2,
    }
}

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Tree {
    /// Opens the folder at `root` (a host path sandboxed code cannot rename; its last component
    /// must not be a link).
    pub fn open(root: &Path) -> io::Result<Tree> {
        let fd = rustix::fs::openat(rustix::fs::CWD, root, DIR_FLAGS, Mode::empty())?;
        Tree::from_fd(fd)
    }

    fn from_fd(fd: OwnedFd) -> io::Result<Tree> {
        let dev = rustix::fs::fstat(&fd)?.st_dev;
        Ok(Tree { fd, dev })
    }

    /// The descriptor of the tree's root.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The folder at `relative` below this tree, as a tree of its own.
    pub fn dir(&self, relative: &str) -> io::Result<Tree> {
        let fd = self.resolve(relative, DIR_FLAGS, Mode::empty())?;
        Tree::from_fd(fd)
    }

    /// The folder `name` (one component) directly below this tree, created (with `mode`) when
    /// missing. A link or file in its place is an error, never followed or replaced.
    pub fn dir_or_create(&self, name: &str, mode: u32) -> io::Result<Tree> {
        let name = plain_name(name)?;
        match rustix::fs::mkdirat(&self.fd, name.as_c_str(), Mode::from_raw_mode(mode)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let fd = rustix::fs::openat(&self.fd, name.as_c_str(), DIR_FLAGS, Mode::empty())?;
        Tree::from_fd(fd)
    }

    /// Opens the regular file at `relative` for reading. A link anywhere on the way, a path
    /// leaving the tree, or anything but a regular file (a folder, a FIFO that would block, a
    /// device) is an error.
    pub fn open_regular(&self, relative: &str) -> io::Result<std::fs::File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = self.resolve(relative, flags, Mode::empty())?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{relative:?} is not a regular file"),
            ));
        }
        if stat.st_dev != self.dev {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{relative:?} is on another file system"),
            ));
        }
        // Reads block normally; O_NONBLOCK was only there so that opening a FIFO cannot hang.
        rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
        Ok(std::fs::File::from(fd))
    }

    /// Reads the regular file at `relative` whole, when it is at most `max` bytes (an error
    /// otherwise: nothing larger is held in memory).
    pub fn read_regular(&self, relative: &str, max: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let file = self.open_regular(relative)?;
        let mut out = Vec::new();
        file.take(max.saturating_add(1)).read_to_end(&mut out)?;
        if out.len() as u64 > max {
            return Err(io::Error::other(format!(
                "{relative:?} is larger than {max} bytes"
            )));
        }
        Ok(out)
    }

    /// Creates the file at `relative` (its folder resolved below the tree without links; the file
    /// itself with `O_CREAT | O_EXCL | O_NOFOLLOW`, so nothing already there — a link included —
    /// is followed or overwritten) for writing, with `mode`.
    pub fn create_new(&self, relative: &str, mode: u32) -> io::Result<std::fs::File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = self.resolve(relative, flags | OFlags::CLOEXEC, Mode::from_raw_mode(mode))?;
        Ok(std::fs::File::from(fd))
    }

    /// Creates or truncates the file `name` (one component) directly below the tree. Whatever
    /// sandboxed code put there instead of a regular file (a link, a folder, a FIFO) is removed
    /// first, never followed.
    pub fn replace_file(&self, name: &str, mode: u32) -> io::Result<std::fs::File> {
        let c_name = plain_name(name)?;
        if let Ok(stat) = rustix::fs::statat(&self.fd, c_name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
        {
            if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                self.remove(name)?;
            }
        }
        let flags = OFlags::WRONLY
            | OFlags::CREATE
            | OFlags::TRUNC
            | OFlags::NOFOLLOW
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(
            &self.fd,
            c_name.as_c_str(),
            flags,
            Mode::from_raw_mode(mode),
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a regular file"),
            ));
        }
        rustix::fs::fcntl_setfl(&fd, OFlags::empty())?;
        Ok(std::fs::File::from(fd))
    }

    /// Whether anything (a link included, never followed) is at `relative`.
    pub fn exists(&self, relative: &str) -> bool {
        let Ok((parent, name)) = self.parent_of(relative) else {
            return false;
        };
        rustix::fs::statat(&parent, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok()
    }

    /// The names of this folder's entries (not `.` and `..`) with their types, as the folder
    /// itself reports them (`lstat`: a link is a link).
    pub fn entries(&self) -> io::Result<Vec<(String, FileType)>> {
        let mut out = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            let name = entry.file_name();
            if is_dot(name) {
                continue;
            }
            let Ok(text) = name.to_str() else {
                continue;
            };
            let Ok(stat) = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            out.push((text.to_owned(), FileType::from_raw_mode(stat.st_mode)));
        }
        Ok(out)
    }

    /// The regular files below the tree (paths relative to it) with their stamps. Links are
    /// not followed, folders are entered by descriptor, and the walk stops at `limits`.
    pub fn regular_files(&self, limits: WalkLimits) -> HashMap<PathBuf, Stamp> {
        let mut files = HashMap::new();
        let mut seen = 0usize;
        let mut visit = |path: &Path, stat: &rustix::fs::Stat| {
            if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile {
                let stamp = (
                    u64::try_from(stat.st_size).unwrap_or(0),
                    stat.st_mtime,
                    i64::try_from(stat.st_mtime_nsec).unwrap_or(0),
                    stat.st_ino,
                );
                files.insert(path.to_path_buf(), stamp);
            }
        };
        if let Ok(root) = rustix::fs::openat(&self.fd, c".", DIR_FLAGS, Mode::empty()) {
            walk(root, PathBuf::new(), 0, limits, &mut seen, &mut visit);
        }
        files
    }

    /// What the tree holds on disk, for quotas.
    pub fn usage(&self, limits: WalkLimits) -> Usage {
        let mut usage = Usage::default();
        if let Ok(stat) = rustix::fs::fstat(&self.fd) {
            usage.bytes = allocated(&stat);
        }
        let mut seen = 0usize;
        let mut visit = |_: &Path, stat: &rustix::fs::Stat| {
            usage.entries += 1;
            usage.bytes = usage.bytes.saturating_add(allocated(stat));
        };
        if let Ok(root) = rustix::fs::openat(&self.fd, c".", DIR_FLAGS, Mode::empty()) {
            walk(root, PathBuf::new(), 0, limits, &mut seen, &mut visit);
        }
        usage.truncated = seen > limits.max_entries;
        usage
    }

    /// Removes what is at `relative` — a file, a link (the link itself) or a whole folder tree
    /// — without following any link. Trees of any depth are removed with a bounded number of
    /// open descriptors (folders deeper than that are first moved up to this tree's root).
    pub fn remove(&self, relative: &str) -> io::Result<()> {
        let (parent, name) = self.parent_of(relative)?;
        let mut pending: Vec<CString> = Vec::new();
        remove_at(&parent, &name, 0, &self.fd, &mut pending)?;
        // Folders moved up from too deep a tree: each is removed the same way.
        let mut rounds = 0usize;
        while let Some(moved) = pending.pop() {
            rounds += 1;
            if rounds > REMOVE_MAX_ROUNDS {
                return Err(io::Error::other("the tree to remove keeps growing"));
            }
            remove_at(&self.fd, &moved, 0, &self.fd, &mut pending)?;
        }
        Ok(())
    }

    /// Resolves `relative` below the tree and opens it with `flags` (`O_NOFOLLOW` is implied for
    /// every component).
    fn resolve(&self, relative: &str, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        let parts = components(relative)?;
        if resolver() == Resolver::Openat2 {
            match openat2_beneath(&self.fd, &parts.join("/"), flags, mode) {
                Err(Errno::NOSYS | Errno::TOOBIG) => OPENAT2.store(2, Ordering::Relaxed),
                result => {
                    OPENAT2.store(1, Ordering::Relaxed);
                    return Ok(result?);
                }
            }
        }
        walk_open(&self.fd, &parts, flags, mode)
    }

    /// The folder holding `relative` (resolved below the tree) and the last component's name.
    fn parent_of(&self, relative: &str) -> io::Result<(OwnedFd, CString)> {
        let parts = components(relative)?;
        let Some((last, folders)) = parts.split_last() else {
            return Err(invalid(relative));
        };
        let parent = if folders.is_empty() {
            rustix::fs::openat(&self.fd, c".", DIR_FLAGS, Mode::empty())?
        } else {
            self.resolve(&folders.join("/"), DIR_FLAGS, Mode::empty())?
        };
        Ok((parent, plain_name(last)?))
    }
}

fn openat2_beneath(dir: &OwnedFd, path: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        dir,
        path,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
        ResolveFlags::BENEATH
            | ResolveFlags::NO_SYMLINKS
            | ResolveFlags::NO_MAGICLINKS
            | ResolveFlags::NO_XDEV,
    )
}

/// The fallback resolver: every folder on the way opened relative to the previous one with
/// `O_NOFOLLOW | O_DIRECTORY` (on another file system: refused), the last component with
/// `flags | O_NOFOLLOW`.
fn walk_open(root: &OwnedFd, parts: &[&str], flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let Some((last, folders)) = parts.split_last() else {
        return Err(invalid(""));
    };
    let dev = rustix::fs::fstat(root)?.st_dev;
    let mut current: Option<OwnedFd> = None;
    for folder in folders {
        let at = current.as_ref().unwrap_or(root);
        let next = rustix::fs::openat(at, *folder, DIR_FLAGS, Mode::empty())?;
        if rustix::fs::fstat(&next)?.st_dev != dev {
            return Err(Errno::XDEV.into());
        }
        current = Some(next);
    }
    let at = current.as_ref().unwrap_or(root);
    let fd = rustix::fs::openat(at, *last, flags | OFlags::NOFOLLOW | OFlags::CLOEXEC, mode)?;
    if rustix::fs::fstat(&fd)?.st_dev != dev {
        return Err(Errno::XDEV.into());
    }
    Ok(fd)
}

/// The components of a relative path: no empty path, no absolute path, no `..`; `.` and empty
/// components (`a//b`) are dropped.
fn components(relative: &str) -> io::Result<Vec<&str>> {
    if relative.starts_with('/') || relative.contains('\0') {
        return Err(invalid(relative));
    }
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return Err(invalid(relative));
    }
    Ok(parts)
}

/// One path component as a C string (no `/`, not `.` or `..`).
fn plain_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(invalid(name));
    }
    CString::new(name).map_err(|_| invalid(name))
}

fn invalid(path: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{path:?} is not a relative path below the folder"),
    )
}

fn is_dot(name: &CStr) -> bool {
    matches!(name.to_bytes(), b"." | b"..")
}

fn allocated(stat: &rustix::fs::Stat) -> u64 {
    u64::try_from(stat.st_blocks)
        .unwrap_or(0)
        .saturating_mul(512)
}

/// Visits every entry below `dir` (by descriptor, links not followed) with its path and `lstat`.
fn walk(
    dir: OwnedFd,
    prefix: PathBuf,
    depth: usize,
    limits: WalkLimits,
    seen: &mut usize,
    visit: &mut dyn FnMut(&Path, &rustix::fs::Stat),
) {
    if depth > limits.max_depth {
        return;
    }
    let Ok(entries) = rustix::fs::Dir::read_from(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if is_dot(name) {
            continue;
        }
        *seen += 1;
        if *seen > limits.max_entries {
            return;
        }
        let Ok(stat) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let Ok(text) = name.to_str() else {
            continue;
        };
        let path = prefix.join(text);
        visit(&path, &stat);
        if FileType::from_raw_mode(stat.st_mode) == FileType::Directory {
            // Swapped for a link since the stat: the open fails and the entry is skipped.
            if let Ok(child) = rustix::fs::openat(&dir, name, DIR_FLAGS, Mode::empty()) {
                walk(child, path, depth + 1, limits, seen, visit);
            }
        }
    }
}

/// How deep [`Tree::remove`] descends holding descriptors before moving a folder up.
const REMOVE_MAX_DEPTH: usize = 64;
/// How many moved-up folders one removal takes on before giving up.
const REMOVE_MAX_ROUNDS: usize = 100_000;

/// How often one entry is tried again when sandboxed code keeps swapping it (a folder for a link
/// and back) while it is being removed.
const REMOVE_RETRIES: usize = 16;

/// Removes `name` in `dir` (recursively when it is a folder), never following a link. A folder
/// at [`REMOVE_MAX_DEPTH`] is renamed to a fresh name in `top` and queued in `pending` instead.
fn remove_at(
    dir: &OwnedFd,
    name: &CStr,
    depth: usize,
    top: &OwnedFd,
    pending: &mut Vec<CString>,
) -> io::Result<()> {
    for _ in 0..REMOVE_RETRIES {
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            // A folder (Linux answers EISDIR; POSIX allows EPERM).
            Err(Errno::ISDIR | Errno::PERM) => {}
            Err(e) => return Err(e.into()),
        }
        if depth >= REMOVE_MAX_DEPTH {
            let moved = CString::new(format!(".toolbridge-removing-{:016x}", rand_u64()))
                .map_err(|_| io::Error::other("name"))?;
            rustix::fs::renameat(dir, name, top, moved.as_c_str())?;
            pending.push(moved);
            return Ok(());
        }
        let child = match rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
            Ok(child) => child,
            // Replaced by a link or a file since the unlink: try that again.
            Err(Errno::NOTDIR | Errno::LOOP) => continue,
            Err(Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        empty_folder(&child, depth, top, pending)?;
        match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => return Ok(()),
            // Refilled, or swapped, meanwhile: again.
            Err(Errno::NOTEMPTY | Errno::NOTDIR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!(
        "{name:?} kept changing while it was being removed"
    )))
}

/// Removes everything in the open folder `dir`.
fn empty_folder(
    dir: &OwnedFd,
    depth: usize,
    top: &OwnedFd,
    pending: &mut Vec<CString>,
) -> io::Result<()> {
    for _ in 0..REMOVE_MAX_ROUNDS {
        let mut names: Vec<CString> = Vec::new();
        for entry in rustix::fs::Dir::read_from(dir)? {
            let entry = entry?;
            if !is_dot(entry.file_name()) {
                names.push(entry.file_name().to_owned());
            }
            // In batches: the listing of a folder being changed is read afresh.
            if names.len() >= 1024 {
                break;
            }
        }
        if names.is_empty() {
            return Ok(());
        }
        for entry in &names {
            remove_at(dir, entry, depth + 1, top, pending)?;
        }
    }
    Err(io::Error::other("the folder to remove keeps filling"))
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    // A name unique within this process and unlikely to be guessed ahead: a counter mixed by
    // the standard library's randomly keyed hasher.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.finish()
}

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
