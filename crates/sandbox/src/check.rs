//! `toolbridge sandbox check`: what isolation this machine gives, and whether the sandbox's
//! Python has the document libraries.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::bwrap::Bwrap;
use crate::config::{BackendChoice, SandboxConfig};
use crate::sandbox::{Isolation, RunSpec, Sandbox, SANDBOX_UID};

/// Python modules of the document-generation skill (import names).
pub const DOCUMENT_LIBRARIES: &[&str] = &[
    "weasyprint",
    "pptx",
    "docx",
    "openpyxl",
    "xlsxwriter",
    "pypdf",
    "PIL",
    "matplotlib",
    "pandas",
    "bs4",
];

/// The findings of [`check`]. `Err` strings say why something is unavailable.
#[derive(Clone, Debug)]
pub struct CheckReport {
    pub running_as_root: bool,
    /// bubblewrap's path and version after a successful test run.
    pub bubblewrap: Result<String, String>,
    pub user_namespaces: Result<String, String>,
    pub landlock: Result<u32, String>,
    pub seccomp: Result<(), String>,
    /// Where each sandbox's cgroup leaf is made (memory, pids), or why there are none.
    pub budgets: Result<String, String>,
    /// What `backend = "auto"` gives.
    pub auto: Result<Isolation, String>,
    /// What the given configuration gives (may be unsandboxed when allowed).
    pub configured: Result<Isolation, String>,
    pub python: PathBuf,
    /// Python's version and each document library's import result, as run inside the
    /// configured sandbox (`Err`: why the probe could not run).
    pub python_probe: Result<PythonProbe, String>,
    /// Advice for the operator.
    pub notes: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct PythonProbe {
    pub version: String,
    /// (module, `None` when it imports, else the error).
    pub libraries: Vec<(String, Option<String>)>,
}

impl CheckReport {
    /// The configured sandbox isolates (bubblewrap or Landlock works as configured): the tools
    /// will run code, and not unsandboxed.
    pub fn isolated(&self) -> bool {
        matches!(&self.configured, Ok(i) if *i != Isolation::Unsandboxed)
    }
}

/// Probes everything; never fails (each part reports its own problem).
pub fn check(config: &SandboxConfig) -> CheckReport {
    let running_as_root = rustix::process::geteuid().is_root();
    let run_as = running_as_root.then_some((SANDBOX_UID, crate::sandbox::SANDBOX_GID));
    let bubblewrap = Bwrap::probe(config.bwrap.as_deref(), run_as)
        .map(|b| format!("{} ({})", b.version, b.path.display()));
    let landlock = crate::sys::landlock_abi().map_err(|e| e.to_string());
    let seccomp = if crate::landlock::filter::AUDIT_ARCH.is_none() {
        Err("no filter for this architecture".to_owned())
    } else if std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
    {
        Ok(())
    } else {
        Err("the kernel has no seccomp".to_owned())
    };
    let auto_config = SandboxConfig {
        backend: BackendChoice::Auto,
        allow_unsandboxed: false,
        ..config.clone()
    };
    let budgets = crate::cgroup::Cgroups::detect().map(|c| {
        format!(
            "a cgroup per sandbox (memory in {}, pids in {})",
            c.memory.parent.display(),
            c.pids.parent.display()
        )
    });
    let auto = Sandbox::new(auto_config)
        .map(|s| s.isolation().clone())
        .map_err(|e| e.to_string());
    let configured = Sandbox::new(config.clone());
    let python = match &configured {
        Ok(s) => s.python().to_path_buf(),
        Err(_) => crate::python::resolve(config, false),
    };
    let python_probe = match &configured {
        Ok(sandbox) => probe_python(sandbox),
        Err(e) => Err(format!("no sandbox to run it in: {e}")),
    };
    let mut notes = Vec::new();
    let venv_python = crate::setup::default_venv_dir().map(|d| d.join("bin").join("python"));
    if let (Ok(sandbox), Some(venv)) = (&configured, venv_python) {
        let landlock = matches!(sandbox.isolation(), Isolation::Landlock { .. });
        if landlock && running_as_root && venv.exists() && venv != python {
            notes.push(format!(
                "the venv {} is not reachable by uid {SANDBOX_UID} under Landlock (no mount \
                 namespace); make one where it is (`toolbridge sandbox setup --venv \
                 /opt/toolbridge/venv`) and set [tools.sandbox] python, or install bubblewrap",
                venv.display()
            ));
        }
    }
    CheckReport {
        notes,
        running_as_root,
        bubblewrap,
        user_namespaces: user_namespaces(),
        landlock,
        seccomp,
        budgets,
        auto,
        configured: configured
            .map(|s| s.isolation().clone())
            .map_err(|e| e.to_string()),
        python,
        python_probe,
    }
}

fn user_namespaces() -> Result<String, String> {
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err("disabled (kernel.unprivileged_userns_clone = 0)".into());
    }
    match read("/proc/sys/user/max_user_namespaces").as_deref() {
        Some("0") => Err("disabled (user.max_user_namespaces = 0)".into()),
        Some(n) => Ok(format!("available (max {n})")),
        None => Err("no /proc/sys/user/max_user_namespaces".into()),
    }
}

