//! The skill listing of the system prompt: each description cut at [`DESCRIPTION_LIMIT`]
//! characters, the entries within the set's listing budget (issue 13 item 9).

use toolbridge_protocol::texts;

use super::{SkillSet, DESCRIPTION_LIMIT};

/// The listing and what it leaves out ([`SkillSet::listing_report`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The system-prompt text (empty when the set is empty).
    pub text: String,
    /// Skills whose description is cut at [`DESCRIPTION_LIMIT`] characters, in order.
    pub cut: Vec<String>,
    /// Skills left out whole because the listing budget was spent, in order.
    pub dropped: Vec<String>,
}

/// The first `limit` characters of `text`, and whether anything was cut.
fn first_chars(text: &str, limit: usize) -> (&str, bool) {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => (&text[..cut], true),
        None => (text, false),
    }
}

impl SkillSet {
    /// The system-prompt listing: `skill_listing_header(skill_tool)`, a newline, then one
    /// `name: description` line per skill, in order (see [`SkillSet::listing_report`]). Empty when
    /// the set is empty.
    pub fn listing(&self, skill_tool: &str) -> String {
        self.listing_report(skill_tool).text
    }

    /// The listing with what it leaves out. Each description (on one line) is cut at
    /// [`DESCRIPTION_LIMIT`] characters, on a character boundary, without an ellipsis. The entries
    /// (everything after the header line, line breaks included) stay within the listing budget:
    /// skills are listed in order while their whole entry fits; the first that does not, and every
    /// skill after it, is left out whole (never cut mid-entry), so the order is the priority (the
    /// built-in skill comes first). With every skill left out the text is the header alone.
    pub fn listing_report(&self, skill_tool: &str) -> Listing {
        if self.skills.is_empty() {
            return Listing::default();
        }
        let mut entries = String::new();
        let mut used = 0usize;
        let mut cut = Vec::new();
        let mut dropped = Vec::new();
        for skill in &self.skills {
            let description = one_line(&skill.description);
            let (description, was_cut) = first_chars(&description, DESCRIPTION_LIMIT);
            let separator = usize::from(!entries.is_empty());
            let chars = skill.name.chars().count() + 2 + description.chars().count();
            if !dropped.is_empty() || used + separator + chars > self.listing_budget {
                dropped.push(skill.name.clone());
                continue;
            }
            if was_cut {
                cut.push(skill.name.clone());
            }
            if separator == 1 {
                entries.push('\n');
            }
            entries.push_str(&skill.name);
            entries.push_str(": ");
            entries.push_str(description);
            used += separator + chars;
        }
        let mut text = texts::skill_listing_header(skill_tool);
        if !entries.is_empty() {
            text.push('\n');
            text.push_str(&entries);
        }
        Listing { text, cut, dropped }
    }

    /// Logs (warn) what the listing leaves out or cuts, so an operator learns why the model does
    /// not see a skill; returns the report.
    pub fn warn_about_listing(&self, skill_tool: &str) -> Listing {
        let report = self.listing_report(skill_tool);
        if !report.dropped.is_empty() {
            tracing::warn!(
                budget = self.listing_budget,
                dropped = ?report.dropped,
                "{} skill(s) left out of the skill listing: over its budget of {} characters (raise `skill_listing_budget` under [agent])",
                report.dropped.len(),
                self.listing_budget,
            );
        }
        for name in &report.cut {
            tracing::warn!(skill = %name, limit = DESCRIPTION_LIMIT, "skill description cut in the listing");
        }
        report
    }
}

/// A description on one line: line breaks (a YAML block scalar, say) become single spaces.
fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    std::borrow::Cow::Owned(parts.join(" "))
}
