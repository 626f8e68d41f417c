//! How the run's JSON values are written in a snapshot: as compact JSON text, since
//! postcard cannot carry a `serde_json::Value`. Each adapter is a `#[serde(with = ...)]`
//! module for one field shape (a value, an optional value, output slots, tool requests,
//! a lane's result, the call log).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::RunError;

/// `Value` as JSON text.
pub(crate) mod value_text {
    use super::*;
    use serde::{de::Error as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Value, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
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
        s.serialize_str(&Value::Object(v.clone()).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
        let text = <&str>::deserialize(d)?;
        serde_json::from_str(text).map_err(D::Error::custom)
    }
}

/// A `Serialize`/`Deserialize` wrapper writing a `Value` as text, for containers.
#[derive(Serialize, Deserialize)]
struct T(#[serde(with = "value_text")] Value);

/// `Vec<Value>` as a sequence of texts.
pub(crate) mod values_text {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Value], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|v| v.to_string()))
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
        v.as_ref().map(|v| T(v.clone())).serialize(s)
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
        let items: Vec<Option<T>> = v.iter().map(|v| v.as_ref().map(|v| T(v.clone()))).collect();
        items.serialize(s)
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
        let items: Vec<(&str, T)> = v
            .iter()
            .map(|r| (r.name.as_str(), T(r.args.clone())))
            .collect();
        items.serialize(s)
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
        r.as_ref()
            .map(|r| r.as_ref().map(|v| T(v.clone())).map_err(Clone::clone))
            .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Result<Value, RunError>>, D::Error> {
        Ok(Option::<Result<T, RunError>>::deserialize(d)?.map(|r| r.map(|t| t.0)))
    }
}

#[derive(Serialize, Deserialize)]
enum SnapRecord {
    Model {
        prompt: String,
        input: T,
        system: String,
        provider: Option<String>,
    },
    Tool {
        tool: String,
        args: T,
    },
    Guardrail {
        validator: String,
        at: String,
        action: crate::guard::GuardAction,
        length: u64,
    },
    Guard {
        validator: String,
        params: T,
        text: String,
    },
    Extension {
        extension: String,
        input: T,
        params: T,
    },
}

/// The call log.
pub(crate) mod calls_text {
    use super::*;
    use crate::api::CallRecord;
    /// A log entry's parallel step and branch (`trace::Tag`).
    type Tag = Option<(u32, u32)>;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[(Tag, CallRecord)], s: S) -> Result<S::Ok, S::Error> {
        let items: Vec<(Tag, SnapRecord)> = v
            .iter()
            .map(|(t, r)| {
                (
                    *t,
                    match r {
                        CallRecord::Model {
                            prompt,
                            input,
                            system,
                            provider,
                        } => SnapRecord::Model {
                            prompt: prompt.clone(),
                            input: T(input.clone()),
                            system: system.clone(),
                            provider: provider.clone(),
                        },
                        CallRecord::Tool { tool, args } => SnapRecord::Tool {
                            tool: tool.clone(),
                            args: T(args.clone()),
                        },
                        CallRecord::Guardrail {
                            validator,
                            at,
                            action,
                            length,
                        } => SnapRecord::Guardrail {
                            validator: validator.clone(),
                            at: at.clone(),
                            action: *action,
                            length: *length,
                        },
                        CallRecord::Guard {
                            validator,
                            params,
                            text,
                        } => SnapRecord::Guard {
                            validator: validator.clone(),
                            params: T(params.clone()),
                            text: text.clone(),
                        },
                        CallRecord::Extension {
                            extension,
                            input,
                            params,
                        } => SnapRecord::Extension {
                            extension: extension.clone(),
                            input: T(input.clone()),
                            params: T(params.clone()),
                        },
                    },
                )
            })
            .collect();
        items.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Tag, CallRecord)>, D::Error> {
        Ok(Vec::<(Tag, SnapRecord)>::deserialize(d)?
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
