//! A saved job's parameters: the subset of JSON Schema a schedule's
//! `"params"` declares (an object of typed properties), checked whole when
//! it is saved — a keyword outside the subset is refused, so a form shows
//! exactly what is checked — and the values of each run checked against
//! it before a job exists, defaults filling the rest. What a job is given
//! of them is [`Params::env`]: one variable per parameter, never a shell;
//! `values.rs` holds one run's values and what a job records of them.

mod values;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use values::{env_name, env_text, secret_names, whole, ParamValue, Params, ENV_PREFIX};

/// Most parameters one schema declares.
pub const MAX_PARAMS: usize = 100;
/// Longest parameter name.
pub const MAX_PARAM_NAME: usize = 64;
/// Longest text of a `description` or a `pattern`.
const MAX_TEXT: usize = 2048;
/// Most values of an `enum`.
const MAX_ENUM: usize = 1000;
/// Largest value of a string parameter, in bytes (an environment variable
/// larger than this is a file's work).
pub const MAX_VALUE_BYTES: usize = 128 * 1024;
/// What a compiled `pattern` may take of memory.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// A schema or a value refused, naming where: `params.env` (a value),
/// `params.properties.env.enum` (the schema).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {message}")]
pub struct ParamsError {
    pub at: String,
    pub message: String,
}

fn refuse(at: impl Into<String>, message: impl Into<String>) -> ParamsError {
    ParamsError {
        at: at.into(),
        message: message.into(),
    }
}

impl From<ParamsError> for crate::ValidationError {
    fn from(e: ParamsError) -> crate::ValidationError {
        crate::ValidationError {
            field: e.at.into(),
            message: e.message,
        }
    }
}

/// The type of one parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Integer,
    Number,
    Boolean,
}

impl ParamType {
    fn parse(text: &str) -> Option<ParamType> {
        Some(match text {
            "string" => ParamType::String,
            "integer" => ParamType::Integer,
            "number" => ParamType::Number,
            "boolean" => ParamType::Boolean,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }

    /// Whether `v` is a value of this type (an integer is a number whose
    /// value is whole, as JSON Schema says: `3.0` is an integer).
    fn admits(self, v: &Value) -> bool {
        match self {
            ParamType::String => v.is_string(),
            ParamType::Boolean => v.is_boolean(),
            ParamType::Number => v.is_number(),
            ParamType::Integer => integer(v).is_some(),
        }
    }
}

/// `v` as a whole number, if it is one.
fn integer(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15).then_some(f as i64)
}

/// One declared parameter.
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
    pub description: Option<String>,
    pub default: Option<Value>,
    pub choices: Option<Vec<Value>>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pattern: Option<(String, regex::Regex)>,
    /// `format: "multiline"`: a string of several lines (a form's
    /// textarea).
    pub multiline: bool,
    /// Masked in the log, never stored, never prefilled.
    pub secret: bool,
    pub required: bool,
}

impl PartialEq for Param {
    fn eq(&self, other: &Param) -> bool {
        self.to_json() == other.to_json() && self.name == other.name
    }
}

impl Param {
    pub fn pattern(&self) -> Option<&str> {
        self.pattern.as_ref().map(|(p, _)| p.as_str())
    }

