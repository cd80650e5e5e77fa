//! An entry's structured fields: its operation unit's own, shared with the
//! unit rather than copied, then the entry's. An access line is built for
//! every API request, so routing one must not copy a dozen strings into a
//! map on the router's thread only for a sink's thread to free them: the
//! entry holds the unit, and the sink writes its values straight from it.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value as Json;

use super::event::Value;
use super::unit::{Unit, UNIT_FIELD};

/// One field's value, wherever it is held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValue<'a> {
    /// A value of the entry's unit.
    Unit(&'a Value),
    /// A value the entry was given.
    Json(&'a Json),
}

impl<'a> FieldValue<'a> {
    pub fn to_json(self) -> Json {
        match self {
            FieldValue::Unit(v) => v.to_json(),
            FieldValue::Json(v) => v.clone(),
        }
    }

    /// Appends the value as JSON, as `serde_json` writes it (a number that
    /// is not finite is `null`).
    pub fn write_json(self, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail, and these values always
        // serialize.
        let _ = match self {
            FieldValue::Unit(Value::Str(s)) => serde_json::to_writer(&mut *out, s),
            FieldValue::Unit(Value::I64(n)) => serde_json::to_writer(&mut *out, n),
            FieldValue::Unit(Value::U64(n)) => serde_json::to_writer(&mut *out, n),
            FieldValue::Unit(Value::F64(n)) => serde_json::to_writer(&mut *out, n),
            FieldValue::Unit(Value::Bool(b)) => serde_json::to_writer(&mut *out, b),
            FieldValue::Json(v) => serde_json::to_writer(&mut *out, v),
        };
    }

    pub fn as_str(self) -> Option<&'a str> {
        match self {
            FieldValue::Unit(v) => v.as_str(),
            FieldValue::Json(v) => v.as_str(),
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        match self {
            FieldValue::Unit(Value::I64(n)) => Some(*n),
            FieldValue::Unit(Value::U64(n)) => i64::try_from(*n).ok(),
            FieldValue::Unit(_) => None,
            FieldValue::Json(v) => v.as_i64(),
        }
    }

    /// The value when it is JSON the entry was given (a timeline, an
    /// audit entry's detail).
    pub fn as_json(self) -> Option<&'a Json> {
        match self {
            FieldValue::Unit(_) => None,
            FieldValue::Json(v) => Some(v),
        }
    }
}

/// An entry's fields, in order: its unit's (all but the `unit` marker, a
/// name given twice showing its last value), then its own; an own field
/// hides the unit's of the same name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryFields {
    unit: Option<Arc<Unit>>,
    /// Bit `i` set: the unit's field `i` is not shown (the marker, a name
    /// given again later, or one the entry has of its own), worked out
    /// once on the router's thread rather than on every write. A unit
    /// field past the 64th (`tracing` allows 32 a span) is checked as it
    /// is written.
    hidden: u64,
    own: Vec<(Cow<'static, str>, Json)>,
}

impl EntryFields {
    pub fn new() -> EntryFields {
        EntryFields::default()
    }

    /// The fields of `unit`, shared, not copied.
    pub fn of_unit(unit: &Arc<Unit>) -> EntryFields {
        let fields = &unit.fields;
        let hidden = fields
            .iter()
            .enumerate()
            .take(64)
            .filter(|(i, (name, _))| {
                *name == UNIT_FIELD || fields[i + 1..].iter().any(|(later, _)| later == name)
            })
            .fold(0, |mask, (i, _)| mask | 1 << i);
        EntryFields {
            unit: Some(unit.clone()),
            hidden,
            own: Vec::new(),
        }
    }

