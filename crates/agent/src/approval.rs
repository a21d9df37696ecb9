//! Whether a call may run: a policy (allow / ask / deny) per tool and per risk, and an approver
//! that asks.
//!
//! The rules, from the loosest input to the final answer:
//!
//! - A tool that reports no risk follows `per_tool`, else `default` when it requires approval,
//!   else runs.
//! - A call whose tool reports a risk ([`crate::tool::Tool::risk`], e.g. `run_in_terminal`) follows
//!   the STRICTER of `risk.<level>` and its `per_tool` entry: naming a tool `allow` never loosens the
//!   risk policy. An unknown risk (an unparsable command) follows `risk.unknown`, `ask` unless the
//!   operator explicitly writes `unknown = "allow"` in the configuration.
//! - docs/src/security.md, "Tool output is untrusted": once a run has fed any tool output back to
//!   the model, calls to tools that declare [`crate::tool::Tool::guarded_after_tool_output`]
//!   (`save_memory`, `run_in_terminal`) are tightened to at least `after_tool_output` (`ask`), so
//!   an instruction injected into a web page or a file cannot write a memory or run a command
//!   without the user seeing it.
//! - A run-time override (a command-line flag, a request) is merged with
//!   [`Approvals::tightened_by`]: it can tighten the operator's policy, never loosen it.
//!
//! Strictness: deny > ask > allow.

use std::collections::HashMap;
use std::fmt;

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

impl ApprovalPolicy {
    fn strictness(self) -> u8 {
        match self {
            ApprovalPolicy::Allow => 0,
            ApprovalPolicy::Ask => 1,
            ApprovalPolicy::Deny => 2,
        }
    }

    /// The stricter of two policies (deny > ask > allow).
    pub fn stricter(self, other: ApprovalPolicy) -> ApprovalPolicy {
        if other.strictness() > self.strictness() {
            other
        } else {
            self
        }
    }

    pub fn parse(s: &str) -> Option<ApprovalPolicy> {
        match s {
            "allow" => Some(ApprovalPolicy::Allow),
            "ask" => Some(ApprovalPolicy::Ask),
            "deny" => Some(ApprovalPolicy::Deny),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalPolicy::Allow => "allow",
            ApprovalPolicy::Ask => "ask",
            ApprovalPolicy::Deny => "deny",
        }
    }
}

/// A risk level a model declares for a call (seed 002: `"low"`, `"medium"`, `"high"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        match s {
            "low" => Some(Risk::Low),
            "medium" => Some(Risk::Medium),
            "high" => Some(Risk::High),
            _ => None,
        }
    }
}

/// The risk of one call as the runtime judges it: a level, or `Unknown` when the call could not be
/// classified (it then needs approval like a high one, under the default policy).
///
/// Ordered for [`CallRisk::max`]: low < medium < unknown < high — an unknown part of a command
/// outweighs the known harmless ones, and a known dangerous part outweighs everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallRisk {
    Low,
    Medium,
    High,
    Unknown,
}

impl CallRisk {
    fn rank(self) -> u8 {
        match self {
            CallRisk::Low => 0,
            CallRisk::Medium => 1,
            CallRisk::Unknown => 2,
            CallRisk::High => 3,
        }
    }

    /// The higher of two risks (low < medium < unknown < high).
    pub fn max(self, other: CallRisk) -> CallRisk {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallRisk::Low => "low",
            CallRisk::Medium => "medium",
            CallRisk::High => "high",
            CallRisk::Unknown => "unknown",
        }
    }

    pub fn parse(s: &str) -> Option<CallRisk> {
        match s {
            "unknown" => Some(CallRisk::Unknown),
            other => Risk::parse(other).map(CallRisk::from),
        }
    }
}

impl From<Risk> for CallRisk {
    fn from(r: Risk) -> Self {
        match r {
            Risk::Low => CallRisk::Low,
            Risk::Medium => CallRisk::Medium,
            Risk::High => CallRisk::High,
        }
    }
}

