//! Object ids: a prefix and 128 random bits (docs/src/security.md, "Stored objects and tenancy":
//! ids cannot be guessed).

use std::fmt::Write;

/// `prefix_` and 32 lowercase hex digits.
pub(crate) fn new(prefix: &str) -> String {
    let bits: u128 = rand::random();
    let mut id = String::with_capacity(prefix.len() + 33);
    id.push_str(prefix);
    id.push('_');
    let _ = write!(id, "{bits:032x}");
    id
}
