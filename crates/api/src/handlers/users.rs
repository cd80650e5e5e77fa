//! `/api/v1/users`: local users, managed by admins. A password arrives
//! only in a request body, is hashed with Argon2id (`auth::password`)
//! and is never stored, logged or sent back; disabling a user, deleting
//! one or setting a new password ends their sessions. An admin cannot
//! disable, delete or demote themselves (another admin, or the
//! configuration's token, can).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use joblog_core::{
    validate_password, validate_user_name, Folders, NewUser, Role, Scope, Timestamp, UserChange,
    UserInfo,
};
use joblog_store::AccountOp;
use serde::{Deserialize, Serialize};

use crate::auth::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::extract::JsonBody;
use crate::{Actor, AppState};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    name: String,
    password: String,
    role: Role,
    /// Limited to these folders, with the role in each.
    #[serde(default)]
    folders: Option<Folders>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeUser {
    role: Option<Role>,
    disabled: Option<bool>,
    password: Option<String>,
    /// `null`: every folder again; absent: unchanged.
    #[serde(default, deserialize_with = "crate::extract::present")]
    folders: Option<Option<Folders>>,
}

fn invalid(field: &str, e: String) -> ApiError {
    ApiError::new(ErrorCode::InvalidRequest, format!("{field}: {e}"))
}

fn not_found(name: &str) -> ApiError {
    ApiError::new(ErrorCode::UserNotFound, format!("no user named {name:?}"))
}

pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    JsonBody(req): JsonBody<CreateUser>,
) -> Result<Response, ApiError> {
    validate_user_name(&req.name).map_err(|e| invalid("name", e))?;
    validate_password(&req.password).map_err(|e| invalid("password", e))?;
    checked_scope(req.role, req.folders.clone())?;
    // The audit trail names its actors by name alone: a user and a token
    // never share one.
    let tokens = state.engine.store().list_tokens().await?;
    if tokens.iter().any(|t| t.name == req.name) {
        return Err(ApiError::new(
            ErrorCode::UserExists,
            format!(
                "an API token is named {:?}; users and tokens share names in the audit trail, so pick another",
                req.name
            ),
        ));
    }
    let password_hash = hash(&state, req.password).await?;
    let created_at = Timestamp::now();
    let new = NewUser {
        name: req.name.clone(),
        role: req.role,
        password_hash,
        created_at,
        folders: req.folders.clone(),
    };
    if state
        .engine
        .pipeline()
        .account(AccountOp::CreateUser(new))
        .await?
        == 0
    {
        return Err(ApiError::new(
            ErrorCode::UserExists,
            format!("a user named {:?} exists", req.name),
        ));
    }
    tracing::info!(
        audit = "user.created",
        user = %req.name,
        role = %req.role,
        folders = crate::handlers::folders_note(req.folders.as_ref()),
        "user {:?} created by {}",
        req.name,
        caller.name()
    );
    let info = UserInfo {
        name: req.name,
        role: req.role,
        disabled: false,
        created_at,
        updated_at: created_at,
        last_sign_in_at: None,
        single_sign_on: false,
        folders: req.folders,
    };
    Ok((StatusCode::CREATED, Json(info)).into_response())
}

async fn hash(state: &AppState, password: String) -> Result<String, ApiError> {
    state
        .auth
        .passwords
        .hash(password)
        .await
        .map_err(|e| ApiError::internal("hashing a password", &e))
}

#[derive(Serialize)]
struct UserList {
    users: Vec<UserInfo>,
}

pub async fn list(State(state): State<AppState>) -> Result<Response, ApiError> {
    let users = state.engine.store().list_users().await?;
    Ok(Json(UserList { users }).into_response())
}

pub async fn show(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    Ok(Json(find(&state, &name).await?).into_response())
}

/// The user of that name; a name no user can have is not looked up.
async fn find(state: &AppState, name: &str) -> Result<UserInfo, ApiError> {
    if validate_user_name(name).is_err() {
        return Err(not_found(name));
    }
    match state.engine.store().user(name.to_string()).await? {
        Some(u) => Ok(u.info),
        None => Err(not_found(name)),
    }
}

pub async fn update(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    Path(name): Path<String>,
    JsonBody(req): JsonBody<ChangeUser>,
) -> Result<Response, ApiError> {
    let before = find(&state, &name).await?;
    let demoted = req.role.is_some_and(|r| r < before.role);
    if is_caller(&caller, &name) && (demoted || req.disabled == Some(true)) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "you cannot demote or disable yourself; another admin can",
        ));
    }
    if req.role.is_some() || req.folders.is_some() {
        let folders = match &req.folders {
            Some(f) => f.clone(),
            None => before.folders.clone(),
        };
        checked_scope(req.role.unwrap_or(before.role), folders)?;
    }
    let password_hash = match req.password {
        // Their password is the provider's; a second one here would be
        // a way in the provider does not know of.
        Some(_) if before.single_sign_on => {
            return Err(invalid(
                "password",
                format!("{name:?} signs in through single sign-on and has no password here"),
            ))
        }
        Some(p) => {
            validate_password(&p).map_err(|e| invalid("password", e))?;
            Some(hash(&state, p).await?)
        }
        None => None,
    };
    let change = UserChange {
        role: req.role,
        disabled: req.disabled,
        password_hash,
        folders: req.folders.clone(),
    };
    let ends = change.ends_sessions();
    let new_password = change.password_hash.is_some();
    let op = AccountOp::UpdateUser {
        name: name.clone(),
        change,
        at: Timestamp::now(),
    };
    if state.engine.pipeline().account(op).await? == 0 {
        return Err(not_found(&name));
    }
    tracing::info!(
        audit = "user.changed",
        user = %name,
        role = req.role.map(Role::name),
        disabled = req.disabled,
        folders = req.folders.as_ref().map(|f| crate::handlers::folders_note(f.as_ref())),
        new_password,
        sessions_ended = ends,
        "user {name:?} changed by {}",
        caller.name()
    );
    Ok(Json(find(&state, &name).await?).into_response())
}

pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Identity>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    if is_caller(&caller, &name) {
        return Err(ApiError::new(
            ErrorCode::InvalidRequest,
            "you cannot delete yourself; another admin can",
        ));
    }
    let op = AccountOp::DeleteUser { name: name.clone() };
    if validate_user_name(&name).is_err() || state.engine.pipeline().account(op).await? == 0 {
        return Err(not_found(&name));
    }
    tracing::info!(audit = "user.deleted", user = %name, "user {name:?} deleted by {}", caller.name());
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A role with folders is checked as one scope: never admin within
/// folders only.
fn checked_scope(role: Role, folders: Option<Folders>) -> Result<(), ApiError> {
    Scope { role, folders }
        .validate()
        .map_err(|e| ApiError::new(ErrorCode::InvalidRequest, e))
}

fn is_caller(caller: &Identity, name: &str) -> bool {
    matches!(&caller.actor, Actor::User(me) if me == name)
}
