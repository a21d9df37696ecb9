//! Conversation workspaces: one folder per conversation with seed 000's layout — `uploads/`
//! (files the user attached), `downloads/` (images `fetch_image` fetched) and `outputs/` (files
//! the model produced for the user) — under `[tools.workspaces] root`
//! (default `$XDG_DATA_HOME/toolbridge/workspaces`).
//!
//! A workspace is marked by a `.toolbridge-workspace` file whose modification time is the last
//! use; [`clean_idle`] removes workspaces idle longer than the configured rule and never touches
//! a folder without the marker (a misconfigured root cannot make us delete someone's files).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use toolbridge_sandbox::beneath::{Stamp, Tree, WalkLimits};

/// The marker file of a workspace folder.
pub const MARKER: &str = ".toolbridge-workspace";

/// How far the outputs report looks.
const OUTPUT_WALK: WalkLimits = WalkLimits {
    max_entries: 10_000,
    max_depth: 8,
};

/// The three folders of a workspace, as seed 000 names them.
pub const FOLDERS: [&str; 3] = ["uploads", "downloads", "outputs"];

/// `[tools.workspaces]` in `toolbridge.toml`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspacesConfig {
    /// The folder holding one workspace per conversation.
    pub root: Option<PathBuf>,
    /// Workspaces not used for this many days are removed when a run starts (0: never).
    #[serde(default = "default_idle_days")]
    pub idle_days: u64,
    /// The most one workspace may hold, in MiB (0: no limit): over it, `python_execute` and
    /// `run_in_terminal` refuse to run (all but commands that only remove files) and the
    /// gateway stages no upload into it, until files are deleted ([`crate::quota`]).
    #[serde(default = "default_max_size_mb")]
    pub max_size_mb: u64,
}

fn default_idle_days() -> u64 {
    7
}

fn default_max_size_mb() -> u64 {
    1024
}

impl Default for WorkspacesConfig {
    fn default() -> Self {
        WorkspacesConfig {
            root: None,
            idle_days: default_idle_days(),
            max_size_mb: default_max_size_mb(),
        }
    }
}

impl WorkspacesConfig {
    /// The root folder: the configured one, else the user data folder's `workspaces`.
    pub fn root(&self) -> Option<PathBuf> {
        if let Some(root) = &self.root {
            return Some(root.clone());
        }
        crate::memory::default_sqlite_path().and_then(|p| p.parent().map(|d| d.join("workspaces")))
    }

    /// The workspace quota in bytes (`None`: no limit).
    pub fn max_bytes(&self) -> Option<u64> {
        (self.max_size_mb > 0).then(|| self.max_size_mb.saturating_mul(1 << 20))
    }

    /// The idle rule as a duration (`None`: never clean).
    pub fn idle_limit(&self) -> Option<Duration> {
        (self.idle_days > 0).then(|| Duration::from_secs(self.idle_days.saturating_mul(86_400)))
    }
}

