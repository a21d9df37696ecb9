//! Whether a call may run: a policy per risk (allow / ask / deny) and an approver that asks.

use std::collections::HashMap;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use toolbridge_protocol::types::ToolCall;

/// What to do with a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalPolicy {
    /// Run it.
    Allow,
    /// Ask the approver (the user).
    #[default]
    Ask,
    /// Refuse it.
    Deny,
}

/// The approval rules of a run: tools that require approval follow `default`; `per_tool` overrides
/// any tool (also ones that do not require approval, so an operator can deny a tool outright).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    #[serde(default)]
    pub default: ApprovalPolicy,
    #[serde(default)]
    pub per_tool: HashMap<String, ApprovalPolicy>,
}

impl Approvals {
    /// The policy for a call to `tool`.
    pub fn policy(&self, tool: &str, requires_approval: bool) -> ApprovalPolicy {
        match self.per_tool.get(tool) {
            Some(p) => *p,
            None if requires_approval => self.default,
            None => ApprovalPolicy::Allow,
        }
    }
}

/// Asks whether a call may run.
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, bool>;
}

/// Says no to everything (the default without a terminal).
pub struct DenyAll;

impl Approver for DenyAll {
    fn approve<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }
}

/// Says yes to everything.
pub struct AllowAll;

impl Approver for AllowAll {
    fn approve<'a>(&'a self, _call: &'a ToolCall) -> BoxFuture<'a, bool> {
        Box::pin(async { true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_tool_overrides_and_defaults() {
        let mut a = Approvals::default();
        assert_eq!(a.policy("t", false), ApprovalPolicy::Allow);
        assert_eq!(a.policy("t", true), ApprovalPolicy::Ask);
        a.per_tool.insert("t".into(), ApprovalPolicy::Deny);
        assert_eq!(a.policy("t", false), ApprovalPolicy::Deny);
        a.default = ApprovalPolicy::Allow;
        assert_eq!(a.policy("u", true), ApprovalPolicy::Allow);
    }
}
