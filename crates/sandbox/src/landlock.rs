//! The Landlock + seccomp backend, for machines where bubblewrap is missing or unusable.
//!
//! Files: read-only (read, list, execute) on the system directories, the interpreter's
//! installation, `read_only_paths`, `/proc` and a few device files; read-write on the workspace
//! only (its `.tmp` is the program's `TMPDIR`). Everything else, the user's home and other
//! conversations' workspaces included, cannot even be read. Network: Landlock (ABI ≥ 4) denies
//! TCP bind/connect, and seccomp refuses `socket()` for every family, AF_UNIX included, because
//! Landlock does not cover connecting to a named Unix socket (an SSH agent, a session bus) the
//! code could otherwise reach; `socketpair()` stays. Scoping (ABI ≥ 6) keeps signals and
//! abstract Unix sockets inside the sandbox. As root, the child switches to the sandbox uid
//! with every capability gone.
//!
//! Processes: every command runs in a PID namespace of its own under a small reaper (see
//! [`sys::PidNamespace`]), so nothing it starts, however detached, outlives it.
//!
//! Limits against bubblewrap: no mount namespace (the workspace keeps its host path, so the tools
//! rewrite `/workspace`), and `/proc` is still the host's (it lists host processes, though
//! Landlock forbids tracing them or reading their environment).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use crate::config::Limits;
use crate::error::SandboxError;
use crate::limits::{nproc_limit, Rlimits, NPROC_UNLIMITED};
use crate::sandbox::{Confinement, RunSpec};
use crate::sys;

// Filesystem rights (linux/landlock.h).
const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
const REFER: u64 = 1 << 13;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;
/// Rights that apply to a file (not a directory); a rule on a file may only hold these.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
const READ_ONLY: u64 = EXECUTE | READ_FILE | READ_DIR;
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// Device files a program may need; writable ones second.
const DEVICES_READ: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

#[derive(Clone, Debug)]
pub struct Landlock {
    pub abi: u32,
}

impl Landlock {
    /// Landlock's ABI and seccomp's presence; then a real test run of `/bin/true`.
    pub fn probe() -> Result<Landlock, String> {
        if filter::AUDIT_ARCH.is_none() {
            return Err("the seccomp filter supports x86_64 and aarch64 only".into());
        }
        let abi = sys::landlock_abi().map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSYS) => "the kernel has no Landlock (5.13+ needed)".to_owned(),
            Some(libc::EOPNOTSUPP) => {
                "Landlock is disabled (boot with lsm=...,landlock)".to_owned()
            }
            _ => format!("Landlock: {e}"),
        })?;
        if !seccomp_available() {
            return Err("the kernel has no seccomp filter support".into());
        }
        let landlock = Landlock { abi };
        landlock.test_run()?;
        Ok(landlock)
    }

    fn test_run(&self) -> Result<(), String> {
        let dir = crate::workspace::scratch_dir("landlock-probe");
        std::fs::create_dir_all(&dir).map_err(|e| format!("probe workspace: {e}"))?;
        let result = (|| {
            let mut cmd = std::process::Command::new("/bin/true");
            cmd.env_clear().current_dir(&dir);
            // No uid switch: the probe dir may not be ours to give away; the switch itself is
            // plain setresuid.
            let setup = self.child_setup(
                &Confinement {
                    workspace: &dir,
                    extra_ro: &[],
                    env: &[],
                    limits: &Limits::default(),
                    run_as: None,
                    pids_budget: false,
                },
                Vec::new(),
            )?;
            sys::install(&mut cmd, setup);
            cmd.status().map_err(|e| {
                format!("test run: {e} (Landlock, seccomp or the command's own PID namespace was refused)")
            })
        })();
        let _ = std::fs::remove_dir(&dir);
        match result? {
            status if status.success() => Ok(()),
            status => Err(format!("test run failed ({status})")),
        }
    }

    pub fn command(
        &self,
        confinement: &Confinement<'_>,
        spec: &RunSpec<'_>,
        cgroups: Vec<OwnedFd>,
    ) -> Result<tokio::process::Command, SandboxError> {
        let setup = self
            .child_setup(confinement, cgroups)
            .map_err(|reason| SandboxError::LandlockUnavailable { reason })?;
        let mut cmd = std::process::Command::new(spec.program);
        cmd.args(spec.args)
            .env_clear()
            .envs(confinement.env.iter().map(|(k, v)| (k, v)))
            .current_dir(confinement.workspace);
        sys::install(&mut cmd, setup);
        Ok(tokio::process::Command::from(cmd))
    }

    fn child_setup(
        &self,
        confinement: &Confinement<'_>,
        cgroups: Vec<OwnedFd>,
    ) -> Result<sys::ChildSetup, String> {
        let Confinement {
            workspace,
            extra_ro,
            limits,
            run_as,
            pids_budget,
            ..
        } = *confinement;
        let ruleset = self
            .ruleset(workspace, extra_ro)
            .map_err(|e| format!("Landlock ruleset: {e}"))?;
        let uid = run_as.map_or_else(|| rustix::process::getuid().as_raw(), |(uid, _)| uid);
        let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(63);
        let seccomp = filter::program().ok_or_else(|| "unsupported architecture".to_owned())?;
        let pid_namespace = sys::PidNamespace::for_current_process();
        // In a user namespace of its own the kernel counts RLIMIT_NPROC per namespace: only
        // this command's tasks, plus the two helpers (the waiter and the reaper).
        let nproc = if pids_budget {
            // The cgroup's pids.max counts this sandbox's tasks alone.
            NPROC_UNLIMITED
        } else if pid_namespace.user_maps.is_some() {
            limits.processes.saturating_add(2)
        } else {
            nproc_limit(uid, limits.processes)
        };
        Ok(sys::ChildSetup {
            rlimits: Rlimits::new(limits, nproc),
            drop_to: run_as,
            last_cap,
            ruleset,
            seccomp,
            pid_namespace,
            cgroups,
        })
    }

    fn handled_fs(&self) -> u64 {
        let mut handled = (1 << 13) - 1;
        if self.abi >= 2 {
            handled |= REFER;
        }
        if self.abi >= 3 {
            handled |= TRUNCATE;
        }
        if self.abi >= 5 {
            handled |= IOCTL_DEV;
        }
        handled
    }

    fn ruleset(&self, workspace: &Path, extra_ro: &[PathBuf]) -> std::io::Result<OwnedFd> {
        let handled = self.handled_fs();
        let (net, scoped, size) = match self.abi {
            0..=3 => (0, 0, 8),
            4 | 5 => (NET_BIND_TCP | NET_CONNECT_TCP, 0, 16),
            _ => (
                NET_BIND_TCP | NET_CONNECT_TCP,
                SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL,
                24,
            ),
        };
        let ruleset = sys::landlock_create_ruleset(handled, net, scoped, size)?;
        let ro_dirs = crate::python::SYSTEM_DIRS
            .iter()
            .map(PathBuf::from)
            .chain(extra_ro.iter().cloned())
            .chain(std::iter::once(PathBuf::from("/proc")));
        for path in ro_dirs {
            add_rule(&ruleset, &path, READ_ONLY & handled)?;
        }
        let device_rights = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV;
        for dev in DEVICES_READ {
            let write = DEVICES_WRITE.contains(dev);
            let rights = if write {
                device_rights
            } else {
                READ_FILE | IOCTL_DEV
            };
            add_rule(&ruleset, Path::new(dev), rights & handled)?;
        }
        add_rule(&ruleset, workspace, handled)?;
        Ok(ruleset)
    }
}

