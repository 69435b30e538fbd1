//! The backstop of the JSON writer: a result with NaN or ±∞ anywhere is an error naming the field,
//! never `null` with exit status 0 (serde_json writes non-finite numbers as `null`).
//!
//! [`check`] walks a value through serde (a serializer that stores nothing) and reports the path
//! of the first non-finite `f32`/`f64`, e.g. `local_optima[2].log_marginal`.

use serde::Serialize;
use serde::ser::{self, Impossible};
use std::fmt;

/// Errors naming the first non-finite number in `value` (`what` names the value in the message).
pub fn check(what: &str, value: &impl Serialize) -> anyhow::Result<()> {
    let mut walker = Walker { path: Vec::new() };
    match value.serialize(&mut walker) {
        Ok(()) => Ok(()),
        Err(Found(msg)) => anyhow::bail!(
            "{what}: {msg} is not a finite number; the result is degenerate (see the command's \
             documentation for the data and settings it needs) and is not reported"
        ),
    }
}

/// The path and value of the first non-finite number (or a serialisation failure).
#[derive(Debug)]
struct Found(String);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Found(format!("(cannot serialise: {msg})"))
    }
}

struct Walker {
    path: Vec<String>,
}

impl Walker {
    fn number(&self, v: f64) -> Result<(), Found> {
        if v.is_finite() {
            return Ok(());
        }
        let path = if self.path.is_empty() { "the value".to_string() } else { self.path.concat() };
        Err(Found(format!("{path} = {v}")))
    }

    fn nested<T: Serialize + ?Sized>(&mut self, step: String, v: &T) -> Result<(), Found> {
        self.path.push(step);
        let r = v.serialize(&mut *self);
        self.path.pop();
        r
    }

    fn field(&self, key: &str) -> String {
        if self.path.is_empty() { key.to_string() } else { format!(".{key}") }
    }
}

/// The `Serializer` methods of sequences, tuples and structs (everything compound but maps): each
/// ignores the lengths and names and returns `$start(self)`.
macro_rules! compound_methods {
    ($start:path) => {
        fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Found> {
            $start(self)
        }
        fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Found> {
            $start(self)
        }
        fn serialize_tuple_struct(
            self,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleStruct, Found> {
            $start(self)
        }
        fn serialize_tuple_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeTupleVariant, Found> {
            $start(self)
        }
        fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Found> {
            $start(self)
        }
        fn serialize_struct_variant(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: usize,
        ) -> Result<Self::SerializeStructVariant, Found> {
            $start(self)
        }
    };
}

macro_rules! ok_scalars {
    ($($m:ident: $t:ty),*) => { $(fn $m(self, _: $t) -> Result<(), Found> { Ok(()) })* };
}

impl<'a> ser::Serializer for &'a mut Walker {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Map<'a>;
    type SerializeStruct = Seq<'a>;
    type SerializeStructVariant = Seq<'a>;

    ok_scalars!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_char: char, serialize_str: &str, serialize_bytes: &[u8],
        serialize_unit_struct: &'static str);

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.number(v as f64)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.number(v)
    }
    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Found> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), Found> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Found> {
        let step = self.field(variant);
        self.nested(step, v)
    }
    compound_methods!(Seq::start);
    fn serialize_map(self, _: Option<usize>) -> Result<Map<'a>, Found> {
        Ok(Map { w: self, key: String::new() })
    }
}

/// Sequences, tuples and structs: elements are named by index or field name.
struct Seq<'a> {
    w: &'a mut Walker,
    index: usize,
}

impl<'a> Seq<'a> {
    fn start(w: &'a mut Walker) -> Result<Self, Found> {
        Ok(Seq { w, index: 0 })
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let step = format!("[{}]", self.index);
        self.index += 1;
        self.w.nested(step, v)
    }
    fn named<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Found> {
        let step = self.w.field(key);
        self.w.nested(step, v)
    }
}

