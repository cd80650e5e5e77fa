//! Property tests of query parameters: arbitrary query strings through the
//! real extractor ([`QueryParams`]) into each route's own parameters,
//! checked as its handler checks them. Each property says its invariant
//! above it; each runs a few thousand generated cases (`PROPTEST_CASES`
//! overrides).

use axum::extract::FromRequestParts;
use axum::http::{Request, StatusCode, Uri};
use futures_util::FutureExt;
use joblog_core::{JobQuery, JobState, NameFilter, Stream, Timestamp};
use proptest::prelude::*;
use serde::de::DeserializeOwned;

use super::QueryParams;
use crate::error::{ApiError, ErrorCode};
use crate::handlers::audit::AuditParams;
use crate::handlers::jobs::listing::ListParams;
use crate::handlers::log::navigation::{SearchParams, SearchRequest};
use crate::handlers::log::tail::EventsParams;
use crate::handlers::log::{parse_streams, LogParams, LogRequest, TextParams};

/// The real extractor on a request for `/x?{query}`.
fn extract<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let request = Request::get(format!("/x?{query}")).body(()).unwrap();
    let (mut parts, ()) = request.into_parts();
    QueryParams::<T>::from_request_parts(&mut parts, &())
        .now_or_never()
        .expect("the extractor never waits")
        .map(|QueryParams(p)| p)
}

/// The time the listing's `since` and `until` are read against.
const NOW: Timestamp = Timestamp(1_795_342_502_123_456);

/// What each route makes of a query, as its handler reads it.
fn list(q: &str) -> Result<JobQuery, ApiError> {
    extract::<ListParams>(q)?.query(NOW)
}
fn log(q: &str) -> Result<LogRequest, ApiError> {
    extract::<LogParams>(q)?.request()
}
type Text = (Option<Vec<Stream>>, Option<bool>, Option<bool>);
fn text(q: &str) -> Result<Text, ApiError> {
    let p = extract::<TextParams>(q)?;
    Ok((parse_streams(p.streams.as_deref())?, p.timestamps, p.escape))
}
fn events(q: &str) -> Result<(Option<u64>, Option<Vec<Stream>>), ApiError> {
    let p = extract::<EventsParams>(q)?;
    Ok((p.after_seq, parse_streams(p.streams.as_deref())?))
}
fn search(q: &str) -> Result<SearchRequest, ApiError> {
    extract::<SearchParams>(q)?.request()
}
fn audit(q: &str) -> Result<joblog_core::AuditQuery, ApiError> {
    extract::<AuditParams>(q)?.query()
}

/// The keys of a query, decoded as the extractor decodes them.
fn keys(query: &str) -> Vec<String> {
    let uri: Uri = format!("/x?{query}").parse().unwrap();
    let axum::extract::Query(pairs) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri).unwrap();
    pairs.into_iter().map(|(k, _)| k).collect()
}

/// How a client percent-encodes: only what it must, every byte, or also
/// spaces as `+`.
#[derive(Debug, Clone, Copy)]
enum Enc {
    Minimal,
    Every,
    Plus,
}

fn encoding() -> impl Strategy<Value = Enc> {
    prop_oneof![Just(Enc::Minimal), Just(Enc::Every), Just(Enc::Plus)]
}

fn enc(bytes: &[u8], how: Enc) -> String {
    let mut out = String::new();
    for &b in bytes {
        match (how, b) {
            (Enc::Plus, b' ') => out.push('+'),
            (Enc::Minimal | Enc::Plus, b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9')
            | (Enc::Minimal | Enc::Plus, b'-' | b'.' | b'_' | b'~' | b',' | b':' | b'/') => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

const PARAMS: [&str; 19] = [
    "after_seq",
    "before_seq",
    "q",
    "limit",
    "streams",
    "wait_ms",
    "state",
    "name",
    "node",
    "since",
    "until",
    "before_id",
    "timestamps",
    "escape",
    "after",
    "before",
    "actor",
    "action",
    "job_id",
];

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        6 => prop::sample::select(&PARAMS[..]).prop_map(|k| k.as_bytes().to_vec()),
        1 => "[A-Za-z_]{0,10}".prop_map(String::into_bytes),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ]
}

fn value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (0u32..20_000).prop_map(|n| n.to_string()),
        "[+-]?[0-9]{18,40}(\\.[0-9]+)?",
        Just(String::new()),
        prop::sample::select(&JobState::ALL[..]).prop_map(|s| s.name().to_string()),
        "[a-z_ ]{0,12}(,[a-z_ ]{0,12}){0,3}",
        "[0-9]{1,12}(ms|s|m|h|d|y|)",
        "[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})?)?",
        "true|false|TRUE|1|yes|yesterday",
        any::<String>(),
    ]
    .prop_map(String::into_bytes)
}