impl fmt::Display for CallRisk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a tool says about the risk of one call, for the policy and for the person asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RiskAssessment {
    /// The risk the policy uses.
    pub effective: CallRisk,
    /// What the model declared, if the tool takes a declared risk.
    pub declared: Option<Risk>,
    /// What will be done, shown to the person asked (e.g. the shell command).
    pub subject: Option<String>,
    /// The model's explanation, if it gave one.
    pub explanation: Option<String>,
    /// Why the runtime judged it so ("rm -r: recursive delete", "could not be parsed").
    pub reasons: Vec<String>,
}

impl RiskAssessment {
    pub fn new(effective: CallRisk) -> Self {
        RiskAssessment {
            effective,
            declared: None,
            subject: None,
            explanation: None,
            reasons: Vec::new(),
        }
    }
}

/// `[agent.approvals.risk]`: the policy per risk level of calls whose tool reports a risk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RiskPolicy {
    pub low: ApprovalPolicy,
    pub medium: ApprovalPolicy,
    pub high: ApprovalPolicy,
    /// `ask` by default; `allow` only if the operator writes it (never through an override).
    pub unknown: ApprovalPolicy,
}

impl Default for RiskPolicy {
    fn default() -> Self {
        RiskPolicy {
            low: ApprovalPolicy::Allow,
            medium: ApprovalPolicy::Ask,
            high: ApprovalPolicy::Ask,
            unknown: ApprovalPolicy::Ask,
        }
    }
}

impl RiskPolicy {
    pub fn for_risk(&self, risk: CallRisk) -> ApprovalPolicy {
        match risk {
            CallRisk::Low => self.low,
            CallRisk::Medium => self.medium,
            CallRisk::High => self.high,
            CallRisk::Unknown => self.unknown,
        }
    }

    pub fn set(&mut self, risk: CallRisk, policy: ApprovalPolicy) {
        match risk {
            CallRisk::Low => self.low = policy,
            CallRisk::Medium => self.medium = policy,
            CallRisk::High => self.high = policy,
            CallRisk::Unknown => self.unknown = policy,
        }
    }

    /// The stricter policy at every level.
    pub fn tightened_by(&self, other: &RiskPolicy) -> RiskPolicy {
        RiskPolicy {
            low: self.low.stricter(other.low),
            medium: self.medium.stricter(other.medium),
            high: self.high.stricter(other.high),
            unknown: self.unknown.stricter(other.unknown),
        }
    }

    /// The loosest policy everywhere: the identity of [`RiskPolicy::tightened_by`], the starting
    /// point of an override that names only some levels.
    pub fn loosest() -> RiskPolicy {
        RiskPolicy {
            low: ApprovalPolicy::Allow,
            medium: ApprovalPolicy::Allow,
            high: ApprovalPolicy::Allow,
            unknown: ApprovalPolicy::Allow,
        }
    }
}

fn default_after_tool_output() -> ApprovalPolicy {
    ApprovalPolicy::Ask
}

/// The approval rules of a run (`[agent.approvals]`); see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Approvals {
    /// For tools that require approval and report no risk.
    #[serde(default)]
    pub default: ApprovalPolicy,
    /// Overrides any tool (also ones that do not require approval, so an operator can deny a tool
    /// outright); for a tool that reports a risk, combined with the risk policy (the stricter wins).
    #[serde(default)]
    pub per_tool: HashMap<String, ApprovalPolicy>,
    /// `[agent.approvals.risk]`.
    #[serde(default)]
    pub risk: RiskPolicy,
    /// The least a guarded tool gets once tool output has reached the model (docs/src/security.md,
    /// "Tool output is untrusted").
    #[serde(default = "default_after_tool_output")]
    pub after_tool_output: ApprovalPolicy,
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals {
            default: ApprovalPolicy::default(),
            per_tool: HashMap::new(),
            risk: RiskPolicy::default(),
            after_tool_output: default_after_tool_output(),
        }
    }
}

