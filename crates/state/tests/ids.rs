//! Object ids: the prefix, then 128 random bits as 32 lowercase hex digits.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;

fn assert_random_part(hex: &str) {
    assert_eq!(hex.len(), 32, "{hex}");
    assert!(
        hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
        "not lowercase hex: {hex}"
    );
}

#[test]
fn new_id_is_the_prefix_an_underscore_and_32_lowercase_hex_digits() {
    for prefix in ["resp", "conv", "cntr", "msg"] {
        let id = toolbridge_state::new_id(prefix);
        assert_eq!(id.len(), prefix.len() + 33, "{id}");
        let rest = id.strip_prefix(&format!("{prefix}_")).unwrap();
        assert_random_part(rest);
    }
}

#[test]
fn new_file_id_uses_openais_dash() {
    let id = toolbridge_state::new_file_id();
    assert_random_part(id.strip_prefix("file-").unwrap());
}

#[test]
fn a_thousand_ids_are_distinct() {
    let ids: HashSet<String> = (0..1000)
        .map(|_| toolbridge_state::new_id("resp"))
        .collect();
    assert_eq!(ids.len(), 1000);
    let files: HashSet<String> = (0..1000).map(|_| toolbridge_state::new_file_id()).collect();
    assert_eq!(files.len(), 1000);
}
