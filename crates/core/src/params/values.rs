//! One run's parameter values: what the job is given (one environment
//! variable each and a JSON file of them all) and what it records (a
//! secret one by name only, its value kept in the memory of the node
//! that runs it, like a submission's secrets).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One run's parameter values, by name.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params {
    pub values: BTreeMap<String, ParamValue>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ParamValue {
    pub value: Value,
    pub secret: bool,
}

/// The prefix of each parameter's environment variable.
pub const ENV_PREFIX: &str = "JOBLOG_PARAM_";

/// The variable a parameter is given in: `JOBLOG_PARAM_<NAME>`,
/// upper-cased (a schema refuses two names that would share one).
pub fn env_name(param: &str) -> String {
    format!("{ENV_PREFIX}{}", param.to_ascii_uppercase())
}

/// A value as its variable holds it: a string itself, a number or a
/// boolean its JSON text. No shell reads it.
pub fn env_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Params {
    /// Each parameter as the job's environment gives it: its variable,
    /// its text, and whether it is secret.
    pub fn env(&self) -> Vec<(String, String, bool)> {
        self.values
            .iter()
            .map(|(name, v)| (env_name(name), env_text(&v.value), v.secret))
            .collect()
    }

    /// Every value as one JSON object (the file `JOBLOG_PARAMS` names).
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.values
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect(),
        )
    }

    /// What the job records of them: each value, a secret one `null`.
    pub fn recorded(&self) -> Map<String, Value> {
        self.values
            .iter()
            .map(|(k, v)| {
                let shown = if v.secret {
                    Value::Null
                } else {
                    v.value.clone()
                };
                (k.clone(), shown)
            })
            .collect()
    }

    /// The secret ones, by variable: kept in memory with the job's other
    /// secrets, never stored, masked in its log.
    pub fn secrets(&self) -> BTreeMap<String, String> {
        self.values
            .iter()
            .filter(|(_, v)| v.secret)
            .map(|(k, v)| (env_name(k), env_text(&v.value)))
            .collect()
    }
}

/// The names of the secret parameters a job recorded (`null` values).
pub fn secret_names(recorded: &Map<String, Value>) -> impl Iterator<Item = &str> {
    recorded
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k.as_str())
}

/// A job's parameters whole, as it is given them in `JOBLOG_PARAMS`: the
/// recorded ones with each secret's value from `secrets` (by variable).
/// A secret `secrets` lacks stays `null`: the caller refuses to start
/// the job first.
pub fn whole(recorded: &Map<String, Value>, secrets: &BTreeMap<String, String>) -> Value {
    Value::Object(
        recorded
            .iter()
            .map(|(k, v)| {
                let value = match (v, secrets.get(&env_name(k))) {
                    (Value::Null, Some(secret)) => Value::String(secret.clone()),
                    _ => v.clone(),
                };
                (k.clone(), value)
            })
            .collect(),
    )
}
