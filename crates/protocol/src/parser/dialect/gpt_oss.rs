//! gpt-oss (harmony): a reply is a series of messages, each `<|channel|>CHANNEL<|message|>…` (or
//! `<|start|>assistant<|channel|>…`), ended by `<|end|>`, `<|call|>` or `<|return|>`. `analysis`
//! is reasoning, `final` (and `commentary` to nobody) is visible text, and a message with
//! `to=functions.NAME` in its header is a call whose body is the arguments JSON.

use super::engine::{Action, Piece, SectionCtx, Spec, SpecBuilder};
use super::specials::json_args_call;

/// The closer sets the header reader refers to, in the order `spec` creates them.
const REASONING: usize = 1;
const CALL: usize = 2;

pub(super) fn spec(mut b: SpecBuilder) -> Spec {
    let reasoning = b.closers(&[
        ("<|end|>", false),
        ("<|return|>", false),
        ("<|call|>", false),
        ("<|start|>", true),
        ("<|channel|>", true),
    ]);
    let call = b.closers(&[
        ("<|call|>", false),
        ("<|end|>", false),
        ("<|return|>", false),
        ("<|start|>", true),
        ("<|channel|>", true),
    ]);
    debug_assert_eq!((reasoning, call), (REASONING, CALL));
    b.open("<|channel|>", Action::Header);
    b.open("<|start|>", Action::Header);
    b.open("<|end|>", Action::Drop);
    b.open("<|return|>", Action::Drop);
    b.open("<|call|>", Action::Drop);
    b.build(None, section, Some(header))
}

/// Reads a message header (`assistant<|channel|>commentary to=functions.f <|constrain|>json`).
fn header(header: &str, label: &mut String) -> Action {
    let channel_part = header.rsplit("<|channel|>").next().unwrap_or(header);
    let channel = channel_part.split_whitespace().next().unwrap_or("");
    let recipient = header.find("to=").map(|k| {
        let r = &header[k + 3..];
        let end = r
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(r.len());
        &r[..end]
    });
    match recipient {
        Some(to) if !to.is_empty() => {
            label.push_str(to.strip_prefix("functions.").unwrap_or(to));
            Action::Section(CALL)
        }
        _ if channel == "analysis" => Action::Reasoning(REASONING),
        _ => Action::Drop,
    }
}

fn section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    out.push(json_args_call(ctx, body, ctx.label, body, ctx.closed));
}
