//! Notification rules and their deliveries (the outbox), in both stores
//! with the same statements: saving and deleting a rule, queueing a
//! delivery for each rule a job's end matches (in the transaction that
//! ends the job, so a crash neither loses nor invents one), claiming due
//! deliveries for a sender, recording each try, and the reads of the API.
//!
//! Exactly once per (rule, job): `deliveries` is unique on the pair, and a
//! job ends once. One sender at a time: a claim moves the delivery's
//! `next_try_at` a lease ahead under its row lock (PostgreSQL: `SKIP
//! LOCKED`, so other nodes take other deliveries); a sender that dies
//! mid-send leaves it due again when the lease runs out.

use joblog_core::notify::{
    Delivery, DeliveryId, DeliveryState, NewRule, Rule, RuleId, TryOutcome, ValidRule, When,
};
use joblog_core::{Job, JobId, JobState, Timestamp};

use crate::db::{query_one, query_opt, sql, Conn, Decode, Param, Row, Statement};
use crate::schedules::writes::ScheduleWrites;
use crate::{Outcome, Result, StoreError};

/// Most deliveries one claim takes.
pub const CLAIM_BATCH: u32 = 32;

macro_rules! rule_columns {
    () => {
        "id, spec, created_at, updated_at"
    };
}
macro_rules! delivery_columns {
    () => {
        "id, rule_id, job_id, state, attempts, created_at, next_try_at, delivered_at, \
         last_status, last_error"
    };
}

pub(crate) const GET_RULE: Statement = sql!(concat!(
    "SELECT ",
    rule_columns!(),
    " FROM notification_rules WHERE id = $1"
));
const LIST_RULES: Statement = sql!(concat!(
    "SELECT ",
    rule_columns!(),
    " FROM notification_rules WHERE id > $1 ORDER BY id LIMIT $2"
));
const RULE_BY_NAME: Statement = sql!("SELECT id FROM notification_rules WHERE name = $1");
const INSERT_RULE: Statement = sql!(concat!(
    "INSERT INTO notification_rules (name, spec, when_spec, enabled, created_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (name) DO NOTHING RETURNING ",
    rule_columns!()
));
const UPDATE_RULE: Statement = sql!(concat!(
    "UPDATE notification_rules SET name = $2, spec = $3, when_spec = $4, enabled = $5, \
     updated_at = $6 WHERE id = $1 RETURNING ",
    rule_columns!()
));
const DELETE_RULE: Statement = sql!("DELETE FROM notification_rules WHERE id = $1");
const DELETE_RULE_DELIVERIES: Statement = sql!("DELETE FROM deliveries WHERE rule_id = $1");
pub(crate) const DELETE_JOB_DELIVERIES: Statement =
    sql!("DELETE FROM deliveries WHERE job_id = $1");
/// Every enabled rule's conditions: read at each job's end (rules are few;
/// the table is small and stays in cache).
pub(crate) const ENABLED_RULES: Statement =
    sql!("SELECT id, when_spec FROM notification_rules WHERE enabled = true");
const INSERT_DELIVERY: Statement = sql!(
    "INSERT INTO deliveries (rule_id, job_id, state, attempts, created_at, next_try_at) \
     VALUES ($1, $2, 'pending', 0, $3, $3) ON CONFLICT (rule_id, job_id) DO NOTHING"
);
/// The due deliveries, earliest first: one range of `deliveries_due`.
const DUE: Statement = Statement::new(
    "SELECT id FROM deliveries WHERE state = 'pending' AND next_try_at <= ?1 \
     ORDER BY next_try_at LIMIT ?2",
    "SELECT id FROM deliveries WHERE state = 'pending' AND next_try_at <= $1 \
     ORDER BY next_try_at LIMIT $2 FOR UPDATE SKIP LOCKED",
);
const CLAIM: Statement = sql!(concat!(
    "UPDATE deliveries SET next_try_at = $2, attempts = attempts + 1, claimed_by = $3 \
     WHERE id = $1 AND state = 'pending' RETURNING ",
    delivery_columns!()
));
const TRIED: Statement = sql!(
    "UPDATE deliveries SET state = $2, next_try_at = $3, delivered_at = $4, last_status = $5, \
     last_error = $6 WHERE id = $1 AND state = 'pending'"
);
const OF_RULE: Statement = sql!(concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM deliveries WHERE rule_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
));
const OF_JOB: Statement = sql!(concat!(
    "SELECT ",
    delivery_columns!(),
    " FROM deliveries WHERE job_id = $1 ORDER BY id"
));
/// When the oldest undelivered notification was queued: one entry of
/// `deliveries_pending`.
const OLDEST_PENDING: Statement =
    sql!("SELECT min(created_at) FROM deliveries WHERE state = 'pending'");
