//! Which Python the sandbox runs, and which host directories it needs to see.

use std::path::{Path, PathBuf};

use crate::config::SandboxConfig;

/// Directories every backend shows read-only; paths under them need no extra bind.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Shown read-only when present: fontconfig's cache of the system fonts (without it every
/// process that renders text, WeasyPrint and matplotlib included, rescans all fonts).
pub const OPTIONAL_SYSTEM_PATHS: &[&str] = &["/var/cache/fontconfig"];

pub fn is_system_dir(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| path.starts_with(d))
}

/// The interpreter: the configured one; else the venv of `toolbridge sandbox setup`; else
/// `/usr/bin/python3`; else `python3` on `PATH`. `must_be_world_reachable`: the code will run
/// as another uid without a mount namespace (Landlock as root), so a venv under a private
/// home (e.g. `/root`, mode 700) cannot be used.
pub fn resolve(config: &SandboxConfig, must_be_world_reachable: bool) -> PathBuf {
    if let Some(python) = &config.python {
        return python.clone();
    }
    if let Some(dir) = crate::setup::default_venv_dir() {
        let python = dir.join("bin").join("python");
        if python.exists() {
            if !must_be_world_reachable || crate::workspace::world_reachable(&python) {
                return python;
            }
            tracing::warn!(
                venv = %dir.display(),
                "the sandbox venv is not reachable by the sandbox uid under Landlock; using the system python3"
            );
        }
    }
    let system = PathBuf::from("/usr/bin/python3");
    if system.exists() {
        return system;
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("python3"))
                .find(|candidate| candidate.is_file())
        })
        .unwrap_or(system)
}

/// Host directories the interpreter needs outside the system directories: a venv (marked by
/// `pyvenv.cfg`) and the installation its `home` points at, or the prefix of an interpreter
/// installed elsewhere (e.g. pyenv's `~/.pyenv/versions/3.x`).
pub fn visible_roots(python: &Path) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    let Some(bin) = python.parent() else {
        return roots;
    };
    if is_system_dir(bin) {
        return roots;
    }
    let Some(prefix) = bin.parent() else {
        return roots;
    };
    let cfg = prefix.join("pyvenv.cfg");
    if let Ok(text) = std::fs::read_to_string(&cfg) {
        roots.push(prefix.to_path_buf());
        let home = text.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(base) = home.and_then(|h| installation_root(&h)) {
            roots.push(base);
        }
    } else if let Some(base) = installation_root(bin) {
        roots.push(base);
    }
    // The binary may be a symlink into yet another installation.
    if let Ok(real) = std::fs::canonicalize(python) {
        if let Some(base) = real.parent().and_then(installation_root) {
            if !roots.iter().any(|r| base.starts_with(r)) {
                roots.push(base);
            }
        }
    }
    roots.retain(|r| !is_system_dir(r) && !exposes_home(r));
    roots.dedup();
    roots
}

/// Whether binding `root` would show the user's home (SSH keys, configuration with keys, the
/// toolbridge data folder with every conversation's workspace and the memory database): the home
/// itself, any folder above it, or a home-level dot folder that holds the data folder
/// (`~/.local`). Such an interpreter is not made visible; `check` then reports it does not run.
fn exposes_home(root: &Path) -> bool {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return false;
    };
    if home.as_os_str().is_empty() || home == Path::new("/") {
        return false;
    }
    home.starts_with(root) || root == home.join(".local") || root == home.join(".local/share")
}

/// The prefix of an installation whose executables are in `bin` (`<prefix>/bin`).
fn installation_root(bin: &Path) -> Option<PathBuf> {
    if is_system_dir(bin) {
        return None;
    }
    let prefix = if bin.file_name().is_some_and(|n| n == "bin") {
        bin.parent()?
    } else {
        bin
    };
    // Only a folder that is a Python installation (it has `lib/python3.*`): a stray `python3` in
    // `~/bin` must not make the whole home visible.
    let is_python_prefix = ["lib", "lib64"].iter().any(|lib| {
        std::fs::read_dir(prefix.join(lib)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.starts_with("python3"))
            })
        })
    });
    is_python_prefix.then(|| prefix.to_path_buf())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn system_python_needs_no_extra_roots() {
        assert!(visible_roots(Path::new("/usr/bin/python3")).is_empty());
    }

    #[test]
    fn venv_and_its_base_are_visible() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            "home = /opt/py/bin\nversion = 3.11\n",
        )
        .unwrap();
        let roots = visible_roots(&venv.join("bin").join("python"));
        // /opt/py is not a Python installation on this machine (no lib/python3.*), so only the
        // venv is bound.
        assert_eq!(roots, vec![venv]);
    }

    #[test]
    fn a_python_in_a_plain_folder_does_not_expose_it() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("python3"), "").unwrap();
        assert!(visible_roots(&bin.join("python3")).is_empty());
        std::fs::create_dir_all(dir.path().join("lib/python3.11")).unwrap();
        assert_eq!(
            visible_roots(&bin.join("python3")),
            vec![dir.path().to_path_buf()]
        );
    }

    #[test]
    fn the_home_and_its_data_folders_are_never_bound() {
        let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
            return;
        };
        assert!(exposes_home(&home));
        assert!(exposes_home(Path::new("/")) || home == Path::new("/"));
        assert!(exposes_home(&home.join(".local")));
        assert!(!exposes_home(
            &home.join(".local/share/toolbridge/sandbox/venv")
        ));
        assert!(!exposes_home(Path::new("/opt/py")));
    }
}
