//! The JSON nesting limit, checked on the raw bytes before any parsing: one linear, string-aware
//! pass that allocates nothing, so a body of a million `[` costs a scan, not a deep recursion.

/// The deepest nesting of arrays and objects, or `Err(limit)` as soon as it passes `limit`.
/// Invalid JSON is not judged here (the parser reports it); only depth is.
pub(crate) fn check_depth(bytes: &[u8], limit: usize) -> Result<usize, usize> {
    let mut depth = 0usize;
    let mut max = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > limit {
                    return Err(limit);
                }
                max = max.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn counts_depth_outside_strings() {
        assert_eq!(check_depth(br#"{"a":[1,{"b":2}]}"#, 10), Ok(3));
        assert_eq!(check_depth(br#"{"a":"[[[[\"[[["}"#, 2), Ok(1));
        assert_eq!(check_depth(br#"{"a":"\\"}"#, 1), Ok(1));
        let deep = "[".repeat(100_000);
        assert_eq!(check_depth(deep.as_bytes(), 64), Err(64));
    }
}