/// The next due delivery, for the sender's sleep.
const NEXT_DUE: Statement = sql!("SELECT min(next_try_at) FROM deliveries WHERE state = 'pending'");

/// What saving a rule did.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleSaved {
    Saved(Box<Rule>),
    /// Another rule has that name.
    NameTaken,
    /// No rule has that id (an update).
    NotFound,
}

/// A row of [`rule_columns!`]: the stored rule is read through the same
/// checks as a client's, so a damaged one is an error, never a guess.
impl Decode for Rule {
    fn decode(row: &impl Row) -> Result<Rule> {
        let id: i64 = row.get(0)?;
        let spec: String = row.get(1)?;
        let corrupt = |e: &dyn std::fmt::Display| StoreError::Corrupt(format!("rule {id}: {e}"));
        let new: NewRule = serde_json::from_str(&spec).map_err(|e| corrupt(&e))?;
        let valid = new.validate().map_err(|e| corrupt(&e.message))?;
        Ok(Rule::new(
            id,
            valid,
            Timestamp(row.get(2)?),
            Timestamp(row.get(3)?),
        ))
    }
}

/// A row of [`delivery_columns!`].
impl Decode for Delivery {
    fn decode(row: &impl Row) -> Result<Delivery> {
        let id: i64 = row.get(0)?;
        let state: String = row.get(3)?;
        let state = DeliveryState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("delivery {id}: state {state:?}")))?;
        let status: Option<i64> = row.get(8)?;
        Ok(Delivery {
            id,
            rule_id: row.get(1)?,
            job_id: row.get(2)?,
            state,
            attempts: u32::try_from(row.get::<i64>(4)?).unwrap_or(u32::MAX),
            created_at: Timestamp(row.get(5)?),
            next_try_at: match state {
                DeliveryState::Pending => row.get::<Option<i64>>(6)?.map(Timestamp),
                _ => None,
            },
            delivered_at: row.get::<Option<i64>>(7)?.map(Timestamp),
            last_status: status.and_then(|s| u16::try_from(s).ok()),
            last_error: row.get(9)?,
        })
    }
}

/// Creates (`id` `None`) or replaces a rule. → [`Outcome::Rule`]
pub(crate) async fn save<C: Conn>(
    c: &mut C,
    id: Option<RuleId>,
    rule: &ValidRule,
    now: i64,
) -> Result<Outcome> {
    let spec = Rule::spec_json(rule);
    let when = serde_json::to_string(&rule.when)
        .map_err(|e| StoreError::Database(format!("a rule's conditions as JSON: {e}")))?;
    let saved = match id {
        None => {
            let params = [
                rule.name.as_str().into(),
                spec.into(),
                when.into(),
                rule.enabled.into(),
                now.into(),
            ];
            match query_opt::<C, Rule>(c, &INSERT_RULE, &params).await? {
                Some(r) => RuleSaved::Saved(Box::new(r)),
                None => RuleSaved::NameTaken,
            }
        }
        Some(id) => {
            let holder =
                query_opt::<C, (i64,)>(c, &RULE_BY_NAME, &[rule.name.as_str().into()]).await?;
            if holder.is_some_and(|(other,)| other != id) {
                RuleSaved::NameTaken
            } else {
                let params = [
                    id.into(),
                    rule.name.as_str().into(),
                    spec.into(),
                    when.into(),
                    rule.enabled.into(),
                    now.into(),
                ];
                match query_opt::<C, Rule>(c, &UPDATE_RULE, &params).await? {
                    Some(r) => RuleSaved::Saved(Box::new(r)),
                    None => RuleSaved::NotFound,
                }
            }
        }
    };
    Ok(Outcome::Rule(saved))
}

