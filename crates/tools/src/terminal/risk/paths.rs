//! Where a written path points: the workspace, `/tmp`, elsewhere, a device, the network.

use toolbridge_agent::approval::CallRisk;

use super::{Ctx, Findings};
use crate::terminal::shell::Word;

/// Where a path points.
pub(super) enum Place {
    Inside,
    Outside(String),
    /// `/dev/null`, `/dev/stdout`, a descriptor.
    Harmless,
    /// A disk or memory device.
    Device(String),
    /// bash's `/dev/tcp/…` and `/dev/udp/…`.
    Network(String),
    /// Computed at run time.
    Dynamic,
}

/// `a/./b/../c` → `a/c` (without a leading `/`); `None` if it climbs above `/` from an absolute
/// path; a relative path that climbs keeps its leading `..`.
pub(super) fn normalize(path: &str) -> Option<String> {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => return None,
                _ => parts.push(".."),
            },
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

impl Ctx {
    /// A path a command writes (or deletes, or changes).
    pub(super) fn written(&mut self, f: &mut Findings, target: &Word, what: &str) {
        match self.place(target) {
            Place::Inside => f.add(
                CallRisk::Medium,
                format!("{what} {} in the workspace", target.text),
            ),
            Place::Harmless => {}
            Place::Outside(p) => {
                f.add(CallRisk::High, format!("{what} {p}, outside the workspace"))
            }
            Place::Device(p) => f.add(CallRisk::High, format!("{what} the device {p}")),
            Place::Network(p) => f.add(CallRisk::High, format!("opens a network connection ({p})")),
            Place::Dynamic => f.add(
                CallRisk::Unknown,
                format!("{what} {}, a path only known at run time", target.text),
            ),
        }
    }

    pub(super) fn place(&self, w: &Word) -> Place {
        if w.starts_with_home() {
            // The sandbox's HOME is the workspace.
            return match normalize(&w.text[1..]) {
                Some(rel) if !rel.starts_with("..") => Place::Inside,
                _ => Place::Outside(w.text.clone()),
            };
        }
        if w.dynamic {
            return Place::Dynamic;
        }
        let text = w.text.as_str();
        if text.starts_with('~') {
            return Place::Outside(text.to_owned());
        }
        if text.starts_with('/') {
            let Some(abs) = normalize(text) else {
                return Place::Outside(text.to_owned());
            };
            let abs = format!("/{abs}");
            let under = |root: &str| abs == root || abs.starts_with(&format!("{root}/"));
            if under("/dev/tcp") || under("/dev/udp") {
                return Place::Network(abs);
            }
            if matches!(
                abs.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty" | "/dev/zero"
            ) || under("/dev/fd")
                || under("/proc/self/fd")
            {
                return Place::Harmless;
            }
            if under("/dev") {
                return Place::Device(abs);
            }
            if under("/workspace") || under("/tmp") {
                return Place::Inside;
            }
            return Place::Outside(abs);
        }
        match normalize(text) {
            Some(rel) if !rel.starts_with("..") && self.cwd_inside => Place::Inside,
            _ => Place::Outside(text.to_owned()),
        }
    }

    pub(super) fn change_directory(&mut self, to: Option<&Word>) {
        let inside = match to {
            None => true,
            Some(w) => matches!(self.place(w), Place::Inside),
        };
        // Once the directory may have left the workspace, relative paths are judged outside for
        // the rest of the line (a subshell's `cd` may or may not last; assume the worst).
        self.cwd_inside &= inside;
    }
}
