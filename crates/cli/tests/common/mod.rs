//! Running the `toolbridge` binary as a user would, isolated from this machine's configuration
//! and data: HOME and XDG_DATA_HOME point into the test's own folder.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `toolbridge ARGS` in `dir`; exit code, stdout, stderr.
pub fn toolbridge(args: &[&str], dir: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// A fresh, empty folder `<base>/tb-<tag>-<name>-<pid>`.
pub fn fresh_dir(base: &Path, tag: &str, name: &str) -> PathBuf {
    let d = base.join(format!("tb-{tag}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A fresh, empty folder under the system's temporary folder.
pub fn temp_dir(tag: &str, name: &str) -> PathBuf {
    fresh_dir(&std::env::temp_dir(), tag, name)
}