/// Deletes a rule and its deliveries (sent or not). → [`Outcome::Count`]
pub(crate) async fn delete<C: Conn>(c: &mut C, id: RuleId) -> Result<Outcome> {
    c.execute(&DELETE_RULE_DELIVERIES, &[id.into()]).await?;
    Ok(Outcome::Count(c.execute(&DELETE_RULE, &[id.into()]).await?))
}

/// The enabled rules (id, conditions), as a writer may keep them for the
/// rest of its batch ([`ScheduleWrites::kept_rules`]).
pub(crate) type EnabledRules = std::sync::Arc<[(i64, When)]>;

async fn enabled_rules<C: Conn>(c: &mut C) -> Result<EnabledRules> {
    enabled_from(c.query(&ENABLED_RULES, &[]).await?)
}

/// The rules [`ENABLED_RULES`] answered.
pub(crate) fn enabled_from(rows: Vec<(i64, String)>) -> Result<EnabledRules> {
    rows.into_iter()
        .map(|(id, when)| {
            let when: When = serde_json::from_str(&when)
                .map_err(|e| StoreError::Corrupt(format!("rule {id}: its conditions: {e}")))?;
            Ok((id, when))
        })
        .collect()
}

/// Queues a delivery for every enabled rule `job`'s end matches; `job` is
/// as it ended (its end state). Called in the transaction that ends it.
pub(crate) async fn on_end<T: ScheduleWrites>(c: &mut T, job: &Job, now: i64) -> Result<()> {
    let rules = match c.kept_rules().and_then(|kept| kept.clone()) {
        Some(rules) => rules,
        None => {
            let rules = enabled_rules(c).await?;
            if let Some(kept) = c.kept_rules() {
                *kept = Some(rules.clone());
            }
            rules
        }
    };
    for (id, when) in rules.iter() {
        if when.matches(job) {
            c.execute(&INSERT_DELIVERY, &[(*id).into(), job.id.into(), now.into()])
                .await?;
            c.queued_delivery();
        }
    }
    Ok(())
}

/// [`on_end`] for a job ended `interrupted` (the row read before the
/// change still says `running` or `queued`), with its schedule's next
/// attempt if it has one left, or else the runs it triggers: as a job's
/// finish does, in the same transaction.
pub(crate) async fn on_interrupted<T: ScheduleWrites>(
    tx: &mut T,
    job: &Job,
    now: i64,
) -> Result<()> {
    let mut ended = job.clone();
    ended.state = JobState::Interrupted;
    ended.finished_at = Some(Timestamp(now));
    if !crate::schedules::writes::retry(tx, &ended, Timestamp(now)).await? {
        // Its result, if it wrote one, was never read.
        crate::schedules::triggers::on_end(tx, &ended, None, now).await?;
    }
    on_end(tx, &ended, now).await
}

/// Takes up to `max` deliveries due at `at` for `node`: each is tried
/// next after `lease` (so one whose sender died is taken again then) and
/// counts one attempt more. → [`Outcome::Deliveries`]
pub(crate) async fn claim<C: Conn>(
    c: &mut C,
    node: &str,
    at: Timestamp,
    lease: std::time::Duration,
    max: u32,
) -> Result<Outcome> {
    let due: Vec<(i64,)> = c
        .query(&DUE, &[at.micros().into(), max.min(CLAIM_BATCH).into()])
        .await?;
    let until = at.micros().saturating_add(lease.as_micros() as i64);
    let mut claimed = Vec::with_capacity(due.len());
    for (id,) in due {
        let params = [id.into(), until.into(), node.into()];
        claimed.extend(query_opt::<C, Delivery>(c, &CLAIM, &params).await?);
    }
    Ok(Outcome::Deliveries(claimed))
}

