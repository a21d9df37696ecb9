//! The document-generation skill end to end (issue 7, part 5): a scripted model loads the built-in
//! skill, runs its recipes in `python_execute` (the real sandbox and the interpreter that
//! `toolbridge sandbox setup` makes), and a real PDF, DOCX, PPTX and XLSX land in the
//! conversation's `outputs/`, where the skill's self-check and this test's own check find them.
//!
//! Needs the document libraries: `scripts/test.sh` creates the sandbox's virtual environment and
//! sets TOOLBRIDGE_SANDBOX_PYTHON; without it this test fails with that instruction.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use toolbridge_protocol::texts;

fn sandbox_python() -> PathBuf {
    match std::env::var("TOOLBRIDGE_SANDBOX_PYTHON") {
        Ok(p) => PathBuf::from(p),
        Err(_) => panic!(
            "TOOLBRIDGE_SANDBOX_PYTHON is not set: run the suite with `bash scripts/test.sh`, which \
             runs `toolbridge sandbox setup` once and sets it"
        ),
    }
}

fn recipe(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/docgen")
        .join(name);
    std::fs::read_to_string(&path).unwrap()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

#[test]
fn the_document_generation_skill_produces_checked_pdf_docx_pptx_xlsx() {
    let python = sandbox_python();
    let d = std::env::temp_dir().join(format!("tb-docgen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("toolbridge.toml"),
        format!(
            "[tools]\nenabled = [\"python_execute\"]\n[tools.sandbox]\npython = \"{}\"\n\
             [tools.sandbox.limits]\nmemory_mb = 2048\ncpu_secs = 120\n",
            python.display()
        ),
    )
    .unwrap();
    let script = d.join("script.json");
    std::fs::write(
        &script,
        json!({"replies": [
            call("use_skill", json!({"name": "document-generation"})),
            call("python_execute", json!({"code": recipe("pdf.py")})),
            call("python_execute", json!({"code": recipe("office.py")})),
            call("python_execute", json!({"code": recipe("check.py")})),
            "Your report is ready: report.pdf, report.docx, deck.pptx and revenue.xlsx.",
        ]})
        .to_string(),
    )
    .unwrap();
    let transcript = d.join("transcript.json");
    let out = Command::new(env!("CARGO_BIN_EXE_toolbridge"))
        .args([
            "run",
            "Make me a quarterly report as PDF, Word, PowerPoint and Excel.",
            "--model",
            &format!("scripted:{}", script.display()),
            "--conversation",
            "docgen",
            "--transcript",
            transcript.to_str().unwrap(),
        ])
        .current_dir(&d)
        .env("HOME", &d)
        .env("XDG_DATA_HOME", d.join("data"))
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Your report is ready"), "{stdout}");

    // Every tool call succeeded: the skill body came back byte for byte and the self-check passed.
    let transcript: Value =
        serde_json::from_str(&std::fs::read_to_string(&transcript).unwrap()).unwrap();
    let tool_texts: Vec<String> = transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(tool_texts.len(), 4, "{tool_texts:#?}");
    assert!(
        tool_texts[0].contains(texts::DOCGEN_BODY),
        "{}",
        tool_texts[0]
    );
    assert!(tool_texts[1].contains("pdf written"), "{}", tool_texts[1]);
    assert!(
        tool_texts[2].contains("office files written"),
        "{}",
        tool_texts[2]
    );
    assert!(
        tool_texts[3].contains("SELF-CHECK OK: pdf pages=1, slides=3"),
        "{}",
        tool_texts[3]
    );

    // The files are real documents in the conversation's outputs/, and the run reported them.
    let outputs = d.join("data/toolbridge/workspaces/docgen/outputs");
    for (name, magic) in [
        ("report.pdf", &b"%PDF-"[..]),
        ("report.docx", b"PK\x03\x04"),
        ("deck.pptx", b"PK\x03\x04"),
        ("revenue.xlsx", b"PK\x03\x04"),
        ("chart.png", b"\x89PNG"),
    ] {
        let bytes = std::fs::read(outputs.join(name)).unwrap();
        assert!(bytes.starts_with(magic), "{name} is not what it claims");
        let shown = format!("{}  ({} bytes)", outputs.join(name).display(), bytes.len());
        assert!(stderr.contains(&shown), "{name} not reported:\n{stderr}");
    }

    // An independent check outside the sandbox: the PDF's text and the deck's slide count.
    let check = Command::new(&python)
        .arg("-c")
        .arg(
            "import sys; from pypdf import PdfReader; from pptx import Presentation\n\
             r = PdfReader(sys.argv[1] + '/report.pdf'); t = r.pages[0].extract_text()\n\
             print(len(r.pages), 'Revenue grew in every region' in t, len(Presentation(sys.argv[1] + '/deck.pptx').slides))",
        )
        .arg(&outputs)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).trim(),
        "1 True 3",
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let _ = std::fs::remove_dir_all(&d);
}
