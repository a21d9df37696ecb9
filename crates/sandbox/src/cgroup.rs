//! Per-sandbox budgets: each sandboxed command runs in a cgroup leaf of its own whose memory
//! (`memory_mb`, swap included) and task count (`processes`) cover everything it starts.
//!
//! rlimits are per process (RLIMIT_AS: ten children of 600 MB each pass a 1 GB limit) or per
//! real uid across the whole host (RLIMIT_NPROC: one sandbox's fork bomb uses up another's
//! headroom); a cgroup counts the sandbox's process tree and nothing else.
//!
//! Where the controllers are found, per controller: in the unified (v2) hierarchy when our own
//! cgroup offers it, else in a v1 hierarchy mounted for it. Leaves are made next to us:
//!
//! - v1: below our own cgroup of that hierarchy (v1 has no rule against processes in inner
//!   cgroups).
//! - v2: below our own cgroup, whose `cgroup.subtree_control` must enable `memory` and `pids`.
//!   A v2 cgroup that holds processes cannot enable controllers for its children (the "no
//!   internal processes" rule), so when we are alone in our cgroup we move into a leaf of our
//!   own (`toolbridge-serve`) first, as systemd's delegation expects; when other processes share
//!   it, there are no budgets.
//!
//! A leaf is named `toolbridge-<our pid>-<n>`; the command joins it between fork and exec (see
//! [`crate::sys::join_cgroups`]), before any sandbox process exists, so nothing escapes it. The
//! leaf is emptied (SIGKILL) and removed when its [`Budget`] is dropped; leaves of dead
//! toolbridge processes are removed at start.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::config::Limits;

const MIB: u64 = 1024 * 1024;
/// Leaves are `toolbridge-<pid>-<n>`.
const LEAF_PREFIX: &str = "toolbridge-";
/// Where we move ourselves in a v2 cgroup we would otherwise share with our leaves.
const SERVE_LEAF: &str = "toolbridge-serve";
/// Processes a sandbox starts besides the command's own: bubblewrap's outer process and its
/// PID 1, or the Landlock backend's waiter and reaper.
pub const HELPER_TASKS: u64 = 2;
/// Numbers the leaves of this process (shared by every [`Cgroups`], so names never collide).
static NEXT_LEAF: AtomicU64 = AtomicU64::new(0);

/// A cgroup hierarchy version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

/// Where the leaves of one controller are made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub parent: PathBuf,
    pub version: Version,
}

/// The cgroups this process can give its sandboxes, found once at start.
#[derive(Debug)]
pub struct Cgroups {
    pub memory: Place,
    pub pids: Place,
    /// Leaves whose processes were killed but had not yet exited when their budget was dropped:
    /// removed on the next sweep.
    leftovers: Arc<Mutex<Vec<PathBuf>>>,
}