/// Records one try: delivered, refused for good, or due again at
/// `retry_at` (`None`: out of retries, so failed). → [`Outcome::Count`]
pub(crate) async fn tried<C: Conn>(
    c: &mut C,
    id: DeliveryId,
    outcome: &TryOutcome,
    retry_at: Option<Timestamp>,
    at: Timestamp,
) -> Result<Outcome> {
    let (state, next, delivered, status, error): (_, Option<i64>, Option<i64>, _, _) = match outcome
    {
        TryOutcome::Delivered { status } => (
            DeliveryState::Delivered,
            None,
            Some(at.micros()),
            *status,
            None,
        ),
        TryOutcome::Retry { status, error } => match retry_at {
            Some(t) => (
                DeliveryState::Pending,
                Some(t.micros()),
                None,
                *status,
                Some(error.as_str()),
            ),
            None => (
                DeliveryState::Failed,
                None,
                None,
                *status,
                Some(error.as_str()),
            ),
        },
        TryOutcome::Refused { status, error } => (
            DeliveryState::Failed,
            None,
            None,
            *status,
            Some(error.as_str()),
        ),
    };
    let params = [
        id.into(),
        state.name().into(),
        Param::from(next),
        Param::from(delivered),
        Param::from(status.map(i64::from)),
        Param::from(error),
    ];
    Ok(Outcome::Count(c.execute(&TRIED, &params).await?))
}

pub(crate) async fn get_rule<C: Conn>(c: &mut C, id: RuleId) -> Result<Option<Rule>> {
    query_opt(c, &GET_RULE, &[id.into()]).await
}

pub(crate) async fn list_rules<C: Conn>(
    c: &mut C,
    after_id: RuleId,
    limit: u32,
) -> Result<Vec<Rule>> {
    c.query(&LIST_RULES, &[after_id.into(), limit.into()]).await
}

/// The rule's deliveries before `before_id`, newest first.
pub(crate) async fn of_rule<C: Conn>(
    c: &mut C,
    rule: RuleId,
    before_id: DeliveryId,
    limit: u32,
) -> Result<Vec<Delivery>> {
    c.query(&OF_RULE, &[rule.into(), before_id.into(), limit.into()])
        .await
}

pub(crate) async fn of_job<C: Conn>(c: &mut C, job: JobId) -> Result<Vec<Delivery>> {
    c.query(&OF_JOB, &[job.into()]).await
}

pub(crate) async fn oldest_pending<C: Conn>(c: &mut C) -> Result<Option<Timestamp>> {
    Ok(query_one::<C, Option<i64>>(c, &OLDEST_PENDING, &[])
        .await?
        .map(Timestamp))
}

pub(crate) async fn next_due<C: Conn>(c: &mut C) -> Result<Option<Timestamp>> {
    Ok(query_one::<C, Option<i64>>(c, &NEXT_DUE, &[])
        .await?
        .map(Timestamp))
}

/// Every statement the API and the sender read with, with values: for
/// the query-plan tests of both stores.
#[cfg(test)]
pub(crate) fn every_statement() -> Vec<(&'static str, Statement, Vec<Param>)> {
    vec![
        ("GET_RULE", GET_RULE, vec![1i64.into()]),
        ("LIST_RULES", LIST_RULES, vec![0i64.into(), 100u32.into()]),
        ("RULE_BY_NAME", RULE_BY_NAME, vec!["x".into()]),
        ("DUE", DUE, vec![5i64.into(), 32u32.into()]),
        (
            "OF_RULE",
            OF_RULE,
            vec![1i64.into(), i64::MAX.into(), 100u32.into()],
        ),
        ("OF_JOB", OF_JOB, vec![1i64.into()]),
        ("OLDEST_PENDING", OLDEST_PENDING, vec![]),
        ("NEXT_DUE", NEXT_DUE, vec![]),
    ]
}