    /// Sets `name` (in place when the entry has it already, else last).
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, value: Json) {
        let name = name.into();
        if let Some(unit) = &self.unit {
            for (i, (field, _)) in unit.fields.iter().enumerate().take(64) {
                if *field == name {
                    self.hidden |= 1 << i;
                }
            }
        }
        match self.own.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.own.push((name, value)),
        }
    }

    fn shows_unit_field(&self, i: usize, fields: &[(&'static str, Value)]) -> bool {
        if i < 64 {
            return self.hidden & 1 << i == 0;
        }
        let name = fields[i].0;
        name != UNIT_FIELD
            && !fields[i + 1..].iter().any(|(later, _)| *later == name)
            && !self.own.iter().any(|(own, _)| own == name)
    }

    pub fn get(&self, name: &str) -> Option<FieldValue<'_>> {
        if let Some((_, v)) = self.own.iter().find(|(n, _)| n == name) {
            return Some(FieldValue::Json(v));
        }
        let unit = self.unit.as_deref()?;
        if name == UNIT_FIELD {
            return None;
        }
        unit.field(name).map(FieldValue::Unit)
    }

    /// `name`'s value as JSON (a copy), for the rare reader and tests.
    pub fn get_json(&self, name: &str) -> Option<Json> {
        self.get(name).map(FieldValue::to_json)
    }

    /// The fields the entry shows, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, FieldValue<'_>)> {
        let unit = self.unit.as_deref().map_or(&[][..], |u| &u.fields[..]);
        let shown = unit
            .iter()
            .enumerate()
            .filter(move |(i, _)| self.shows_unit_field(*i, unit));
        shown
            .map(|(_, (name, v))| (*name, FieldValue::Unit(v)))
            .chain(
                self.own
                    .iter()
                    .map(|(name, v)| (name.as_ref(), FieldValue::Json(v))),
            )
    }

    /// Copies the unit's values into the entry's own, so that every field
    /// can be changed or removed (a line cut to fit a syslog message).
    pub fn make_owned(&mut self) {
        if self.unit.is_none() {
            return;
        }
        let copied: Vec<_> = self
            .iter()
            .map(|(name, v)| (Cow::Owned(name.to_string()), v.to_json()))
            .collect();
        self.own = copied;
        self.unit = None;
        self.hidden = 0;
    }

    pub fn remove(&mut self, name: &str) -> Option<Json> {
        self.make_owned();
        let at = self.own.iter().position(|(n, _)| n == name)?;
        Some(self.own.remove(at).1)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Json> {
        self.make_owned();
        self.own.iter_mut().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

impl<K: Into<Cow<'static, str>>> FromIterator<(K, Json)> for EntryFields {
    fn from_iter<I: IntoIterator<Item = (K, Json)>>(fields: I) -> EntryFields {
        let mut out = EntryFields::new();
        for (name, value) in fields {
            out.insert(name, value);
        }
        out
    }
}

impl From<serde_json::Map<String, Json>> for EntryFields {
    fn from(map: serde_json::Map<String, Json>) -> EntryFields {
        map.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::unit::UnitKind;

    fn unit() -> Arc<Unit> {
        Arc::new(
            Unit::new(UnitKind::Request)
                .with(UNIT_FIELD, Value::Str("request".into()))
                .with("method", Value::Str("GET".into()))
                .with("status", Value::U64(100))
                .with("status", Value::U64(200))
                .with("actor", Value::Str("ci".into())),
        )
    }

    fn shown(fields: &EntryFields) -> Vec<(String, Json)> {
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_json()))
            .collect()
    }

    #[test]
    fn a_units_fields_show_once_with_their_last_value_then_the_entrys() {
        let mut fields = EntryFields::of_unit(&unit());
        fields.insert("node", json!("n1"));
        fields.insert("actor", json!("admin"));
        assert_eq!(
            shown(&fields),
            [
                ("method".to_string(), json!("GET")),
                ("status".to_string(), json!(200)),
                ("node".to_string(), json!("n1")),
                ("actor".to_string(), json!("admin")),
            ]
        );
        assert_eq!(fields.get_json("status"), Some(json!(200)));
        assert_eq!(fields.get_json("actor"), Some(json!("admin")));
        assert_eq!(fields.get(UNIT_FIELD), None);
        assert_eq!(fields.iter().count(), 4);
    }

    #[test]
    fn changing_a_units_field_copies_them_first_and_keeps_the_order() {
        let mut fields = EntryFields::of_unit(&unit());
        fields.insert("node", json!("n1"));
        let before = shown(&fields);
        assert_eq!(fields.remove("method"), Some(json!("GET")));
        assert_eq!(shown(&fields), before[1..]);
        *fields.get_mut("status").unwrap() = json!(0);
        assert_eq!(fields.get_json("status"), Some(json!(0)));
    }

    #[test]
    fn a_unit_of_many_fields_shows_each_name_once() {
        let mut unit = Unit::new(UnitKind::Job);
        let names: Vec<&'static str> = (0..70)
            .map(|i| &*Box::leak(format!("f{i}").into_boxed_str()))
            .collect();
        for (i, name) in names.iter().enumerate() {
            unit = unit.with(name, Value::U64(i as u64));
        }
        unit = unit
            .with("f1", Value::U64(100))
            .with("f66", Value::U64(166));
        let mut fields = EntryFields::of_unit(&Arc::new(unit));
        fields.insert("f67", json!("own"));
        let shown = shown(&fields);
        assert_eq!(shown.len(), 70);
        let value = |name: &str| shown.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(value("f1"), json!(100));
        assert_eq!(value("f66"), json!(166));
        assert_eq!(value("f67"), json!("own"));
        assert_eq!(value("f69"), json!(69));
    }

    #[test]
    fn values_write_as_serde_json_writes_them() {
        let values = [
            Value::Str("a\"b\n".into()),
            Value::I64(-3),
            Value::U64(u64::MAX),
            Value::F64(1.5),
            Value::F64(f64::NAN),
            Value::Bool(true),
        ];
        for value in &values {
            let mut out = Vec::new();
            FieldValue::Unit(value).write_json(&mut out);
            assert_eq!(out, serde_json::to_vec(&value.to_json()).unwrap());
        }
    }
}
