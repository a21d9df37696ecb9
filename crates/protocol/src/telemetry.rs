//! The process-wide telemetry choice every layer reads: whether spans carry message content.
//!
//! Prompts, answers, tool arguments and tool results are users' data: spans carry them
//! (`gen_ai.input.messages`, `gen_ai.tool.call.arguments`, …) only when the operator turned
//! capture on (`[telemetry] capture_content = true`). The providers' model spans and the agent's
//! tool spans both read it here, so neither depends on the other for it.

use std::sync::atomic::{AtomicBool, Ordering};

static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans carry message content. Process-wide: it is the operator's choice for the whole
/// process.
pub fn set_capture_content(on: bool) {
    CAPTURE_CONTENT.store(on, Ordering::Relaxed);
}

/// See [`set_capture_content`].
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}
