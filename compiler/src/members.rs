//! Reading a member of a pack's JSON object.
//!
//! `serde_json`'s `Map::get` (an `IndexMap` with the standard hasher) hashes the key with
//! SipHash before it looks, about 250 instructions a lookup. Nearly every object of a pack
//! has a handful of members, where comparing the keys in order costs a fraction of that.
//! The checks and lowering read members this way, a few hundred thousand times on a pack
//! of a thousand compositions.

use serde_json::{Map, Value};

/// Objects with at most this many members are searched in order; larger ones by hash.
const SCAN_MAX: usize = 12;

/// A JSON object's members, by name.
pub(crate) trait Members {
    /// The member `key`, as `Map::get` finds it.
    fn member(&self, key: &str) -> Option<&Value>;

    /// The member `key`, or `null` when there is none, as `value[key]` reads it.
    fn field(&self, key: &str) -> &Value {
        self.member(key).unwrap_or(&Value::Null)
    }
}

impl Members for Map<String, Value> {
    #[inline]
    fn member(&self, key: &str) -> Option<&Value> {
        if self.len() <= SCAN_MAX {
            self.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
        } else {
            self.get(key)
        }
    }
}

impl Members for Value {
    /// The member `key` of an object; `None` for anything else.
    #[inline]
    fn member(&self, key: &str) -> Option<&Value> {
        self.as_object()?.member(key)
    }
}

/// The members of `v` in source order when it is an object; none for anything else, or
/// for no value.
pub(crate) fn entries(v: Option<&Value>) -> impl Iterator<Item = (&String, &Value)> {
    v.and_then(Value::as_object).into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_found_as_map_get_finds_them() {
        let small = json!({"id": 1, "name": "n", "": 2});
        let large: Map<String, Value> = (0..40).map(|i| (format!("k{i}"), json!(i))).collect();
        let large = Value::Object(large);
        for v in [&small, &large, &json!([1]), &json!("s"), &Value::Null] {
            for key in ["id", "name", "", "k0", "k39", "k40", "missing"] {
                assert_eq!(v.member(key), v.get(key), "{v} {key}");
                assert_eq!(v.field(key), &v[key], "{v} {key}");
            }
        }
    }
}
