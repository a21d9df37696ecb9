//! Dialects whose calls are JSON objects after a marker: llama3-json, mistral, granite, phi4-mini.

use serde_json::value::RawValue;

use super::engine::{Action, Piece, SectionCtx, Spec, SpecBuilder};
use crate::parser::shape::{array_elements, judge_object};
use crate::parser::{DialectProblem, ParseProblem};

/// llama3-json: `<|python_tag|>` opens a section up to `<|eom_id|>`/`<|eot_id|>`, the next
/// `<|python_tag|>` (which opens another: models repeat the tag per call without an `<|eom_id|>`
/// between them) or the end; a reply that starts with `{` is a reply section.
pub(super) fn llama3(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[
        ("<|eom_id|>", false),
        ("<|eot_id|>", false),
        ("<|python_tag|>", true),
    ]);
    b.open("<|python_tag|>", Action::Section(set));
    b.build(Some(b'{'), llama3_section, None)
}

/// mistral: `[TOOL_CALLS]` opens a section up to the next `[TOOL_CALLS]` (which opens another)
/// or the end, or up to the end of its calls (see `engine::track`): the model writes no closing
/// marker, so text after the calls would otherwise wait for the end of the stream.
pub(super) fn mistral(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[("[TOOL_CALLS]", true)]);
    b.open("[TOOL_CALLS]", Action::Section(set));
    let mut spec = b.build(None, mistral_section, None);
    spec.track = true;
    spec
}

/// granite: `<|tool_call|>` (3.x) or `<tool_call>` (3.1) then a JSON array, up to the end (or
/// `</tool_call>`).
pub(super) fn granite(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[("</tool_call>", false)]);
    b.open("<|tool_call|>", Action::Section(set));
    b.open("<tool_call>", Action::Section(set));
    b.build(None, json_section, None)
}

/// phi4-mini: `functools[` then the rest of a JSON array, up to the end.
pub(super) fn phi4_mini(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[]);
    b.open("functools[", Action::Section(set));
    b.build(None, phi4_section, None)
}

/// Reads call values from the start of `text`: objects, or arrays of objects, separated by
/// whitespace and the bytes in `seps`. Returns where reading stopped (the rest is not JSON) and
/// whether every value read was a valid call. With `strict`, a value that is not a call ends the
/// reading with nothing pushed for it (the caller then treats the section as text); otherwise it
/// gives an error piece.
fn read_values(
    ctx: &SectionCtx<'_>,
    text: &str,
    seps: &[u8],
    strict: bool,
    out: &mut Vec<Piece>,
) -> (usize, bool) {
    let bytes = text.as_bytes();
    let mut pos = 0;
    let mut all_ok = true;
    loop {
        let mut p = pos;
        while p < bytes.len() && (bytes[p].is_ascii_whitespace() || seps.contains(&bytes[p])) {
            p += 1;
        }
        if p >= bytes.len() || !matches!(bytes[p], b'{' | b'[') {
            return (if p >= bytes.len() { p } else { pos }, all_ok);
        }
        let mut values = serde_json::Deserializer::from_str(&text[p..]).into_iter::<&RawValue>();
        match values.next() {
            Some(Ok(raw)) => {
                let end = p + values.byte_offset();
                let value = raw.get();
                if !judge(ctx, value, strict, out) {
                    all_ok = false;
                    if strict {
                        return (p, false);
                    }
                }
                pos = end;
            }
            Some(Err(e)) => {
                if !strict || !ctx.closed {
                    out.push(ctx.error(&text[p..], ParseProblem::json(&e), e.is_eof()));
                }
                return (bytes.len(), false);
            }
            None => return (p, all_ok),
        }
    }
}

