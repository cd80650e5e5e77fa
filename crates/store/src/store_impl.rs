//! The [`Store`](crate::Store) reads both stores answer with the same
//! shared logic, listed once. Each store gives the macro how it runs
//! shared logic on one of its read connections (`$run!(self, c =>
//! call)`: SQLite on its blocking pool, PostgreSQL on its async pool) and
//! the methods that are its own (opening the writer, ping, snapshot,
//! describe, the listener).
//!
//! A macro rather than a generic impl: a PostgreSQL read's future must be
//! `Send`, and for shared logic generic over the connection that can only
//! be shown once the connection's type is known.

macro_rules! store_impl {
    ($store:ty, $run:ident, { $($own:tt)* }) => {
        #[async_trait::async_trait]
        impl $crate::Store for $store {
            $($own)*

            async fn get_job(&self, id: JobId) -> Result<Option<Job>> {
                $run!(self, c => $crate::reads::get_job(c, id))
            }

            async fn latest_job_id(&self) -> Result<Option<JobId>> {
                $run!(self, c => $crate::reads::latest_job_id(c))
            }

            async fn job_folders(&self, ids: Vec<JobId>) -> Result<Vec<(JobId, Option<String>)>> {
                $run!(self, c => $crate::reads::job_folders(c, &ids))
            }

            async fn newer_in_folders(
                &self,
                folders: Vec<String>,
                after: JobId,
                up_to: u32,
            ) -> Result<Vec<JobId>> {
                $run!(self, c => $crate::reads::newer_in_folders(c, &folders, after, up_to))
            }

            async fn list_jobs(&self, q: JobQuery) -> Result<Vec<Job>> {
                $run!(self, c => $crate::listing::list(c, &q))
            }

            async fn read_log(
                &self,
                id: JobId,
                after_seq: u64,
                limit: u32,
                streams: Option<Vec<Stream>>,
            ) -> Result<Vec<Record>> {
                $run!(self, c => $crate::log_reads::read_log(c, id, after_seq, limit, &streams))
            }

            async fn read_log_before(
                &self,
                id: JobId,
                before_seq: u64,
                limit: u32,
                streams: Option<Vec<Stream>>,
            ) -> Result<EarlierPage> {
                $run!(self, c => $crate::log_reads::read_before(c, id, before_seq, limit, &streams))
            }

            async fn search_log(
                &self,
                id: JobId,
                search: &LogSearch,
                after_seq: u64,
                limit: u32,
                streams: Option<Vec<Stream>>,
            ) -> Result<SearchHits> {
                let search = search.clone();
                $run!(self, c => $crate::log_reads::search(c, id, &search, after_seq, limit, &streams))
            }

            async fn search(
                &self,
                query: &joblog_core::search::SearchQuery,
                cursor: Option<joblog_core::search::SearchCursor>,
                limit: u32,
                budget: $crate::SearchBudget,
            ) -> Result<joblog_core::search::SearchPage> {
                let query = query.clone();
                $run!(self, c => $crate::search::search(c, &query, cursor, limit, budget))
            }

            async fn log_outline(&self, id: JobId, max_groups: usize) -> Result<LogOutline> {
                $run!(self, c => $crate::log_reads::outline(c, id, max_groups))
            }

            async fn read_result(&self, id: JobId) -> Result<Option<Vec<u8>>> {
                $run!(self, c => $crate::reads::read_result(c, id))
            }

            async fn unsealed_rows(&self, id: JobId, limit: u32) -> Result<Vec<Record>> {
                $run!(self, c => $crate::log_reads::unsealed_rows(c, id, limit))
            }

            async fn unsealed_jobs(
                &self,
                after: JobId,
                limit: u32,
                node: Option<String>,
            ) -> Result<Vec<(JobId, Timestamp)>> {
                $run!(self, c => $crate::log_reads::unsealed_jobs(c, after, limit, node.as_deref()))
            }

            async fn count_unsealed(&self, up_to: u64) -> Result<u64> {
                $run!(self, c => $crate::log_reads::count_unsealed(c, up_to))
            }

            async fn groom_candidates(&self, policy: GroomPolicy) -> Result<Vec<JobId>> {
                $run!(self, c => $crate::reads::groom_candidates(c, policy))
            }

            async fn count_queued(&self, up_to: u64) -> Result<u64> {
                $run!(self, c => $crate::reads::count_queued(c, up_to))
            }

            async fn token_by_hash(&self, hash: [u8; 32]) -> Result<Option<TokenInfo>> {
                $run!(self, c => $crate::reads::token_by_hash(c, hash))
            }

            async fn list_tokens(&self) -> Result<Vec<TokenInfo>> {
                $run!(self, c => $crate::reads::list_tokens(c))
            }

            async fn user(&self, name: String) -> Result<Option<joblog_core::UserAuth>> {
                $run!(self, c => $crate::accounts::user(c, &name))
            }

            async fn list_users(&self) -> Result<Vec<joblog_core::UserInfo>> {
                $run!(self, c => $crate::accounts::users(c))
            }

            async fn session_by_hash(&self, hash: [u8; 32]) -> Result<Option<joblog_core::SessionAuth>> {
                $run!(self, c => $crate::accounts::session_by_hash(c, hash))
            }

            async fn pending_sign_in(&self, hash: [u8; 32]) -> Result<Option<joblog_core::PendingSignIn>> {
                $run!(self, c => $crate::accounts::pending_sign_in(c, hash))
            }

            async fn list_sessions(&self, user: Option<String>) -> Result<Vec<joblog_core::SessionInfo>> {
                $run!(self, c => $crate::accounts::sessions(c, user.as_deref()))
            }

            async fn finished_by_name(&self) -> Result<Vec<$crate::FinishedByName>> {
                $run!(self, c => $crate::db::Conn::query(c, &$crate::FINISHED_BY_NAME, &[]))
            }

            async fn finished_by_schedule(&self) -> Result<Vec<$crate::FinishedBySchedule>> {
                $run!(self, c => $crate::db::Conn::query(c, &$crate::FINISHED_BY_SCHEDULE, &[]))
            }

            async fn queued_by_selector(&self) -> Result<Vec<(joblog_core::Labels, u64)>> {
                let rows: Vec<(String, i64)> = $run!(self, c => $crate::db::Conn::query(c, &$crate::QUEUED_BY_SELECTOR, &[]))?;
                rows.into_iter()
                    .map(|(text, n)| {
                        let labels = joblog_core::Labels::parse(&text).map_err(|e| {
                            $crate::StoreError::Corrupt(format!("a job's node_selector {text:?}: {e}"))
                        })?;
                        Ok((labels, n.max(0) as u64))
                    })
                    .collect()
            }

            async fn scheduler_state(&self) -> Result<$crate::SchedulerState> {
                $run!(self, c => $crate::controls::scheduler_state(c))
            }

            async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
                $run!(self, c => $crate::reads::list_nodes(c))
            }

            async fn list_audit(&self, q: AuditQuery) -> Result<Vec<AuditEntry>> {
                $run!(self, c => $crate::audit::list(c, &q))
            }

            async fn get_schedule(&self, id: ScheduleId) -> Result<Option<Schedule>> {
                $run!(self, c => $crate::schedules::reads::get(c, id))
            }

            async fn list_schedules(
                &self,
                after_id: ScheduleId,
                limit: u32,
            ) -> Result<Vec<Schedule>> {
                $run!(self, c => $crate::schedules::reads::list(c, after_id, limit))
            }

            async fn next_fire(&self) -> Result<Option<Timestamp>> {
                $run!(self, c => $crate::schedules::reads::next_fire(c))
            }

            async fn next_run_after(&self) -> Result<Option<Timestamp>> {
                $run!(self, c => $crate::schedules::reads::next_run_after(c))
            }

            async fn get_rule(
                &self,
                id: joblog_core::notify::RuleId,
            ) -> Result<Option<joblog_core::notify::Rule>> {
                $run!(self, c => $crate::notifications::get_rule(c, id))
            }

            async fn list_rules(
                &self,
                after_id: joblog_core::notify::RuleId,
                limit: u32,
            ) -> Result<Vec<joblog_core::notify::Rule>> {
                $run!(self, c => $crate::notifications::list_rules(c, after_id, limit))
            }

            async fn rule_deliveries(
                &self,
                rule: joblog_core::notify::RuleId,
                before_id: joblog_core::notify::DeliveryId,
                limit: u32,
            ) -> Result<Vec<joblog_core::notify::Delivery>> {
                $run!(self, c => $crate::notifications::of_rule(c, rule, before_id, limit))
            }

            async fn job_deliveries(&self, job: JobId) -> Result<Vec<joblog_core::notify::Delivery>> {
                $run!(self, c => $crate::notifications::of_job(c, job))
            }

            async fn oldest_pending_delivery(&self) -> Result<Option<Timestamp>> {
                $run!(self, c => $crate::notifications::oldest_pending(c))
            }

            async fn next_delivery_due(&self) -> Result<Option<Timestamp>> {
                $run!(self, c => $crate::notifications::next_due(c))
            }
        }
    };
}
pub(crate) use store_impl;
