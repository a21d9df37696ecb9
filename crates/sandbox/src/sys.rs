//! The crate's only unsafe code: raw Landlock syscalls, and the steps a Landlock-sandboxed child
//! takes between `fork` and `exec`.
//!
//! Between `fork` and `exec` of a multi-threaded parent only async-signal-safe calls are
//! allowed: the `pre_exec` closure makes plain syscalls on data prepared before the fork (the
//! ruleset fd, the BPF program, the limit values) and never allocates or locks.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::limits::Rlimits;

// Landlock UAPI (linux/landlock.h).
const LANDLOCK_CREATE_RULESET_VERSION: u32 = 1;
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version the kernel offers, or why there is none.
pub fn landlock_abi() -> Result<u32, io::Error> {
    // SAFETY: with a null attr, size 0 and the VERSION flag the syscall only returns a number.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(ret).map_err(|_| io::Error::other("bad Landlock ABI number"))
}

/// Creates a ruleset; `attr_size` is the struct size the ABI knows (8, 16 or 24 bytes).
pub fn landlock_create_ruleset(
    fs: u64,
    net: u64,
    scoped: u64,
    attr_size: usize,
) -> io::Result<OwnedFd> {
    let attr = RulesetAttr {
        handled_access_fs: fs,
        handled_access_net: net,
        scoped,
    };
    let size = attr_size.min(std::mem::size_of::<RulesetAttr>());
    // SAFETY: `attr` is a valid, initialised landlock_ruleset_attr of at least `size` bytes
    // that outlives the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(ret).map_err(|_| io::Error::other("bad fd"))?;
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Allows `access` beneath the file or directory `parent` (an `O_PATH` fd).
pub fn landlock_add_path_rule(ruleset: &OwnedFd, parent: &OwnedFd, access: u64) -> io::Result<()> {
    let attr = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: `attr` is a valid landlock_path_beneath_attr that outlives the call; both fds
    // are open.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            LANDLOCK_RULE_PATH_BENEATH,
            &attr as *const PathBeneathAttr,
            0u32,
        )
    };
    if ret < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// What the child does to itself before `exec`.
pub struct ChildSetup {
    pub rlimits: Rlimits,
    /// Switch to this uid/gid (we are root), dropping every capability.
    pub drop_to: Option<(u32, u32)>,
    /// Highest capability number (`/proc/sys/kernel/cap_last_cap`).
    pub last_cap: u32,
    pub ruleset: OwnedFd,
    pub seccomp: Vec<libc::sock_filter>,
    /// The command's own PID namespace (see [`PidNamespace`]).
    pub pid_namespace: PidNamespace,
    /// `cgroup.procs` of the sandbox's cgroup leaf, one per hierarchy (see [`join_cgroups`]).
    pub cgroups: Vec<OwnedFd>,
}

/// Contains everything a Landlock-sandboxed command starts, however it detaches (`setsid`,
/// double fork, `start_new_session`): the command runs as a child of a small reaper that is
/// PID 1 of a fresh PID namespace. When the command exits the reaper exits, and the kernel
/// SIGKILLs every other process of the namespace and refuses new ones in it; a process cannot
/// leave its PID namespace, so nothing escapes. A process group or session (what `kill_group`
/// reaches) can be left with one `setsid`; a cgroup needs a writable, delegated hierarchy most
/// containers lack. The chain is: the spawned process (outside, waits for the reaper and passes
/// its exit code on) → the reaper (PID 1, reaps orphans) → the command (normal signal
/// semantics, unlike a PID 1). Killing the spawned process or its process group (timeout,
/// `kill_on_drop`) kills the reaper and so the whole namespace; the spawned process itself dies
/// with its parent (PR_SET_PDEATHSIG, like bubblewrap's `--die-with-parent`).
pub struct PidNamespace {
    /// Our pid, to notice a parent that died before the death signal was armed.
    pub parent: libc::pid_t,
    /// `Some((uid_map, gid_map))`: not root, so the PID namespace needs a user namespace of
    /// its own (unprivileged user namespaces), mapping only our own uid and gid to themselves.
    pub user_maps: Option<(Vec<u8>, Vec<u8>)>,
}

