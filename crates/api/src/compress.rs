//! Response compression: gzip, br or zstd, as the client's
//! `Accept-Encoding` asks (a page of a log is mostly repeated text).
//!
//! Among encodings the client weighs alike, the cheapest to make wins:
//! zstd, then gzip; brotli only when nothing cheaper is offered as
//! highly. A 1000-line page took 1.27 ms with brotli against 0.74 with
//! zstd and 0.88 with gzip (docs/benchmarks.md), for about the same size,
//! and brotli's first answer keeps ~18 MiB of encoder memory.
//!
//! Not compressed: event streams (an encoder holds bytes back until its
//! buffer fills, so a live event would wait for the next ones) and
//! backups (a SQLite file is sent with its length, which the client
//! checks, and is read back by tools that expect the file as it is).

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use tower_http::compression::predicate::{DefaultPredicate, NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use crate::handlers::backup::CONTENT_TYPE as BACKUP;

/// The layer `app()` wraps every route in.
pub(crate) fn layer() -> CompressionLayer<impl Predicate> {
    // tower-http's default predicate leaves out event streams, images,
    // gRPC and bodies under 32 bytes.
    let predicate = DefaultPredicate::new().and(NotForContentType::const_new(BACKUP));
    CompressionLayer::new()
        .gzip(true)
        .br(true)
        .zstd(true)
        // Brotli's own default (11) is meant for files compressed once and
        // costs seconds per megabyte; 4 compresses a page of log about as
        // well as gzip's default, faster, and suits gzip and zstd as well.
        .quality(CompressionLevel::Precise(4))
        .compress_when(predicate)
}

/// Takes `br` out of the request's `Accept-Encoding` when zstd or gzip
/// is offered at least as highly (the layer would otherwise prefer it).
pub(crate) async fn prefer_cheaper(mut request: Request) -> Request {
    let asked = request
        .headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok());
    if let Some(cheaper) = asked.and_then(without_costly_br) {
        if let Ok(value) = HeaderValue::from_str(&cheaper) {
            request.headers_mut().insert(header::ACCEPT_ENCODING, value);
        }
    }
    request
}

/// `asked` without its `br` entries, when zstd or gzip has a weight at
/// least br's; `None` when it stays as it is.
fn without_costly_br(asked: &str) -> Option<String> {
    let entries: Vec<(&str, &str, u16)> = asked
        .split(',')
        .map(|entry| {
            let mut parts = entry.splitn(2, ';');
            let name = parts.next().unwrap_or("").trim();
            let weight = parts.next().map_or(1000, |q| q_value(q.trim()));
            (entry, name, weight)
        })
        .collect();
    let weight_of = |wanted: &[&str]| {
        entries
            .iter()
            .filter(|(_, name, _)| wanted.iter().any(|w| name.eq_ignore_ascii_case(w)))
            .map(|(_, _, q)| *q)
            .max()
    };
    let br = weight_of(&["br"]).filter(|q| *q > 0)?;
    let cheaper = weight_of(&["zstd", "gzip"]).filter(|q| *q > 0)?;
    (cheaper >= br).then(|| {
        entries
            .iter()
            .filter(|(_, name, _)| !name.eq_ignore_ascii_case("br"))
            .map(|(entry, _, _)| entry.trim())
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// A `q=` weight in thousandths (1000 = 1); one that does not parse
/// weighs nothing, as the compression layer takes it.
fn q_value(param: &str) -> u16 {
    param
        .strip_prefix("q=")
        .or_else(|| param.strip_prefix("Q="))
        .and_then(|q| q.trim().parse::<f32>().ok())
        .filter(|q| (0.0..=1.0).contains(q))
        .map_or(0, |q| (q * 1000.0).round() as u16)
}

#[cfg(test)]
mod tests {
    use super::without_costly_br;

    #[test]
    fn brotli_only_when_nothing_cheaper_is_offered_as_highly() {
        assert_eq!(without_costly_br("gzip, br").as_deref(), Some("gzip"));
        assert_eq!(
            without_costly_br("deflate, gzip, br, zstd").as_deref(),
            Some("deflate, gzip, zstd")
        );
        assert_eq!(
            without_costly_br("br;q=0.8, gzip;q=0.8").as_deref(),
            Some("gzip;q=0.8")
        );
        // The client's stronger wish for br stands.
        assert_eq!(without_costly_br("br, gzip;q=0.5"), None);
        assert_eq!(without_costly_br("br"), None);
        assert_eq!(without_costly_br("br, gzip;q=0"), None);
        assert_eq!(without_costly_br("gzip, zstd"), None);
        assert_eq!(without_costly_br("identity"), None);
        assert_eq!(without_costly_br("br;q=0, gzip"), None);
    }
}