const PROBE: &str = r#"
import sys, importlib
print('VERSION', sys.version.split()[0])
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
        print('OK', m)
    except Exception as e:
        first = str(e).splitlines()[0] if str(e) else ''
        print('ERR', m, type(e).__name__ + ': ' + first)
"#;

/// Imports the document libraries with the sandbox's Python, inside the sandbox.
fn probe_python(sandbox: &Sandbox) -> Result<PythonProbe, String> {
    let dir = crate::workspace::scratch_dir("check");
    let result = (|| {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        sandbox.prepare_workspace(&dir).map_err(|e| e.to_string())?;
        let mut args = vec!["-c".to_owned(), PROBE.to_owned()];
        args.extend(DOCUMENT_LIBRARIES.iter().map(|m| (*m).to_owned()));
        let spec = RunSpec {
            workspace: &dir,
            program: sandbox.python(),
            args: &args,
            env: &[],
            limits: None,
        };
        // `_budget` (the cgroup leaf) lives until the probe has ended.
        let crate::Prepared {
            command: mut cmd,
            budget: _budget,
        } = sandbox.command(&spec).map_err(|e| e.to_string())?;
        let std_cmd = cmd.as_std_mut();
        std_cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = std_cmd
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", sandbox.python().display()))?;
        let start = Instant::now();
        // matplotlib and pandas take a few seconds to import on a cold cache.
        while child.try_wait().map_err(|e| e.to_string())?.is_none() {
            if start.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                return Err("the import probe did not finish within 120 s".to_owned());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        parse_probe(&String::from_utf8_lossy(&out.stdout)).ok_or_else(|| {
            format!(
                "{} did not run ({}): {}",
                sandbox.python().display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn parse_probe(stdout: &str) -> Option<PythonProbe> {
    let mut version = None;
    let mut libraries = Vec::new();
    for line in stdout.lines() {
        if let Some(v) = line.strip_prefix("VERSION ") {
            version = Some(v.to_owned());
        } else if let Some(m) = line.strip_prefix("OK ") {
            libraries.push((m.to_owned(), None));
        } else if let Some(rest) = line.strip_prefix("ERR ") {
            let (m, why) = rest.split_once(' ').unwrap_or((rest, ""));
            libraries.push((m.to_owned(), Some(why.to_owned())));
        }
    }
    Some(PythonProbe {
        version: version?,
        libraries,
    })
}

fn row(f: &mut std::fmt::Formatter<'_>, mark: &str, label: &str, text: &str) -> std::fmt::Result {
    let line = format!("{mark:2} {label:<20} {text}");
    writeln!(f, "{}", line.trim_end())
}

fn result_row<T>(
    f: &mut std::fmt::Formatter<'_>,
    label: &str,
    r: &Result<T, String>,
    ok: impl FnOnce(&T) -> String,
) -> std::fmt::Result {
    match r {
        Ok(v) => row(f, "ok", label, &ok(v)),
        Err(e) => row(f, "--", label, e),
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let user = if self.running_as_root {
            format!("root (sandboxed code runs as uid {SANDBOX_UID})")
        } else {
            format!("uid {}", rustix::process::geteuid().as_raw())
        };
        row(f, "", "running as", &user)?;
        result_row(f, "bubblewrap", &self.bubblewrap, |v| {
            format!("{v}, test run passed")
        })?;
        result_row(f, "user namespaces", &self.user_namespaces, Clone::clone)?;
        result_row(f, "landlock", &self.landlock, |abi| format!("ABI {abi}"))?;
        result_row(f, "seccomp", &self.seccomp, |()| "available".to_owned())?;
        result_row(f, "budgets", &self.budgets, Clone::clone)?;
        match &self.auto {
            Ok(i) => row(f, "ok", "backend \"auto\"", &i.to_string())?,
            Err(e) => row(f, "!!", "backend \"auto\"", e)?,
        }
        match &self.configured {
            Ok(Isolation::Unsandboxed) => row(
                f,
                "!!",
                "configured",
                "UNSANDBOXED (allow_unsandboxed = true): code runs with no isolation",
            )?,
            Ok(i) => row(f, "ok", "configured", &i.to_string())?,
            Err(e) => row(f, "!!", "configured", e)?,
        }
        row(f, "", "python", &self.python.display().to_string())?;
        match &self.python_probe {
            Ok(p) => {
                row(f, "ok", "python version", &p.version)?;
                for (module, err) in &p.libraries {
                    match err {
                        None => row(f, "ok", &format!("  import {module}"), "")?,
                        Some(e) => row(f, "--", &format!("  import {module}"), e)?,
                    }
                }
                let missing = p.libraries.iter().filter(|(_, e)| e.is_some()).count();
                if missing > 0 {
                    row(
                        f,
                        "",
                        "",
                        &format!(
                            "{missing} document libraries missing: run `toolbridge sandbox setup`"
                        ),
                    )?;
                }
            }
            Err(e) => row(f, "--", "python", e)?,
        }
        for note in &self.notes {
            row(f, "!!", "note", note)?;
        }
        Ok(())
    }
}
