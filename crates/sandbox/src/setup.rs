//! `toolbridge sandbox setup`: a virtual environment with the document-generation libraries,
//! which the sandbox's default Python resolution then uses.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::SandboxError;

/// The pip packages the document-generation skill uses.
///
/// WeasyPrint is held below 66: from 66 on it embeds fonts with its own CMap encoding
/// (`/WP-Encod-0`), which pypdf 7 decodes one byte at a time, so the skill's self-check
/// (`extract_text()` on page 1) reads "\0Q\0u\0a…" instead of the text (seen with WeasyPrint
/// 70.0 and pypdf 7.1.1; 65.1 extracts cleanly, CJK included).
pub const PACKAGES: &[&str] = &[
    "weasyprint<66",
    "python-pptx",
    "python-docx",
    "openpyxl",
    "xlsxwriter",
    "pypdf",
    "Pillow",
    "matplotlib",
    "pandas",
    "beautifulsoup4",
];

/// `<data folder>/sandbox/venv` (see [`crate::paths`]: `~/.local/share/toolbridge/sandbox/venv`,
/// or `/var/lib/toolbridge/sandbox/venv` as root).
pub fn default_venv_dir() -> Option<PathBuf> {
    Some(crate::paths::data_dir()?.join("sandbox").join("venv"))
}

/// The interpreter a venv is made from: Debian's `/usr/bin/python3` when present (it lives in
/// the system directories every backend shows, and is readable by the sandbox uid, unlike an
/// interpreter under `/root`), else `python3` on `PATH`.
fn base_python() -> Result<PathBuf, SandboxError> {
    let system = PathBuf::from("/usr/bin/python3");
    if system.is_file() {
        return Ok(system);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
        })
        .ok_or(SandboxError::NoPython)
}

/// Creates the venv at `dir` (default [`default_venv_dir`]) if it is not there yet and
/// pip-installs [`PACKAGES`] into it, pip's progress going to our stdout/stderr. Running it
/// again only checks (pip finds the requirements satisfied). Returns the venv's directory.
pub fn setup_venv(dir: Option<&Path>) -> Result<PathBuf, SandboxError> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => default_venv_dir().ok_or_else(|| {
            SandboxError::Setup(
                "no data folder (neither XDG_DATA_HOME nor HOME is set): pass --venv DIR".into(),
            )
        })?,
    };
    let python = dir.join("bin").join("python");
    if !python.exists() {
        let base = base_python()?;
        eprintln!(
            "creating the virtual environment {} from {}",
            dir.display(),
            base.display()
        );
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SandboxError::io(format!("creating {}", parent.display()), e))?;
        }
        run(
            Command::new(&base).arg("-m").arg("venv").arg(&dir),
            "python3 -m venv",
        )
        .map_err(|e| {
            SandboxError::Setup(format!("{e} (on Debian: apt-get install python3-venv)"))
        })?;
    }
    eprintln!("installing {} into {}", PACKAGES.join(" "), dir.display());
    run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--progress-bar",
                "on",
            ])
            .args(PACKAGES),
        "pip install",
    )
    .map_err(SandboxError::Setup)?;
    // The sandbox may run the code as another uid (nobody, when we are root): it must be able
    // to read and execute everything in the venv.
    make_world_readable(&dir)
        .map_err(|e| SandboxError::io(format!("making {} readable", dir.display()), e))?;
    Ok(dir)
}

fn run(cmd: &mut Command, what: &str) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Adds read permission for everyone (and search/execute where the owner has it); symlinks are
/// left alone.
fn make_world_readable(root: &Path) -> std::io::Result<()> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path)?;
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode();
        let mut wanted = mode | 0o044;
        if meta.is_dir() || mode & 0o100 != 0 {
            wanted |= 0o011;
        }
        if wanted != mode {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(wanted))?;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                stack.push(entry?.path());
            }
        }
    }
    Ok(())
}
