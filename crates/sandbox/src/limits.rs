//! Resource limits: their rlimit values, and which one a finished process hit.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use crate::config::Limits;

const MIB: u64 = 1024 * 1024;

/// Which limit a finished process hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitHit {
    Memory,
    Cpu,
    FileSize,
    Processes,
    OpenFiles,
}

impl std::fmt::Display for LimitHit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Memory => "memory",
            Self::Cpu => "CPU time",
            Self::FileSize => "file size",
            Self::Processes => "processes",
            Self::OpenFiles => "open files",
        })
    }
}

/// Which limit a finished process hit, from its exit status and the tail of its stderr.
///
/// Signals are recognised both as a signal death and as the `128 + signal` exit code a shell or
/// bubblewrap reports for a child killed by it. The CPU limit's soft value sends SIGXCPU (one
/// second before the hard value's SIGKILL), so SIGKILL alone is not taken as a CPU hit: it is
/// also what a wall-clock timeout or `kill_group` sends.
pub fn explain(status: &ExitStatus, stderr_tail: &str) -> Option<LimitHit> {
    let signal = status.signal().or_else(|| {
        status
            .code()
            .filter(|c| (129..160).contains(c))
            .map(|c| c - 128)
    });
    match signal {
        Some(libc::SIGXCPU) => return Some(LimitHit::Cpu),
        Some(libc::SIGXFSZ) => return Some(LimitHit::FileSize),
        _ => {}
    }
    if status.success() {
        return None;
    }
    explain_stderr(stderr_tail)
}

/// The stderr half of [`explain`], for a process that is still running (a persistent
/// interpreter whose cell raised `MemoryError`).
pub fn explain_stderr(text: &str) -> Option<LimitHit> {
    if text.contains("File too large") {
        return Some(LimitHit::FileSize);
    }
    if text.contains("Too many open files") {
        return Some(LimitHit::OpenFiles);
    }
    let fork_words = ["fork", "spawn", "clone", "thread", "Cannot create process"];
    let mentions_fork = fork_words.iter().any(|w| text.contains(w));
    // EAGAIN from fork(); Python's traceback of `-c` code does not show the failing line, and
    // a BlockingIOError with errno 11 in sandboxed code is in practice a refused fork.
    if (mentions_fork && text.contains("Resource temporarily unavailable"))
        || text.contains("BlockingIOError: [Errno 11]")
        || text.contains("can't start new thread")
    {
        return Some(LimitHit::Processes);
    }
    if text.contains("MemoryError")
        || text.contains("Cannot allocate memory")
        || text.contains("ENOMEM")
        || text.contains("out of memory")
        || text.contains("std::bad_alloc")
    {
        return Some(LimitHit::Memory);
    }
    None
}

/// Number of tasks (processes and threads) running with real uid `uid`, from `/proc`.
pub fn tasks_of_uid(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|status| {
            let real_uid = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()?;
            let threads = status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|t| t.trim().parse::<u64>().ok())
                .unwrap_or(1);
            (real_uid == uid).then_some(threads)
        })
        .sum()
}

/// The RLIMIT_NPROC value that lets the sandboxed tree start `processes` more tasks: the kernel
/// counts every task of the real uid system-wide (in the namespace levels it applies to), so
/// the tasks the uid already runs are added. Two sandboxes of one uid therefore share headroom;
/// a fork bomb still stops at the limit instead of taking the host down.
pub fn nproc_limit(uid: u32, processes: u64) -> u64 {
    tasks_of_uid(uid).saturating_add(processes)
}

/// RLIMIT_NPROC when a cgroup's `pids.max` bounds the sandbox instead (RLIM_INFINITY).
pub const NPROC_UNLIMITED: u64 = u64::MAX;

/// The five rlimits, as (resource, soft, hard).
#[derive(Clone, Copy, Debug)]
pub struct Rlimits {
    pub address_space: u64,
    pub cpu_soft: u64,
    pub cpu_hard: u64,
    pub file_size: u64,
    pub nproc: u64,
    pub nofile: u64,
}

impl Rlimits {
    pub fn new(limits: &Limits, nproc: u64) -> Self {
        let cpu = limits.cpu_secs.max(1);
        Self {
            address_space: limits.memory_mb.saturating_mul(MIB),
            cpu_soft: cpu,
            // One second of grace after SIGXCPU, then SIGKILL for code that ignores it.
            cpu_hard: cpu.saturating_add(1),
            file_size: limits.file_size_mb.saturating_mul(MIB),
            nproc,
            nofile: limits.open_files,
        }
    }

    /// Options for util-linux `prlimit` (soft:hard). [`NPROC_UNLIMITED`] leaves RLIMIT_NPROC as
    /// inherited: prlimit runs after the switch to the sandbox uid, which may not raise it.
    pub fn prlimit_args(&self) -> Vec<String> {
        let mut args = vec![
            format!("--as={0}:{0}", self.address_space),
            format!("--cpu={}:{}", self.cpu_soft, self.cpu_hard),
            format!("--fsize={0}:{0}", self.file_size),
        ];
        if self.nproc != NPROC_UNLIMITED {
            args.push(format!("--nproc={0}:{0}", self.nproc));
        }
        args.extend([
            format!("--nofile={0}:{0}", self.nofile),
            // No core dumps of model-written code in the workspace.
            "--core=0:0".to_owned(),
        ]);
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn signalled(sig: i32) -> ExitStatus {
        ExitStatus::from_raw(sig)
    }

    #[test]
    fn signals_and_their_exit_codes() {
        assert_eq!(explain(&signalled(libc::SIGXCPU), ""), Some(LimitHit::Cpu));
        assert_eq!(
            explain(&exited(128 + libc::SIGXCPU), ""),
            Some(LimitHit::Cpu)
        );
        assert_eq!(
            explain(&signalled(libc::SIGXFSZ), ""),
            Some(LimitHit::FileSize)
        );
        assert_eq!(
            explain(&exited(128 + libc::SIGXFSZ), ""),
            Some(LimitHit::FileSize)
        );
        assert_eq!(explain(&signalled(libc::SIGKILL), ""), None);
    }

    #[test]
    fn messages() {
        let f = exited(1);
        assert_eq!(
            explain(&f, "Traceback...\nMemoryError\n"),
            Some(LimitHit::Memory)
        );
        assert_eq!(
            explain(&f, "sh: Cannot allocate memory"),
            Some(LimitHit::Memory)
        );
        assert_eq!(
            explain(&f, "OSError: [Errno 27] File too large"),
            Some(LimitHit::FileSize)
        );
        assert_eq!(
            explain(&f, "OSError: [Errno 24] Too many open files: 'x'"),
            Some(LimitHit::OpenFiles)
        );
        assert_eq!(
            explain(
                &f,
                "  os.fork()\nBlockingIOError: [Errno 11] Resource temporarily unavailable"
            ),
            Some(LimitHit::Processes)
        );
        assert_eq!(
            explain(
                &f,
                "sh: 1: Cannot fork\nsh: fork: Resource temporarily unavailable"
            ),
            Some(LimitHit::Processes)
        );
        assert_eq!(
            explain(&f, "RuntimeError: can't start new thread"),
            Some(LimitHit::Processes)
        );
        assert_eq!(explain(&f, "NameError: name 'x' is not defined"), None);
        assert_eq!(explain(&exited(0), "MemoryError"), None);
    }
}