/// Workspace problems (user-facing: paths and what to do).
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot attach {0}: it is not a regular file")]
    NotAFile(PathBuf),
    #[error(
        "conversation id {0:?} is not usable as a folder name (use letters, digits, '-', '_', '.')"
    )]
    BadConversation(String),
    #[error("no data folder for workspaces: set [tools.workspaces] root, XDG_DATA_HOME or HOME")]
    NoRoot,
    #[error("{0} exists and is not a toolbridge workspace (no {MARKER} file); choose another root or conversation")]
    NotAWorkspace(PathBuf),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WorkspaceError + '_ {
    move |source| WorkspaceError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A new conversation id: the UTC time and 6 random hex digits (sorts by age, never collides in
/// practice).
pub fn new_conversation_id() -> String {
    format!(
        "{}-{}",
        jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S"),
        crate::common::random_hex(6)
    )
}

/// Unix seconds as RFC 3339 in UTC (`YYYY-MM-DDTHH:MM:SSZ`); out of range: the epoch.
pub fn rfc3339_utc(unix: i64) -> String {
    jiff::Timestamp::from_second(unix)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
        .to_string()
}

/// Whether a conversation id can name a folder: 1–100 of ASCII letters, digits, `-`, `_`, `.`,
/// not starting with `.`.
pub fn valid_conversation(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// One conversation's workspace on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    path: PathBuf,
}

impl Workspace {
    /// Opens (creating if needed) the workspace of `conversation` under `root`, and marks it used.
    pub fn open(root: &Path, conversation: &str) -> Result<Workspace, WorkspaceError> {
        if !valid_conversation(conversation) {
            return Err(WorkspaceError::BadConversation(conversation.to_owned()));
        }
        let path = root.join(conversation);
        let existed = path.exists();
        // The root lists every conversation's folder: other users may pass through it (the
        // sandbox's uid must reach a workspace) but not list it. A workspace keeps the usual
        // mode: it is handed to the sandbox's uid, whose code writes there.
        toolbridge_sandbox::private::create_dirs(root, toolbridge_sandbox::private::PASSAGE_MODE)
            .map_err(io(root))?;
        std::fs::create_dir_all(&path).map_err(io(&path))?;
        // Cleaning removes marked folders, so only mark folders that are ours or empty.
        if existed
            && !path.join(MARKER).exists()
            && !is_empty_dir(&path)
            && !has_only_folders(&path)
        {
            return Err(WorkspaceError::NotAWorkspace(path));
        }
        Workspace::at(path)
    }

    /// Opens (creating if needed) a workspace at an explicit folder (`[tools] workspace`, chosen by
    /// the operator, so an existing folder with other files is accepted).
    pub fn at(path: PathBuf) -> Result<Workspace, WorkspaceError> {
        std::fs::create_dir_all(&path).map_err(io(&path))?;
        let tree = Tree::open(&path).map_err(io(&path))?;
        for folder in FOLDERS {
            let dir = path.join(folder);
            // Sandboxed code can write the workspace: a folder replaced by a link must not
            // redirect our writes (attachments) elsewhere.
            if let Err(e) = tree.dir_or_create(folder, 0o755) {
                let planted = [rustix::io::Errno::LOOP, rustix::io::Errno::NOTDIR]
                    .iter()
                    .any(|code| e.raw_os_error() == Some(code.raw_os_error()));
                return Err(if planted {
                    WorkspaceError::NotAWorkspace(dir)
                } else {
                    io(&dir)(e)
                });
            }
        }
        let ws = Workspace { path };
        ws.touch()?;
        Ok(ws)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The workspace folder held open: every access below it goes through this (sandboxed code
    /// can rename, replace or link anything inside at any moment; see
    /// `toolbridge_sandbox::beneath`).
    pub fn tree(&self) -> Result<Tree, WorkspaceError> {
        Tree::open(&self.path).map_err(io(&self.path))
    }

    /// Marks the workspace as used now. Sandboxed code can write the workspace: whatever it put
    /// in the marker's place (a link to a host file we would then overwrite, a folder) is
    /// removed, never followed.
    pub fn touch(&self) -> Result<(), WorkspaceError> {
        use std::io::Write;
        let marker = self.path.join(MARKER);
        let mut file = self
            .tree()?
            .replace_file(MARKER, 0o644)
            .map_err(io(&marker))?;
        file.write_all(b"toolbridge conversation workspace\n")
            .map_err(io(&marker))
    }

    /// Copies a file into `uploads/`, keeping its name (a name already there gets `-2`, `-3`, …
    /// before the extension); returns the path inside the sandbox (`/workspace/uploads/NAME`).
    pub fn attach(&self, file: &Path) -> Result<String, WorkspaceError> {
        let meta = std::fs::metadata(file).map_err(io(file))?;
        if !meta.is_file() {
            return Err(WorkspaceError::NotAFile(file.to_path_buf()));
        }
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .map(sanitize_name)
            .unwrap_or_else(|| "upload".to_owned());
        let mut src = std::fs::File::open(file).map_err(io(file))?;
        let (target_name, mut dst) = self.new_upload(&name)?;
        std::io::copy(&mut src, &mut dst)
            .map_err(io(&self.path.join("uploads").join(&target_name)))?;
        Ok(format!(
            "{}/uploads/{target_name}",
            crate::common::SANDBOX_WORKSPACE
        ))
    }

    /// Writes `bytes` into `uploads/` as a new file named after `name` (sanitized; a name already
    /// there gets `-2`, `-3`, …); returns the path inside the sandbox. No link is followed.
    pub fn attach_bytes(&self, name: &str, bytes: &[u8]) -> Result<String, WorkspaceError> {
        use std::io::Write;
        let (target_name, mut dst) = self.new_upload(&sanitize_name(name))?;
        dst.write_all(bytes)
            .map_err(io(&self.path.join("uploads").join(&target_name)))?;
        Ok(format!(
            "{}/uploads/{target_name}",
            crate::common::SANDBOX_WORKSPACE
        ))
    }

    /// A new file in `uploads/` named `name`, or `stem-2.ext`, `stem-3.ext`, … when taken. Each
    /// name is tried with `O_CREAT | O_EXCL` below the workspace: nothing sandboxed code put
    /// there is followed or overwritten, and `uploads/` swapped for a link is an error.
    fn new_upload(&self, name: &str) -> Result<(String, std::fs::File), WorkspaceError> {
        let uploads = self.path.join("uploads");
        let tree = self.tree()?;
        tree.dir_or_create("uploads", 0o755).map_err(io(&uploads))?;
        let (stem, ext) = match name.rfind('.') {
            Some(i) if i > 0 => (&name[..i], &name[i..]),
            _ => (name, ""),
        };
        let candidates =
            std::iter::once(name.to_owned()).chain((2..1000).map(|n| format!("{stem}-{n}{ext}")));
        for candidate in candidates {
            match tree.create_new(&format!("uploads/{candidate}"), 0o644) {
                Ok(file) => return Ok((candidate, file)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&uploads.join(&candidate))(e)),
            }
        }
        Err(io(&uploads.join(name))(std::io::Error::other(
            "no free name left for this file",
        )))
    }

    /// The content of a file under `outputs/` (as [`Workspace::new_outputs`] lists them), at
    /// most `max` bytes (longer: an error). Sandboxed code controls that tree, so the file is
    /// opened without following links and must be a regular file.
    pub fn read_output(&self, relative: &str, max: u64) -> Result<Vec<u8>, WorkspaceError> {
        let path = self.path.join("outputs").join(relative);
        self.tree()?
            .dir("outputs")
            .and_then(|outputs| outputs.read_regular(relative, max))
            .map_err(io(&path))
    }

    /// The files under `outputs/` with their sizes and modification times (sandboxed code
    /// controls this tree: no link is followed, the root included).
    pub fn outputs(&self) -> OutputsSnapshot {
        let files = self
            .tree()
            .and_then(|t| t.dir("outputs").map_err(io(&self.path)))
            .map(|outputs| outputs.regular_files(OUTPUT_WALK))
            .unwrap_or_default()
            .into_iter()
            .map(|(rel, stamp)| (rel.to_string_lossy().into_owned(), stamp))
            .collect();
        OutputsSnapshot { files }
    }

    /// The files under `outputs/` that are new or changed since `before`, sorted by path.
    pub fn new_outputs(&self, before: &OutputsSnapshot) -> Vec<OutputFile> {
        let now = self.outputs();
        let mut changed: Vec<OutputFile> = now
            .files
            .into_iter()
            .filter(|(rel, stamp)| before.files.get(rel) != Some(stamp))
            .map(|(relative, stamp)| OutputFile {
                path: self.path.join("outputs").join(&relative),
                relative,
                size: stamp.0,
            })
            .collect();
        changed.sort_by(|a, b| a.relative.cmp(&b.relative));
        changed
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}

/// A folder holding nothing but (some of) the three workspace folders: a workspace made before the
/// marker existed, or by `fetch_image` alone.
fn has_only_folders(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|d| {
        d.flatten()
            .all(|e| e.file_name().to_str().is_some_and(|n| FOLDERS.contains(&n)))
    })
}

/// A file name without path separators or control characters, at most 120 bytes.
fn sanitize_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_control() || c == '/' || c == '\\' {
                '_'
            } else {
                c
            }
        })
        .collect();
    let mut cleaned = cleaned.trim_start_matches('.').to_owned();
    while cleaned.len() > 120 {
        cleaned.pop();
    }
    if cleaned.is_empty() {
        "upload".to_owned()
    } else {
        cleaned
    }
}

