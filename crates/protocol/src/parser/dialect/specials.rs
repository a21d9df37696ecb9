//! Dialects written with special tokens around each call: deepseek-v3 and kimi-k2. The tokens
//! that frame a list of calls carry nothing and are removed; each call is one section.

use serde_json::value::RawValue;

use super::engine::{Action, Piece, SectionCtx, Spec, SpecBuilder};
use crate::parser::{DialectProblem, ParseProblem};

const DS_SEP: &str = "<｜tool▁sep｜>";

const DS_CALL: (&str, &str) = ("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>");
const KIMI_CALL: (&str, &str) = ("<|tool_call_begin|>", "<|tool_call_end|>");

/// DeepSeek V3/R1 (`function<｜tool▁sep｜>NAME` + a JSON fence) and V3.1 (`NAME<｜tool▁sep｜>{…}`):
/// `<｜tool▁calls▁begin｜>` opens a section up to `<｜tool▁calls▁end｜>` holding one
/// `<｜tool▁call▁begin｜>…<｜tool▁call▁end｜>` per call; a call marker outside it is a section too.
pub(super) fn deepseek(mut b: SpecBuilder) -> Spec {
    let list = b.closers(&[("<｜tool▁calls▁end｜>", false)]);
    b.open("<｜tool▁calls▁begin｜>", Action::Section(list));
    let one = b.closers(&[(DS_CALL.1, false)]);
    b.open(DS_CALL.0, Action::Section(one));
    b.open("<｜end▁of▁sentence｜>", Action::Drop);
    b.build(None, deepseek_section, None)
}

/// Kimi K2: `<|tool_calls_section_begin|>` … `<|tool_calls_section_end|>` holding one
/// `<|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>` per call.
pub(super) fn kimi(mut b: SpecBuilder) -> Spec {
    let list = b.closers(&[
        ("<|tool_calls_section_end|>", false),
        ("<|tool_call_section_end|>", false),
    ]);
    b.open("<|tool_calls_section_begin|>", Action::Section(list));
    // Some Kimi templates spell the section markers in the singular.
    b.open("<|tool_call_section_begin|>", Action::Section(list));
    let one = b.closers(&[(KIMI_CALL.1, false)]);
    b.open(KIMI_CALL.0, Action::Section(one));
    b.build(None, kimi_section, None)
}

/// The calls of a section: the whole section is one call when the engine stripped its call
/// markers (`opener == begin`), else each `begin … end` in it is one. A call without its end
/// marker is whole only if the section was closed (the model skipped the marker); at the end of
/// the stream it is truncated.
fn framed_calls(
    ctx: &SectionCtx<'_>,
    body: &str,
    (begin, end): (&'static str, &str),
    read: fn(&SectionCtx<'_>, &str, bool) -> Piece,
    out: &mut Vec<Piece>,
) {
    if ctx.opener == begin {
        out.push(read(ctx, body, ctx.closed));
        return;
    }
    let mut rest = body;
    let mut found = false;
    while let Some(k) = rest.find(begin) {
        found = true;
        let after = &rest[k + begin.len()..];
        match after.find(end) {
            Some(e) => {
                out.push(read(ctx, &after[..e], true));
                rest = &after[e + end.len()..];
            }
            None => {
                // At the end of the stream, a cut-off start of the end marker is the eaten marker
                // (the engine takes care of the section's own closing markers).
                out.push(read(ctx, ctx.without_cut_marker(after, end).0, ctx.closed));
                rest = "";
            }
        }
    }
    if !found {
        out.push(ctx.error(body, DialectProblem::NoCallMarker(begin), !ctx.closed));
    } else if !rest.trim().is_empty() {
        // Text after the calls is kept.
        out.push(Piece::Text(rest.to_owned()));
    }
}

/// A call whose arguments are one JSON object, maybe in a JSON fence, and nothing else.
pub(super) fn json_args_call(
    ctx: &SectionCtx<'_>,
    body: &str,
    name: &str,
    args: &str,
    whole: bool,
) -> Piece {
    if let Err(reason) = ctx.check_name(name) {
        return ctx.error(body, reason, false);
    }
    let mut text = args.trim();
    if let Some(fenced) = text.strip_prefix("```") {
        // ```json\n{…}\n```
        let fenced = fenced.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        text = fenced.trim();
        text = text.strip_suffix("```").unwrap_or(text).trim();
    }
    if text.is_empty() {
        // A call closed with nothing between its markers takes no arguments.
        if whole {
            return Piece::Call {
                name: name.to_owned(),
                arguments: "{}".to_owned(),
            };
        }
        return ctx.error(body, DialectProblem::MissingArguments, true);
    }
    match serde_json::from_str::<&RawValue>(text) {
        Ok(raw) if raw.get().starts_with('{') => Piece::Call {
            name: name.to_owned(),
            arguments: raw.get().to_owned(),
        },
        Ok(_) => ctx.error(body, DialectProblem::ArgumentsNotObject, false),
        Err(e) => ctx.error(body, ParseProblem::json(&e), e.is_eof() && !whole),
    }
}

fn deepseek_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    framed_calls(ctx, body, DS_CALL, deepseek_call, out);
}

/// One DeepSeek call; `whole` is false when the stream ended inside it.
fn deepseek_call(ctx: &SectionCtx<'_>, call: &str, whole: bool) -> Piece {
    let Some(k) = call.find(DS_SEP) else {
        return ctx.error(
            call,
            DialectProblem::MissingMarker("<｜tool▁sep｜>"),
            !whole,
        );
    };
    let head = call[..k].trim();
    let tail = &call[k + DS_SEP.len()..];
    let (name, args) = if head == "function" || head.is_empty() {
        // V3/R1: the name is the rest of the line, the arguments a JSON fence.
        match tail.find('\n') {
            Some(n) => (tail[..n].trim(), &tail[n..]),
            None => (tail.trim(), ""),
        }
    } else {
        (head, tail)
    };
    json_args_call(ctx, call, name, args, whole)
}

fn kimi_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    framed_calls(ctx, body, KIMI_CALL, kimi_call, out);
}

/// One Kimi call: `functions.NAME:IDX<|tool_call_argument_begin|>{…}`.
fn kimi_call(ctx: &SectionCtx<'_>, call: &str, whole: bool) -> Piece {
    const ARGS: &str = "<|tool_call_argument_begin|>";
    let Some(k) = call.find(ARGS) else {
        return ctx.error(
            call,
            DialectProblem::MissingMarker("<|tool_call_argument_begin|>"),
            !whole,
        );
    };
    let id = call[..k].trim();
    let id = id.strip_prefix("functions.").unwrap_or(id);
    // The name is between the namespace and the index; an id without `:IDX` is not Kimi's.
    let name = match id.rsplit_once(':') {
        Some((name, idx)) if !idx.is_empty() && idx.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => return ctx.error(call, DialectProblem::BadCallId(id.to_owned()), false),
    };
    json_args_call(ctx, call, name, &call[k + ARGS.len()..], whole)
}
