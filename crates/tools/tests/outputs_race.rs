//! The attack of issue 34 on each sandbox backend: code in the sandbox keeps swapping a folder of
//! `outputs/` for a link to a host folder while the host lists and collects the outputs (as the
//! gateway does after every run to keep them as container files). Every collected file must be
//! one the sandbox wrote below `outputs/`: never the host file behind the link. Regular files
//! beside the planted link are still collected.
//!
//! A backend this machine lacks fails the test under `CI=true` and is reported as skipped
//! otherwise.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use serde_json::json;
use toolbridge_agent::{Tool, ToolContext};
use toolbridge_sandbox::{BackendChoice, Limits, Sandbox, SandboxConfig};
use toolbridge_tools::python::{PythonConfig, PythonExecute};
use toolbridge_tools::workspace::{OutputsSnapshot, Workspace};

const HOST_SECRET: &str = "HOST SECRET: must never be collected";

/// The racing code: decoys below `outputs/z`, a link `outputs/zlink` to the host folder, and a
/// thread exchanging the two names as fast as it can (renameat2 RENAME_EXCHANGE through ctypes,
/// three renames where that is missing) for as long as the interpreter lives.
fn racing_code(host_dir: &Path) -> String {
    format!(
        r#"
import ctypes, os, threading
out = "/workspace/outputs"
os.makedirs(out + "/z", exist_ok=True)
for name in ("secret.txt", "environ"):
    with open(out + "/z/" + name, "w") as f:
        f.write("decoy")
with open(out + "/plain.txt", "w") as f:
    f.write("plain")
os.symlink({host:?}, out + "/zlink")
libc = ctypes.CDLL(None, use_errno=True)
def exchange():
    if libc.renameat2(-100, (out + "/z").encode(), -100, (out + "/zlink").encode(), 2) != 0:
        os.rename(out + "/z", out + "/tmp")
        os.rename(out + "/zlink", out + "/z")
        os.rename(out + "/tmp", out + "/zlink")
def flip():
    while True:
        try:
            exchange()
        except OSError:
            pass
threading.Thread(target=flip, daemon=True).start()
print("racing")
"#,
        host = host_dir.to_string_lossy()
    )
}

fn sandbox(backend: BackendChoice) -> Option<Sandbox> {
    let config = SandboxConfig {
        backend,
        limits: Limits {
            processes: 4096,
            ..Limits::default()
        },
        ..SandboxConfig::default()
    };
    match Sandbox::new(config) {
        Ok(sandbox) => Some(sandbox),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("{backend:?} is not available on this CI machine: {e}")
        }
        Err(e) => {
            eprintln!("skipped ({backend:?}): not available on this machine: {e}");
            None
        }
    }
}

async fn race(backend: BackendChoice) {
    let Some(sandbox) = sandbox(backend) else {
        return;
    };
    let tool = PythonExecute::new(sandbox, PythonConfig::default());
    // Under Landlock the sandboxed uid must reach the workspace: a folder under the system temp.
    let root = tempfile::tempdir().unwrap();
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("secret.txt"), HOST_SECRET).unwrap();
    std::fs::write(host.path().join("environ"), HOST_SECRET).unwrap();
    let workspace = Workspace::open(root.path(), "race").unwrap();
    let ctx = ToolContext {
        workspace: Some(workspace.path().to_path_buf()),
        user: "attacker".into(),
        conversation: "race".into(),
        ..ToolContext::default()
    };
    let before = OutputsSnapshot::default();
    let reply = tool
        .invoke(json!({ "code": racing_code(host.path()) }), ctx.clone())
        .await
        .unwrap();
    assert!(reply.contains("racing"), "{reply}");

    let (mut decoys, mut plain, mut refused) = (0usize, 0usize, 0usize);
    for _ in 0..1000 {
        let listed = workspace.new_outputs(&before);
        assert!(
            listed.iter().any(|f| f.relative == "plain.txt"),
            "{backend:?}: the regular file beside the link was not listed: {listed:?}"
        );
        for file in &listed {
            match workspace.read_output(&file.relative, 1 << 20) {
                Ok(bytes) => {
                    let text = String::from_utf8_lossy(&bytes);
                    assert_ne!(text, HOST_SECRET, "{backend:?}: {} leaked", file.relative);
                    if file.relative == "plain.txt" {
                        assert_eq!(text, "plain");
                        plain += 1;
                    } else {
                        assert_eq!(text, "decoy", "{backend:?}: {}", file.relative);
                        decoys += 1;
                    }
                }
                Err(_) => refused += 1,
            }
        }
    }
    eprintln!("{backend:?}: {plain} plain reads, {decoys} decoys, {refused} refused, 0 leaks");
    assert_eq!(plain, 1000, "{backend:?}");
    assert!(
        decoys > 0,
        "{backend:?}: the decoys beside the race were never collected"
    );
    // The host side still works on the workspace afterwards (the marker, new uploads).
    workspace.touch().unwrap();
    drop(tool);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_outputs_never_leak_host_files_under_bubblewrap() {
    race(BackendChoice::Bubblewrap).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_outputs_never_leak_host_files_under_landlock() {
    race(BackendChoice::Landlock).await;
}