/// One piece of a raw query.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (key(), value(), encoding(), encoding())
            .prop_map(|(k, v, ek, ev)| format!("{}={}", enc(&k, ek), enc(&v, ev))),
        1 => (key(), encoding()).prop_map(|(k, e)| enc(&k, e)),
        1 => prop::sample::select(&["", "=", "==", "%", "%zz", "%4", "+", "&"][..])
            .prop_map(str::to_string),
    ]
}

fn raw_query() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..6).prop_map(|p| p.join("&"))
}

/// An error of a query: `400 invalid_query`, its message naming one of
/// the query's keys (`key:`, or `` `key` `` when unknown or repeated) or
/// the query itself.
fn check_error(e: &ApiError, query: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(e.code, ErrorCode::InvalidQuery, "{}", e.message);
    prop_assert_eq!(e.code.status(), StatusCode::BAD_REQUEST);
    let keys = keys(query);
    let named = keys
        .iter()
        .any(|k| e.message.contains(&format!("{k}:")) || e.message.contains(&format!("`{k}`")));
    prop_assert!(
        named || e.message == "query string is malformed",
        "{:?} names none of {:?}",
        e.message,
        keys
    );
    Ok(())
}

/// Accepted only if every key is one of the route's parameters, once.
fn check_ok(query: &str, params: &[&str]) -> Result<(), TestCaseError> {
    let keys = keys(query);
    for (i, k) in keys.iter().enumerate() {
        prop_assert!(params.contains(&k.as_str()), "unknown key {:?} accepted", k);
        prop_assert!(!keys[..i].contains(k), "repeated key {:?} accepted", k);
    }
    Ok(())
}

fn check<T>(r: Result<T, ApiError>, query: &str, params: &[&str]) -> Result<(), TestCaseError> {
    match r {
        Ok(_) => check_ok(query, params),
        Err(e) => check_error(&e, query),
    }
}

/// [`check`] for a route with a required parameter, which a refusal names
/// when the query lacks it.
fn check_required<T>(
    r: Result<T, ApiError>,
    query: &str,
    params: &[&str],
    required: &str,
) -> Result<(), TestCaseError> {
    match r {
        Err(e) if !keys(query).iter().any(|k| k == required) => {
            prop_assert_eq!(e.code, ErrorCode::InvalidQuery, "{}", e.message);
            if e.message.starts_with(&format!("{required}:")) {
                return Ok(());
            }
            check_error(&e, query)
        }
        Ok(_) if !keys(query).iter().any(|k| k == required) => Err(TestCaseError::fail(format!(
            "{query:?} accepted without {required}"
        ))),
        r => check(r, query, params),
    }
}

/// A stream list as a client may write it: `warning,error`, with spaces
/// and a trailing comma or not.
fn stream_list() -> impl Strategy<Value = (Vec<Stream>, String)> {
    (
        prop::collection::vec(prop::sample::select(&Stream::ALL[..]), 0..5),
        prop::sample::select(&[",", ", ", " ,"][..]),
        any::<bool>(),
    )
        .prop_map(|(list, sep, trailing)| {
            let mut text = list.iter().map(|s| s.name()).collect::<Vec<_>>().join(sep);
            if trailing {
                text.push(',');
            }
            (list, text)
        })
}