impl PidNamespace {
    /// For the current process: root creates the PID namespace directly, anyone else inside a
    /// user namespace that maps only their own ids.
    pub fn for_current_process() -> PidNamespace {
        let user_maps = (!rustix::process::geteuid().is_root()).then(|| {
            let uid = rustix::process::getuid().as_raw();
            let gid = rustix::process::getgid().as_raw();
            (
                format!("{uid} {uid} 1\n").into_bytes(),
                format!("{gid} {gid} 1\n").into_bytes(),
            )
        });
        PidNamespace {
            parent: rustix::process::getpid().as_raw_nonzero().get(),
            user_maps,
        }
    }
}

/// Makes the child join the cgroups whose `cgroup.procs` files `handles` are open on, before it
/// `exec`s: everything the command later starts is born inside them, so nothing runs outside
/// its budget even for a moment. Done as the spawning user (root, or the owner of a delegated
/// subtree), before any uid switch.
pub fn join_cgroups(cmd: &mut std::process::Command, handles: Vec<OwnedFd>) {
    use std::os::unix::process::CommandExt;
    if handles.is_empty() {
        return;
    }
    let hook = move || enter_cgroups(&handles);
    // SAFETY: `enter_cgroups` only writes to descriptors opened before the fork
    // (async-signal-safe); it neither allocates nor takes locks.
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// Writes "0" (this process) to each `cgroup.procs`.
fn enter_cgroups(handles: &[OwnedFd]) -> io::Result<()> {
    for handle in handles {
        // SAFETY: the descriptor is open and the buffer is a static byte string.
        let n = unsafe { libc::write(handle.as_raw_fd(), b"0".as_ptr().cast(), 1) };
        if n != 1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Installs `setup` as the command's `pre_exec` hook.
pub fn install(cmd: &mut std::process::Command, setup: ChildSetup) {
    use std::os::unix::process::CommandExt;
    let hook = move || child_setup(&setup);
    // SAFETY: `child_setup` only makes async-signal-safe syscalls on memory prepared before
    // the fork (see the module comment); it neither allocates nor takes locks.
    unsafe {
        cmd.pre_exec(hook);
    }
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn set_limit(resource: libc::__rlimit_resource_t, soft: u64, hard: u64) -> io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: `lim` is a valid rlimit; setrlimit is async-signal-safe.
    check(unsafe { libc::setrlimit(resource, &lim) })
}

fn child_setup(s: &ChildSetup) -> io::Result<()> {
    // SAFETY (whole function): each call is a raw syscall with valid arguments built from
    // `s`, which the parent prepared before forking.
    enter_cgroups(&s.cgroups)?;
    unsafe {
        // Session (and process group) leader: `kill_group` reaches everything it starts, and
        // it has no controlling terminal to inject input into.
        check(libc::setsid())?;
        // No core dumps from the helper processes either.
        set_limit(libc::RLIMIT_CORE, 0, 0)?;
        enter_pid_namespace(&s.pid_namespace)?;
        let r = &s.rlimits;
        set_limit(libc::RLIMIT_AS, r.address_space, r.address_space)?;
        set_limit(libc::RLIMIT_CPU, r.cpu_soft, r.cpu_hard)?;
        set_limit(libc::RLIMIT_FSIZE, r.file_size, r.file_size)?;
        // Unlimited: a cgroup counts the sandbox's tasks; keep what we inherited (an
        // unprivileged caller could not raise it anyway).
        if r.nproc != crate::limits::NPROC_UNLIMITED {
            set_limit(libc::RLIMIT_NPROC, r.nproc, r.nproc)?;
        }
        set_limit(libc::RLIMIT_NOFILE, r.nofile, r.nofile)?;
        set_limit(libc::RLIMIT_CORE, 0, 0)?;
        if let Some((uid, gid)) = s.drop_to {
            // Empty the bounding set first (needs CAP_SETPCAP, which the uid switch removes),
            // so nothing executed later can regain a capability.
            for cap in 0..=s.last_cap {
                libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0);
            }
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setresgid(gid, gid, gid))?;
            // From uid 0 to a non-zero uid without KEEP_CAPS: the kernel clears the permitted,
            // effective and ambient sets.
            check(libc::setresuid(uid, uid, uid))?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        let ret = libc::syscall(
            libc::SYS_landlock_restrict_self,
            s.ruleset.as_raw_fd(),
            0u32,
        );
        if ret < 0 {
            return Err(io::Error::last_os_error());
        }
        let prog = libc::sock_fprog {
            len: u16::try_from(s.seccomp.len())
                .map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
            filter: s.seccomp.as_ptr().cast_mut(),
        };
        check(libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER as libc::c_ulong,
            &prog as *const libc::sock_fprog,
            0,
            0,
        ))?;
    }
    Ok(())
}

/// The exit code a shell would report for `status`: the code, or 128 + the signal.
fn exit_code(status: libc::c_int) -> libc::c_int {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Closes every descriptor from `from` on (`close_range`, or one by one on old kernels).
fn close_from(from: libc::c_uint) {
    // SAFETY: closing descriptors is async-signal-safe; this process owns all of them.
    unsafe {
        if libc::syscall(libc::SYS_close_range, from, libc::c_uint::MAX, 0u32) < 0 {
            for fd in from..4096 {
                libc::close(fd as libc::c_int);
            }
        }
    }
}

/// Writes `data` to `path` (a `/proc/self` file), for the user namespace's id maps.
fn write_proc(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated, `data` outlives the call; open/write/close are
    // async-signal-safe.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if usize::try_from(n).ok() != Some(data.len()) {
            return Err(err);
        }
    }
    Ok(())
}

