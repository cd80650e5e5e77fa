//! `/api/v1/tokens`: create (the token is shown once, in this answer, and
//! stored only as its hash), list and revoke API tokens.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::{validate_token_name, Folders, NewToken, Role, Scope, Timestamp, TokenInfo};
use serde::{Deserialize, Serialize};

use crate::auth::{secret, Identity};
use crate::error::{ApiError, ErrorCode};
use crate::extract::JsonBody;
use crate::AppState;

/// Longest lifetime a token may be given: a hundred years is "never" to a
/// person and still far from overflowing a timestamp.
const MAX_EXPIRES_S: f64 = 100.0 * 365.0 * 86_400.0;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    pub(crate) name: String,
    pub(crate) role: Role,
    /// Seconds from now; absent or null: never expires.
    pub(crate) expires_s: Option<f64>,
    /// Limited to these folders, with the role in each.
    #[serde(default)]
    pub(crate) folders: Option<Folders>,
}

impl CreateToken {
    /// Checks the name and the lifetime, and gives the expiry of a token
    /// created at `created_at` (`None`: never). A bad value → 400 naming
    /// the field.
    pub(crate) fn expiry(&self, created_at: Timestamp) -> Result<Option<Timestamp>, ApiError> {
        validate_token_name(&self.name)
            .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, format!("name: {e}")))?;
        Scope {
            role: self.role,
            folders: self.folders.clone(),
        }
        .validate()
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e))?;
        match self.expires_s {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 && s <= MAX_EXPIRES_S => Ok(Some(Timestamp(
                created_at.micros() + (s * 1_000_000.0) as i64,
            ))),
            Some(_) => Err(ApiError::new(
                ErrorCode::InvalidRequest,
                "expires_s: must be a number of seconds above 0 and at most 100 years",
            )),
        }
    }
}

#[derive(Serialize)]
struct Created {
    #[serde(flatten)]
    info: TokenInfo,
    /// The token itself: shown this once, never again.
    token: String,
}

pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    JsonBody(req): JsonBody<CreateToken>,
) -> Result<Response, ApiError> {
    let created_at = Timestamp::now();
    let expires_at = req.expiry(created_at)?;
    // The audit trail names its actors by name alone: a token and a user
    // never share one.
    if state.engine.store().user(req.name.clone()).await?.is_some() {
        return Err(ApiError::new(
            ErrorCode::TokenExists,
            format!(
                "a user is named {:?}; tokens and users share names in the audit trail, so pick another",
                req.name
            ),
        ));
    }
    let token = secret::generate()
        .map_err(|e| ApiError::internal("reading the system's randomness", &e))?;
    let new = NewToken {
        name: req.name.clone(),
        role: req.role,
        hash: secret::hash(&token),
        created_at,
        expires_at,
        folders: req.folders.clone(),
    };
    if !state.engine.create_token(new).await? {
        return Err(ApiError::new(
            ErrorCode::TokenExists,
            format!("a token named {:?} exists; revoke it first", req.name),
        ));
    }
    tracing::info!(
        audit = "token.created",
        token = %req.name,
        role = %req.role,
        expires_at = expires_at.map(|t| t.to_rfc3339()),
        folders = crate::handlers::folders_note(req.folders.as_ref()),
        "API token {:?} created by {}",
        req.name,
        caller.name()
    );
    let info = TokenInfo {
        name: req.name,
        role: req.role,
        created_at,
        expires_at,
        last_used_at: None,
        folders: req.folders,
    };
    Ok((StatusCode::CREATED, Json(Created { info, token })).into_response())
}

#[derive(Serialize)]
struct TokenList {
    tokens: Vec<TokenInfo>,
}

pub async fn list(State(state): State<AppState>) -> Result<Response, ApiError> {
    let tokens = state.engine.store().list_tokens().await?;
    Ok(Json(TokenList { tokens }).into_response())
}

pub async fn revoke(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    // A name no token can have is not looked up (PostgreSQL refuses a NUL).
    let exists =
        validate_token_name(&name).is_ok() && state.engine.revoke_token(name.clone()).await?;
    if !exists {
        return Err(ApiError::new(
            ErrorCode::TokenNotFound,
            format!("no token named {name:?}"),
        ));
    }
    state.auth.forget(&name);
    tracing::info!(audit = "token.revoked", token = %name, "API token {name:?} revoked by {}", caller.name());
    Ok(Json(serde_json::json!({ "revoked": name })).into_response())
}