/// Judges one value (an object, or an array of them); pushes its calls or errors.
fn judge(ctx: &SectionCtx<'_>, value: &str, strict: bool, out: &mut Vec<Piece>) -> bool {
    let items: Vec<&str> = if value.starts_with('[') {
        match array_elements(value) {
            Ok(items) if !items.is_empty() => items,
            Ok(_) => {
                if !strict {
                    out.push(ctx.error(value, ParseProblem::EmptyArray, false));
                }
                return false;
            }
            Err(reason) => {
                if !strict {
                    out.push(ctx.error(value, reason, false));
                }
                return false;
            }
        }
    } else {
        vec![value]
    };
    let mut judged = Vec::with_capacity(items.len());
    for item in items {
        match judge_object(item, ctx.declared, strict) {
            Ok(call) => judged.push(Piece::Call {
                name: call.name.into_owned(),
                arguments: call.arguments.into_owned(),
            }),
            Err(reason) if strict => {
                let _ = reason;
                return false;
            }
            Err(reason) => judged.push(ctx.error(item, reason, false)),
        }
    }
    let ok = judged.iter().all(|p| matches!(p, Piece::Call { .. }));
    out.extend(judged);
    ok
}

/// The text after the calls, kept visible.
fn rest(text: &str, from: usize, out: &mut Vec<Piece>) {
    if from < text.len() {
        out.push(Piece::Text(text[from..].to_owned()));
    }
}

fn llama3_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    if ctx.opener.is_empty() {
        // A reply that starts with JSON: the call objects at its start (each with a declared name
        // and explicit arguments) are calls and the rest is text; if the first is none, all is text.
        let mut calls = Vec::new();
        let (end, _) = read_values(ctx, body, b";", true, &mut calls);
        if calls.iter().any(|p| matches!(p, Piece::Call { .. })) {
            out.extend(
                calls
                    .into_iter()
                    .filter(|p| matches!(p, Piece::Call { .. })),
            );
            rest(body, end, out);
        } else {
            // Cut off inside the JSON: say so (the text stays visible).
            out.extend(calls.into_iter().filter(
                |p| matches!(p, Piece::Error(e) if e.kind == crate::parser::ErrorKind::Truncated),
            ));
        }
        return;
    }
    let (end, _) = read_values(ctx, body, b";", false, out);
    rest(body, end, out);
}

fn json_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    let (end, _) = read_values(ctx, body, b",", false, out);
    rest(body, end, out);
}

fn phi4_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    let text = format!("[{body}");
    let (end, _) = read_values(ctx, &text, b"", false, out);
    if end < text.len() {
        // The opener's `[` is not part of the rest.
        out.push(Piece::Text(text[end.max(1)..].to_owned()));
    }
}

fn mistral_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    let trimmed = body.trim_start();
    if trimmed.starts_with(['[', '{']) {
        let (end, _) = read_values(ctx, body, b",", false, out);
        rest(body, end, out);
        return;
    }
    // `name[ARGS]{…}` or `name[CALL_ID]id[ARGS]{…}` (or `name{…}`).
    let name_end = trimmed.find(['[', '{']).unwrap_or(trimmed.len());
    let name = trimmed[..name_end].trim();
    let after = &trimmed[name_end..];
    let after = match after.strip_prefix("[CALL_ID]") {
        Some(id_and_rest) => match id_and_rest.find('[') {
            Some(k) => &id_and_rest[k..],
            None => "",
        },
        None => after,
    };
    let args = after.strip_prefix("[ARGS]").unwrap_or(after);
    if name.is_empty() || name.contains(char::is_whitespace) {
        let incomplete = trimmed.is_empty();
        out.push(ctx.error(body, DialectProblem::MistralExpectedName, incomplete));
        return;
    }
    if !args.trim_start().starts_with('{') {
        let incomplete = args.trim().is_empty();
        out.push(ctx.error(body, DialectProblem::MistralExpectedArguments, incomplete));
        return;
    }
    if let Err(reason) = ctx.check_name(name) {
        out.push(ctx.error(body, reason, false));
        return;
    }
    // `after` and `args` are suffixes of `body`.
    let args_at = body.len() - args.trim_start().len();
    let mut values = serde_json::Deserializer::from_str(&body[args_at..]).into_iter::<&RawValue>();
    match values.next() {
        Some(Ok(raw)) if raw.get().starts_with('{') => {
            let end = args_at + values.byte_offset();
            out.push(Piece::Call {
                name: name.to_owned(),
                arguments: raw.get().to_owned(),
            });
            rest(body, end, out);
        }
        Some(Err(e)) => out.push(ctx.error(body, ParseProblem::json(&e), e.is_eof())),
        _ => out.push(ctx.error(body, DialectProblem::ArgumentsNotObject, false)),
    }
}
