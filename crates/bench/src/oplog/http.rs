//! The HTTP half of `bench oplog`: one `joblog serve` per logging setup,
//! all started at once and loaded in turn (rounds alternate the order, so
//! machine noise falls on every setup alike), each round timing requests
//! per second and the server's CPU time per request; at the end, the
//! logging server's own counters say whether every request was logged.

use std::time::{Duration, Instant};

use anyhow::anyhow;
use tokio::signal::unix::Signal;

use super::load::{LoadGen, Sent, Target};
use super::scrape::LogCounters;
use crate::psu::run_job;
use crate::server::{start_server, SpawnedServer};
use crate::BenchArgs;
use joblog_client::Api;

/// One way the server under test logs.
pub(super) struct Setup {
    /// Short name, first column of the report.
    pub(super) label: &'static str,
    /// How it is set, for the report.
    pub(super) how: &'static str,
    /// `JOBLOG_LOGGING_SINKS`, or none for the default sinks.
    sinks: Option<&'static str>,
}

/// The setups: the one the budget is about (logging on), then its
/// reference (off). Units are captured either way (`JOBLOG_LOG` filters
/// diagnostics only), so off is as off as configuration can make it.
pub(super) const SETUPS: [Setup; 2] = [
    Setup {
        label: "on",
        how: "the default sinks: access, audit, error and slow files, stderr, the database",
        sinks: None,
    },
    Setup {
        label: "off",
        how: "`JOBLOG_LOGGING_SINKS='[]'`: units captured and routed, no sink",
        sinks: Some("[]"),
    },
];

/// The server's log setup must be the bench's, not whatever this shell
/// exports; `JOBLOG_LOG` is its default, `info`, on both.
fn environment(setup: &Setup, inherited: &[String]) -> Vec<(String, Option<String>)> {
    let mut env: Vec<(String, Option<String>)> = inherited
        .iter()
        .filter(|name| name.starts_with("JOBLOG_LOGGING_"))
        .map(|name| (name.clone(), None))
        .collect();
    env.push(("JOBLOG_LOG".into(), Some("info".into())));
    if let Some(sinks) = setup.sinks {
        env.retain(|(name, _)| name != "JOBLOG_LOGGING_SINKS");
        env.push(("JOBLOG_LOGGING_SINKS".into(), Some(sinks.into())));
    }
    env
}

/// One round of load on one setup's server.
#[derive(Debug, Clone)]
pub(super) struct Round {
    pub(super) setup: usize,
    pub(super) sent: Sent,
    /// CPU time the server used meanwhile.
    pub(super) server_cpu: Option<Duration>,
}

/// What the logging server's counters said once its queues were empty.
#[derive(Debug, Clone, Copy)]
pub(super) struct AccessCheck {
    /// Requests the load sent it (warm-up and rounds, answered or not).
    pub(super) requests: u64,
    pub(super) counters: LogCounters,
}

impl AccessCheck {
    /// Every request the load sent has its access line, and no sink
    /// dropped or lost anything.
    pub(super) fn complete(&self) -> bool {
        self.counters.written >= self.requests
            && self.counters.dropped == 0
            && self.counters.lost == 0
    }
}

#[derive(Debug, Default)]
pub(super) struct HttpFigures {
    pub(super) rounds: Vec<Round>,
    pub(super) access: Option<AccessCheck>,
    /// Why the rounds stopped early, if they did.
    pub(super) stopped: Option<String>,
    /// They stopped for Ctrl-C.
    pub(super) interrupted: bool,
}

/// The error a Ctrl-C makes of the work under way.
#[derive(Debug)]
struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (Ctrl-C)")
    }
}

impl std::error::Error for Interrupted {}

struct Loaded {
    server: SpawnedServer,
    /// For the bench's own calls: the job, `/metrics`.
    api: Api,
    target: Target,
    requests: u64,
}

/// Starts the servers, measures, stops them. An error before any round
/// is measured is returned; later ones end the rounds and are noted.
pub(super) async fn measure(
    args: &BenchArgs,
    load: &LoadGen,
    sigint: &mut Signal,
) -> anyhow::Result<HttpFigures> {
    let mut servers: Vec<Loaded> = Vec::new();
    let mut figures = HttpFigures::default();
    let outcome = run(args, load, &mut servers, &mut figures, sigint).await;
    for s in servers {
        s.server.stop().await;
    }
    match outcome {
        Ok(()) => Ok(figures),
        Err(e) if figures.rounds.is_empty() => Err(e),
        Err(e) => {
            figures.interrupted = e.is::<Interrupted>();
            figures.stopped = Some(format!("{e:#}"));
            Ok(figures)
        }
    }
}

