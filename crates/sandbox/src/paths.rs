//! The toolbridge data folder, where memories, conversation workspaces, the sandbox's venv and
//! the chat history live by default.
//!
//! `$XDG_DATA_HOME/toolbridge` when that is set (to an absolute path); else, when running as
//! root, [`ROOT_DATA_DIR`]; else `~/.local/share/toolbridge`. Root gets a system folder because
//! sandboxed code then runs as `nobody`, and under Landlock (no mount namespace) it reaches only
//! folders every user can search: `/root` is mode 700, so workspaces and a venv below it would be
//! out of reach and every `python_execute` call would fail. Root is the normal user in
//! containers, so the default has to work there.

use std::ffi::OsString;
use std::path::PathBuf;

/// The data folder when running as root and `XDG_DATA_HOME` is not set.
pub const ROOT_DATA_DIR: &str = "/var/lib/toolbridge";

/// The data folder of this process (see the module's documentation); `None` when neither
/// `XDG_DATA_HOME` nor `HOME` is set and we are not root.
pub fn data_dir() -> Option<PathBuf> {
    data_dir_with(
        &|name| std::env::var_os(name),
        rustix::process::geteuid().is_root(),
    )
}

/// [`data_dir`] with the environment and the user given.
pub fn data_dir_with(env: &dyn Fn(&str) -> Option<OsString>, root: bool) -> Option<PathBuf> {
    if let Some(xdg) = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Some(xdg.join("toolbridge"));
    }
    if root {
        return Some(PathBuf::from(ROOT_DATA_DIR));
    }
    env("HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|home| home.join(".local").join("share").join("toolbridge"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn root_without_xdg_data_home_uses_the_system_folder_not_root_s_home() {
        let vars = [("HOME", "/root")];
        assert_eq!(
            data_dir_with(&env(&vars), true),
            Some(PathBuf::from("/var/lib/toolbridge"))
        );
    }

    #[test]
    fn a_user_gets_the_xdg_default_under_home() {
        let vars = [("HOME", "/home/ann")];
        assert_eq!(
            data_dir_with(&env(&vars), false),
            Some(PathBuf::from("/home/ann/.local/share/toolbridge"))
        );
    }

    #[test]
    fn xdg_data_home_wins_for_everyone_and_a_relative_one_is_ignored() {
        let vars = [("HOME", "/root"), ("XDG_DATA_HOME", "/srv/data")];
        assert_eq!(
            data_dir_with(&env(&vars), true),
            Some(PathBuf::from("/srv/data/toolbridge"))
        );
        let relative = [("HOME", "/home/ann"), ("XDG_DATA_HOME", "data")];
        assert_eq!(
            data_dir_with(&env(&relative), false),
            Some(PathBuf::from("/home/ann/.local/share/toolbridge"))
        );
        assert_eq!(data_dir_with(&env(&[]), false), None);
    }
}
