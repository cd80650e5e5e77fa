//! `/api/v1/notifications`: the rules that tell people of job ends, a test
//! send, and what was sent: a rule's deliveries and a job's. Rules are an
//! administrator's to read too (a web hook's URL is often its credential);
//! what was sent of a job is anyone's who may read the job.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use joblog_core::notify::{Delivery, DeliveryId, NewRule, Rule, RuleId, MAX_RULE_LIMIT};
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ErrorCode};
use crate::extract::{positive_id, JobIdPath, JsonBody, QueryParams};
use crate::AppState;

/// A rule id from the path; anything but a positive integer → 400.
pub struct RuleIdPath(pub RuleId);

impl<S: Send + Sync> FromRequestParts<S> for RuleIdPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        positive_id(parts, state, "rule").await.map(RuleIdPath)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListParams {
    limit: Option<u32>,
    after_id: Option<RuleId>,
}

#[derive(Serialize)]
struct RuleList {
    rules: Vec<Rule>,
    /// Where the next page starts; `null` on the last.
    next_after_id: Option<RuleId>,
}

fn checked_limit(limit: Option<u32>) -> Result<u32, ApiError> {
    let limit = limit.unwrap_or(100);
    if limit == 0 || limit > MAX_RULE_LIMIT {
        return Err(ApiError::new(
            ErrorCode::InvalidQuery,
            format!("limit: must be 1 to {MAX_RULE_LIMIT}"),
        ));
    }
    Ok(limit)
}

pub async fn list(
    State(state): State<AppState>,
    QueryParams(p): QueryParams<ListParams>,
) -> Result<Json<impl Serialize>, ApiError> {
    let limit = checked_limit(p.limit)?;
    let rules = state
        .engine
        .store()
        .list_rules(p.after_id.unwrap_or(0), limit)
        .await?;
    let next_after_id = if rules.len() == limit as usize {
        rules.last().map(|r| r.id)
    } else {
        None
    };
    Ok(Json(RuleList {
        rules,
        next_after_id,
    }))
}

pub async fn create(
    State(state): State<AppState>,
    JsonBody(new): JsonBody<NewRule>,
) -> Result<Response, ApiError> {
    let rule = state.engine.create_rule(new).await?;
    audit("notification.created", &rule);
    Ok((StatusCode::CREATED, Json(rule)).into_response())
}

pub async fn show(
    State(state): State<AppState>,
    RuleIdPath(id): RuleIdPath,
) -> Result<Json<Rule>, ApiError> {
    Ok(Json(state.engine.get_rule(id).await?))
}

/// Changes the fields the body names (any of `POST`'s); the rest stay.
pub async fn update(
    State(state): State<AppState>,
    RuleIdPath(id): RuleIdPath,
    JsonBody(patch): JsonBody<serde_json::Map<String, serde_json::Value>>,
) -> Result<Json<Rule>, ApiError> {
    let rule = state.engine.update_rule(id, patch).await?;
    audit("notification.updated", &rule);
    Ok(Json(rule))
}

pub async fn delete(
    State(state): State<AppState>,
    RuleIdPath(id): RuleIdPath,
) -> Result<StatusCode, ApiError> {
    state.engine.delete_rule(id).await?;
    tracing::info!(
        audit = "notification.deleted",
        rule_id = id,
        "notification rule {id} deleted"
    );
    Ok(StatusCode::NO_CONTENT)
}

/// Sends the rule a test notification now and says what came of it.
pub async fn test(
    State(state): State<AppState>,
    RuleIdPath(id): RuleIdPath,
) -> Result<Json<joblog_engine::TestSend>, ApiError> {
    let sent = state.engine.test_rule(id).await?;
    tracing::info!(
        audit = "notification.tested",
        rule_id = id,
        delivered = sent.delivered,
        "notification rule {id} sent a test ({})",
        if sent.delivered {
            "delivered"
        } else {
            "not delivered"
        }
    );
    Ok(Json(sent))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeliveryParams {
    limit: Option<u32>,
    before_id: Option<DeliveryId>,
}

#[derive(Serialize)]
struct DeliveryList {
    deliveries: Vec<Delivery>,
    /// Where the next (older) page starts; `null` on the last.
    next_before_id: Option<DeliveryId>,
}

/// The rule's deliveries, newest first.
pub async fn deliveries(
    State(state): State<AppState>,
    RuleIdPath(id): RuleIdPath,
    QueryParams(p): QueryParams<DeliveryParams>,
) -> Result<Json<impl Serialize>, ApiError> {
    let limit = checked_limit(p.limit)?;
    state.engine.get_rule(id).await?;
    let deliveries = state
        .engine
        .store()
        .rule_deliveries(id, p.before_id.unwrap_or(i64::MAX), limit)
        .await?;
    let next_before_id = if deliveries.len() == limit as usize {
        deliveries.last().map(|d| d.id)
    } else {
        None
    };
    Ok(Json(DeliveryList {
        deliveries,
        next_before_id,
    }))
}

#[derive(Serialize)]
struct JobDeliveries {
    deliveries: Vec<Delivery>,
}

/// What was sent of a job's end, oldest first.
pub async fn of_job(
    State(state): State<AppState>,
    JobIdPath(id): JobIdPath,
) -> Result<Json<impl Serialize>, ApiError> {
    let store = state.engine.store();
    if store.get_job(id).await?.is_none() {
        return Err(ApiError::job_not_found(id));
    }
    Ok(Json(JobDeliveries {
        deliveries: store.job_deliveries(id).await?,
    }))
}

/// The audit entry names the hook's host only: a web hook's path is often
/// its credential (Slack's, Teams').
fn audit(action: &'static str, r: &Rule) {
    let target = match (&r.webhook, &r.email) {
        (Some(w), _) => w
            .url
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split(['/', '?']).next())
            .unwrap_or_default(),
        (_, Some(_)) => "email",
        _ => "",
    };
    tracing::info!(
        audit = action,
        rule_id = r.id,
        name = r.name.as_str(),
        target,
        "notification rule {} ({}) {}",
        r.id,
        r.name,
        action.trim_start_matches("notification.")
    );
}