/// What `outputs/` held at one moment.
#[derive(Clone, Debug, Default)]
pub struct OutputsSnapshot {
    files: HashMap<String, Stamp>,
}

/// A file the model produced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OutputFile {
    /// The path on the host.
    pub path: PathBuf,
    /// The path under `outputs/`.
    pub relative: String,
    pub size: u64,
}

/// A workspace found under the root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceInfo {
    pub conversation: String,
    pub path: PathBuf,
    pub last_used: SystemTime,
}

/// The workspaces under `root` (folders with the marker), oldest use first.
pub fn list(root: &Path) -> Vec<WorkspaceInfo> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<WorkspaceInfo> = entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let meta = path.symlink_metadata().ok()?;
            if !meta.is_dir() {
                return None;
            }
            let marker = path.join(MARKER).symlink_metadata().ok()?;
            Some(WorkspaceInfo {
                conversation: e.file_name().to_string_lossy().into_owned(),
                last_used: marker.modified().ok()?,
                path,
            })
        })
        .collect();
    found.sort_by_key(|w| w.last_used);
    found
}

/// Removes the workspaces under `root` not used for `idle` (never `keep`); returns what was removed.
pub fn clean_idle(root: &Path, idle: Duration, keep: Option<&str>) -> Vec<WorkspaceInfo> {
    let now = SystemTime::now();
    list(root)
        .into_iter()
        .filter(|w| Some(w.conversation.as_str()) != keep)
        .filter(|w| now.duration_since(w.last_used).is_ok_and(|age| age > idle))
        .filter(|w| match remove_workspace(root, &w.conversation) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(path = %w.path.display(), error = %e, "could not remove an idle workspace");
                false
            }
        })
        .collect()
}

