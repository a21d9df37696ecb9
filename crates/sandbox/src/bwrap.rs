//! The bubblewrap backend.
//!
//! The sandbox's root is an empty tmpfs holding only the system directories (read-only), the
//! interpreter's installation and `read_only_paths` (read-only, at their host paths), the
//! workspace at [`WORKSPACE`] (read-write), a fresh `/tmp`, `/dev` and `/proc`. It has its own
//! network (loopback only, nothing listening), PID, IPC and UTS namespaces.
//!
//! As root, bubblewrap runs without a user namespace (a namespace mapping uid 0 keeps kernel uid
//! 0, which RLIMIT_NPROC never applies to) so that it can bind paths under `/root`; the command
//! then drops to [`crate::sandbox::SANDBOX_UID`] with `setpriv`, which clears every capability
//! (effective, permitted, inheritable, ambient and bounding) and sets no_new_privs. bubblewrap
//! keeps only CAP_SETUID/SETGID/SETPCAP until then, which `setpriv` needs. As another user,
//! bubblewrap makes an unprivileged user namespace and drops every capability itself.
//!
//! Limits are applied inside, after the uid switch, by `prlimit` just before the program:
//! bubblewrap itself stays unconstrained, so a limit hit is always the program's.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Limits;
use crate::limits::{nproc_limit, Rlimits, NPROC_UNLIMITED};
use crate::sandbox::{Confinement, RunSpec};

/// Where the workspace appears inside.
pub const WORKSPACE: &str = "/workspace";

const SETPRIV: &str = "/usr/bin/setpriv";
const PRLIMIT: &str = "/usr/bin/prlimit";

#[derive(Clone, Debug)]
pub struct Bwrap {
    pub path: PathBuf,
    pub version: String,
}

impl Bwrap {
    /// Finds bubblewrap, reads its version and makes a real test run with the options the
    /// sandbox uses. The error says why it is unusable.
    pub fn probe(configured: Option<&Path>, run_as: Option<(u32, u32)>) -> Result<Bwrap, String> {
        let path = match configured {
            Some(p) => p.to_path_buf(),
            None => find_on_path("bwrap").ok_or_else(|| "`bwrap` is not on PATH".to_owned())?,
        };
        let output = std::process::Command::new(&path)
            .arg("--version")
            .env_clear()
            .output()
            .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
        if !output.status.success() {
            return Err(format!("{} --version failed", path.display()));
        }
        let version = String::from_utf8_lossy(&output.stdout)
            .trim()
            .trim_start_matches("bubblewrap")
            .trim()
            .to_owned();
        for tool in [SETPRIV, PRLIMIT] {
            if !Path::new(tool).exists() {
                return Err(format!("{tool} is missing (apt-get install util-linux)"));
            }
        }
        let bwrap = Bwrap { path, version };
        bwrap.test_run(run_as)?;
        Ok(bwrap)
    }

