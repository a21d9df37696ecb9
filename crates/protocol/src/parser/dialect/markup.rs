//! XML-like dialects: qwen3-coder (`<function=NAME><parameter=KEY>VALUE</parameter></function>`)
//! and glm45 (`NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>`), both inside
//! `<tool_call>…</tool_call>`. Values are bare text; the declared schema's types convert them
//! ([`super::values::typed_value`]).

use super::engine::{Action, Piece, SectionCtx, Spec, SpecBuilder};
use super::values::{object_text, typed_value};
use crate::parser::{DialectProblem, ParseProblem};

pub(super) fn qwen3_coder(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[("</tool_call>", false)]);
    b.open("<tool_call>", Action::Section(set));
    // The model sometimes drops the `<tool_call>` wrapper: a bare function block is a call too.
    let bare = b.closers(&[("</function>", false)]);
    b.open("<function=", Action::Section(bare));
    b.build(None, qwen3_section, None)
}

pub(super) fn glm45(mut b: SpecBuilder) -> Spec {
    let set = b.closers(&[("</tool_call>", false)]);
    b.open("<tool_call>", Action::Section(set));
    b.build(None, glm_section, None)
}

/// The text between `open` and `close` at the start of `s` (after whitespace), and what follows.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<(&'a str, Option<&'a str>)> {
    let rest = s.trim_start().strip_prefix(open)?;
    Some(match rest.find(close) {
        Some(k) => (&rest[..k], Some(&rest[k + close.len()..])),
        None => (rest, None),
    })
}

fn qwen3_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    if ctx.opener == "<function=" {
        // A bare function block: put back the markers the engine took off (a `</function>` the
        // end of the stream cut off after `</` counts; a lone `<` may start `<parameter=`).
        let closed = ctx.closed || ctx.cut.starts_with("</");
        let close = if closed { "</function>" } else { "" };
        let whole = format!("<function={body}{close}");
        return qwen3_calls(ctx, &whole, body, out);
    }
    qwen3_calls(ctx, body, body, out);
}

/// The calls in `text`; errors quote `raw`.
fn qwen3_calls(ctx: &SectionCtx<'_>, text: &str, raw: &str, out: &mut Vec<Piece>) {
    let body = raw;
    let mut rest = text;
    let mut found = false;
    while let Some(k) = rest.find("<function=") {
        found = true;
        let after = &rest[k + "<function=".len()..];
        let Some(gt) = after.find('>') else {
            out.push(ctx.error(body, DialectProblem::FunctionNameNotClosed, true));
            return;
        };
        let name = after[..gt].trim();
        let inner = &after[gt + 1..];
        let (fbody, next) = match inner.find("</function>") {
            Some(e) => (&inner[..e], &inner[e + "</function>".len()..]),
            // The closing tag eaten by a stop sequence, or cut off: only a closed section is whole.
            None if ctx.closed => (inner, ""),
            None => {
                out.push(ctx.error(body, DialectProblem::FunctionNotClosed, true));
                return;
            }
        };
        if let Err(reason) = ctx.check_name(name) {
            out.push(ctx.error(body, reason, false));
        } else {
            match qwen3_params(ctx, name, fbody) {
                Ok(arguments) => out.push(Piece::Call {
                    name: name.to_owned(),
                    arguments,
                }),
                Err(reason) => out.push(ctx.error(body, reason, false)),
            }
        }
        rest = next;
    }
    if !found {
        out.push(ctx.error(body, DialectProblem::NoFunction, !ctx.closed));
    }
}

/// `<parameter=KEY>VALUE</parameter>`…; a missing `</parameter>` ends at the next parameter or at
/// the end of the function.
fn qwen3_params(ctx: &SectionCtx<'_>, tool: &str, fbody: &str) -> Result<String, ParseProblem> {
    let mut members = Vec::new();
    let mut rest = fbody;
    while let Some(k) = rest.find("<parameter=") {
        let after = &rest[k + "<parameter=".len()..];
        let gt = after
            .find('>')
            .ok_or(ParseProblem::from(DialectProblem::ParameterNameNotClosed))?;
        let key = after[..gt].trim();
        let value_and_more = &after[gt + 1..];
        // The value ends at its `</parameter>`, or at the next `<parameter=` when the model left
        // the close tag out, whichever comes first.
        let close = value_and_more
            .find("</parameter>")
            .map(|e| (e, e + "</parameter>".len()));
        let next = value_and_more.find("<parameter=").map(|e| (e, e));
        let end = match (close, next) {
            (Some(c), Some(n)) => c.min(n),
            (Some(c), None) => c,
            (None, Some(n)) => n,
            (None, None) => (value_and_more.len(), value_and_more.len()),
        };
        let raw = &value_and_more[..end.0];
        members.push((
            key.to_owned(),
            typed_value(raw, ctx.types.get(tool, key), false),
        ));
        rest = &value_and_more[end.1..];
    }
    object_text(&members)
}