/// Adds a rule for `path` if it exists (a missing optional path is no error).
fn add_rule(ruleset: &OwnedFd, path: &Path, access: u64) -> std::io::Result<()> {
    let fd = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
    let access = if is_dir { access } else { access & FILE_RIGHTS };
    sys::landlock_add_path_rule(ruleset, &fd, access)
}

fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
}

/// The seccomp BPF program (classic BPF, checked by the kernel when loaded).
pub mod filter {
    /// `AUDIT_ARCH_*` of the architecture we are built for.
    #[cfg(target_arch = "x86_64")]
    pub const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
    #[cfg(target_arch = "aarch64")]
    pub const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub const AUDIT_ARCH: Option<u32> = None;

    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const JGE_K: u16 = 0x35;
    const RET_K: u16 = 0x06;
    const OFFSET_NR: u32 = 0;
    const OFFSET_ARCH: u32 = 4;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;

    /// Refused system calls and the errno each returns.
    fn denied() -> Vec<(i64, i32)> {
        vec![
            // No sockets at all (see the module comment); socketpair() stays allowed.
            (libc::SYS_socket, libc::EACCES),
            // io_uring can open sockets and files without the syscalls above.
            (libc::SYS_io_uring_setup, libc::ENOSYS),
            (libc::SYS_io_uring_enter, libc::ENOSYS),
            (libc::SYS_io_uring_register, libc::ENOSYS),
            (libc::SYS_bpf, libc::EPERM),
            (libc::SYS_perf_event_open, libc::EPERM),
            (libc::SYS_keyctl, libc::EPERM),
            (libc::SYS_add_key, libc::EPERM),
            (libc::SYS_request_key, libc::EPERM),
            (libc::SYS_ptrace, libc::EPERM),
            (libc::SYS_unshare, libc::EPERM),
            (libc::SYS_setns, libc::EPERM),
            (libc::SYS_userfaultfd, libc::EPERM),
        ]
    }

    fn stmt(code: u16, k: u32) -> libc::sock_filter {
        libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        }
    }

    fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
        libc::sock_filter { code, jt, jf, k }
    }

    /// The program; `None` on an architecture we have no numbers for.
    pub fn program() -> Option<Vec<libc::sock_filter>> {
        let arch = AUDIT_ARCH?;
        let mut p = vec![
            stmt(LD_W_ABS, OFFSET_ARCH),
            // Another ABI (i386 via int 0x80) has other syscall numbers: kill.
            jump(JEQ_K, arch, 1, 0),
            stmt(RET_K, RET_KILL_PROCESS),
            stmt(LD_W_ABS, OFFSET_NR),
        ];
        if cfg!(target_arch = "x86_64") {
            // x32 syscalls (bit 30) alias the native ones under other numbers.
            p.push(jump(JGE_K, 0x4000_0000, 0, 1));
            p.push(stmt(RET_K, RET_KILL_PROCESS));
        }
        for (nr, errno) in denied() {
            let nr = u32::try_from(nr).ok()?;
            let errno = u32::try_from(errno).ok()?;
            p.push(jump(JEQ_K, nr, 0, 1));
            p.push(stmt(RET_K, RET_ERRNO | (errno & 0xffff)));
        }
        p.push(stmt(RET_K, RET_ALLOW));
        Some(p)
    }
}