    /// Runs `/bin/true` the way real commands run (an empty workspace, default limits).
    fn test_run(&self, run_as: Option<(u32, u32)>) -> Result<(), String> {
        let dir = crate::workspace::scratch_dir("bwrap-probe");
        std::fs::create_dir_all(&dir).map_err(|e| format!("probe workspace: {e}"))?;
        let probe = Confinement {
            workspace: &dir,
            extra_ro: &[],
            env: &[],
            limits: &Limits::default(),
            run_as,
            pids_budget: false,
        };
        let args = self.args(&probe, Path::new("/bin/true"), &[]);
        let result = std::process::Command::new(&self.path)
            .args(&args)
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|child| wait_with_deadline(child, Duration::from_secs(10)));
        let _ = std::fs::remove_dir(&dir);
        match result {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "test run failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("test run: {e}")),
        }
    }

    pub fn command(
        &self,
        confinement: &Confinement<'_>,
        spec: &RunSpec<'_>,
    ) -> tokio::process::Command {
        let args = self.args(confinement, spec.program, spec.args);
        let mut cmd = tokio::process::Command::new(&self.path);
        cmd.args(args)
            .env_clear()
            // bubblewrap leads the group; killing it takes down the PID namespace.
            .process_group(0);
        cmd
    }

    /// `--disable-userns` exists from bubblewrap 0.8.0 on.
    fn can_disable_userns(&self) -> bool {
        let mut parts = self
            .version
            .split(|c: char| !c.is_ascii_digit())
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        (major, minor) >= (0, 8)
    }

    fn args(
        &self,
        confinement: &Confinement<'_>,
        program: &Path,
        program_args: &[String],
    ) -> Vec<String> {
        let Confinement {
            workspace,
            extra_ro,
            env,
            limits,
            run_as,
            pids_budget,
        } = *confinement;
        let mut a: Vec<String> = Vec::with_capacity(64);
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| (*s).to_owned()));
        push(&["--die-with-parent", "--new-session"]);
        if run_as.is_some() {
            push(&[
                "--unshare-ipc",
                "--unshare-pid",
                "--unshare-net",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--cap-drop",
                "ALL",
                "--cap-add",
                "CAP_SETUID",
                "--cap-add",
                "CAP_SETGID",
                "--cap-add",
                "CAP_SETPCAP",
            ]);
        } else if self.can_disable_userns() {
            // No nested user namespaces: they would hand the code a fresh "root" and the kernel
            // attack surface that comes with it (bubblewrap 0.8+).
            push(&[
                "--unshare-all",
                "--unshare-user",
                "--disable-userns",
                "--cap-drop",
                "ALL",
            ]);
        } else {
            push(&["--unshare-all", "--cap-drop", "ALL"]);
        }
        for dir in crate::python::SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::symlink_metadata(path) {
                Ok(m) if m.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(path) {
                        a.push("--symlink".into());
                        a.push(target.to_string_lossy().into_owned());
                        a.push((*dir).to_owned());
                    }
                }
                Ok(m) if m.is_dir() => {
                    a.push("--ro-bind".into());
                    a.push((*dir).to_owned());
                    a.push((*dir).to_owned());
                }
                _ => {}
            }
        }
        // Before the extra binds: a venv under the host's /tmp must stay visible over the
        // private /tmp.
        // Sticky and world-writable like a host /tmp: the sandbox uid must be able to use it.
        a.extend(
            [
                "--dev", "/dev", "--proc", "/proc", "--perms", "1777", "--tmpfs", "/tmp",
            ]
            .map(str::to_owned),
        );
        let extra_ro: Vec<&PathBuf> = extra_ro
            .iter()
            .filter(|p| !crate::python::is_system_dir(p))
            .collect();
        // bubblewrap creates a bind's missing parents with the host parents' modes, so a venv
        // under /root (mode 700) would be unreachable for the sandbox uid: create the parents
        // first, searchable by everyone. They are empty tmpfs directories.
        let mut parents: Vec<&Path> = extra_ro
            .iter()
            .filter(|p| p.exists())
            .flat_map(|p| p.ancestors().skip(1))
            .filter(|d| d.parent().is_some())
            .collect();
        parents.sort();
        parents.dedup();
        for dir in parents {
            a.extend(["--perms".to_owned(), "0755".to_owned(), "--dir".to_owned()]);
            a.push(dir.to_string_lossy().into_owned());
        }
        for path in extra_ro {
            if path.exists() {
                let p = path.to_string_lossy().into_owned();
                a.push("--ro-bind".into());
                a.push(p.clone());
                a.push(p);
            } else {
                tracing::warn!(path = %path.display(), "[tools.sandbox] read-only path does not exist; not shown");
            }
        }
        a.push("--bind".into());
        a.push(workspace.to_string_lossy().into_owned());
        a.push(WORKSPACE.into());
        a.extend(["--chdir", WORKSPACE].map(str::to_owned));
        a.push("--clearenv".into());
        for (key, value) in env {
            a.push("--setenv".into());
            a.push(key.clone());
            a.push(value.clone());
        }
        a.push("--".into());
        if let Some((uid, gid)) = run_as {
            a.extend([
                SETPRIV.to_owned(),
                format!("--reuid={uid}"),
                format!("--regid={gid}"),
                "--clear-groups".to_owned(),
                "--inh-caps=-all".to_owned(),
                "--bounding-set=-all".to_owned(),
                "--no-new-privs".to_owned(),
                "--".to_owned(),
            ]);
        }
        let uid = run_as.map_or_else(|| rustix::process::getuid().as_raw(), |(uid, _)| uid);
        // With a cgroup leaf, its pids.max counts this sandbox's tasks alone.
        let nproc = if pids_budget {
            NPROC_UNLIMITED
        } else {
            nproc_limit(uid, limits.processes)
        };
        let r = Rlimits::new(limits, nproc);
        a.push(PRLIMIT.into());
        a.extend(r.prlimit_args());
        a.push("--".into());
        a.push(program.to_string_lossy().into_owned());
        a.extend(program_args.iter().cloned());
        a
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    std::env::split_paths(&paths)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// `wait_with_output` with a deadline, so a hanging probe cannot hang `Sandbox::new`.
fn wait_with_deadline(
    mut child: std::process::Child,
    deadline: Duration,
) -> std::io::Result<std::process::Output> {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            let mut stderr = Vec::new();
            if let Some(mut pipe) = child.stderr.take() {
                let _ = std::io::Read::read_to_end(&mut pipe, &mut stderr);
            }
            return Ok(std::process::Output {
                status,
                stdout: Vec::new(),
                stderr,
            });
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "timed out",
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