/// `NAME` then `<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>` pairs. A missing
/// `</arg_value>` ends the value at the next `<arg_key>` (as a missing `</parameter>` does in
/// qwen3-coder). At the end of the stream, a cut-off start of `</tool_call>` after complete pairs
/// is the eaten close tag (a call, as the engine takes it); a cut-off start of `<arg_key>` means
/// more arguments were coming (truncated), and so does a name that is the start of a longer
/// declared one.
fn glm_section(ctx: &SectionCtx<'_>, body: &str, out: &mut Vec<Piece>) {
    const KEY: &str = "<arg_key>";
    if KEY.starts_with(ctx.cut) && !ctx.cut.is_empty() {
        // A cut-off `<` could start `<arg_key>` as well as `</tool_call>`: more may have been coming.
        let raw = format!("{body}{}", ctx.cut);
        out.push(ctx.error(&raw, DialectProblem::GlmExpectedKey, true));
        return;
    }
    let name_end = body.find(KEY).unwrap_or(body.len());
    let name = body[..name_end].trim();
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains('<') {
        out.push(ctx.error(body, DialectProblem::GlmExpectedName, !ctx.closed));
        return;
    }
    // `<tool_call>gr` at the end of the stream: nothing shows that the name is complete.
    let name_may_go_on = !ctx.closed && ctx.cut.is_empty() && name_end == body.len();
    if name_may_go_on && body.trim_end() == body && ctx.name_may_be_cut(name) {
        out.push(ctx.error(body, DialectProblem::GlmExpectedName, true));
        return;
    }
    if let Err(reason) = ctx.check_name(name) {
        out.push(ctx.error(body, reason, false));
        return;
    }
    let mut members = Vec::new();
    let mut rest = &body[name_end..];
    while !rest.trim().is_empty() {
        let Some((key, Some(after_key))) = between(rest, KEY, "</arg_key>") else {
            let left = rest.trim_start();
            let incomplete = left.starts_with(KEY) || KEY.starts_with(left.trim_end());
            out.push(ctx.error(body, DialectProblem::GlmExpectedKey, incomplete));
            return;
        };
        let Some(after_open) = after_key.trim_start().strip_prefix("<arg_value>") else {
            let incomplete = "<arg_value>".starts_with(after_key.trim());
            out.push(ctx.error(body, DialectProblem::GlmExpectedValue, incomplete));
            return;
        };
        // The value ends at its `</arg_value>`, or at the next `<arg_key>` when the model left the
        // close tag out, whichever comes first.
        let close = after_open
            .find("</arg_value>")
            .map(|e| (e, e + "</arg_value>".len()));
        let next = after_open.find(KEY).map(|e| (e, e));
        let (value, after_value) = match (close, next) {
            (Some(c), Some(n)) if n.0 < c.0 => (&after_open[..n.0], &after_open[n.1..]),
            (Some(c), _) => (&after_open[..c.0], &after_open[c.1..]),
            (None, Some(n)) => (&after_open[..n.0], &after_open[n.1..]),
            (None, None) => {
                out.push(ctx.error(body, DialectProblem::GlmValueNotClosed, true));
                return;
            }
        };
        rest = after_value;
        let key = key.trim();
        members.push((
            key.to_owned(),
            typed_value(value, ctx.types.get(name, key), true),
        ));
    }
    match object_text(&members) {
        Ok(arguments) => out.push(Piece::Call {
            name: name.to_owned(),
            arguments,
        }),
        Err(reason) => out.push(ctx.error(body, reason, false)),
    }
}