/// What the toolbox knows about a call when it applies the policy.
#[derive(Clone, Copy, Debug, Default)]
pub struct CallFacts<'a> {
    pub requires_approval: bool,
    /// The tool's assessment of this call, if it reports one.
    pub risk: Option<&'a RiskAssessment>,
    /// The tool declares [`crate::tool::Tool::guarded_after_tool_output`].
    pub guarded: bool,
    /// Tool output has already reached the model in this run.
    pub after_tool_output: bool,
}

impl Approvals {
    /// The policy for a call to `tool` that reports no risk, made before any tool output.
    pub fn policy(&self, tool: &str, requires_approval: bool) -> ApprovalPolicy {
        self.policy_for(
            tool,
            &CallFacts {
                requires_approval,
                ..CallFacts::default()
            },
        )
    }

    /// The policy for a call (see the module documentation for the rules).
    pub fn policy_for(&self, tool: &str, facts: &CallFacts<'_>) -> ApprovalPolicy {
        let named = self.per_tool.get(tool).copied();
        let base = match facts.risk {
            Some(assessment) => {
                let by_risk = self.risk.for_risk(assessment.effective);
                named.map_or(by_risk, |p| by_risk.stricter(p))
            }
            None => match named {
                Some(p) => p,
                None if facts.requires_approval => self.default,
                None => ApprovalPolicy::Allow,
            },
        };
        if facts.guarded && facts.after_tool_output {
            base.stricter(self.after_tool_output)
        } else {
            base
        }
    }

    /// Whether every call to `tool` is refused, whatever its arguments, risk or moment: `per_tool`
    /// names it `deny` (the stricter of that and anything else is `deny`), or it requires approval,
    /// is not named, and `default` is `deny`. Such a tool is not offered to the model at all. (A
    /// tool that reports a risk follows `[agent.approvals.risk]` instead of `default`; the tools
    /// that report one do not require approval, so `default` never hides them.)
    pub fn denies_outright(&self, tool: &str, requires_approval: bool) -> bool {
        match self.per_tool.get(tool) {
            Some(policy) => *policy == ApprovalPolicy::Deny,
            None => requires_approval && self.default == ApprovalPolicy::Deny,
        }
    }

    /// These rules with a run-time override merged in: every answer is at least as strict as
    /// both `self`'s and `other`'s (so an override can tighten, never loosen).
    ///
    /// Field by field: the stricter `default`, risk levels and `after_tool_output`. A tool named in
    /// only one of the two gets the stricter of that entry and the other side's `default` (the
    /// other side would have used its default for it if the tool requires approval; for one that
    /// does not, this may tighten more than asked, never less). An `allow` entry only the override
    /// has is dropped: it could only loosen.
    pub fn tightened_by(&self, other: &Approvals) -> Approvals {
        let mut per_tool = HashMap::new();
        for (name, mine) in &self.per_tool {
            let merged = match other.per_tool.get(name) {
                Some(theirs) => mine.stricter(*theirs),
                None => mine.stricter(other.default),
            };
            per_tool.insert(name.clone(), merged);
        }
        for (name, theirs) in &other.per_tool {
            if self.per_tool.contains_key(name) || *theirs == ApprovalPolicy::Allow {
                continue;
            }
            per_tool.insert(name.clone(), theirs.stricter(self.default));
        }
        Approvals {
            default: self.default.stricter(other.default),
            per_tool,
            risk: self.risk.tightened_by(&other.risk),
            after_tool_output: self.after_tool_output.stricter(other.after_tool_output),
        }
    }

    /// An override that tightens nothing (the loosest rules): start from this and set what a
    /// flag names, then merge with [`Approvals::tightened_by`].
    pub fn loosest() -> Approvals {
        Approvals {
            default: ApprovalPolicy::Allow,
            per_tool: HashMap::new(),
            risk: RiskPolicy::loosest(),
            after_tool_output: ApprovalPolicy::Allow,
        }
    }
}

/// What an approver is asked about.
#[derive(Clone, Copy, Debug)]
pub struct ApprovalRequest<'a> {
    pub call: &'a ToolCall,
    /// The tool's risk assessment of this call, when it reports one.
    pub risk: Option<&'a RiskAssessment>,
    /// Tool output had reached the model before it asked for this call: the request may come from
    /// an instruction injected into that output.
    pub after_tool_output: bool,
}