impl Cgroups {
    /// The memory and pids controllers, or why this machine gives no per-sandbox budgets.
    pub fn detect() -> Result<Cgroups, String> {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| format!("reading /proc/self/cgroup: {e}"))?;
        let v2 = v2_dir(&mounts, &own);
        let v2_offers = |controller: &str| {
            v2.as_deref().is_some_and(|dir| {
                read_words(&dir.join("cgroup.controllers")).contains(&controller.to_owned())
            })
        };
        let mut places = Vec::new();
        for controller in ["memory", "pids"] {
            let place = if v2_offers(controller) {
                v2.clone().map(|parent| Place {
                    parent,
                    version: Version::V2,
                })
            } else {
                v1_dir(&mounts, &own, controller).map(|parent| Place {
                    parent,
                    version: Version::V1,
                })
            };
            places.push(place.ok_or_else(|| {
                format!("no cgroup {controller} controller is available to this process")
            })?);
        }
        let pids = places.pop().ok_or("no pids controller")?;
        let memory = places.pop().ok_or("no memory controller")?;
        for place in [&memory, &pids] {
            if place.version == Version::V2 {
                enable_v2_controllers(&place.parent)?;
            }
        }
        let cgroups = Cgroups {
            memory,
            pids,
            leftovers: Arc::new(Mutex::new(Vec::new())),
        };
        // A test leaf proves we may create, limit and remove leaves here.
        let probe = cgroups.leaf(&Limits::default())?;
        drop(probe);
        cgroups.remove_stale();
        Ok(cgroups)
    }

    /// The directories leaves are made in (one when both controllers share a v2 cgroup).
    fn parents(&self) -> Vec<&Path> {
        let mut parents = vec![self.memory.parent.as_path()];
        if self.pids.parent != self.memory.parent {
            parents.push(self.pids.parent.as_path());
        }
        parents
    }

    /// A new leaf limited to `limits.memory_mb` of memory (swap included) and
    /// `limits.processes` tasks plus the sandbox's helpers.
    pub fn leaf(&self, limits: &Limits) -> Result<Budget, String> {
        self.sweep();
        let name = format!(
            "{LEAF_PREFIX}{}-{}",
            std::process::id(),
            NEXT_LEAF.fetch_add(1, Ordering::Relaxed)
        );
        let mut budget = Budget {
            dirs: Vec::new(),
            memory: self.memory.parent.join(&name),
            memory_version: self.memory.version,
            leftovers: Arc::clone(&self.leftovers),
        };
        for parent in self.parents() {
            let dir = parent.join(&name);
            std::fs::create_dir(&dir)
                .map_err(|e| format!("creating the cgroup {}: {e}", dir.display()))?;
            budget.dirs.push(dir);
        }
        let memory = limits.memory_mb.saturating_mul(MIB).to_string();
        let tasks = limits.processes.saturating_add(HELPER_TASKS).to_string();
        let memory_dir = self.memory.parent.join(&name);
        let pids_dir = self.pids.parent.join(&name);
        match self.memory.version {
            Version::V2 => {
                write(&memory_dir.join("memory.max"), &memory)?;
                // Absent when the kernel has no swap accounting: then there is no swap to use.
                write_if_present(&memory_dir.join("memory.swap.max"), "0")?;
            }
            Version::V1 => {
                write(&memory_dir.join("memory.limit_in_bytes"), &memory)?;
                // Memory plus swap, when swap is accounted: the same, so no swap at all.
                write_if_present(&memory_dir.join("memory.memsw.limit_in_bytes"), &memory)?;
            }
        }
        write(&pids_dir.join("pids.max"), &tasks)?;
        Ok(budget)
    }

    /// Removes the leaves whose processes have exited since their budget was dropped.
    fn sweep(&self) {
        let mut leftovers = lock(&self.leftovers);
        leftovers.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
    }

    /// Removes the leaves of toolbridge processes that are gone (killing what is left in them).
    fn remove_stale(&self) {
        for parent in self.parents() {
            let Ok(entries) = std::fs::read_dir(parent) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(owner) = leaf_owner(&name.to_string_lossy()) else {
                    continue;
                };
                if Path::new("/proc").join(owner.to_string()).exists() {
                    continue;
                }
                tracing::info!(cgroup = %entry.path().display(), "removing the cgroup of an earlier toolbridge process");
                kill_all(&entry.path());
                if std::fs::remove_dir(entry.path()).is_err() {
                    lock(&self.leftovers).push(entry.path());
                }
            }
        }
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        for dir in lock(&self.leftovers).drain(..) {
            kill_all(&dir);
            wait_until_empty(&dir, EMPTY_WAIT);
            let _ = std::fs::remove_dir(&dir);
        }
    }
}

/// One sandbox's cgroup leaf (one directory per hierarchy). Dropping it kills whatever still runs
/// in it and removes it.
#[derive(Debug)]
pub struct Budget {
    dirs: Vec<PathBuf>,
    memory: PathBuf,
    memory_version: Version,
    leftovers: Arc<Mutex<Vec<PathBuf>>>,
}

impl Budget {
    /// Write-only `cgroup.procs` of each directory, for the command to join between fork and
    /// exec (close-on-exec: the sandboxed program never holds them).
    pub fn join_handles(&self) -> Result<Vec<OwnedFd>, String> {
        self.dirs
            .iter()
            .map(|dir| {
                let path = dir.join("cgroup.procs");
                rustix::fs::open(
                    &path,
                    rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
                    rustix::fs::Mode::empty(),
                )
                .map_err(|e| format!("opening {}: {e}", path.display()))
            })
            .collect()
    }

    /// The highest memory use of the sandbox so far, bytes (v1 counts the page cache too).
    pub fn memory_peak(&self) -> Option<u64> {
        let file = match self.memory_version {
            Version::V2 => "memory.peak",
            Version::V1 => "memory.max_usage_in_bytes",
        };
        read_number(&self.memory.join(file))
    }

    /// How many times the kernel killed a process of the sandbox for going over its memory.
    pub fn oom_kills(&self) -> u64 {
        let file = match self.memory_version {
            Version::V2 => "memory.events",
            Version::V1 => "memory.oom_control",
        };
        std::fs::read_to_string(self.memory.join(file))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    /// The leaf's directories (one per hierarchy).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        for dir in std::mem::take(&mut self.dirs) {
            kill_all(&dir);
            // Killed processes leave the cgroup once they have exited, usually within
            // milliseconds; one that takes longer is removed by a later sweep.
            wait_until_empty(&dir, EMPTY_WAIT);
            if std::fs::remove_dir(&dir).is_err() && dir.exists() {
                lock(&self.leftovers).push(dir);
            }
        }
    }
}

/// How long dropping a budget waits for its killed processes to leave the leaf.
const EMPTY_WAIT: std::time::Duration = std::time::Duration::from_millis(200);

