//! Files, environment and privileges: docs/src/security.md, "Model-written code", and
//! docs/src/sandbox.md for each backend this machine supports.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use toolbridge_sandbox::Limits;

#[tokio::test]
async fn writes_outside_the_workspace_fail_and_inside_succeed() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let marker = format!("tb-sandbox-marker-{}", std::process::id());
        let parent = ws.path().parent().unwrap().join(&marker);
        let targets = [
            format!("/usr/{marker}"),
            format!("/etc/{marker}"),
            format!("/tmp/{marker}"),
            format!("/var/tmp/{marker}"),
            parent.to_string_lossy().into_owned(),
        ];
        let inside = sb.workspace_inside(ws.path());
        let script = format!(
            "for f in {}; do if echo x > \"$f\" 2>/dev/null; then echo \"WROTE $f\"; fi; done; \
             echo hello > {}/outputs/result.txt && echo INSIDE_OK",
            targets.join(" "),
            inside.display()
        );
        let out = run(&sb, ws.path(), &sh(), &["-c", &script], &[]).await;
        out.assert_ok();
        // bubblewrap's /tmp is private: a write there may succeed, but must not reach the host
        // (checked below).
        let private_tmp = format!("WROTE /tmp/{marker}\n");
        let stdout = out.stdout.replace(&private_tmp, "");
        assert!(
            !stdout.contains("WROTE"),
            "a write outside succeeded: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains("INSIDE_OK"),
            "{}{}",
            out.stdout,
            out.stderr
        );
        for t in &targets {
            assert!(
                !std::path::Path::new(t).exists(),
                "{t} appeared on the host"
            );
        }
        let written = std::fs::read_to_string(ws.path().join("outputs/result.txt")).unwrap();
        assert_eq!(written, "hello\n");
    })
    .await;
}

#[tokio::test]
async fn home_and_other_workspaces_are_not_readable() {
    each_backend(Limits::default(), |sb| async move {
        let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
            eprintln!("skipped: HOME is not set, no home folder to hide");
            return;
        };
        let secret_dir = tempfile::Builder::new().prefix(".tb-sandbox-secret-").tempdir_in(&home).unwrap();
        let home_secret = secret_dir.path().join("secret.txt");
        std::fs::write(&home_secret, "HOME-SECRET").unwrap();

        let mine = workspace(&sb);
        let other = workspace(&sb);
        let other_secret = other.path().join("outputs/secret.txt");
        std::fs::write(&other_secret, "OTHER-CONVERSATION").unwrap();

        let code = format!(
            "import os\nfor p in [{:?}, {:?}, {:?}]:\n    try:\n        print(open(p).read())\n    except OSError as e:\n        print('DENIED', type(e).__name__)\n",
            home_secret.to_string_lossy(),
            other_secret.to_string_lossy(),
            other.path().to_string_lossy(),
        );
        let out = python(&sb, mine.path(), &code).await;
        out.assert_ok();
        assert!(!out.stdout.contains("HOME-SECRET"), "{}", out.stdout);
        assert!(!out.stdout.contains("OTHER-CONVERSATION"), "{}", out.stdout);
        assert_eq!(out.stdout.matches("DENIED").count(), 3, "{}", out.stdout);
        // Listing the other workspace must not work either.
        let out = run(&sb, mine.path(), &sh(), &["-c", &format!("ls {} && echo LISTED", other.path().display())], &[]).await;
        assert!(!out.stdout.contains("LISTED"), "{}", out.stdout);
    })
    .await;
}

#[tokio::test]
async fn no_secrets_in_the_environment() {
    // The test process itself carries secrets; none may reach the sandbox.
    std::env::set_var("OPENAI_API_KEY", "sk-secret-test-value");
    std::env::set_var("TOOLBRIDGE_TEST_TOKEN", "another-secret");
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let out = run(
            &sb,
            ws.path(),
            &std::path::PathBuf::from("/usr/bin/env"),
            &[],
            &[("EXTRA", "given")],
        )
        .await;
        out.assert_ok();
        let mut names: Vec<&str> = out
            .stdout
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, _)| k)
            .collect();
        names.sort_unstable();
        assert_eq!(
            names,
            [
                "EXTRA",
                "HOME",
                "LANG",
                "MPLCONFIGDIR",
                "PATH",
                "PWD",
                "TMPDIR"
            ],
            "{}",
            out.stdout
        );
        assert!(!out.stdout.contains("secret"), "{}", out.stdout);
        let inside = sb.workspace_inside(ws.path());
        assert!(
            out.stdout.contains(&format!("HOME={}", inside.display())),
            "{}",
            out.stdout
        );
    })
    .await;
}