/// `impl`s of the sequence-like traits: `serialize_element`/`serialize_field` names by index.
macro_rules! seq_like {
    ($method:ident: $($tr:ident),*) => {$(
        impl ser::$tr for Seq<'_> {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
                self.element(v)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        }
    )*};
}
seq_like!(serialize_element: SerializeSeq, SerializeTuple);
seq_like!(serialize_field: SerializeTupleStruct, SerializeTupleVariant);

/// `impl`s of the struct-like traits: fields are named by their name.
macro_rules! struct_like {
    ($($tr:ident),*) => {$(
        impl ser::$tr for Seq<'_> {
            type Ok = ();
            type Error = Found;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, v: &T) -> Result<(), Found> {
                self.named(key, v)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        }
    )*};
}
struct_like!(SerializeStruct, SerializeStructVariant);

/// Maps: values are named by their key (string keys as they are, others as `?`).
struct Map<'a> {
    w: &'a mut Walker,
    key: String,
}

impl ser::SerializeMap for Map<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        self.key = key.serialize(KeyName).unwrap_or_else(|_| "?".into());
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Found> {
        let step = self.w.field(&self.key);
        self.w.nested(step, v)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

/// Reads a map key that is a string.
struct KeyName;

/// Scalar keys are named by their text.
macro_rules! key_as_text {
    ($($m:ident: $t:ty),*) => { $(fn $m(self, v: $t) -> Result<String, Found> { Ok(v.to_string()) })* };
}

/// Compound keys have no name: `?` (JSON keys are strings, so these never occur in bke's output).
fn unnamed_key(_: KeyName) -> Result<Impossible<String, Found>, Found> {
    Err(Found("?".into()))
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = Found;
    type SerializeSeq = Impossible<String, Found>;
    type SerializeTuple = Impossible<String, Found>;
    type SerializeTupleStruct = Impossible<String, Found>;
    type SerializeTupleVariant = Impossible<String, Found>;
    type SerializeMap = Impossible<String, Found>;
    type SerializeStruct = Impossible<String, Found>;
    type SerializeStructVariant = Impossible<String, Found>;

    key_as_text!(serialize_str: &str, serialize_bool: bool, serialize_i8: i8, serialize_i16: i16,
        serialize_i32: i32, serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_f32: f32, serialize_f64: f64, serialize_char: char);

    fn serialize_bytes(self, _: &[u8]) -> Result<String, Found> {
        Ok("?".into())
    }
    fn serialize_none(self) -> Result<String, Found> {
        Ok("?".into())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<String, Found> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, Found> {
        Ok("?".into())
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<String, Found> {
        Ok(name.into())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<String, Found> {
        Ok(v.into())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<String, Found> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        v: &'static str,
        _: &T,
    ) -> Result<String, Found> {
        Ok(v.into())
    }
    compound_methods!(unnamed_key);
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Found> {
        unnamed_key(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Inner {
        value: f64,
    }

    #[derive(Serialize)]
    struct Outer {
        name: String,
        optional: Option<f64>,
        items: Vec<Inner>,
        map: std::collections::BTreeMap<String, f64>,
    }

    fn outer(bad: f64) -> Outer {
        Outer {
            name: "x".into(),
            optional: None,
            items: vec![Inner { value: 1.0 }, Inner { value: bad }],
            map: [("a".to_string(), 2.0)].into(),
        }
    }

    #[test]
    fn finite_values_pass_and_the_first_non_finite_one_is_named_by_path() {
        assert!(check("result", &outer(3.0)).is_ok());
        let e = check("result", &outer(f64::NAN)).unwrap_err().to_string();
        assert!(e.contains("result: items[1].value = NaN is not a finite number"), "{e}");
        let mut o = outer(1.0);
        o.map.insert("b".into(), f64::NEG_INFINITY);
        let e = check("result", &o).unwrap_err().to_string();
        assert!(e.contains("map.b = -inf"), "{e}");
        let e = check("x", &serde_json::json!({"k": [1.0, 2.0]})).map(|_| "ok").unwrap();
        assert_eq!(e, "ok");
        assert!(check("x", &f64::INFINITY).unwrap_err().to_string().contains("the value = inf"));
    }
}
