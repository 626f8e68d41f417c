//! How the run's JSON values are written in a snapshot: as compact JSON text, since
//! postcard cannot carry a `serde_json::Value`. Each adapter is a `#[serde(with = ...)]`
//! module for one field shape (a value, an optional value, output slots, tool requests,
//! a lane's result, the call log).
//!
//! Writing borrows: a value is written through [`TRef`], straight from the run's state,
//! never cloned first (a host that snapshots after every answer, as `packc batch` does,
//! pays only for the text). Reading builds owned values through [`T`]. Both write the
//! same bytes.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::RunError;

/// `Value` as JSON text.
pub(crate) mod value_text {
    use super::*;
    use serde::{de::Error as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
        TRef(v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(D::Error::custom)
    }
}

/// A JSON object as text.
pub(crate) mod map_text {
    use super::*;
    use serde::{de::Error as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Map<String, Value>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&json_text(v)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(D::Error::custom)
    }
}

/// A value read from its text, for containers.
#[derive(Deserialize)]
struct T(#[serde(with = "value_text")] Value);

/// A value written as its text, borrowed from the run's state.
#[derive(Clone, Copy)]
struct TRef<'a>(&'a Value);

impl Serialize for TRef<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&json_text(self.0)?)
    }
}

/// Compact JSON text, as `Value`'s `Display` writes it, but written by `serde_json`'s
/// own writer rather than through `fmt`.
fn json_text<E: serde::ser::Error>(v: &impl Serialize) -> Result<String, E> {
    serde_json::to_string(v).map_err(E::custom)
}

/// `Vec<Value>` as a sequence of texts.
pub(crate) mod values_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Value], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(TRef))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Value>, D::Error> {
        Ok(Vec::<T>::deserialize(d)?.into_iter().map(|t| t.0).collect())
    }
}

/// `Option<Value>` as optional text.
pub(crate) mod opt_value_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Value>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(TRef).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
        Ok(Option::<T>::deserialize(d)?.map(|t| t.0))
    }
}

/// Output slots.
pub(crate) mod slots_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Option<Value>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|v| v.as_ref().map(TRef)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Option<Value>>, D::Error> {
        Ok(Vec::<Option<T>>::deserialize(d)?
            .into_iter()
            .map(|t| t.map(|t| t.0))
            .collect())
    }
}

/// Tool requests.
pub(crate) mod requests_text {
    use super::*;
    use crate::api::ToolRequest;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[ToolRequest], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|r| (r.name.as_str(), TRef(&r.args))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ToolRequest>, D::Error> {
        Ok(Vec::<(String, T)>::deserialize(d)?
            .into_iter()
            .map(|(name, args)| ToolRequest { name, args: args.0 })
            .collect())
    }
}

/// A lane's result.
pub(crate) mod opt_result_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        r: &Option<Result<Value, RunError>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        r.as_ref().map(|r| r.as_ref().map(TRef)).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Result<Value, RunError>>, D::Error> {
        Ok(Option::<Result<T, RunError>>::deserialize(d)?.map(|r| r.map(|t| t.0)))
    }
}

/// A call record as a snapshot holds it: `SnapRecord<String, T>` when read,
/// `SnapRecord<&str, TRef>` when written (the same bytes).
#[derive(Serialize, Deserialize)]
enum SnapRecord<S, V> {
    Model {
        prompt: S,
        input: V,
        system: S,
        provider: Option<S>,
    },
    Tool {
        tool: S,
        args: V,
    },
    Guardrail {
        validator: S,
        at: S,
        action: crate::guard::GuardAction,
        length: u64,
    },
    Guard {
        validator: S,
        params: V,
        text: S,
    },
    Extension {
        extension: S,
        input: V,
        params: V,
    },
}

