//! `joblog health`: the server's own verdict (`GET /healthz`), for health
//! checks of containers and services. It needs no token, and its exit
//! code is the answer: 0 healthy, 1 not (or not reachable).

use std::time::Duration;

use super::api::Api;
use super::args::HealthArgs;
use super::commands::Answer;
use super::wire::HealthView;

/// A health check must answer sooner than the checker gives up.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The answer, and whether the server is healthy.
pub(super) async fn run(api: &Api, a: HealthArgs) -> anyhow::Result<(Answer, bool)> {
    let (status, raw) = api.get_any(api.url("/healthz", &[])?, TIMEOUT).await?;
    // 200 and 503 carry the same document; anything else is no verdict.
    if status != reqwest::StatusCode::OK && status != reqwest::StatusCode::SERVICE_UNAVAILABLE {
        anyhow::bail!(
            "{} answered /healthz with HTTP {status}: is it a joblog server?",
            api.shown()
        );
    }
    let view: HealthView = api.decode(&raw)?;
    let healthy = status == reqwest::StatusCode::OK && view.status == "ok";
    let answer = if a.json {
        Answer::Raw(raw)
    } else {
        Answer::Health(view)
    };
    Ok((answer, healthy))
}