/// A `since` or `until` as a client may write it, with the time it
/// stands for: a duration back from [`NOW`] (stopping at 1970), or a time
/// as RFC 3339.
fn time_bound() -> impl Strategy<Value = (String, Timestamp)> {
    prop_oneof![
        (
            0i64..100_000,
            prop::sample::select(&[("s", 1i64), ("m", 60), ("h", 3600), ("d", 86_400)][..])
        )
            .prop_map(|(n, (unit, secs))| (
                format!("{n}{unit}"),
                Timestamp((NOW.0 - n * secs * 1_000_000).max(0))
            )),
        (0i64..4_000_000_000_000_000).prop_map(|micros| {
            let at = Timestamp(micros);
            (at.to_rfc3339(), at)
        }),
    ]
}

/// A permutation of the parameters, to write them in any order.
fn order() -> impl Strategy<Value = Vec<usize>> {
    Just((0..PARAMS.len()).collect::<Vec<_>>()).prop_shuffle()
}

/// `key=value` pairs in the order `order` gives, encoded as `how`.
fn render(mut pairs: Vec<(&str, String)>, order: &[usize], how: Enc) -> String {
    pairs.sort_by_key(|(k, _)| order[PARAMS.iter().position(|p| p == k).unwrap()]);
    pairs
        .into_iter()
        .map(|(k, v)| format!("{k}={}", enc(v.as_bytes(), how)))
        .collect::<Vec<_>>()
        .join("&")
}

