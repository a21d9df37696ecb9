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
    unsafe {
        // Session (and process group) leader: `kill_group` reaches everything it starts, and
        // it has no controlling terminal to inject input into.
        check(libc::setsid())?;
        let r = &s.rlimits;
        set_limit(libc::RLIMIT_AS, r.address_space, r.address_space)?;
        set_limit(libc::RLIMIT_CPU, r.cpu_soft, r.cpu_hard)?;
        set_limit(libc::RLIMIT_FSIZE, r.file_size, r.file_size)?;
        set_limit(libc::RLIMIT_NPROC, r.nproc, r.nproc)?;
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