    /// Checks one value, naming this parameter when it is refused.
    fn check(&self, v: &Value) -> Result<(), ParamsError> {
        let at = format!("params.{}", self.name);
        if !self.kind.admits(v) {
            return Err(refuse(
                at,
                format!(
                    "{} is not {} {}",
                    shown(v),
                    article(self.kind),
                    self.kind.name()
                ),
            ));
        }
        if let Some(choices) = &self.choices {
            if !choices.iter().any(|c| same_value(c, v)) {
                let list: Vec<String> = choices.iter().map(plain).collect();
                return Err(refuse(
                    at,
                    format!("{} is not one of {}", shown(v), list.join(", ")),
                ));
            }
        }
        if let Some(n) = v.as_f64() {
            if let Some(min) = self.minimum.filter(|m| n < *m) {
                return Err(refuse(
                    at,
                    format!("{} is below the minimum, {}", plain(v), number(min)),
                ));
            }
            if let Some(max) = self.maximum.filter(|m| n > *m) {
                return Err(refuse(
                    at,
                    format!("{} is above the maximum, {}", plain(v), number(max)),
                ));
            }
        }
        if let Some(s) = v.as_str() {
            let chars = s.chars().count() as u64;
            if let Some(min) = self.min_length.filter(|m| chars < *m) {
                return Err(refuse(at, format!("{chars} characters, fewer than {min}")));
            }
            if let Some(max) = self.max_length.filter(|m| chars > *m) {
                return Err(refuse(at, format!("{chars} characters, more than {max}")));
            }
            if s.len() > MAX_VALUE_BYTES {
                return Err(refuse(at, format!("larger than {MAX_VALUE_BYTES} bytes")));
            }
            if s.contains('\0') {
                return Err(refuse(
                    at,
                    "contains NUL, which no environment variable can hold",
                ));
            }
            if !self.multiline && (s.contains('\n') || s.contains('\r')) {
                return Err(refuse(
                    at,
                    "one line expected (format \"multiline\" takes several)",
                ));
            }
            if let Some((text, re)) = &self.pattern {
                if !re.is_match(s) {
                    return Err(refuse(
                        at,
                        format!("{} does not match the pattern {text}", shown(v)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The property as the schema gives it back (`GET` shows this).
    fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("type".into(), self.kind.name().into());
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                o.insert(k.into(), v);
            }
        };
        put("description", self.description.clone().map(Value::from));
        put("default", self.default.clone());
        put("enum", self.choices.clone().map(Value::from));
        put("minimum", self.minimum.map(json_number));
        put("maximum", self.maximum.map(json_number));
        put("minLength", self.min_length.map(Value::from));
        put("maxLength", self.max_length.map(Value::from));
        put("pattern", self.pattern().map(Value::from));
        put("format", self.multiline.then(|| "multiline".into()));
        put("secret", self.secret.then_some(Value::Bool(true)));
        Value::Object(o)
    }
}

fn json_number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

fn number(n: f64) -> String {
    json_number(n).to_string()
}

fn article(t: ParamType) -> &'static str {
    match t {
        ParamType::Integer => "an",
        _ => "a",
    }
}

/// A value in a message: strings quoted, cut when long.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    if text.len() <= 80 {
        return text;
    }
    let mut end = 77;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// An enum's value in the list of choices: strings unquoted.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// JSON equality with numbers compared by value (`3` and `3.0` agree).
fn same_value(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// A schedule's declared parameters.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParamsSchema {
    /// By name, in name order.
    pub params: Vec<Param>,
}

/// The keywords of a property; any other is refused.
const PROPERTY_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "default",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "secret",
];

impl ParamsSchema {
    /// Reads `"params"` as a schedule gives it:
    /// `{"type": "object", "properties": {…}, "required": […]}` (`type`
    /// may be left out). Every keyword is checked; one outside the subset
    /// is refused, naming it.
    pub fn parse(schema: &Value) -> Result<ParamsSchema, ParamsError> {
        let Some(top) = schema.as_object() else {
            return Err(refuse(
                "params",
                "a JSON Schema object: {\"type\": \"object\", \"properties\": {…}}",
            ));
        };
        for key in top.keys() {
            if !["type", "properties", "required"].contains(&key.as_str()) {
                return Err(refuse(
                    format!("params.{key}"),
                    "not supported (a schema here has type, properties and required)",
                ));
            }
        }
        match top.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => return Err(refuse("params.type", format!("{other} is not \"object\""))),
        }
        let empty = Map::new();
        let properties = match top.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => {
                return Err(refuse(
                    "params.properties",
                    "an object of parameters by name",
                ))
            }
        };
        if properties.len() > MAX_PARAMS {
            return Err(refuse(
                "params.properties",
                format!("at most {MAX_PARAMS} parameters"),
            ));
        }
        let required: Vec<String> = match top.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|n| match n {
                    Value::String(s) if properties.contains_key(s) => Ok(s.clone()),
                    Value::String(s) => Err(refuse(
                        "params.required",
                        format!("{s:?} is not a parameter in properties"),
                    )),
                    other => Err(refuse(
                        "params.required",
                        format!("{other} is not a parameter's name"),
                    )),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(refuse("params.required", "a list of parameter names")),
        };
        let mut params = Vec::with_capacity(properties.len());
        let mut variables: BTreeMap<String, String> = BTreeMap::new();
        for (name, spec) in properties {
            check_name(name)?;
            if let Some(other) = variables.insert(name.to_ascii_uppercase(), name.clone()) {
                return Err(refuse(
                    format!("params.properties.{name}"),
                    format!(
                        "the same variable as {other:?} (JOBLOG_PARAM_{})",
                        name.to_ascii_uppercase()
                    ),
                ));
            }
            params.push(property(name, spec, required.contains(name))?);
        }
        Ok(ParamsSchema { params })
    }

    /// The schema as it is given back (`GET /api/v1/schedules/{id}`).
    pub fn to_json(&self) -> Value {
        let properties: Map<String, Value> = self
            .params
            .iter()
            .map(|p| (p.name.clone(), p.to_json()))
            .collect();
        let required: Vec<Value> = self
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| Value::from(p.name.clone()))
            .collect();
        let mut o = Map::new();
        o.insert("type".into(), "object".into());
        o.insert("properties".into(), Value::Object(properties));
        if !required.is_empty() {
            o.insert("required".into(), Value::Array(required));
        }
        Value::Object(o)
    }

    /// The values of a run nobody gave any: the defaults (a cron fire).
    /// A required parameter without one is left out: a schedule that
    /// fires by itself has none (refused at save).
    pub fn defaults(&self) -> Params {
        let values = self
            .params
            .iter()
            .filter_map(|p| {
                let value = p.default.clone()?;
                Some((
                    p.name.clone(),
                    ParamValue {
                        value,
                        secret: p.secret,
                    },
                ))
            })
            .collect();
        Params { values }
    }

    /// Checks a trigger's `params_from_result`: each key a parameter of
    /// this schema, not a secret one (a result is stored, a secret never
    /// is), each value a JSON Pointer (`/database`, `""` the whole).
    pub fn check_mapping(&self, mapping: &BTreeMap<String, String>) -> Result<(), ParamsError> {
        for (name, pointer) in mapping {
            let at = format!("params_from_result.{name}");
            match self.get(name) {
                None => return Err(refuse(at, "not a parameter in params")),
                Some(p) if p.secret => {
                    return Err(refuse(
                        at,
                        "a secret parameter is never taken from a result: results are stored, secrets never are",
                    ))
                }
                Some(_) => {}
            }
            if !(pointer.is_empty() || pointer.starts_with('/')) {
                return Err(refuse(
                    at,
                    format!("{pointer:?} is not a JSON Pointer (such as \"/database\")"),
                ));
            }
        }
        Ok(())
    }

    /// The values of a triggered run: each mapped parameter taken from
    /// the triggering job's result (`result`, its JSON, if it left one)
    /// at its pointer, checked as a given value is; what the result
    /// lacks falls to the default.
    pub fn fill_from_result(
        &self,
        mapping: &BTreeMap<String, String>,
        result: Option<&Value>,
        job: crate::JobId,
    ) -> Result<Params, ParamsError> {
        let mut given = Map::new();
        for (name, pointer) in mapping {
            match result.and_then(|r| r.pointer(pointer)) {
                Some(v) => {
                    given.insert(name.clone(), v.clone());
                }
                None if self
                    .get(name)
                    .is_some_and(|p| p.required && p.default.is_none()) =>
                {
                    let had = if result.is_some() {
                        format!("job {job}'s result has nothing at {pointer:?}")
                    } else {
                        format!("job {job} left no result to take {pointer:?} from")
                    };
                    return Err(refuse(format!("params.{name}"), had));
                }
                None => {}
            }
        }
        self.fill(&given).map_err(|e| ParamsError {
            message: format!("{} (from job {job}'s result)", e.message),
            ..e
        })
    }

    /// A value given as text (`joblog schedule run --param count=3`) as
    /// the parameter's type reads it: `3` an integer, `true` a boolean.
    /// A name it does not declare stays text (the server names it).
    pub fn typed(&self, name: &str, text: &str) -> Result<Value, ParamsError> {
        let Some(p) = self.get(name) else {
            return Ok(Value::String(text.to_owned()));
        };
        let at = || format!("params.{name}");
        match p.kind {
            ParamType::String => Ok(Value::String(text.to_owned())),
            ParamType::Boolean => match text {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(refuse(at(), format!("{text:?} is not true or false"))),
            },
            ParamType::Integer => text
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| refuse(at(), format!("{text:?} is not an integer"))),
            ParamType::Number => text
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| refuse(at(), format!("{text:?} is not a number"))),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.params.is_empty()
    }

    /// The parameters a run without values (a cron fire, a trigger)
    /// would lack: required ones with no default.
    pub fn unfillable(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|p| p.required && p.default.is_none())
            .map(|p| p.name.as_str())
            .collect()
    }

    /// The values of one run: `given` checked parameter by parameter,
    /// defaults filling what is not given. An unknown name, a missing
    /// required one or a bad value is refused naming the parameter.
    pub fn fill(&self, given: &Map<String, Value>) -> Result<Params, ParamsError> {
        for name in given.keys() {
            if !self.params.iter().any(|p| &p.name == name) {
                let known: Vec<&str> = self.params.iter().map(|p| p.name.as_str()).collect();
                return Err(refuse(
                    format!("params.{name}"),
                    if known.is_empty() {
                        "this job takes no parameters".to_string()
                    } else {
                        format!(
                            "not a parameter of this job (it takes {})",
                            known.join(", ")
                        )
                    },
                ));
            }
        }
        let mut values = BTreeMap::new();
        for p in &self.params {
            let value = match given.get(&p.name) {
                // `null` is not given: the default, if any.
                Some(Value::Null) | None => match &p.default {
                    Some(d) => d.clone(),
                    None if p.required => {
                        return Err(refuse(
                            format!("params.{}", p.name),
                            "missing: a required parameter",
                        ))
                    }
                    None => continue,
                },
                Some(v) => v.clone(),
            };
            p.check(&value)?;
            values.insert(
                p.name.clone(),
                ParamValue {
                    value,
                    secret: p.secret,
                },
            );
        }
        Ok(Params { values })
    }
}

