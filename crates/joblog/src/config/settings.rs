//! Every setting of `joblog serve`, declared once: this list is what the
//! configuration file, the environment and the flags accept, and what
//! `docs/configuration.md` shows.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use joblog_api::limits::Limits;
use joblog_api::SessionOptions;
use joblog_core::Labels;
use joblog_engine::EngineConfig;
use joblog_oplog::config::{DEFAULT_QUEUE, DEFAULT_SLOW};
use joblog_oplog::queue::Overflow;
use joblog_pipeline::LogLimits;
use joblog_store::SyncMode;

use super::declare::{settings, Range};
use super::value::{ByteSize, HostList, RoleMap, SinkList};

/// The engine's own defaults, so that a setting's default and the library's
/// are one value.
fn engine() -> EngineConfig {
    EngineConfig::new(String::new(), PathBuf::new())
}

settings! {
    /// Address the HTTP API and UI listen on. Any address but loopback
    /// needs an API token.
    listen: SocketAddr = SocketAddr::from(([127, 0, 0, 1], 7878)),
        key "listen", env "JOBLOG_LISTEN", flag Some("listen");
    /// Directory of the SQLite database and of jobs' result files. A
    /// relative path is taken from the working directory at start. One
    /// server at a time: it is locked (`joblog.lock` in it).
    data_dir: PathBuf = PathBuf::from("joblog-data"),
        key "data_dir", env "JOBLOG_DATA_DIR", flag Some("data-dir");
    /// Database URL: `sqlite:///path/joblog.db` or
    /// `postgres://user:password@host:5432/db`, with
    /// `?sslmode=verify-full&sslrootcert=ca.pem` for TLS (docs/cli.md).
    /// Default: the SQLite file `joblog.db` in the data directory.
    database: Option<String> = None,
        key "database", env "JOBLOG_DATABASE_URL", flag Some("database");
    /// Jobs run at once on this node.
    max_concurrency: usize = engine().max_concurrency,
        key "max_concurrency", env "JOBLOG_MAX_CONCURRENCY", flag Some("max-concurrency"),
            range Range::between(1, 10_000);
    /// This node's name, stored with the jobs it runs. Default:
    /// `hostname:port`, so that two nodes on one host differ. (A file may
    /// still say `node = "…"`, its key before `[node]` held labels.)
    node: Option<String> = None,
        key "node.name", env "JOBLOG_NODE", flag Some("node");
    /// This node's labels, `role=db,os=linux` (in the file also a table,
    /// `labels = { role = "db" }`): it takes only the jobs whose
    /// `node_selector` asks for labels it has, each with the same value.
    /// At most 16; keys and values of letters, digits, `.`, `_`, `-`.
    node_labels: Labels = Labels::default(),
        key "node.labels", env "JOBLOG_NODE_LABELS", flag Some("node-labels");
    /// Start paused (`--paused`): this node takes no job (it is drained)
    /// and no schedule fires on any node, until `joblog nodes undrain`
    /// and `joblog scheduler resume`. For a restored backup, a disaster
    /// drill, or reading an old copy's logs; the other nodes found in
    /// the database show as lapsed until they heartbeat.
    scheduler_paused_at_start: bool = false,
        key "scheduler.paused_at_start", env "JOBLOG_SCHEDULER_PAUSED_AT_START", flag Some("paused");
    /// With PostgreSQL: a node silent for this long is taken for dead and
    /// its running jobs become `interrupted`.
    heartbeat_timeout: Duration = engine().heartbeat_timeout,
        key "heartbeat_timeout", env "JOBLOG_HEARTBEAT_TIMEOUT", flag Some("heartbeat-timeout"),
            range Range::at_least(Duration::from_secs(1));
    /// Bootstrap API token (an admin, at least 32 characters): with it,
    /// every call but `/healthz` and `/openapi.json` needs
    /// `Authorization: Bearer <token>`. Prefer `token_file`: a flag shows
    /// in `ps`. The flag is the global `--token`.
    token: Option<String> = None,
        key "token", env "JOBLOG_TOKEN", flag None;
    /// File holding the bootstrap API token (its first line), instead of
    /// `token`. The flag is the global `--token-file`.
    token_file: Option<PathBuf> = None,
        key "token_file", env "JOBLOG_TOKEN_FILE", flag None;
    /// PEM file of the server's certificate (and chain): with `tls_key`,
    /// the API is served over HTTPS. Both are read again on SIGHUP.
    tls_cert: Option<PathBuf> = None,
        key "tls_cert", env "JOBLOG_TLS_CERT", flag Some("tls-cert");
    /// PEM file of the private key of `tls_cert`.
    tls_key: Option<PathBuf> = None,
        key "tls_key", env "JOBLOG_TLS_KEY", flag Some("tls-key");
    /// Host names the server answers to, besides IP addresses and
    /// `localhost` (comma-separated; `*` for any). A request naming
    /// another host is refused, which stops DNS-rebinding pages.
    allowed_hosts: HostList = HostList::default(),
        key "allowed_hosts", env "JOBLOG_ALLOWED_HOSTS", flag Some("allowed-hosts");
    /// SQLite durability: `normal` survives a crash of joblog, `full` also
    /// power loss.
    sync: SyncMode = SyncMode::default(),
        key "sync", env "JOBLOG_SYNC", flag Some("sync");
    /// Below this much free space on the data directory's disk, new jobs
    /// (submissions, reruns, runs of saved jobs) get `503 storage_full`
    /// before the disk is full, so the database and the server's own logs
    /// keep room for what runs. `0` turns the floor off.
    store_min_free_bytes: ByteSize = ByteSize(engine().min_free_bytes),
        key "store.min_free_bytes", env "JOBLOG_STORE_MIN_FREE_BYTES", flag Some("store-min-free-bytes");
    /// On SIGTERM/SIGINT, how long running jobs may go on before they are
    /// stopped.
    grace_period: Duration = Duration::from_secs(30),
        key "grace_period", env "JOBLOG_GRACE_PERIOD", flag Some("grace-period");
    /// Between SIGTERM and SIGKILL when a job is stopped (cancel, timeout,
    /// shutdown).
    kill_grace: Duration = engine().kill_grace,
        key "kill_grace", env "JOBLOG_KILL_GRACE", flag Some("kill-grace");
    /// Records kept per job; past it the first records, one marker and the
    /// last `log.tail_records` are kept, and the job shows `truncated`.
    log_max_records: u64 = LogLimits::default().max_records,
        key "log.max_records", env "JOBLOG_LOG_MAX_RECORDS", flag Some("log-max-records");
    /// Message bytes kept per job, capped like `log.max_records`.
    log_max_bytes: ByteSize = ByteSize(LogLimits::default().max_bytes),
        key "log.max_bytes", env "JOBLOG_LOG_MAX_BYTES", flag Some("log-max-bytes"),
            range Range::at_least(ByteSize(1024));
    /// Records kept from the end of a job's log once it is over its cap
    /// (fewer than `log.max_records`).
    log_tail_records: usize = LogLimits::default().tail_records,
        key "log.tail_records", env "JOBLOG_LOG_TAIL_RECORDS", flag Some("log-tail-records");
    /// Seal the log of each finished job: rewritten into compressed
    /// segments (docs/segments.md) that read exactly as the rows did, at a
    /// fraction of the size. `false` keeps new logs as rows; `joblog seal
    /// --all` seals them later either way.
    log_seal: bool = true,
        key "log.seal", env "JOBLOG_LOG_SEAL", flag Some("log-seal");
    /// A job's result (the `JOBLOG_RESULT` file) is stored up to this
    /// size, compressed; past it the job fails and its log says why.
    max_result: ByteSize = ByteSize(engine().max_result_bytes),
        key "max_result", env "JOBLOG_MAX_RESULT", flag Some("max-result"),
            range Range::at_least(ByteSize(1));
    /// Jobs that may wait in the queue (of all nodes, on PostgreSQL); a
    /// submission past it gets `429 queue_full` with `Retry-After`. The
    /// queue is counted when a count 250 ms old has admitted half the room
    /// it found, and before every refusal: submissions alone never pass
    /// it, but what schedules or other nodes queue in those 250 ms is seen
    /// at the next count.
    max_queued: u64 = engine().max_queued,
        key "max_queued", env "JOBLOG_MAX_QUEUED", flag Some("max-queued"),
            range Range::at_least(1);
    /// Run every job as this user (a name, with its group and supplementary
    /// groups) instead of the server's own: jobs then cannot read the
    /// database, the token file or the logs. The server must start as
    /// root or with CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SYS_PTRACE,
    /// and refuses to start if that user could read its files.
    jobs_run_as: Option<String> = None,
        key "jobs.run_as", env "JOBLOG_JOBS_RUN_AS", flag Some("run-as");
    /// Schedules that may exist (of all nodes, on PostgreSQL); creating one
    /// more gets `409 too_many_schedules`.
    max_schedules: u64 = engine().max_schedules,
        key "max_schedules", env "JOBLOG_MAX_SCHEDULES", flag Some("max-schedules"),
            range Range::at_least(1);
    /// Connections open at once; one more is answered `503
    /// too_many_connections` and closed.
    http_max_connections: usize = 1024,
        key "http.max_connections", env "JOBLOG_HTTP_MAX_CONNECTIONS", flag Some("http-max-connections"),
            // More than a process may have files open on a usual system;
            // a semaphore counts them, and panics past its (huge) maximum.
            range Range::between(1, 1_000_000);
    /// Connections one client address may hold at once; one more gets
    /// `503 too_many_connections`. Behind a proxy every client has the
    /// proxy's address: raise it there.
    http_max_connections_per_address: usize = 256,
        key "http.max_connections_per_address", env "JOBLOG_HTTP_MAX_CONNECTIONS_PER_ADDRESS", flag Some("http-max-connections-per-address"),
            range Range::at_least(1);
    /// Time a client has to send a request's headers, and that an idle
    /// keep-alive connection stays open; then it is closed.
    http_header_read_timeout: Duration = Duration::from_secs(10),
        key "http.header_read_timeout", env "JOBLOG_HTTP_HEADER_READ_TIMEOUT", flag Some("http-header-read-timeout"),
            range Range::at_least(Duration::from_secs(1));
    /// Request line and headers together; more gets `431`.
    http_max_header_bytes: ByteSize = ByteSize(16 << 10),
        key "http.max_header_bytes", env "JOBLOG_HTTP_MAX_HEADER_BYTES", flag Some("http-max-header-bytes"),
            range Range::at_least(ByteSize(8192));
    /// Path and query; longer gets `414 uri_too_long`.
    http_max_uri_bytes: ByteSize = ByteSize(Limits::default().max_uri_bytes as u64),
        key "http.max_uri_bytes", env "JOBLOG_HTTP_MAX_URI_BYTES", flag Some("http-max-uri-bytes"),
            range Range::at_least(ByteSize(256));
    /// Body of a job submission; other routes take at most 64KiB. More
    /// gets `413 body_too_large` (at once when `Content-Length` says so).
    http_max_body_bytes: ByteSize = ByteSize(Limits::default().max_body_bytes as u64),
        key "http.max_body_bytes", env "JOBLOG_HTTP_MAX_BODY_BYTES", flag Some("http-max-body-bytes"),
            range Range::at_least(ByteSize(1024));
    /// From a request's headers to its answer's (a live tail's or a text
    /// log's body streams on after; a backup is not bound by it); then
    /// `408 request_timeout`. Above the longest long poll (30s).
    http_request_timeout: Duration = Limits::default().request_timeout,
        key "http.request_timeout", env "JOBLOG_HTTP_REQUEST_TIMEOUT", flag Some("http-request-timeout"),
            range Range::more_than(Duration::from_secs(30));
    /// Live viewers (SSE log tails and job-list feeds) open at once on this
    /// node; one more gets `429 too_many_viewers`.
    http_max_viewers: usize = Limits::default().max_viewers,
        key "http.max_viewers", env "JOBLOG_HTTP_MAX_VIEWERS", flag Some("http-max-viewers"),
            range Range::at_least(1);
    /// Live-tail viewers of one job at once on this node.
    http_max_viewers_per_job: usize = Limits::default().max_viewers_per_job,
        key "http.max_viewers_per_job", env "JOBLOG_HTTP_MAX_VIEWERS_PER_JOB", flag Some("http-max-viewers-per-job"),
            range Range::at_least(1);
    /// Live viewers (log tails and job-list feeds) of one token at once on
    /// this node, or of one address for callers without a token; one more
    /// gets `429 too_many_viewers`.
    http_max_viewers_per_identity: usize = Limits::default().max_viewers_per_identity,
        key "http.max_viewers_per_identity", env "JOBLOG_HTTP_MAX_VIEWERS_PER_IDENTITY", flag Some("http-max-viewers-per-identity"),
            range Range::at_least(1);
    /// A signed-in person's session ends when unused this long (each
    /// request uses it; an open live view does not time out).
    auth_session_idle_timeout: Duration = SessionOptions::default().idle_timeout,
        key "auth.session_idle_timeout", env "JOBLOG_AUTH_SESSION_IDLE_TIMEOUT", flag Some("auth-session-idle-timeout"),
            range Range::at_least(Duration::from_secs(60));
    /// A signed-in person's session ends this long after they signed in,
    /// however busy: then they sign in again.
    auth_session_lifetime: Duration = SessionOptions::default().lifetime,
        key "auth.session_lifetime", env "JOBLOG_AUTH_SESSION_LIFETIME", flag Some("auth-session-lifetime"),
            range Range::between(Duration::from_secs(60), Duration::from_secs(31_557_600));
    /// Single sign-on: the OpenID provider's issuer URL
    /// (`https://login.example.com/realms/main`); its description is read
    /// from `<issuer>/.well-known/openid-configuration`. Needs
    /// `auth.oidc.client_id` and `http.public_url` (the provider sends
    /// people back to `<public_url>/api/v1/session/oidc/callback`).
    /// Unset: no single sign-on.
    auth_oidc_issuer: Option<String> = None,
        key "auth.oidc.issuer", env "JOBLOG_AUTH_OIDC_ISSUER", flag Some("auth-oidc-issuer");
    /// The client id joblog is registered with at the provider.
    auth_oidc_client_id: Option<String> = None,
        key "auth.oidc.client_id", env "JOBLOG_AUTH_OIDC_CLIENT_ID", flag Some("auth-oidc-client-id");
    /// The client's secret at the provider. A secret: set it in the
    /// environment (or a file closed to others), never as a flag. Unset:
    /// a public client, PKCE alone.
    auth_oidc_client_secret: Option<String> = None,
        key "auth.oidc.client_secret", env "JOBLOG_AUTH_OIDC_CLIENT_SECRET", flag None;
    /// Scopes asked for, separated by spaces or commas (`openid` is
    /// always asked). Add the one your provider needs for the role claim,
    /// often `groups`.
    auth_oidc_scopes: String = "openid profile email".to_string(),
        key "auth.oidc.scopes", env "JOBLOG_AUTH_OIDC_SCOPES", flag Some("auth-oidc-scopes");
    /// The claim whose values give a person's role (text or a list of
    /// texts; dots reach into objects: `realm_access.roles`). Read from
    /// the ID token, or the user info when the token lacks it.
    auth_oidc_role_claim: String = "groups".to_string(),
        key "auth.oidc.role_claim", env "JOBLOG_AUTH_OIDC_ROLE_CLAIM", flag Some("auth-oidc-role-claim");
    /// The role each value of the role claim gives:
    /// `ops=operator,joblog-admins=admin` (in the file a table,
    /// `roles = { ops = "operator" }`); the highest wins. A person none of
    /// whose values is here is refused, with a page saying so.
    auth_oidc_roles: RoleMap = RoleMap::default(),
        key "auth.oidc.roles", env "JOBLOG_AUTH_OIDC_ROLES", flag Some("auth-oidc-roles");
    /// The claim that is the person's joblog user name (letters, digits,
    /// `.`, `_`, `@`, `-`; at most 64).
    auth_oidc_name_claim: String = "preferred_username".to_string(),
        key "auth.oidc.name_claim", env "JOBLOG_AUTH_OIDC_NAME_CLAIM", flag Some("auth-oidc-name-claim");
    /// The sign-in page's button says "Sign in with" this.
    auth_oidc_label: String = "single sign-on".to_string(),
        key "auth.oidc.label", env "JOBLOG_AUTH_OIDC_LABEL", flag Some("auth-oidc-label");
    /// Where people open joblog (`https://joblog.example.com`): the link
    /// to the job in each notification. Unset: notifications carry no link.
    http_public_url: Option<String> = None,
        key "http.public_url", env "JOBLOG_HTTP_PUBLIC_URL", flag Some("http-public-url");
    /// How long a notification that could not be delivered (a timeout, a
    /// 5xx, a refused connection) is retried before it is given up.
    notify_retry_for: Duration = engine().notify.retry_for,
        key "notify.retry_for", env "JOBLOG_NOTIFY_RETRY_FOR", flag Some("notify-retry-for"),
            range Range::at_least(Duration::from_secs(1));
    /// The time one try of a notification may take (connect, send, answer).
    notify_timeout: Duration = engine().notify.timeout,
        key "notify.timeout", env "JOBLOG_NOTIFY_TIMEOUT", flag Some("notify-timeout"),
            range Range::between(Duration::from_secs(1), Duration::from_secs(120));
    /// Let notifications reach loopback, private, link-local and shared
    /// addresses (a receiver on this host or this network). Off, a rule
    /// whose URL points there is refused when saved and at every send.
    notify_allow_private_targets: bool = engine().notify.allow_private_targets,
        key "notify.allow_private_targets", env "JOBLOG_NOTIFY_ALLOW_PRIVATE_TARGETS", flag Some("notify-allow-private-targets");
    /// The SMTP server e-mail notifications go through:
    /// `smtps://user:password@smtp.example.com:465` (TLS),
    /// `smtp://user:password@host:587?tls=required` (STARTTLS) or
    /// `smtp://host:25` (plain, for a relay on this host). A secret: set it
    /// in the environment or the file, never as a flag. Unset: e-mail rules
    /// are refused.
    notify_smtp_url: Option<String> = None,
        key "notify.smtp_url", env "JOBLOG_NOTIFY_SMTP_URL", flag None;
    /// The address e-mail notifications come from. Default:
    /// `joblog@<hostname>`.
    notify_smtp_from: Option<String> = None,
        key "notify.smtp_from", env "JOBLOG_NOTIFY_SMTP_FROM", flag Some("notify-smtp-from");
    /// Job names `/metrics` gives per-name figures of (last success, last
    /// failure, finished jobs by state): the most recently finished ones;
    /// the rest are summed under `name="(other)"`.
    metrics_max_job_names: usize = joblog_api::DEFAULT_MAX_JOB_NAMES,
        key "metrics.max_job_names", env "JOBLOG_METRICS_MAX_JOB_NAMES", flag Some("metrics-max-job-names"),
            // Each name costs a few series; a scrape of millions of
            // series is no use to anyone.
            range Range::at_most(100_000);
    /// Periodic retention: delete finished jobs older than this (with
    /// `retention.keep_per_name`, only those beyond the newest N of their
    /// name). Retention is off unless this or `keep_per_name` is set.
    retention_older_than: Option<Duration> = None,
        key "retention.older_than", env "JOBLOG_RETENTION_OLDER_THAN", flag Some("retention-older-than");
    /// Periodic retention: keep the newest N finished jobs of each name.
    retention_keep_per_name: Option<u32> = None,
        key "retention.keep_per_name", env "JOBLOG_RETENTION_KEEP_PER_NAME", flag Some("retention-keep-per-name");
    /// How often periodic retention runs.
    retention_every: Duration = Duration::from_secs(3600),
        key "retention.every", env "JOBLOG_RETENTION_EVERY", flag Some("retention-every"),
            range Range::at_least(Duration::from_secs(1));
    /// Audit entries older than this are deleted, at each retention round
    /// (whether or not jobs are); `0s` keeps them for ever.
    retention_audit: Duration = Duration::from_secs(365 * 24 * 3600),
        key "retention.audit", env "JOBLOG_RETENTION_AUDIT", flag Some("retention-audit");
    /// Directory of the server's own log files (access, audit, error and
    /// slow logs; docs/logging.md). Default: `logs` in the data directory.
    logging_dir: Option<PathBuf> = None,
        key "logging.dir", env "JOBLOG_LOGGING_DIR", flag Some("logging-dir");
    /// API requests slower than this to answer go to the slow log, with
    /// everything logged while they ran. Reloaded on SIGHUP.
    logging_slow_threshold: Duration = DEFAULT_SLOW,
        key "logging.slow_threshold", env "JOBLOG_LOGGING_SLOW_THRESHOLD", flag Some("logging-slow-threshold");
    /// Entries each log sink's queue holds (a sink can set its own `queue`).
    logging_queue: usize = DEFAULT_QUEUE,
        key "logging.queue", env "JOBLOG_LOGGING_QUEUE", flag Some("logging-queue");
    /// What a full log sink queue does: `block` (nothing is lost; requests
    /// wait for the sink) or `drop_newest` (nothing waits; drops are
    /// counted in `/metrics` and reported in the error log).
    logging_overflow: Overflow = Overflow::Block,
        key "logging.overflow", env "JOBLOG_LOGGING_OVERFLOW", flag Some("logging-overflow");
    /// The log sinks, as `[[logging.sinks]]` tables in the file (a JSON
    /// array in the environment): kind, logs, and each kind's settings
    /// (docs/logging.md). Default: the files access.log, audit.log,
    /// error.log and slow.log, warnings and errors on stderr, the audit
    /// log in the database. Reloaded on SIGHUP.
    logging_sinks: SinkList = SinkList(None),
        key "logging.sinks", env "JOBLOG_LOGGING_SINKS", flag None;
}