#[tokio::test]
async fn no_capabilities_and_cannot_become_root() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let code = "import os\n\
            st = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n\
            print('CAPS', st['CapEff'].strip(), st['CapPrm'].strip(), st['CapBnd'].strip(), st['NoNewPrivs'].strip())\n\
            try:\n    os.setuid(0)\n    print('BECAME ROOT')\nexcept OSError:\n    print('SETUID DENIED')\n\
            print('EUID', os.geteuid())\n";
        let out = python(&sb, ws.path(), code).await;
        out.assert_ok();
        let caps: Vec<&str> = out.stdout.lines().next().unwrap().split(' ').collect();
        let zero = "0000000000000000";
        assert_eq!(caps[1..3], [zero, zero], "effective, permitted: {}", out.stdout);
        assert_eq!(caps[4], "1", "no_new_privs: {}", out.stdout);
        // Only a privileged parent can empty the bounding set (Landlock as a normal user keeps
        // it; with no_new_privs nothing can be gained from it).
        if std::fs::read_to_string("/proc/self/status").unwrap().contains("CapEff:\t000001ff") {
            assert_eq!(caps[3], zero, "bounding: {}", out.stdout);
        }
        assert!(out.stdout.contains("SETUID DENIED"), "{}", out.stdout);
        assert!(!out.stdout.contains("EUID 0\n"), "{}", out.stdout);
    })
    .await;
}

#[tokio::test]
async fn the_sandbox_python_runs_and_sees_its_workspace() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        std::fs::write(ws.path().join("uploads/in.txt"), "uploaded").unwrap();
        let out = python(
            &sb,
            ws.path(),
            "import os; print(os.getcwd()); print(open('uploads/in.txt').read())",
        )
        .await;
        out.assert_ok();
        let inside = sb.workspace_inside(ws.path());
        assert_eq!(out.stdout, format!("{}\nuploaded\n", inside.display()));
    })
    .await;
}

#[tokio::test]
async fn a_venv_outside_the_system_dirs_works_inside() {
    use std::os::unix::fs::PermissionsExt;
    // Under the host's /tmp on purpose: bubblewrap's private /tmp must not hide it.
    let dir = tempfile::Builder::new()
        .prefix("tb-sandbox-venv-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let venv = dir.path().join("venv");
    let made = std::process::Command::new("/usr/bin/python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("skipped: python3 -m venv is not available (apt-get install python3-venv)");
        return;
    }
    for backend in BACKENDS {
        let config = toolbridge_sandbox::SandboxConfig {
            backend: *backend,
            python: Some(venv.join("bin").join("python")),
            ..Default::default()
        };
        let sb = match toolbridge_sandbox::Sandbox::new(config) {
            Ok(sb) => sb,
            Err(err) => {
                eprintln!("skipped: {backend:?}: {err}");
                continue;
            }
        };
        let ws = workspace(&sb);
        let out = python(&sb, ws.path(), "import sys; print(sys.prefix)").await;
        out.assert_ok();
        assert_eq!(out.stdout.trim(), venv.to_string_lossy(), "{backend:?}");
        // The venv's bin comes first on PATH, so `python` in a terminal command is the venv's.
        let out = run(&sb, ws.path(), &sh(), &["-c", "command -v python"], &[]).await;
        assert_eq!(
            out.stdout.trim(),
            venv.join("bin/python").to_string_lossy(),
            "{backend:?}"
        );
    }
}

#[tokio::test]
async fn the_temporary_directory_is_writable_and_private() {
    each_backend(Limits::default(), |sb| async move {
        let ws = workspace(&sb);
        let code = "import tempfile, os\nwith tempfile.NamedTemporaryFile(delete=False) as f:\n    f.write(b'x')\nprint(f.name)\nprint(os.environ['TMPDIR'])";
        let out = python(&sb, ws.path(), code).await;
        out.assert_ok();
        let mut lines = out.stdout.lines();
        let (file, tmpdir) = (lines.next().unwrap(), lines.next().unwrap());
        assert!(file.starts_with(tmpdir), "{}", out.stdout);
        // Either the sandbox's own /tmp, or a folder inside the workspace: never the host's /tmp.
        let on_host = std::path::Path::new(file);
        assert!(
            !on_host.exists() || on_host.starts_with(ws.path()),
            "temporary file {file} landed on the host outside the workspace"
        );
    })
    .await;
}

#[tokio::test]
async fn no_nested_user_namespaces_when_bubblewrap_runs_unprivileged() {
    // As root, bubblewrap runs without a user namespace (see bwrap.rs), so `--disable-userns`
    // cannot apply; the check is for the unprivileged path (what most users run).
    if rustix::process::geteuid().is_root() {
        eprintln!("skipped: running as root; the unprivileged bubblewrap path is not exercised");
        return;
    }
    let Some(sb) = sandbox(
        toolbridge_sandbox::BackendChoice::Bubblewrap,
        Limits::default(),
    ) else {
        eprintln!("skipped: bubblewrap does not work here");
        return;
    };
    let ws = workspace(&sb);
    let out = run(
        &sb,
        ws.path(),
        &sh(),
        &["-c", "unshare -Ur true && echo NESTED"],
        &[],
    )
    .await;
    assert!(
        !out.stdout.contains("NESTED"),
        "a nested user namespace was created: {}{}",
        out.stdout,
        out.stderr
    );
}
