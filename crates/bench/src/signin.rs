//! `joblog bench signin`: people signing in, on a server of the bench's
//! own. One at a time (the latency a person waits, dominated by the
//! password's Argon2id hash), then many at once (how the server's two
//! hashes at a time share out, and sign-ins per second); and a signed-in
//! request beside the same request with a token (what the session's
//! lookup costs).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::json;

use super::chart::{Bar, Chart};
use super::output::Report;
use super::server::on_own_server;
use super::stats::{fmt_ms, median, percentile};
use super::BenchArgs;

/// Budget of docs/benchmarks.md, ms: one sign-in's p99 on an idle server.
const BUDGET_P99: f64 = 250.0;
/// Sign-ins sent at once in the second part.
const AT_ONCE: usize = 8;
const PASSWORD: &str = "bench password, long enough";

/// The figures, ms.
#[derive(serde::Serialize)]
struct Figures {
    alone: Vec<f64>,
    at_once: Vec<f64>,
    at_once_wall: f64,
    read_by_session: Vec<f64>,
    read_by_token: Vec<f64>,
}

pub(super) async fn run(args: BenchArgs) -> anyhow::Result<Report> {
    let date = super::now_rfc3339();
    let figures = on_own_server(&args, "signin", &[], async |server| {
        measure(&args, &server.url).await
    })
    .await?;
    Ok(report(&args, &date, &super::command_line(), &figures))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One sign-in of `name`; its cookie (`joblog_session=…`).
async fn sign_in(http: &reqwest::Client, url: &str, name: &str) -> anyhow::Result<String> {
    let reply = http
        .post(format!("{url}/api/v1/session"))
        .json(&json!({"name": name, "password": PASSWORD}))
        .send()
        .await?;
    if !reply.status().is_success() {
        bail!(
            "signing {name} in: {} {}",
            reply.status(),
            reply.text().await?
        );
    }
    let cookie = reply
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|c| c.split(';').next())
        .context("a sign-in without a cookie")?;
    Ok(cookie.to_string())
}

async fn measure(args: &BenchArgs, url: &str) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    // The bench's server needs no token (loopback): users are made as
    // its anonymous admin, one per concurrent sign-in so that none is
    // held by another's failures (there are none) or counted twice.
    for i in 0..AT_ONCE {
        let body = json!({"name": format!("bench-{i}"), "password": PASSWORD, "role": "viewer"});
        http.post(format!("{url}/api/v1/users"))
            .json(&body)
            .send()
            .await?
            .error_for_status()
            .context("creating the bench's users")?;
    }
    let rounds = (args.runs as usize * 20).max(20);
    let mut alone = Vec::with_capacity(rounds);
    sign_in(&http, url, "bench-0").await?;
    for _ in 0..rounds {
        let t = Instant::now();
        sign_in(&http, url, "bench-0").await?;
        alone.push(ms(t.elapsed()));
    }
    let mut at_once = Vec::new();
    let wall = Instant::now();
    for _ in 0..(rounds / AT_ONCE).max(2) {
        let tries = (0..AT_ONCE).map(|i| {
            let http = http.clone();
            async move {
                let t = Instant::now();
                sign_in(&http, url, &format!("bench-{i}")).await?;
                anyhow::Ok(ms(t.elapsed()))
            }
        });
        for r in futures_util::future::join_all(tries).await {
            at_once.push(r?);
        }
    }
    let at_once_wall = ms(wall.elapsed());
    // A read signed in against the same read with a token: the cost of a
    // session's lookup (its user joined) beside a token's.
    let cookie = sign_in(&http, url, "bench-1").await?;
    let token: serde_json::Value = http
        .post(format!("{url}/api/v1/tokens"))
        .json(&json!({"name": "bench-reader", "role": "viewer"}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = token["token"].as_str().context("a token")?.to_string();
    let whoami = format!("{url}/api/v1/whoami");
    let (mut by_session, mut by_token) = (Vec::new(), Vec::new());
    for _ in 0..rounds * 5 {
        let t = Instant::now();
        http.get(&whoami)
            .header(reqwest::header::COOKIE, &cookie)
            .send()
            .await?
            .error_for_status()?;
        by_session.push(ms(t.elapsed()));
        let t = Instant::now();
        http.get(&whoami)
            .bearer_auth(&token)
            .send()
            .await?
            .error_for_status()?;
        by_token.push(ms(t.elapsed()));
    }
    Ok(Figures {
        alone,
        at_once,
        at_once_wall,
        read_by_session: by_session,
        read_by_token: by_token,
    })
}

fn report(args: &BenchArgs, date: &str, command: &str, f: &Figures) -> Report {
    let store = args.store_name();
    let per_second = f.at_once.len() as f64 / (f.at_once_wall / 1e3);
    let mut out = String::new();
    let _ = writeln!(out, "## joblog bench signin\n");
    let _ = writeln!(out, "Date: {date}  ");
    let _ = writeln!(out, "Command: `{command}`  ");
    let _ = writeln!(
        out,
        "Store: {store}. Passwords hashed with Argon2id, memory 19 MiB, 2 passes, 1 lane; \
         at most 2 hashes at once per node. {} sign-ins one at a time, then {} in rounds of {AT_ONCE} at once; \
         then {} reads of `GET /api/v1/whoami` signed in and as many with a token.\n",
        f.alone.len(),
        f.at_once.len(),
        f.read_by_session.len()
    );
    let _ = writeln!(out, "| Figure | median (ms) | p99 (ms) | max (ms) |");
    let _ = writeln!(out, "|---|---:|---:|---:|");
    for (name, v) in [
        ("sign-in, one at a time", &f.alone),
        ("sign-in, 8 at once", &f.at_once),
        ("a read, signed in (cookie)", &f.read_by_session),
        ("a read, with a token", &f.read_by_token),
    ] {
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} |",
            fmt_ms(median(v)),
            fmt_ms(percentile(v, 99.0)),
            fmt_ms(percentile(v, 100.0))
        );
    }
    let p99 = percentile(&f.alone, 99.0);
    let met = p99.is_some_and(|p| p <= BUDGET_P99);
    let _ = writeln!(
        out,
        "\nSign-ins per second, 8 at once: {per_second:.1}. Budget: one sign-in's p99 ≤ {BUDGET_P99} ms{}.",
        if met { " (met)" } else { " — **missed**" }
    );
    let figures = serde_json::json!({
        "store": store,
        "argon2": {"memory_kib": 19 * 1024, "passes": 2, "lanes": 1},
        "runs_ms": f,
        "p99_ms": {"alone": p99, "at_once": percentile(&f.at_once, 99.0)},
        "sign_ins_per_second": per_second,
        "budget_p99_ms": BUDGET_P99,
    });
    let bar = |label: &str, value: Option<f64>, reference: bool| Bar {
        label: label.into(),
        value: value.unwrap_or(f64::NAN),
        reference,
    };
    let chart = Chart::Bars {
        title: format!("signin: one sign-in's latency ({store})"),
        unit: "milliseconds (grey: budget)".into(),
        bars: vec![
            bar("median, one at a time", median(&f.alone), false),
            bar("p99, one at a time", p99, false),
            bar("p99, 8 at once", percentile(&f.at_once, 99.0), false),
            bar("budget: p99", Some(BUDGET_P99), true),
        ],
    };
    Report::new(out, figures).chart("", chart)
}
