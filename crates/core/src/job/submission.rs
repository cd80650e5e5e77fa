//! A submission (`POST /api/v1/jobs`) and its checks: every field is
//! checked before anything is stored, and a refusal names the field.

use super::*;
use crate::params::ParamsSchema;

/// The body of `POST /api/v1/jobs`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewJobRequest {
    pub command: Option<Vec<String>>,
    pub script: Option<String>,
    pub shell: Option<String>,
    pub name: Option<String>,
    pub env: BTreeMap<String, String>,
    pub secrets: BTreeMap<String, String>,
    pub timeout_s: Option<f64>,
    pub cwd: Option<String>,
    /// Jobs with the same key run at most `max_concurrent` at once.
    pub concurrency_key: Option<String>,
    /// 1 when a key is given without it.
    pub max_concurrent: Option<u32>,
    /// Labels the node that runs it must have, e.g. `{"role": "db"}`.
    pub node_selector: Option<BTreeMap<String, String>>,
    /// The folder it belongs to (`team-a`): who may see and act on it.
    pub folder: Option<String>,
    /// The parameters it takes (`joblog run --params-schema`): the
    /// schema a saved job's `params` is, checked alike.
    pub params_schema: Option<serde_json::Value>,
    /// Its parameters' values, checked against `params_schema`.
    pub params: Option<serde_json::Map<String, serde_json::Value>>,
    /// Set by a rerun (`POST /jobs/{id}/rerun`), never by a client.
    #[serde(skip)]
    pub rerun_of: Option<JobId>,
}

/// A submission that is not acceptable, naming the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ValidationError {
    /// `command`, or a path into one (`params.env`).
    pub field: std::borrow::Cow<'static, str>,
    pub message: String,
}

pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> ValidationError {
    ValidationError {
        field: field.into(),
        message: message.into(),
    }
}

/// Longest job name, in characters.
const MAX_NAME_LEN: usize = 200;

fn check_env_key(field: &'static str, k: &str) -> Result<(), ValidationError> {
    if k.is_empty() || k.contains('=') || k.contains('\0') {
        return Err(invalid(
            field,
            format!("variable name {k:?} must be non-empty without '=' or NUL"),
        ));
    }
    Ok(())
}

/// Checks a request's `node_selector` (a job's or a schedule's).
pub(crate) fn node_selector(
    given: Option<BTreeMap<String, String>>,
) -> Result<Labels, ValidationError> {
    Labels::try_from(given.unwrap_or_default()).map_err(|e| invalid("node_selector", e))
}

/// Checks a request's `folder` (a job's or a schedule's).
pub(crate) fn folder(given: Option<String>) -> Result<Option<String>, ValidationError> {
    if let Some(name) = &given {
        crate::validate_folder(name).map_err(|e| invalid("folder", format!("{name:?} {e}")))?;
    }
    Ok(given)
}

/// A submission that passed validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidJob {
    pub name: Option<String>,
    pub spec: JobSpec,
    /// Kept apart from the spec: secrets are never stored.
    pub secrets: BTreeMap<String, String>,
}

