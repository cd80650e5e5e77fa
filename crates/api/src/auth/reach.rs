//! Folders in the access check: a caller limited to folders
//! ([`joblog_core::Scope`]) reaches a route by its [`Reach`]. A job or
//! schedule of a folder out of reach is answered exactly as one that
//! does not exist, so that its existence is not learnt; a role too low
//! where it is within reach is refused (403). Callers with every folder
//! skip all of this: not one store read more.

use joblog_core::{JobId, Role};

use super::rules::Reach;
use super::Identity;
use crate::error::{ApiError, ErrorCode};
use crate::AppState;

/// What a limited caller's request may go on to.
#[derive(Debug)]
pub(crate) enum Verdict {
    Allowed,
    /// Out of reach: answered as not found.
    Hidden(ApiError),
    /// Within reach, with a role too low there (or a route over every
    /// folder): the role that was needed.
    Refused(ApiError),
}

/// Judges a request of `identity` to a route of `needed` role and
/// `reach`; `route` and `path` give the object's id.
pub(crate) async fn judge(
    state: &AppState,
    identity: &Identity,
    needed: Role,
    reach: Reach,
    route: &str,
    path: &str,
) -> Result<Verdict, ApiError> {
    let scope = &identity.scope;
    if !scope.is_limited() {
        return Ok(if scope.role >= needed {
            Verdict::Allowed
        } else {
            Verdict::Refused(too_low(identity, needed, scope.role, None))
        });
    }
    let (role, folder) = match reach {
        Reach::Any => (Some(scope.role), None),
        Reach::Filtered => (Some(scope.best_role()), None),
        Reach::All => {
            return Ok(Verdict::Refused(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "this reaches every folder; {} is limited to folders ({})",
                    identity.actor,
                    scope.folder_list()
                ),
            )))
        }
        Reach::Job => {
            let Some(id) = crate::access::job_id_in(route, path) else {
                // Not an id: the handler refuses it (400) for anyone.
                return Ok(Verdict::Allowed);
            };
            let id = id as JobId;
            let found = state.engine.store().job_folders(vec![id]).await?;
            let Some((_, folder)) = found.into_iter().next() else {
                return Ok(Verdict::Allowed); // the handler's own 404
            };
            match scope.role_in(folder.as_deref()) {
                None => return Ok(Verdict::Hidden(ApiError::job_not_found(id))),
                role => (role, folder),
            }
        }
        Reach::Schedule => {
            let Some(id) = crate::access::schedule_id_in(route, path) else {
                return Ok(Verdict::Allowed);
            };
            let id = id as i64;
            let Some(schedule) = state.engine.store().get_schedule(id).await? else {
                return Ok(Verdict::Allowed);
            };
            let folder = schedule.spec.folder;
            match scope.role_in(folder.as_deref()) {
                None => return Ok(Verdict::Hidden(schedule_not_found(id))),
                role => (role, folder),
            }
        }
    };
    let role = role.unwrap_or(Role::Viewer);
    Ok(if role >= needed {
        Verdict::Allowed
    } else {
        Verdict::Refused(too_low(identity, needed, role, folder.as_deref()))
    })
}

pub(crate) fn schedule_not_found(id: i64) -> ApiError {
    ApiError::new(
        ErrorCode::ScheduleNotFound,
        format!("no schedule with id {id}"),
    )
}

fn too_low(identity: &Identity, needed: Role, has: Role, folder: Option<&str>) -> ApiError {
    let place = match folder {
        Some(f) => format!(" in folder {f:?}"),
        None => String::new(),
    };
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "this needs the {needed} role{place}; {} has the {has} role{place}",
            identity.actor
        ),
    )
}

/// Whether `identity` may put something (a job, a schedule) into
/// `folder` with `needed`: 403 naming the folder otherwise. A folder
/// is not a secret the way a job is: its name is the caller's own.
pub(crate) fn may_file(
    identity: &Identity,
    folder: Option<&str>,
    needed: Role,
) -> Result<(), ApiError> {
    let scope = &identity.scope;
    match (scope.role_in(folder), folder) {
        (Some(role), _) if role >= needed => Ok(()),
        (Some(role), folder) => Err(too_low(identity, needed, role, folder)),
        (None, None) => Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "{} is limited to folders ({}): give \"folder\", one of them",
                identity.actor,
                scope.folder_list()
            ),
        )),
        (None, Some(f)) => Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "{} may not reach folder {f:?} (limited to {})",
                identity.actor,
                scope.folder_list()
            ),
        )),
    }
}