async fn run(
    args: &BenchArgs,
    load: &LoadGen,
    servers: &mut Vec<Loaded>,
    figures: &mut HttpFigures,
    sigint: &mut Signal,
) -> anyhow::Result<()> {
    let inherited: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    for setup in &SETUPS {
        eprintln!("bench: starting a joblog server, logging {}", setup.label);
        let env = environment(setup, &inherited);
        let env: Vec<(&str, Option<&str>)> = env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        let server = start_server(args, None, &[], &env, None, sigint).await?;
        let api = Api::new(&server.url, None)?;
        let job = tokio::select! {
            j = run_job(&api, "true", args.job_timeout) => j,
            _ = sigint.recv() => Err(Interrupted.into()),
        };
        let job = match job {
            Ok(j) => j,
            Err(e) => {
                server.stop().await;
                return Err(e);
            }
        };
        let url = api.url(&format!("/api/v1/jobs/{}", job.id), &[])?;
        // Its own client, so every load connection is opened (and driven)
        // by the load generator's runtime.
        let target = Target::new(url)?;
        servers.push(Loaded {
            server,
            api,
            target,
            requests: 0,
        });
    }
    let warm_up = args.duration.min(Duration::from_secs(2));
    for (s, setup) in servers.iter_mut().zip(&SETUPS) {
        eprintln!(
            "bench: warming up logging {} for {:.1} s",
            setup.label,
            warm_up.as_secs_f64()
        );
        let sent = interruptible(load.run(&s.target, warm_up), sigint).await?;
        s.requests += sent.ok + sent.failed;
    }
    for round in 1..=args.runs {
        for setup in order(round, SETUPS.len()) {
            let s = &mut servers[setup];
            let cpu = s.server.cpu_time();
            let sent = interruptible(load.run(&s.target, args.duration), sigint).await?;
            let server_cpu = match (cpu, s.server.cpu_time()) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            };
            s.requests += sent.ok + sent.failed;
            eprintln!(
                "bench: round {round} of {}, logging {}: {:.0} requests/s{}",
                args.runs,
                SETUPS[setup].label,
                sent.per_second(),
                if sent.failed > 0 {
                    format!(", {} failed", sent.failed)
                } else {
                    String::new()
                }
            );
            figures.rounds.push(Round {
                setup,
                sent,
                server_cpu,
            });
        }
    }
    let on = &servers[0];
    figures.access = Some(AccessCheck {
        requests: on.requests,
        counters: interruptible(settled_counters(&on.api), sigint).await?,
    });
    Ok(())
}

async fn interruptible<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
    sigint: &mut Signal,
) -> anyhow::Result<T> {
    tokio::select! {
        r = work => r,
        _ = sigint.recv() => Err(Interrupted.into()),
    }
}

/// The setups in round `round`'s order: each round starts one further
/// along, so every setup takes every place in turn.
pub(super) fn order(round: u32, setups: usize) -> Vec<usize> {
    (0..setups)
        .map(|k| (k + round as usize - 1) % setups)
        .collect()
}

/// The logging server's counters once its queues are empty and its
/// access count has stopped moving (at most 30 s).
async fn settled_counters(api: &Api) -> anyhow::Result<LogCounters> {
    let url = api.url("/metrics", &[])?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last: Option<LogCounters> = None;
    loop {
        let body = api.get_raw(url.clone(), Duration::from_secs(10)).await?;
        let text = String::from_utf8_lossy(&body);
        let now = LogCounters::read(&text, "access")
            .ok_or_else(|| anyhow!("the logging server's /metrics has no access sink"))?;
        // Each scrape is a request too, logged once it is answered: the
        // count may move by that one line.
        let still = last.is_some_and(|l| now.written <= l.written + 1);
        if (now.queued == 0 && still) || Instant::now() > deadline {
            return Ok(now);
        }
        last = Some(now);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_rotate_the_order() {
        assert_eq!(order(1, 3), [0, 1, 2]);
        assert_eq!(order(2, 3), [1, 2, 0]);
        assert_eq!(order(3, 3), [2, 0, 1]);
        assert_eq!(order(4, 3), [0, 1, 2]);
        assert_eq!(order(1, 2), [0, 1]);
        assert_eq!(order(2, 2), [1, 0]);
    }

    #[test]
    fn the_environment_is_the_setups_whatever_the_shell_exports() {
        let inherited = [
            "PATH".to_string(),
            "JOBLOG_LOGGING_SINKS".to_string(),
            "JOBLOG_LOGGING_DIR".to_string(),
            "JOBLOG_LOG".to_string(),
        ];
        let on = environment(&SETUPS[0], &inherited);
        assert!(
            on.contains(&("JOBLOG_LOGGING_SINKS".into(), None)),
            "{on:?}"
        );
        assert!(on.contains(&("JOBLOG_LOGGING_DIR".into(), None)), "{on:?}");
        assert!(
            on.contains(&("JOBLOG_LOG".into(), Some("info".into()))),
            "{on:?}"
        );
        assert!(!on.iter().any(|(k, _)| k == "PATH"), "{on:?}");
        let off = environment(&SETUPS[1], &inherited);
        let sinks: Vec<_> = off
            .iter()
            .filter(|(k, _)| k == "JOBLOG_LOGGING_SINKS")
            .collect();
        assert_eq!(sinks, [&("JOBLOG_LOGGING_SINKS".into(), Some("[]".into()))]);
        assert!(
            off.contains(&("JOBLOG_LOG".into(), Some("info".into()))),
            "{off:?}"
        );
    }

    #[test]
    fn the_access_log_is_complete_only_with_a_line_per_request_and_nothing_lost() {
        let check = |written, dropped, lost| AccessCheck {
            requests: 100,
            counters: LogCounters {
                written,
                dropped,
                lost,
                queued: 0,
            },
        };
        assert!(check(104, 0, 0).complete());
        assert!(!check(99, 0, 0).complete());
        assert!(!check(104, 1, 0).complete());
        assert!(!check(104, 0, 1).complete());
    }
}
