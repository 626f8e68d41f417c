//! Reading a member of a pack's JSON object without hashing its name
//! ([`ir_spec::json::member`], which the VM uses too). The checks and lowering read members
//! this way, a few hundred thousand times on a pack of a thousand compositions.

use serde_json::{Map, Value};

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
        ir_spec::json::member(self, key)
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
pub(crate) fn entries(v: Option<&Value>) -> impl Iterator<Item = (&str, &Value)> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
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
