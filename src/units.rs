//! Units as users write them and as the engine keeps them, and the JSON
//! Schema words for them.
//!
//! Scenario keys carry their unit in their name (`compute_s`, `G_s_per_byte`);
//! the engine works in integer picoseconds (per byte: float picoseconds). The
//! `serde(with = …)` modules here convert at the border, once, and the marker
//! types give the generated schema what the front end checks (`format:
//! "seconds"`: within the engine's range and resolution).

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

use crate::time::{from_seconds, Time, PS_PER_S};

/// The largest time a scenario may give (see [`crate::time::MAX_INPUT`]).
pub const MAX_PS: f64 = crate::time::MAX_INPUT as f64;

fn checked_ps<E: serde::de::Error>(s: f64) -> Result<f64, E> {
    if !s.is_finite() || s < 0.0 {
        return Err(E::custom(format!("must be a finite number >= 0, got {s}")));
    }
    if s * PS_PER_S > MAX_PS {
        return Err(E::custom(format!("too large: {s} s exceeds the engine's range (about {:.3e} s)", MAX_PS / PS_PER_S)));
    }
    Ok(s * PS_PER_S)
}

/// A time in seconds held as integer picoseconds.
pub mod secs {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &Time, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*t as f64 / PS_PER_S)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        let s = f64::deserialize(d)?;
        checked_ps::<D::Error>(s)?;
        Ok(from_seconds(s))
    }
}

/// A time (or a time per byte) in seconds held as float picoseconds.
pub mod secs_f64 {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(*t / PS_PER_S)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        checked_ps::<D::Error>(f64::deserialize(d)?)
    }
}

/// A list of times in seconds held as float picoseconds.
pub mod secs_f64_list {
    use super::*;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(t: &[f64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(t.iter().map(|x| x / PS_PER_S))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Vec::<f64>::deserialize(d)?
            .into_iter()
            .map(|x| if x.is_finite() { Ok(x * PS_PER_S) } else { Err(serde::de::Error::custom("must be finite")) })
            .collect()
    }
}

/// Schema of a time in seconds, >= 0.
pub struct Seconds;
/// Schema of a time in seconds, > 0 (and at least the engine's 1 ps).
pub struct PositiveSeconds;
/// Schema of a list of times in seconds (any sign).
pub struct SecondsList;
/// Schema of a file path, resolved against the scenario file's directory.
pub struct FilePath;
/// Schema of an optional file path ("" = none).
pub struct OptionalPath;

macro_rules! schema_marker {
    ($t:ty, $name:literal, $schema:tt) => {
        impl JsonSchema for $t {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!($schema)
            }
        }
    };
}

schema_marker!(Seconds, "Seconds", {"type": "number", "minimum": 0, "maximum": MAX_PS / PS_PER_S, "format": "seconds"});
schema_marker!(PositiveSeconds, "PositiveSeconds", {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_PS / PS_PER_S, "format": "seconds"});
schema_marker!(SecondsList, "SecondsList", {"type": "array", "items": {"type": "number"}});
schema_marker!(FilePath, "FilePath", {"type": "string", "format": "path"});
schema_marker!(OptionalPath, "OptionalPath", {"type": "string", "format": "path", "x-optional": true});

/// The most ranks a run may have.
pub const MAX_RANKS: u32 = 1 << 31;

/// Schema of a rank count.
pub struct Ranks;
schema_marker!(Ranks, "Ranks", {"type": "integer", "minimum": 1, "maximum": MAX_RANKS});

/// Largest message size the match queues can hold (128 TiB): they pack a
/// size into 47 bits (engine/matching.rs). Messages must be smaller.
pub const MAX_MESSAGE_BYTES: u64 = 1 << 47;

/// Schema of a message size in bytes.
pub struct MessageBytes;
schema_marker!(MessageBytes, "MessageBytes", {"type": "integer", "minimum": 0, "maximum": MAX_MESSAGE_BYTES - 1});

/// A number for a message: plain where that is short, else in exponent
/// form (Rust prints 1e-300 in full, 300 digits).
pub fn show(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e16).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A value's name as scenarios spell it (its serde name).
pub fn name<T: serde::Serialize>(x: &T) -> String {
    match serde_json::to_value(x) {
        Ok(serde_json::Value::String(s)) => s,
        // a table tagged by its kind (`kind = "file"`)
        Ok(serde_json::Value::Object(o)) => o.get("kind").and_then(|k| k.as_str()).unwrap_or_default().to_string(),
        _ => String::new(),
    }
}

/// Names as scenarios spell them, comma-separated.
pub fn names<T: serde::Serialize>(xs: &[T]) -> String {
    xs.iter().map(name).collect::<Vec<_>>().join(", ")
}

/// An optional path: "" (None) or a path.
pub mod optional_path {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(p: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.as_deref().unwrap_or(""))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        let s = String::deserialize(d)?;
        Ok((!s.is_empty()).then_some(s))
    }
}

/// A count where 0 means "not set" (None).
pub mod zero_is_none {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(n: &Option<u32>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u32(n.unwrap_or(0))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
        Ok(Some(u32::deserialize(d)?).filter(|&n| n > 0))
    }
}