// Kept in a job's spec as the schema's JSON, read back through the same
// checks (a spec that fails them was not written by joblog).
impl serde::Serialize for ParamsSchema {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for ParamsSchema {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ParamsSchema, D::Error> {
        let v = Value::deserialize(d)?;
        ParamsSchema::parse(&v).map_err(serde::de::Error::custom)
    }
}

/// A parameter's name: a letter or `_`, then letters, digits and `_`, at
/// most 64 (it becomes part of an environment variable's name).
fn check_name(name: &str) -> Result<(), ParamsError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_PARAM_NAME
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(refuse(
            "params.properties",
            format!("{name:?} is not a parameter name (a letter or _, then letters, digits and _; at most {MAX_PARAM_NAME})"),
        ))
    }
}

fn property(name: &str, spec: &Value, required: bool) -> Result<Param, ParamsError> {
    let at = |k: &str| format!("params.properties.{name}.{k}");
    let Some(o) = spec.as_object() else {
        return Err(refuse(
            format!("params.properties.{name}"),
            "an object such as {\"type\": \"string\"}",
        ));
    };
    for key in o.keys() {
        if !PROPERTY_KEYWORDS.contains(&key.as_str()) {
            return Err(refuse(
                at(key),
                format!(
                    "not supported (a parameter takes {})",
                    PROPERTY_KEYWORDS.join(", ")
                ),
            ));
        }
    }
    let kind = match o.get("type") {
        Some(Value::String(t)) => ParamType::parse(t).ok_or_else(|| {
            refuse(
                at("type"),
                format!("{t:?} is not one of string, integer, number, boolean"),
            )
        })?,
        Some(other) => {
            return Err(refuse(
                at("type"),
                format!("{other} is not one of string, integer, number, boolean"),
            ))
        }
        None => {
            return Err(refuse(
                at("type"),
                "missing: string, integer, number or boolean",
            ))
        }
    };
    let text = |k: &str| -> Result<Option<String>, ParamsError> {
        match o.get(k) {
            None => Ok(None),
            Some(Value::String(s)) if s.len() <= MAX_TEXT => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(refuse(at(k), format!("at most {MAX_TEXT} bytes"))),
            Some(other) => Err(refuse(at(k), format!("{other} is not a string"))),
        }
    };
    let number_of = |k: &str| -> Result<Option<f64>, ParamsError> {
        match o.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .map(Some)
                .ok_or_else(|| refuse(at(k), format!("{v} is not a number"))),
        }
    };
    let length_of = |k: &str| -> Result<Option<u64>, ParamsError> {
        match o.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| refuse(at(k), format!("{v} is not a whole number of characters"))),
        }
    };
    let only_for = |k: &str, kinds: &[ParamType]| -> Result<(), ParamsError> {
        if o.contains_key(k) && !kinds.contains(&kind) {
            return Err(refuse(
                at(k),
                format!("does not apply to a {} parameter", kind.name()),
            ));
        }
        Ok(())
    };
    use ParamType::{Integer, Number, String as Text};
    only_for("minimum", &[Integer, Number])?;
    only_for("maximum", &[Integer, Number])?;
    only_for("minLength", &[Text])?;
    only_for("maxLength", &[Text])?;
    only_for("pattern", &[Text])?;
    only_for("format", &[Text])?;
    only_for("secret", &[Text])?;
    let multiline = match o.get("format") {
        None => false,
        Some(Value::String(f)) if f == "multiline" => true,
        Some(other) => {
            return Err(refuse(
                at("format"),
                format!("{other} is not supported (only \"multiline\")"),
            ))
        }
    };
    let secret = match o.get("secret") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(refuse(
                at("secret"),
                format!("{other} is not true or false"),
            ))
        }
    };
    let pattern = match text("pattern")? {
        None => None,
        Some(p) => {
            let re = regex::RegexBuilder::new(&p)
                .size_limit(PATTERN_SIZE_LIMIT)
                .build()
                .map_err(|e| {
                    refuse(
                        at("pattern"),
                        format!("not a pattern this server reads: {e}"),
                    )
                })?;
            Some((p, re))
        }
    };
    let choices = match o.get("enum") {
        None => None,
        Some(Value::Array(values)) if !values.is_empty() && values.len() <= MAX_ENUM => {
            for v in values {
                if !kind.admits(v) {
                    return Err(refuse(
                        at("enum"),
                        format!("{} is not {} {}", shown(v), article(kind), kind.name()),
                    ));
                }
            }
            Some(values.clone())
        }
        Some(_) => {
            return Err(refuse(
                at("enum"),
                format!("a list of 1 to {MAX_ENUM} values"),
            ))
        }
    };
    let mut param = Param {
        name: name.to_string(),
        kind,
        description: text("description")?,
        default: None,
        choices,
        minimum: number_of("minimum")?,
        maximum: number_of("maximum")?,
        min_length: length_of("minLength")?,
        max_length: length_of("maxLength")?,
        pattern,
        multiline,
        secret,
        required,
    };
    if let (Some(min), Some(max)) = (param.minimum, param.maximum) {
        if min > max {
            return Err(refuse(at("minimum"), "above the maximum"));
        }
    }
    if let (Some(min), Some(max)) = (param.min_length, param.max_length) {
        if min > max {
            return Err(refuse(at("minLength"), "above maxLength"));
        }
    }
    if let Some(d) = o.get("default") {
        if secret {
            return Err(refuse(
                at("default"),
                "a secret parameter is never prefilled: it takes no default",
            ));
        }
        // The default is a value like any other: checked now, so that a
        // fire never meets a bad one.
        param
            .check(d)
            .map_err(|e| refuse(at("default"), e.message))?;
        param.default = Some(d.clone());
    }
    Ok(param)
}

#[cfg(test)]
mod tests;