impl<'a, S, V> SnapRecord<S, V> {
    /// The record of `r`, its strings and values mapped by `text` and `value`.
    fn of(
        r: &'a crate::api::CallRecord,
        text: impl Fn(&'a String) -> S,
        value: impl Fn(&'a Value) -> V,
    ) -> Self {
        use crate::api::CallRecord;
        match r {
            CallRecord::Model {
                prompt,
                input,
                system,
                provider,
            } => SnapRecord::Model {
                prompt: text(prompt),
                input: value(input),
                system: text(system),
                provider: provider.as_ref().map(&text),
            },
            CallRecord::Tool { tool, args } => SnapRecord::Tool {
                tool: text(tool),
                args: value(args),
            },
            CallRecord::Guardrail {
                validator,
                at,
                action,
                length,
            } => SnapRecord::Guardrail {
                validator: text(validator),
                at: text(at),
                action: *action,
                length: *length,
            },
            CallRecord::Guard {
                validator,
                params,
                text: t,
            } => SnapRecord::Guard {
                validator: text(validator),
                params: value(params),
                text: text(t),
            },
            CallRecord::Extension {
                extension,
                input,
                params,
            } => SnapRecord::Extension {
                extension: text(extension),
                input: value(input),
                params: value(params),
            },
        }
    }
}

/// The call log.
pub(crate) mod calls_text {
    use super::*;
    use crate::api::CallRecord;
    /// A log entry's parallel step and branch (`trace::Tag`).
    type Tag = Option<(u32, u32)>;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(Tag, CallRecord)], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            v.iter()
                .map(|(t, r)| (*t, SnapRecord::of(r, String::as_str, TRef))),
        )
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Tag, CallRecord)>, D::Error> {
        Ok(Vec::<(Tag, SnapRecord<String, T>)>::deserialize(d)?
            .into_iter()
            .map(|(t, r)| {
                (
                    t,
                    match r {
                        SnapRecord::Model {
                            prompt,
                            input,
                            system,
                            provider,
                        } => CallRecord::Model {
                            prompt,
                            input: input.0,
                            system,
                            provider,
                        },
                        SnapRecord::Tool { tool, args } => CallRecord::Tool { tool, args: args.0 },
                        SnapRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        } => CallRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        },
                        SnapRecord::Guard {
                            validator,
                            params,
                            text,
                        } => CallRecord::Guard {
                            validator,
                            params: params.0,
                            text,
                        },
                        SnapRecord::Extension {
                            extension,
                            input,
                            params,
                        } => CallRecord::Extension {
                            extension,
                            input: input.0,
                            params: params.0,
                        },
                    },
                )
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::CallRecord;
    use proptest::prelude::*;

    /// A log entry's tag, as `trace::Tag` is: not imported, because `trace` uses this
    /// module and the modules import one way (`vm/tests/imports.rs`).
    type Tag = Option<(u32, u32)>;

    fn bytes(v: &impl Serialize) -> Vec<u8> {
        postcard::to_allocvec(v).unwrap()
    }

    proptest! {
        /// A value is written as its `Display` text, the bytes a snapshot has always
        /// held, and read back equal.
        #[test]
        fn a_value_is_written_as_its_display_text(v in ir_spec::testing::json_value()) {
            let written = bytes(&TRef(&v));
            prop_assert_eq!(&written, &bytes(&v.to_string()));
            let T(back) = postcard::from_bytes(&written).unwrap();
            prop_assert_eq!(back, v);
        }

        /// Each call record is written as the owned record with its values as text,
        /// and read back equal.
        #[test]
        fn call_records_are_written_as_owned_records(
            v in ir_spec::testing::json_value(),
            w in ir_spec::testing::json_value(),
            name in "[a-z\"]{0,8}",
        ) {
            let s = || name.clone();
            let records = [
                CallRecord::Model { prompt: s(), input: v.clone(), system: s(), provider: Some(s()) },
                CallRecord::Model { prompt: s(), input: v.clone(), system: s(), provider: None },
                CallRecord::Tool { tool: s(), args: w.clone() },
                CallRecord::Guardrail {
                    validator: s(),
                    at: s(),
                    action: crate::guard::GuardAction::Blocked,
                    length: 7,
                },
                CallRecord::Guard { validator: s(), params: v.clone(), text: s() },
                CallRecord::Extension { extension: s(), input: v.clone(), params: w.clone() },
            ];
            let owned: Vec<(Tag, SnapRecord<String, String>)> = records
                .iter()
                .map(|r| (Some((1, 2)), SnapRecord::of(r, Clone::clone, Value::to_string)))
                .collect();
            let tagged: Vec<_> = records.iter().map(|r| (Some((1, 2)), r.clone())).collect();
            #[derive(Serialize)]
            struct Calls<'a>(#[serde(with = "calls_text")] &'a Vec<(Tag, CallRecord)>);
            let written = bytes(&Calls(&tagged));
            prop_assert_eq!(&written, &bytes(&owned));
            #[derive(Deserialize)]
            struct Back(#[serde(with = "calls_text")] Vec<(Tag, CallRecord)>);
            let Back(back) = postcard::from_bytes(&written).unwrap();
            prop_assert_eq!(back, tagged);
        }
    }
}
