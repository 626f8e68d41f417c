//! Proptest strategies for the tests of the crates that use this one (feature
//! `testing`).

use proptest::prelude::*;
use serde_json::{json, Value};

/// Any JSON value up to 5 levels deep: strings with a quote, a backslash, a newline, a
/// control character and a non-ASCII letter; member names with a quote and a non-ASCII
/// letter; integers and finite floats.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1e30f64..1e30).prop_map(|x| json!(x)),
        "[a-z\\\\\"\n\u{1}\u{e9}]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(5, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-z\"\u{e9}]{0,6}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
