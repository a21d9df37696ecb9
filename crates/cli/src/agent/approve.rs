//! Approval on the terminal: ask the person at the keyboard; without a terminal, deny.

use std::io::{BufRead, IsTerminal, Write};

use futures::future::BoxFuture;
use toolbridge_agent::approval::Approver;
use toolbridge_protocol::types::ToolCall;

pub struct TerminalApprover;

impl TerminalApprover {
    /// Whether anybody can be asked.
    pub fn available() -> bool {
        std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, bool> {
        let question = format!("Allow {} {}? [y/N] ", call.name, call.arguments);
        Box::pin(async move {
            if !Self::available() {
                return false;
            }
            tokio::task::spawn_blocking(move || {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "{question}");
                let _ = err.flush();
                let mut line = String::new();
                if std::io::stdin().lock().read_line(&mut line).is_err() {
                    return false;
                }
                matches!(line.trim(), "y" | "Y" | "yes" | "Yes")
            })
            .await
            .unwrap_or(false)
        })
    }
}