/// Waits for `pid`, retrying on EINTR; `None` when there is nothing to wait for.
fn wait_for(pid: libc::pid_t) -> Option<(libc::pid_t, libc::c_int)> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; waitpid is async-signal-safe.
        let ret = unsafe { libc::waitpid(pid, &mut status, 0) };
        if ret >= 0 {
            return Some((ret, status));
        }
        if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Puts the rest of the child's setup, and the program, into a new PID namespace (see
/// [`PidNamespace`]). Returns in the process that goes on to `exec` the program; the two
/// helper processes never return and end with `_exit`.
fn enter_pid_namespace(ns: &PidNamespace) -> io::Result<()> {
    // SAFETY (whole function): plain async-signal-safe syscalls on data prepared before the
    // fork (see the module comment); the helpers only wait and `_exit`.
    unsafe {
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        if libc::getppid() != ns.parent {
            libc::_exit(128 + libc::SIGKILL);
        }
        match &ns.user_maps {
            None => check(libc::unshare(libc::CLONE_NEWPID))?,
            Some((uid_map, gid_map)) => {
                check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID))?;
                write_proc(c"/proc/self/setgroups", b"deny")?;
                write_proc(c"/proc/self/uid_map", uid_map)?;
                write_proc(c"/proc/self/gid_map", gid_map)?;
            }
        }
        // Our end (read) stays open while we live: the reaper sees POLLERR on its end once we
        // are gone, which closes the race between its fork and arming its death signal.
        let mut pipe = [0 as libc::c_int; 2];
        check(libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC))?;
        let (alive_r, alive_w) = (pipe[0], pipe[1]);
        let reaper = libc::fork();
        if reaper < 0 {
            return Err(io::Error::last_os_error());
        }
        if reaper > 0 {
            // Outside: keep nothing but the liveness pipe (std's exec-error pipe included,
            // so the spawn returns once the program has been executed), wait, pass the code on.
            libc::close(alive_w);
            for fd in 0..alive_r {
                libc::close(fd);
            }
            close_from((alive_r + 1) as libc::c_uint);
            let code = match wait_for(reaper) {
                Some((_, status)) => exit_code(status),
                None => 1,
            };
            libc::_exit(code);
        }
        // PID 1 of the namespace.
        libc::close(alive_r);
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        let mut poll = libc::pollfd {
            fd: alive_w,
            events: libc::POLLOUT,
            revents: 0,
        };
        if libc::poll(&mut poll, 1, 0) < 0 || poll.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            libc::_exit(128 + libc::SIGKILL);
        }
        let program = libc::fork();
        if program < 0 {
            libc::_exit(126);
        }
        if program > 0 {
            close_from(0);
            // Reap orphans until the program itself ends; our exit then ends the namespace.
            loop {
                match wait_for(-1) {
                    Some((pid, status)) if pid == program => libc::_exit(exit_code(status)),
                    Some(_) => {}
                    None => libc::_exit(1),
                }
            }
        }
        libc::close(alive_w);
    }
    Ok(())
}
