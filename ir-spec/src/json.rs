//! Reading a member of a JSON object, for the VM (which reads a host value's members on
//! every `${step.output.field}`); the compiler's own document type compares member names
//! with [`eq_str`] too, and scans objects up to [`SCAN_MAX`] members.
//!
//! `serde_json`'s `Map::get` (an `IndexMap` with the standard hasher) hashes the key with
//! SipHash before it looks, about 250 instructions a lookup. Nearly every object of a pack
//! or an answer has a handful of members, where comparing the keys in order costs a
//! fraction of that.

use serde_json::{Map, Value};

/// Objects with at most this many members are searched in order; larger ones by hash.
pub const SCAN_MAX: usize = 12;

/// The member `key` of `object`, as `Map::get` finds it.
///
/// ```
/// let v = serde_json::json!({"id": 1, "name": "n"});
/// let o = v.as_object().unwrap();
/// assert_eq!(ir_spec::json::member(o, "name"), o.get("name"));
/// assert_eq!(ir_spec::json::member(o, "nope"), None);
/// ```
#[inline(always)]
pub fn member<'v>(object: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
    if object.len() <= SCAN_MAX {
        // Lengths first, then the bytes, compared inline: most members are told apart
        // by their lengths, and short keys never reach `memcmp`.
        for (k, v) in object {
            if eq_str(k, key) {
                return Some(v);
            }
        }
        None
    } else {
        object.get(key)
    }
}

/// String equality without a call to `memcmp` for strings up to 16 bytes (object keys,
/// enum-like values): one or two overlapping word loads per side.
///
/// ```
/// assert!(ir_spec::json::eq_str("research_paper", "research_paper"));
/// assert!(!ir_spec::json::eq_str("research_paper", "research_pape_"));
/// ```
#[inline(always)]
pub fn eq_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        if n > 16 {
            return a == b;
        }
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
        return (w(a, 0) ^ w(b, 0)) | (w(a, n - 8) ^ w(b, n - 8)) == 0;
    }
    if n >= 4 {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
        return (w(a, 0) ^ w(b, 0)) | (w(a, n - 4) ^ w(b, n - 4)) == 0;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_found_as_map_get_finds_them() {
        let small = json!({"id": 1, "name": "n", "": 2, "a_longer_key_name": 3});
        let large: Map<String, Value> = (0..40).map(|i| (format!("k{i}"), json!(i))).collect();
        for o in [small.as_object().unwrap(), &large] {
            for key in [
                "id",
                "name",
                "",
                "a_longer_key_name",
                "k0",
                "k39",
                "k40",
                "nope",
            ] {
                assert_eq!(member(o, key), o.get(key), "{key}");
            }
        }
    }

    #[test]
    fn string_equality_is_byte_equality() {
        let words = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abce",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "bbcdefgh",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abcdefghijklmnopq",
            "abcdefghijklmnopr",
            "é",
            "éa",
            "e\u{301}",
        ];
        for a in words {
            for b in words {
                assert_eq!(eq_str(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }
}
