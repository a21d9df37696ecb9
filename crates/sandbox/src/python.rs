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
    roots.retain(|r| !is_system_dir(r));
    roots.dedup();
    roots
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
    Some(prefix.to_path_buf())
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
        assert_eq!(roots, vec![venv, PathBuf::from("/opt/py")]);
    }
}