/// How far size accounting looks (the figure is a lower bound past this).
const USAGE_WALK: WalkLimits = WalkLimits {
    max_entries: 1_000_000,
    max_depth: 64,
};

/// What the workspace folder at `path` holds on disk, walked by descriptor without following any
/// link sandboxed code planted (zero when it cannot be opened).
pub fn disk_usage(path: &Path) -> toolbridge_sandbox::beneath::Usage {
    Tree::open(path)
        .map(|tree| tree.usage(USAGE_WALK))
        .unwrap_or_default()
}

/// Removes the workspace `conversation` under `root`, without following any link sandboxed code
/// left inside it.
pub fn remove_workspace(root: &Path, conversation: &str) -> std::io::Result<()> {
    if !valid_conversation(conversation) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{conversation:?} is not a conversation id"),
        ));
    }
    Tree::open(root)?.remove(conversation)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn conversation_ids_are_folder_safe_and_dated() {
        let id = new_conversation_id();
        assert!(valid_conversation(&id), "{id}");
        assert_eq!(id.len(), "20261130-034512-abcdef".len(), "{id}");
        assert!(id.starts_with("20"), "{id}");
        for bad in ["", "..", ".hidden", "a/b", "a b", &"x".repeat(101)] {
            assert!(!valid_conversation(bad), "{bad:?}");
        }
        assert_eq!(rfc3339_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_utc(20_787 * 86_400 + 3_723), "2026-11-30T01:02:03Z");
        assert_eq!(rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339_utc(-86_400), "1969-12-31T00:00:00Z");
    }

    #[test]
    fn a_workspace_has_the_seed_layout_and_refuses_foreign_folders() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c1").unwrap();
        for f in FOLDERS {
            assert!(ws.path().join(f).is_dir());
        }
        assert!(ws.path().join(MARKER).is_file());
        assert!(matches!(
            Workspace::open(root.path(), "../x"),
            Err(WorkspaceError::BadConversation(_))
        ));
        let foreign = root.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
        assert!(matches!(
            Workspace::open(root.path(), "foreign"),
            Err(WorkspaceError::NotAWorkspace(_))
        ));
        assert_eq!(
            std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
            "mine"
        );
    }

    #[test]
    fn the_workspaces_root_is_made_searchable_but_not_listable_by_others() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("data/workspaces");
        let ws = Workspace::open(&root, "c1").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o711);
        assert_eq!(mode(&tmp.path().join("data")), 0o711);
        // Others (the sandbox's uid) still reach a workspace they know the name of.
        assert_ne!(mode(ws.path()) & 0o001, 0);
    }

    #[test]
    fn a_marker_replaced_by_a_link_never_writes_through_it() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c").unwrap();
        let host_file = root.path().join("bashrc");
        std::fs::write(&host_file, "export SAFE=1\n").unwrap();
        let marker = ws.path().join(MARKER);
        std::fs::remove_file(&marker).unwrap();
        std::os::unix::fs::symlink(&host_file, &marker).unwrap();
        Workspace::open(root.path(), "c").unwrap();
        assert_eq!(
            std::fs::read_to_string(&host_file).unwrap(),
            "export SAFE=1\n"
        );
        assert!(std::fs::symlink_metadata(&marker).unwrap().is_file());
    }

    #[test]
    fn an_outputs_folder_replaced_by_a_link_lists_nothing() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c").unwrap();
        let host = root.path().join("host-secrets");
        std::fs::create_dir(&host).unwrap();
        std::fs::write(host.join("id_rsa"), "key").unwrap();
        let before = ws.outputs();
        std::fs::remove_dir(ws.path().join("outputs")).unwrap();
        std::os::unix::fs::symlink(&host, ws.path().join("outputs")).unwrap();
        assert!(ws.new_outputs(&before).is_empty());
    }

    #[test]
    fn attachments_keep_their_names_without_overwriting() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c").unwrap();
        let src = root.path().join("report.pdf");
        std::fs::write(&src, b"%PDF-1.7 one").unwrap();
        assert_eq!(ws.attach(&src).unwrap(), "/workspace/uploads/report.pdf");
        std::fs::write(&src, b"%PDF-1.7 two").unwrap();
        assert_eq!(ws.attach(&src).unwrap(), "/workspace/uploads/report-2.pdf");
        let up = ws.path().join("uploads");
        assert_eq!(
            std::fs::read(up.join("report.pdf")).unwrap(),
            b"%PDF-1.7 one"
        );
        assert_eq!(
            std::fs::read(up.join("report-2.pdf")).unwrap(),
            b"%PDF-1.7 two"
        );
        assert!(matches!(
            ws.attach(root.path()),
            Err(WorkspaceError::NotAFile(_))
        ));
        assert!(matches!(
            ws.attach(&root.path().join("missing")),
            Err(WorkspaceError::Io { .. })
        ));
    }

    #[test]
    fn new_outputs_are_reported_with_sizes() {
        let root = tempfile::tempdir().unwrap();
        let ws = Workspace::open(root.path(), "c").unwrap();
        let out = ws.path().join("outputs");
        std::fs::write(out.join("old.txt"), "old").unwrap();
        let before = ws.outputs();
        std::fs::write(out.join("report.pdf"), vec![0u8; 1234]).unwrap();
        std::fs::create_dir(out.join("charts")).unwrap();
        std::fs::write(out.join("charts/a.png"), vec![0u8; 10]).unwrap();
        std::fs::write(out.join("old.txt"), "changed!").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", out.join("link")).unwrap();
        let new = ws.new_outputs(&before);
        let got: Vec<(&str, u64)> = new.iter().map(|f| (f.relative.as_str(), f.size)).collect();
        assert_eq!(
            got,
            [("charts/a.png", 10), ("old.txt", 8), ("report.pdf", 1234)]
        );
    }

    #[test]
    fn idle_workspaces_are_cleaned_and_others_kept() {
        let root = tempfile::tempdir().unwrap();
        let old = Workspace::open(root.path(), "old").unwrap();
        let fresh = Workspace::open(root.path(), "fresh").unwrap();
        let current = Workspace::open(root.path(), "current").unwrap();
        let stray = root.path().join("stray");
        std::fs::create_dir(&stray).unwrap();
        let ten_days_ago = SystemTime::now() - Duration::from_secs(10 * 86_400);
        for ws in [&old, &current] {
            let f = std::fs::File::options()
                .write(true)
                .open(ws.path().join(MARKER))
                .unwrap();
            f.set_modified(ten_days_ago).unwrap();
        }
        let removed = clean_idle(
            root.path(),
            Duration::from_secs(7 * 86_400),
            Some("current"),
        );
        let names: Vec<&str> = removed.iter().map(|w| w.conversation.as_str()).collect();
        assert_eq!(names, ["old"]);
        assert!(!old.path().exists());
        assert!(fresh.path().exists() && current.path().exists() && stray.exists());
    }

    /// Issue 34's attack on the host side alone: a folder of `outputs/` exchanged with a link to a
    /// host folder while outputs are listed and read. Only the decoy or an error comes back.
    #[test]
    fn outputs_read_while_a_folder_is_swapped_for_a_link_never_leave_the_workspace() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let root = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        std::fs::create_dir(host.path().join("etc")).unwrap();
        std::fs::write(host.path().join("etc/shadow"), "HOST").unwrap();
        let ws = Workspace::open(root.path(), "race").unwrap();
        let out = ws.path().join("outputs");
        std::fs::create_dir_all(out.join("z/etc")).unwrap();
        std::fs::write(out.join("z/etc/shadow"), "decoy").unwrap();
        std::fs::write(out.join("plain.txt"), "plain").unwrap();
        std::os::unix::fs::symlink(host.path(), out.join("zlink")).unwrap();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, out) = (stop.clone(), out.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    rustix::fs::renameat_with(
                        rustix::fs::CWD,
                        out.join("z"),
                        rustix::fs::CWD,
                        out.join("zlink"),
                        rustix::fs::RenameFlags::EXCHANGE,
                    )
                    .unwrap();
                }
            })
        };
        let (mut decoys, mut refused) = (0, 0);
        for _ in 0..5_000 {
            match ws.read_output("z/etc/shadow", 1024) {
                Ok(bytes) => {
                    assert_eq!(bytes, b"decoy", "a host file was read");
                    decoys += 1;
                }
                Err(_) => refused += 1,
            }
            assert_eq!(ws.read_output("plain.txt", 1024).unwrap(), b"plain");
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        assert!(
            decoys > 0 && refused > 0,
            "{decoys} decoys, {refused} refused"
        );
    }

    #[test]
    fn removing_a_workspace_never_follows_links_inside_it() {
        let root = tempfile::tempdir().unwrap();
        let host = tempfile::tempdir().unwrap();
        std::fs::write(host.path().join("keep"), "host").unwrap();
        let ws = Workspace::open(root.path(), "gone").unwrap();
        std::os::unix::fs::symlink(host.path(), ws.path().join("outputs/link")).unwrap();
        std::fs::write(ws.path().join("outputs/a.txt"), "a").unwrap();
        assert!(disk_usage(ws.path()).bytes > 0);
        remove_workspace(root.path(), "gone").unwrap();
        assert!(!ws.path().exists());
        assert_eq!(
            std::fs::read_to_string(host.path().join("keep")).unwrap(),
            "host"
        );
        assert!(remove_workspace(root.path(), "..").is_err());
    }
}