/// Asks whether a call may run.
pub trait Approver: Send + Sync {
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, bool>;

    /// What the toolbox calls: the call with what is known about its risk. Approvers that show the
    /// risk to a person override this; the default asks [`Approver::approve`].
    fn approve_request<'a>(&'a self, request: &'a ApprovalRequest<'a>) -> BoxFuture<'a, bool> {
        self.approve(request.call)
    }
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
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use ApprovalPolicy::{Allow, Ask, Deny};

    const POLICIES: [ApprovalPolicy; 3] = [Allow, Ask, Deny];
    const RISKS: [CallRisk; 4] = [
        CallRisk::Low,
        CallRisk::Medium,
        CallRisk::High,
        CallRisk::Unknown,
    ];

    #[test]
    fn per_tool_overrides_and_defaults() {
        let mut a = Approvals::default();
        assert_eq!(a.policy("t", false), Allow);
        assert_eq!(a.policy("t", true), Ask);
        a.per_tool.insert("t".into(), Deny);
        assert_eq!(a.policy("t", false), Deny);
        a.default = Allow;
        assert_eq!(a.policy("u", true), Allow);
    }

    fn with_risk(risk: CallRisk) -> RiskAssessment {
        RiskAssessment::new(risk)
    }

    #[test]
    fn the_default_risk_policy_allows_only_low() {
        let a = Approvals::default();
        let got: Vec<ApprovalPolicy> = RISKS
            .iter()
            .map(|r| {
                let assessment = with_risk(*r);
                a.policy_for(
                    "run_in_terminal",
                    &CallFacts {
                        risk: Some(&assessment),
                        ..CallFacts::default()
                    },
                )
            })
            .collect();
        assert_eq!(got, vec![Allow, Ask, Ask, Ask]);
    }

    #[test]
    fn a_per_tool_allow_does_not_loosen_the_risk_policy() {
        let mut a = Approvals::default();
        a.per_tool.insert("run_in_terminal".into(), Allow);
        let high = with_risk(CallRisk::High);
        let facts = CallFacts {
            risk: Some(&high),
            ..CallFacts::default()
        };
        assert_eq!(a.policy_for("run_in_terminal", &facts), Ask);
        a.per_tool.insert("run_in_terminal".into(), Deny);
        let low = with_risk(CallRisk::Low);
        let facts = CallFacts {
            risk: Some(&low),
            ..CallFacts::default()
        };
        assert_eq!(a.policy_for("run_in_terminal", &facts), Deny);
    }

    #[test]
    fn guarded_tools_ask_after_tool_output() {
        let a = Approvals::default();
        let facts = |after: bool, guarded: bool| CallFacts {
            guarded,
            after_tool_output: after,
            ..CallFacts::default()
        };
        assert_eq!(a.policy_for("save_memory", &facts(false, true)), Allow);
        assert_eq!(a.policy_for("save_memory", &facts(true, true)), Ask);
        assert_eq!(a.policy_for("web_search", &facts(true, false)), Allow);
        let mut denying = Approvals::default();
        denying.per_tool.insert("save_memory".into(), Deny);
        assert_eq!(denying.policy_for("save_memory", &facts(true, true)), Deny);
    }

    #[test]
    fn the_configuration_reads_the_risk_table() {
        let a: Approvals = serde_json::from_value(serde_json::json!({
            "default": "deny",
            "risk": {"medium": "allow", "unknown": "deny"}
        }))
        .unwrap();
        assert_eq!(
            a.risk,
            RiskPolicy {
                low: Allow,
                medium: Allow,
                high: Ask,
                unknown: Deny
            }
        );
        assert_eq!(a.after_tool_output, Ask);
        assert!(serde_json::from_value::<Approvals>(
            serde_json::json!({"risk": {"extreme": "ask"}})
        )
        .is_err());
    }

    #[test]
    fn risk_order_puts_unknown_between_medium_and_high() {
        assert_eq!(CallRisk::Low.max(CallRisk::Unknown), CallRisk::Unknown);
        assert_eq!(CallRisk::Medium.max(CallRisk::Unknown), CallRisk::Unknown);
        assert_eq!(CallRisk::Unknown.max(CallRisk::High), CallRisk::High);
        assert_eq!(CallRisk::High.max(CallRisk::Low), CallRisk::High);
    }

    /// Every combination of a base, an override, a tool entry on either side, requiring approval
    /// or not, a risk or none, before and after tool output: the merged answer is never looser
    /// than either side's.
    #[test]
    fn tightening_never_loosens_either_side() {
        let entries = [None, Some(Allow), Some(Ask), Some(Deny)];
        let risks = [
            None,
            Some(CallRisk::Low),
            Some(CallRisk::High),
            Some(CallRisk::Unknown),
        ];
        let mut checked = 0;
        for base_default in POLICIES {
            for over_default in POLICIES {
                for base_entry in entries {
                    for over_entry in entries {
                        for base_level in POLICIES {
                            for over_level in POLICIES {
                                for guard in POLICIES {
                                    let mut base = Approvals {
                                        default: base_default,
                                        ..Approvals::default()
                                    };
                                    let mut over = Approvals {
                                        default: over_default,
                                        after_tool_output: guard,
                                        ..Approvals::loosest()
                                    };
                                    if let Some(p) = base_entry {
                                        base.per_tool.insert("t".into(), p);
                                    }
                                    if let Some(p) = over_entry {
                                        over.per_tool.insert("t".into(), p);
                                    }
                                    for r in RISKS {
                                        base.risk.set(r, base_level);
                                        over.risk.set(r, over_level);
                                    }
                                    let merged = base.tightened_by(&over);
                                    for requires in [false, true] {
                                        for risk in risks {
                                            for after in [false, true] {
                                                let assessment = risk.map(with_risk);
                                                let facts = CallFacts {
                                                    requires_approval: requires,
                                                    risk: assessment.as_ref(),
                                                    guarded: true,
                                                    after_tool_output: after,
                                                };
                                                let m = merged.policy_for("t", &facts);
                                                let b = base.policy_for("t", &facts);
                                                let o = over.policy_for("t", &facts);
                                                assert_eq!(
                                                    m.stricter(b),
                                                    m,
                                                    "{base:?} + {over:?} {facts:?}"
                                                );
                                                assert_eq!(
                                                    m.stricter(o),
                                                    m,
                                                    "{base:?} + {over:?} {facts:?}"
                                                );
                                                checked += 1;
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000);
    }

    /// Whatever the call's facts, a tool `denies_outright` reports is denied by `policy_for`.
    #[test]
    fn denied_outright_means_denied_for_every_call() {
        let mut a = Approvals::default();
        a.per_tool.insert("off".into(), Deny);
        a.per_tool.insert("on".into(), Allow);
        assert!(a.denies_outright("off", false));
        assert!(!a.denies_outright("on", true));
        assert!(!a.denies_outright("other", true));
        a.default = Deny;
        assert!(a.denies_outright("other", true));
        assert!(!a.denies_outright("other", false));
        for tool in ["off", "on", "other"] {
            for requires in [false, true] {
                if !a.denies_outright(tool, requires) {
                    continue;
                }
                for after in [false, true] {
                    let facts = CallFacts {
                        requires_approval: requires,
                        guarded: true,
                        after_tool_output: after,
                        ..CallFacts::default()
                    };
                    assert_eq!(
                        a.policy_for(tool, &facts),
                        Deny,
                        "{tool} {requires} {after}"
                    );
                }
            }
        }
        let low = with_risk(CallRisk::Low);
        let facts = CallFacts {
            risk: Some(&low),
            ..CallFacts::default()
        };
        assert_eq!(a.policy_for("off", &facts), Deny);
    }

    #[test]
    fn the_loosest_override_changes_nothing() {
        let mut base = Approvals::default();
        base.per_tool.insert("x".into(), Deny);
        base.risk.medium = Allow;
        assert_eq!(base.tightened_by(&Approvals::loosest()), base);
    }
}
