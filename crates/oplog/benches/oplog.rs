//! What the server's own logging costs per request off the request path:
//! routing a finished request unit into its entries (the router thread)
//! and formatting its access line (a file sink's thread). `bench oplog`
//! measures the whole server; this isolates the part joblog writes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use joblog_oplog::format::write_line;
use joblog_oplog::route::{entries, RouteOptions};
use joblog_oplog::{Format, LogSet, Unit, UnitKind, Value, UNIT_FIELD};

/// A request unit as `crates/api/src/access.rs` fills it for
/// `GET /api/v1/jobs/{id}`.
fn request() -> Unit {
    let mut unit = Unit::new(UnitKind::Request)
        .with(UNIT_FIELD, Value::Str("request".into()))
        .with("request_id", Value::Str("01JDX3V7Q4M2K8Y6".into()))
        .with("method", Value::Str("GET".into()))
        .with("path", Value::Str("/api/v1/jobs/7".into()))
        .with("remote", Value::Str("127.0.0.1:52344".into()))
        .with("route", Value::Str("/api/v1/jobs/{id}".into()))
        .with("actor", Value::Str("ci".into()))
        .with("job_id", Value::U64(7))
        .with("status", Value::U64(200))
        .with("headers_us", Value::U64(412))
        .with("bytes", Value::U64(733));
    unit.duration = Duration::from_micros(431);
    unit
}

fn bench(c: &mut Criterion) {
    let unit = std::sync::Arc::new(request());
    let options = RouteOptions {
        slow_threshold: Duration::from_secs(1),
        node: "node-1".into(),
        wanted: LogSet::ALL,
    };
    c.bench_function("route a request unit", |b| {
        b.iter(|| entries(black_box(&unit), &options))
    });
    let access = entries(&unit, &options).remove(0);
    let mut out = Vec::with_capacity(1024);
    c.bench_function("format its access line as JSON", |b| {
        b.iter(|| {
            out.clear();
            write_line(black_box(&access), Format::Json, &mut out);
        })
    });
    c.bench_function("route and format, end to end", |b| {
        b.iter(|| {
            out.clear();
            for entry in entries(black_box(&unit), &options) {
                write_line(&entry, Format::Json, &mut out);
            }
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
