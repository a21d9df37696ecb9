//! What the model gets back from a cell: stdout, then stderr, then the value or the traceback,
//! then notes (limits hit, files written).

use toolbridge_protocol::texts;
use toolbridge_sandbox::{LimitHit, Limits};

use super::session::Reply;

/// The text of a cell's reply; `Err` when the cell raised (it goes back as a tool error).
pub fn reply_text(reply: &Reply, limits: &Limits) -> Result<String, String> {
    let mut blocks: Vec<String> = vec![reply.stdout.clone(), reply.stderr.clone()];
    match &reply.error {
        Some(traceback) => {
            blocks.push(traceback.clone());
            if reply.error_type.as_deref() == Some("MemoryError") {
                blocks.push(texts::python_memory_limit(limits.memory_mb));
            } else if traceback.contains("File too large") {
                blocks.push(texts::python_file_size_limit(limits.file_size_mb));
            }
            Err(join(&blocks))
        }
        None => {
            blocks.push(reply.value.clone().unwrap_or_default());
            Ok(join(&blocks))
        }
    }
}

/// Non-empty blocks, each without its trailing newlines, one per line.
pub fn join(blocks: &[String]) -> String {
    blocks
        .iter()
        .map(|b| b.trim_end_matches(['\n', '\r']))
        .filter(|b| !b.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The model's explanation of an interpreter that died.
pub fn crashed(limit: Option<LimitHit>, limits: &Limits) -> String {
    let cause = match limit {
        Some(LimitHit::Memory) => texts::python_cause(texts::PYTHON_CAUSE_MEMORY, limits.memory_mb),
        Some(LimitHit::Cpu) => texts::PYTHON_CAUSE_CPU.to_owned(),
        Some(LimitHit::FileSize) => {
            texts::python_cause(texts::PYTHON_CAUSE_FILE_SIZE, limits.file_size_mb)
        }
        Some(LimitHit::Processes) => {
            texts::python_cause(texts::PYTHON_CAUSE_PROCESSES, limits.processes)
        }
        Some(LimitHit::OpenFiles) => {
            texts::python_cause(texts::PYTHON_CAUSE_OPEN_FILES, limits.open_files)
        }
        None => texts::PYTHON_CAUSE_UNKNOWN.to_owned(),
    };
    texts::python_crashed(&cause)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdout_then_stderr_then_value() {
        let reply = Reply {
            stdout: "out\n".into(),
            stderr: "warn\n".into(),
            value: Some("42".into()),
            ..Reply::default()
        };
        assert_eq!(
            reply_text(&reply, &Limits::default()),
            Ok("out\nwarn\n42".to_owned())
        );
    }

    #[test]
    fn memory_error_names_the_limit() {
        let reply = Reply {
            error: Some("Traceback ...\nMemoryError\n".into()),
            error_type: Some("MemoryError".into()),
            ..Reply::default()
        };
        let text = reply_text(&reply, &Limits::default()).unwrap_err();
        assert!(text.ends_with(&texts::python_memory_limit(1024)), "{text}");
    }
}