impl NewJobRequest {
    /// Checks the request and turns it into the job's name, spec and
    /// secrets.
    pub fn validate(self) -> Result<ValidJob, ValidationError> {
        let mut shell_used = None;
        let command = match (self.command, self.script) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "command",
                    "give either command or script, not both",
                ))
            }
            (None, None) => return Err(invalid("command", "missing: give command or script")),
            (Some(cmd), None) => {
                if self.shell.is_some() {
                    return Err(invalid("shell", "shell goes with script, not command"));
                }
                if cmd.is_empty() || cmd[0].is_empty() {
                    return Err(invalid("command", "must name a program to run"));
                }
                cmd
            }
            (None, Some(script)) => {
                let shell = self.shell.unwrap_or_else(|| "sh".to_string());
                if shell.is_empty() || shell.contains(char::is_whitespace) {
                    return Err(invalid("shell", format!("{shell:?} is not a program name")));
                }
                let base = shell.rsplit('/').next().unwrap_or(&shell);
                shell_used = Some(shell.clone());
                if matches!(base, "pwsh" | "powershell") {
                    vec![shell, "-NoProfile".into(), "-Command".into(), script]
                } else {
                    vec![shell, "-c".into(), script]
                }
            }
        };
        if command.iter().any(|a| a.contains('\0')) {
            return Err(invalid("command", "arguments may not contain NUL bytes"));
        }
        if let Some(n) = &self.name {
            // Characters, as the message says, not bytes: 100 CJK
            // characters are a fine name.
            if n.is_empty() || n.chars().count() > MAX_NAME_LEN || n.chars().any(char::is_control) {
                return Err(invalid(
                    "name",
                    format!("must be 1 to {MAX_NAME_LEN} characters without control characters"),
                ));
            }
        }
        for (k, v) in &self.env {
            check_env_key("env", k)?;
            if v.contains('\0') {
                return Err(invalid("env", format!("value of {k} contains NUL")));
            }
        }
        for (k, v) in &self.secrets {
            check_env_key("secrets", k)?;
            if v.contains('\0') {
                return Err(invalid("secrets", format!("value of {k} contains NUL")));
            }
        }
        if let Some(t) = self.timeout_s {
            if !(t.is_finite() && t > 0.0 && t <= 366.0 * 86400.0) {
                return Err(invalid("timeout_s", "must be a number of seconds > 0"));
            }
        }
        if let Some(c) = &self.cwd {
            if c.is_empty() || c.contains('\0') {
                return Err(invalid("cwd", "must be a non-empty path"));
            }
            // Relative to what? The server's own directory is nothing a
            // submitter knows or should depend on.
            if !c.starts_with('/') {
                return Err(invalid(
                    "cwd",
                    format!("must be an absolute path, not {c:?}"),
                ));
            }
        }
        let secret_names = self.secrets.keys().cloned().collect();
        let mut secrets = self.secrets;
        let (params_schema, params) = params(self.params_schema, self.params, &mut secrets)?;
        let concurrency = Concurrency::from_request(self.concurrency_key, self.max_concurrent)?;
        let node_selector = node_selector(self.node_selector)?;
        let folder = folder(self.folder)?;
        Ok(ValidJob {
            name: self.name,
            spec: JobSpec {
                command,
                env: self.env,
                timeout_s: self.timeout_s,
                cwd: self.cwd,
                secret_names,
                shell: shell_used,
                rerun_of: self.rerun_of,
                schedule: None,
                concurrency,
                node_selector,
                folder,
                params_schema,
                params,
                params_error: None,
                params_from_result: BTreeMap::new(),
            },
            secrets,
        })
    }
}

/// A submission's parameters: its schema checked, its values filled
/// against it (the secret ones added to `secrets`), and what the job
/// records of them.
fn params(
    schema: Option<serde_json::Value>,
    given: Option<serde_json::Map<String, serde_json::Value>>,
    secrets: &mut BTreeMap<String, String>,
) -> Result<RecordedParams, ValidationError> {
    let Some(schema) = schema else {
        return match given {
            Some(g) if !g.is_empty() => Err(invalid(
                "params",
                "this job declares no parameters: give their schema in params_schema",
            )),
            _ => Ok((None, None)),
        };
    };
    let schema = ParamsSchema::parse(&schema).map_err(|e| ValidationError {
        field: e.at.replacen("params", "params_schema", 1).into(),
        message: e.message,
    })?;
    let filled = schema.fill(&given.unwrap_or_default())?;
    secrets.extend(filled.secrets());
    Ok((Some(schema), Some(filled.recorded())))
}

type RecordedParams = (
    Option<ParamsSchema>,
    Option<serde_json::Map<String, serde_json::Value>>,
);