proptest! {
    #![proptest_config(joblog_testkit::proptest_config(2000))]

    /// Any query string (arbitrary bytes percent-encoded or not, repeated,
    /// unknown and empty keys, huge and negative numbers, empty values,
    /// stray `%`): no route panics, and each either accepts it — every key
    /// one of its parameters, once — or answers `400 invalid_query` naming
    /// a key of the query (or the `q` a search lacks). The bare parser
    /// does the same on any text.
    #[test]
    fn any_query_is_parsed_or_refused_naming_a_key(query in raw_query(), raw in any::<String>()) {
        check(
            list(&query),
            &query,
            &["state", "name", "node", "since", "until", "limit", "before_id"],
        )?;
        check(log(&query), &query, &["after_seq", "before_seq", "limit", "streams", "wait_ms"])?;
        check(text(&query), &query, &["streams", "timestamps", "escape"])?;
        check(events(&query), &query, &["after_seq", "streams"])?;
        check_required(search(&query), &query, &["q", "after_seq", "limit", "streams"], "q")?;
        check(audit(&query), &query, &["after", "before", "actor", "action", "job_id", "limit"])?;
        if let Err(e) = super::serde_urlencoded_from_str::<ListParams>(&raw) {
            prop_assert_eq!(e.code, ErrorCode::InvalidQuery);
        }
    }

    /// A listing query of valid values (a list of states in any order,
    /// repeated or not; a name or node of any characters but control
    /// ones; `since` and `until` each a duration back from now or an RFC
    /// 3339 time), in any order and encoding, gives exactly those values
    /// (default limit 50), or, when `since` is not before `until`, a 400
    /// naming `since`.
    #[test]
    fn a_listing_query_round_trips(
        states in prop::option::of(prop::collection::vec(prop::sample::select(&JobState::ALL[..]), 0..5)),
        name in prop::option::of("[^\\p{Cc}]+"),
        node in prop::option::of("[^\\p{Cc}]+"),
        since in prop::option::of(time_bound()),
        until in prop::option::of(time_bound()),
        limit in prop::option::of(1u32..=joblog_core::MAX_LIST_LIMIT),
        before_id in prop::option::of(any::<i64>()),
        how in encoding(),
        order in order(),
    ) {
        let mut pairs = Vec::new();
        if let Some(s) = &states {
            let names: Vec<&str> = s.iter().map(|s| s.name()).collect();
            pairs.push(("state", names.join(",")));
        }
        if let Some(n) = &name { pairs.push(("name", n.clone())) }
        if let Some(n) = &node { pairs.push(("node", n.clone())) }
        if let Some((text, _)) = &since { pairs.push(("since", text.clone())) }
        if let Some((text, _)) = &until { pairs.push(("until", text.clone())) }
        if let Some(l) = limit { pairs.push(("limit", l.to_string())) }
        if let Some(b) = before_id { pairs.push(("before_id", b.to_string())) }
        let query = render(pairs, &order, how);
        let (since, until) = (since.map(|s| s.1), until.map(|u| u.1));
        if let (Some(s), Some(u)) = (since, until) {
            if s >= u {
                let e = list(&query).expect_err("since after until");
                prop_assert!(e.message.starts_with("since:"), "{}", e.message);
                return Ok(());
            }
        }
        let parsed = list(&query).map_err(|e| TestCaseError::fail(format!("{query}: {e}")))?;
        let mut states = states.unwrap_or_default();
        states.sort_by_key(|s| *s as u8);
        states.dedup();
        prop_assert_eq!(parsed, JobQuery {
            states,
            name: name.as_deref().map(NameFilter::parse),
            node,
            created_since: since,
            created_until: until,
            limit: limit.unwrap_or(50),
            before_id,
            schedule_id: None,
            folders: None,
        });
    }

    /// `since` and `until` that are neither a duration nor a time are
    /// refused naming the parameter and the forms it takes.
    #[test]
    fn a_bad_time_bound_says_what_is_accepted(
        param in prop::sample::select(&["since", "until"][..]),
        text in "[a-z]{1,10}|[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{0,7}",
    ) {
        let query = format!("{param}={text}");
        if let Err(e) = list(&query) {
            prop_assert!(e.message.starts_with(&format!("{param}:")), "{}", e.message);
            prop_assert!(e.message.contains("24h") && e.message.contains("2026-11-22T10:00:00Z"), "{}", e.message);
        }
    }

    /// A log query of valid values gives exactly those values to the log
    /// page (defaults: after 0, limit 1000, every stream, no wait; a wait
    /// is capped at 30 s), the text log and the live tail. A stream list
    /// naming no stream is no filter, like an empty one.
    #[test]
    fn a_log_query_round_trips(
        after in prop::option::of(any::<u64>()),
        before in any::<u64>(),
        limit in prop::option::of(1u32..=crate::handlers::log::MAX_LOG_LIMIT),
        streams in prop::option::of(stream_list()),
        wait_ms in prop::option::of(any::<u64>()),
        flags in (prop::option::of(any::<bool>()), prop::option::of(any::<bool>())),
        how in encoding(),
        order in order(),
    ) {
        let mut common = Vec::new();
        if let Some(s) = &streams { common.push(("streams", s.1.clone())) }
        let mut page = common.clone();
        if let Some(a) = after { page.push(("after_seq", a.to_string())) }
        let tail = page.clone();
        if let Some(l) = limit { page.push(("limit", l.to_string())) }
        if let Some(w) = wait_ms { page.push(("wait_ms", w.to_string())) }
        let mut download = common;
        if let Some(t) = flags.0 { download.push(("timestamps", t.to_string())) }
        if let Some(e) = flags.1 { download.push(("escape", e.to_string())) }

        let filter = streams.map(|s| s.0).filter(|s| !s.is_empty());
        let q = render(page.clone(), &order, how);
        prop_assert_eq!(
            log(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?,
            LogRequest {
                after: after.unwrap_or(0),
                before: None,
                limit: limit.unwrap_or(crate::handlers::log::DEFAULT_LOG_LIMIT),
                streams: filter.clone(),
                wait: std::time::Duration::from_millis(wait_ms.unwrap_or(0).min(30_000)),
            }
        );
        // The same page read backwards: alone, or refused naming what
        // cannot go with it.
        page.push(("before_seq", before.to_string()));
        let q = render(page, &order, how);
        match (after, wait_ms) {
            (Some(_), _) => {
                let e = log(&q).expect_err("after_seq and before_seq");
                prop_assert!(e.message.starts_with("before_seq:") && e.message.contains("after_seq"), "{}", e.message);
            }
            (None, Some(_)) => {
                let e = log(&q).expect_err("wait_ms and before_seq");
                prop_assert!(e.message.starts_with("wait_ms:") && e.message.contains("before_seq"), "{}", e.message);
            }
            (None, None) => prop_assert_eq!(
                log(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?,
                LogRequest {
                    after: 0,
                    before: Some(before),
                    limit: limit.unwrap_or(crate::handlers::log::DEFAULT_LOG_LIMIT),
                    streams: filter.clone(),
                    wait: std::time::Duration::ZERO,
                }
            ),
        }
        let q = render(download, &order, how);
        prop_assert_eq!(
            text(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?,
            (filter.clone(), flags.0, flags.1)
        );
        let q = render(tail, &order, how);
        prop_assert_eq!(
            events(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?,
            (after, filter)
        );
    }

    /// A search of valid values gives exactly those values (defaults:
    /// after 0, limit 1000, every stream), its text folded A–Z only; a
    /// text of no bytes or more than 256 is refused naming `q`.
    #[test]
    fn a_search_query_round_trips(
        text in prop_oneof![4 => "\\PC{1,64}", 1 => "\\PC{0,300}", 1 => any::<String>()],
        after in prop::option::of(any::<u64>()),
        limit in prop::option::of(1u32..=crate::handlers::log::MAX_LOG_LIMIT),
        streams in prop::option::of(stream_list()),
        how in encoding(),
        order in order(),
    ) {
        let mut pairs = vec![("q", text.clone())];
        if let Some(a) = after { pairs.push(("after_seq", a.to_string())) }
        if let Some(l) = limit { pairs.push(("limit", l.to_string())) }
        if let Some(s) = &streams { pairs.push(("streams", s.1.clone())) }
        let q = render(pairs, &order, how);
        if text.is_empty() || text.len() > joblog_core::MAX_SEARCH_BYTES {
            let e = search(&q).expect_err("a text of no or too many bytes");
            prop_assert!(e.message.starts_with("q:"), "{}", e.message);
            return Ok(());
        }
        let parsed = search(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?;
        prop_assert_eq!(parsed.search.folded(), text.to_ascii_lowercase());
        prop_assert_eq!(
            parsed,
            SearchRequest {
                search: joblog_core::LogSearch::new(&text).unwrap(),
                after: after.unwrap_or(0),
                limit: limit.unwrap_or(crate::handlers::log::DEFAULT_LOG_LIMIT),
                streams: streams.map(|s| s.0).filter(|s| !s.is_empty()),
            }
        );
    }

    /// An audit query of valid values, in any order and encoding, gives
    /// exactly those values (defaults: after 0, limit 100); a `before` not
    /// above `after` is refused naming `before`.
    #[test]
    fn an_audit_query_round_trips(
        after in prop::option::of(any::<u64>()),
        before in prop::option::of(any::<u64>()),
        actor in prop::option::of("[^\\p{Cc}]{1,50}"),
        action in prop::option::of("[a-z._]{1,40}"),
        job_id in prop::option::of(1i64..),
        limit in prop::option::of(1u32..=joblog_core::MAX_AUDIT_LIMIT),
        how in encoding(),
        order in order(),
    ) {
        let mut pairs = Vec::new();
        if let Some(a) = after { pairs.push(("after", a.to_string())) }
        if let Some(b) = before { pairs.push(("before", b.to_string())) }
        if let Some(a) = &actor { pairs.push(("actor", a.clone())) }
        if let Some(a) = &action { pairs.push(("action", a.clone())) }
        if let Some(j) = job_id { pairs.push(("job_id", j.to_string())) }
        if let Some(l) = limit { pairs.push(("limit", l.to_string())) }
        let q = render(pairs, &order, how);
        if before.is_some_and(|b| b <= after.unwrap_or(0)) {
            let e = audit(&q).expect_err("before not above after");
            prop_assert!(e.message.starts_with("before:"), "{}", e.message);
            return Ok(());
        }
        let parsed = audit(&q).map_err(|e| TestCaseError::fail(format!("{q}: {e}")))?;
        prop_assert_eq!(parsed, joblog_core::AuditQuery {
            after: after.unwrap_or(0),
            before,
            actor,
            action,
            job_id,
            limit: limit.unwrap_or(100),
        });
    }
}
