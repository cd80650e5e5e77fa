//! Parameters on the command line: `--param K=V` read as the schema's
//! types say (`count=3` an integer), and `--params-schema FILE` read and
//! checked before anything is sent.

use anyhow::Context;
use joblog_core::params::ParamsSchema;
use serde_json::{Map, Value};

use super::args::KeyValue;
use super::commands::resolve_kvs;
use super::UsageError;

/// The values of `--param`, each typed by `schema` (the job's or the
/// schedule's; `None`: all text, and the server refuses what it does not
/// take). `K` alone passes this shell's value of K: a secret stays off the
/// command line.
pub(super) fn typed(
    schema: Option<&Value>,
    kvs: Vec<KeyValue>,
) -> anyhow::Result<Map<String, Value>> {
    let given = resolve_kvs("--param", kvs)?;
    let schema = match schema {
        Some(v) if !v.is_null() => ParamsSchema::parse(v)
            .map_err(|e| anyhow::anyhow!("the parameters the server gave are not readable: {e}"))?,
        _ => ParamsSchema::default(),
    };
    given
        .into_iter()
        .map(|(k, text)| {
            let v = schema
                .typed(&k, &text)
                .map_err(|e| UsageError(format!("--param {k}: {}", e.message)))?;
            Ok((k, v))
        })
        .collect()
}

/// `--params-schema FILE` (`-`: standard input): the JSON schema, checked
/// here so a mistake is named before anything is sent.
pub(super) fn read_schema(file: &str) -> anyhow::Result<Value> {
    let text = if file == "-" {
        std::io::read_to_string(std::io::stdin())
            .context("--params-schema -: reading standard input")?
    } else {
        std::fs::read_to_string(file)
            .with_context(|| format!("--params-schema: cannot read {file}"))?
    };
    let schema: Value = serde_json::from_str(&text)
        .map_err(|e| UsageError(format!("--params-schema {file}: not JSON: {e}")))?;
    ParamsSchema::parse(&schema).map_err(|e| UsageError(format!("--params-schema {file}: {e}")))?;
    Ok(schema)
}