/// Waits (at most `limit`) until no process is left in the cgroup `dir`.
fn wait_until_empty(dir: &Path, limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|p| !p.trim().is_empty())
        && start.elapsed() < limit
    {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// SIGKILL to every process in the cgroup `dir` (`cgroup.kill` where the kernel has it).
fn kill_all(dir: &Path) {
    if std::fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            // ESRCH (already gone) is the expected race.
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// The pid in a leaf's name `toolbridge-<pid>-<n>`.
fn leaf_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(LEAF_PREFIX)?;
    let (pid, n) = rest.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Our own v2 cgroup's directory, when a cgroup2 hierarchy is mounted: where our leaves go. Once
/// we moved into [`SERVE_LEAF`] (an earlier sandbox of this process), that is its parent.
fn v2_dir(mountinfo: &str, own: &str) -> Option<PathBuf> {
    let (root, mount_point) = mount_of(mountinfo, |fstype, _| fstype == "cgroup2")?;
    let path = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = join_cgroup(&mount_point, &root, path);
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(parent)) if name == SERVE_LEAF => Some(parent.to_path_buf()),
        _ => Some(dir),
    }
}

/// Our own cgroup's directory in the v1 hierarchy of `controller`.
fn v1_dir(mountinfo: &str, own: &str, controller: &str) -> Option<PathBuf> {
    let (root, mount_point) = mount_of(mountinfo, |fstype, options| {
        fstype == "cgroup" && options.split(',').any(|o| o == controller)
    })?;
    let path = own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })?;
    Some(join_cgroup(&mount_point, &root, path))
}

/// The (root, mount point) of the first mount whose filesystem type and super options match.
fn mount_of(mountinfo: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(String, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut fields = left.split(' ');
        let root = fields.nth(3)?;
        let mount_point = fields.next()?;
        let mut right = right.split(' ');
        let fstype = right.next()?;
        let _source = right.next()?;
        let options = right.next().unwrap_or("");
        wanted(fstype, options).then(|| (root.to_owned(), PathBuf::from(mount_point)))
    })
}

/// The directory of cgroup `path` (as `/proc/self/cgroup` shows it) in a hierarchy mounted at
/// `mount_point` whose root is `root`.
fn join_cgroup(mount_point: &Path, root: &str, path: &str) -> PathBuf {
    let relative = path.strip_prefix(root).unwrap_or(path);
    mount_point.join(relative.trim_start_matches('/'))
}

/// Makes `memory` and `pids` available to the children of the v2 cgroup `dir`; when `dir`
/// holds only this process, moves it into a leaf of its own first.
fn enable_v2_controllers(dir: &Path) -> Result<(), String> {
    let control = dir.join("cgroup.subtree_control");
    let enabled = read_words(&control);
    if ["memory", "pids"]
        .iter()
        .all(|c| enabled.contains(&(*c).to_owned()))
    {
        return Ok(());
    }
    match std::fs::write(&control, "+memory +pids") {
        Ok(()) => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
        Err(e) => {
            return Err(format!(
                "enabling memory and pids in {}: {e}",
                control.display()
            ))
        }
    }
    // Busy: processes live in `dir` itself. Only when they are all ours may we move out of it.
    let ours = std::process::id().to_string();
    let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
    if procs.lines().any(|p| p.trim() != ours) {
        return Err(format!(
            "the cgroup {} holds other processes besides toolbridge, so it cannot hand memory and \
             pids limits to sandboxes (run toolbridge in a cgroup of its own, e.g. a systemd \
             service with Delegate=yes)",
            dir.display()
        ));
    }
    let serve = dir.join(SERVE_LEAF);
    match std::fs::create_dir(&serve) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("creating {}: {e}", serve.display())),
    }
    write(&serve.join("cgroup.procs"), &ours)?;
    write(&control, "+memory +pids")
}

fn write(path: &Path, value: &str) -> Result<(), String> {
    std::fs::write(path, value).map_err(|e| format!("writing {value} to {}: {e}", path.display()))
}

fn write_if_present(path: &Path, value: &str) -> Result<(), String> {
    if path.exists() {
        write(path, value)
    } else {
        Ok(())
    }
}

fn read_words(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn lock(m: &Mutex<Vec<PathBuf>>) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
    // A list of paths cannot be left inconsistent by a panic.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str =
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n\
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n\
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

    #[test]
    fn finds_our_cgroup_in_each_hierarchy() {
        let own = "8:pids:/\n4:memory:/process_api/abc\n0::/user.slice\n";
        assert_eq!(
            v1_dir(HYBRID, own, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v1_dir(HYBRID, own, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            v2_dir(HYBRID, own),
            Some(PathBuf::from("/sys/fs/cgroup/unified/user.slice"))
        );
        assert_eq!(v1_dir(HYBRID, own, "cpu"), None);
    }

    #[test]
    fn a_namespaced_mount_root_is_taken_off() {
        let mounts = "30 20 0:26 /docker/x /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            v2_dir(mounts, "0::/docker/x/app\n"),
            Some(PathBuf::from("/sys/fs/cgroup/app"))
        );
    }

    #[test]
    fn after_moving_into_our_own_leaf_the_leaves_stay_beside_it() {
        assert_eq!(
            v2_dir(HYBRID, "0::/app/toolbridge-serve\n"),
            Some(PathBuf::from("/sys/fs/cgroup/unified/app"))
        );
    }

    #[test]
    fn leaf_names_carry_their_owner() {
        assert_eq!(leaf_owner("toolbridge-123-4"), Some(123));
        assert_eq!(leaf_owner("toolbridge-serve"), None);
        assert_eq!(leaf_owner("other-1-2"), None);
    }
}
