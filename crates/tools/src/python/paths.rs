//! `/workspace` under the Landlock fallback, which has no mount namespace: the workspace keeps
//! its host path there, so a leading `/workspace` in the model's code is rewritten to it, and the
//! host path in the output back to `/workspace`.
//!
//! Only whole path starts are rewritten (`'/workspace/outputs/a.png'`, `"/workspace"`), never
//! `/workspaces` or `x/workspace`; a path built from pieces (`"/work" + "space"`) is not seen.
//! This is a documented limitation of the fallback, not a security boundary: Landlock still
//! confines the code to the workspace.

/// The path the model is told about.
pub const MODEL_ROOT: &str = crate::common::SANDBOX_WORKSPACE;

/// `code` with every `/workspace` that starts a path replaced by `inside`.
pub fn to_inside(code: &str, inside: &str) -> String {
    replace_path_root(code, MODEL_ROOT, inside)
}

/// `text` with every `inside` that starts a path replaced by `/workspace`.
pub fn to_model(text: &str, inside: &str) -> String {
    replace_path_root(text, inside, MODEL_ROOT)
}

fn replace_path_root(text: &str, root: &str, with: &str) -> String {
    if root.is_empty() || root == with {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(at) = rest.find(root) {
        let before = &rest[..at];
        let after = &rest[at + root.len()..];
        let prev_char = before.chars().next_back().or(prev);
        let starts = prev_char.is_none_or(|c| !continues_path(c) && c != '/');
        let ends = after.chars().next().is_none_or(|c| !continues_path(c));
        out.push_str(before);
        out.push_str(if starts && ends { with } else { root });
        prev = root.chars().next_back();
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Characters that make `/workspace` part of a longer name (`/workspaces`, `my/workspace`).
fn continues_path(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '~')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_only_path_starts() {
        let code = "open('/workspace/outputs/a.png'); p = \"/workspace\"; q='/workspaces/x'; r='a/workspace/b'";
        assert_eq!(
            to_inside(code, "/srv/ws/c1"),
            "open('/srv/ws/c1/outputs/a.png'); p = \"/srv/ws/c1\"; q='/workspaces/x'; r='a/workspace/b'"
        );
    }

    #[test]
    fn maps_output_back() {
        let text = "FileNotFoundError: '/srv/ws/c1/uploads/x.csv' (not /srv/ws/c10)";
        assert_eq!(
            to_model(text, "/srv/ws/c1"),
            "FileNotFoundError: '/workspace/uploads/x.csv' (not /srv/ws/c10)"
        );
    }

    #[test]
    fn same_root_is_untouched() {
        assert_eq!(to_inside("/workspace/a", "/workspace"), "/workspace/a");
    }
}
