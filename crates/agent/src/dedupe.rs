//! Which calls of a run are repeats (docs/src/agent.md, "The loop"). A call with the same name and
//! canonical arguments as one already run is skipped with the seed's text — unless the earlier run
//! failed transiently ([`CallResult::transient`]: timed out, an internal failure, a skill that
//! could not be loaded right now): then the ledger forgets it, and the repeat runs again (once per
//! failure; the budgets still bound it). A call that succeeded, or failed for a reason that cannot
//! change (invalid arguments, unknown tool, denied), stays remembered. Pure: the loop asks, then
//! records.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::canonical::call_key;
use crate::toolbox::{CallResult, CallStatus};

/// The calls of one run whose results stand (plain data, sorted: it is part of a stored run's
/// state and serializes the same way every time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallLedger {
    done: BTreeSet<String>,
    this_round: BTreeSet<String>,
}

impl CallLedger {
    /// A new round of calls begins (a call may appear only once per round).
    pub fn start_round(&mut self) {
        self.this_round.clear();
    }

    /// Whether the call repeats one whose result stands, or one already planned this round.
    pub fn is_repeat(&self, name: &str, arguments: &str) -> bool {
        let key = call_key(name, arguments);
        self.done.contains(&key) || self.this_round.contains(&key)
    }

    /// The call will run in this round.
    pub fn planned(&mut self, name: &str, arguments: &str) {
        self.this_round.insert(call_key(name, arguments));
    }

    /// Records a call's result: a transient failure is forgotten, so its repeat runs again;
    /// skipped calls (duplicates, over budget) never ran and change nothing.
    pub fn record(&mut self, name: &str, arguments: &str, result: &CallResult) {
        let key = call_key(name, arguments);
        if result.transient {
            self.done.remove(&key);
        } else if !matches!(
            result.status,
            CallStatus::Duplicate | CallStatus::BudgetExhausted
        ) {
            self.done.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(status: CallStatus, transient: bool) -> CallResult {
        CallResult {
            transient,
            ..CallResult::note(status, "x")
        }
    }

    #[test]
    fn transient_failures_are_forgotten_lasting_results_are_not() {
        let mut ledger = CallLedger::default();
        let args = r#"{"a": 1}"#;
        ledger.planned("f", args);
        assert!(
            ledger.is_repeat("f", r#"{ "a":1 }"#),
            "same round, canonical arguments"
        );
        ledger.record("f", args, &result(CallStatus::TimedOut, true));
        ledger.start_round();
        assert!(
            !ledger.is_repeat("f", args),
            "a timed-out call may run again"
        );
        ledger.record("f", args, &result(CallStatus::Ok, false));
        assert!(ledger.is_repeat("f", args));
        for status in [
            CallStatus::InvalidArguments,
            CallStatus::UnknownTool,
            CallStatus::Denied,
        ] {
            let mut ledger = CallLedger::default();
            ledger.record("g", "{}", &result(status, false));
            assert!(ledger.is_repeat("g", "{}"), "{status:?} cannot change");
        }
        let mut ledger = CallLedger::default();
        ledger.record("h", "{}", &result(CallStatus::Duplicate, false));
        ledger.record("h", "{}", &result(CallStatus::BudgetExhausted, false));
        assert!(!ledger.is_repeat("h", "{}"), "skipped calls never ran");
    }
}
