//! JSON values inside the IR are encoded as JSON text.
//!
//! `serde_json::Value` deserializes through `deserialize_any`, which non-self-describing
//! formats such as postcard (the `.ppk` encoding) do not support. Every field holding a
//! `Value` therefore carries `#[serde(with = "crate::json_text")]`: it is written as one
//! string of compact JSON and parsed back on decode, whatever the outer format.

use serde::de::{DeserializeOwned, Error as _};
use serde::ser::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Writes `v` as a string of JSON text.
pub fn serialize<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    let text = serde_json::to_string(v).map_err(S::Error::custom)?;
    s.serialize_str(&text)
}

/// Reads a value written by [`serialize`].
pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    let text = String::deserialize(d)?;
    serde_json::from_str(&text).map_err(D::Error::custom)
}

/// Optional JSON values: written as a postcard `Option<str>`, so that a present JSON
/// `null` (`default: null`) stays distinct from an absent value.
pub mod option {
    use serde::de::{DeserializeOwned, Error as _};
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// Writes `None` as absent and `Some(v)` as the JSON text of `v`.
    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            None => s.serialize_none(),
            Some(v) => {
                let text = serde_json::to_string(v).map_err(S::Error::custom)?;
                s.serialize_some(&text)
            }
        }
    }

    /// Reads a value written by [`serialize`].
    pub fn deserialize<'de, T: DeserializeOwned, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(D::Error::custom),
        }
    }
}
