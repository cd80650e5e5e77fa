//! Results through the stores: blobs of every shape and size come back
//! byte for byte, and plain results from before blobs are converted when
//! the store opens.

use joblog_core::result_blob::{self, Codec};
use joblog_store::testing::{json_records, Backend, PgSession};

use super::*;

joblog_store::backend_tests! {
    results_of_every_shape_and_size_round_trip,
    plain_results_from_before_blobs_are_converted_when_the_store_opens,
}

/// JSON documents that stress what a result can be: tiny, deep, wide,
/// every kind of character, numbers at the edges of every type, and 32
/// MiB of mixed records.
fn shapes() -> Vec<(&'static str, Vec<u8>)> {
    let deep_arrays = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let deep_objects = format!("{}null{}", r#"{"a":"#.repeat(100), "}".repeat(100));
    let wide = serde_json::to_vec(&(0..200_000).collect::<Vec<u32>>()).unwrap();
    let unicode = serde_json::to_vec(&json!({
        "é": "✓ 日本語 🎉 שלום",
        "escapes": "\u{0}\u{1f}\n\t\"\\/",
        "surrogates": "\u{10FFFF}\u{FFFD}",
        "": "",
    }))
    .unwrap();
    let numbers = br#"[0,-0,-0.0,9223372036854775807,-9223372036854775808,18446744073709551615,1.7976931348623157e308,-1.7976931348623157e308,5e-324,1E+2,-1e-7,123456789012345678901234567890]"#.to_vec();
    vec![
        ("an empty object", b"{}".to_vec()),
        ("null", b"null".to_vec()),
        ("a number", b"7".to_vec()),
        ("100 arrays deep", deep_arrays.into_bytes()),
        ("100 objects deep", deep_objects.into_bytes()),
        ("200,000 numbers", wide),
        ("unicode and escapes", unicode),
        ("numbers at the edges", numbers),
        ("32 MiB of records", json_records(32 << 20)),
    ]
}

async fn results_of_every_shape_and_size_round_trip(db: TestDatabase) {
    let mut t = open_store(db);
    for (what, raw) in shapes() {
        serde_json::from_slice::<serde::de::IgnoredAny>(&raw)
            .unwrap_or_else(|e| panic!("{what} is not JSON: {e}"));
        let job = t.insert(Some(what));
        let done = t.finish_with(
            job.id,
            JobState::Succeeded,
            Some(0),
            Some(raw.clone()),
            LogSummary::default(),
        );
        assert_eq!(
            done.result.map(|r| r.bytes),
            Some(raw.len() as u64),
            "{what}"
        );
        let stored = t.store.read_result(job.id).await.unwrap().unwrap();
        let head = result_blob::header(&stored).unwrap();
        assert_eq!(head.raw_len, raw.len() as u64, "{what}");
        if raw.len() > 16 << 20 {
            assert_eq!(head.codec, Codec::Zstd, "{what}");
            assert!(
                stored.len() < raw.len() / 4,
                "{what}: {} stored for {}",
                stored.len(),
                raw.len()
            );
        }
        assert!(
            result_blob::decode(&stored).unwrap() == raw,
            "{what} came back different"
        );
    }
}

/// A database whose results were stored as plain JSON (before blobs):
/// opening it with this version converts each into a blob of the same
/// JSON, and the job's `result.bytes` is unchanged.
async fn plain_results_from_before_blobs_are_converted_when_the_store_opens(db: TestDatabase) {
    let url = db.url().to_owned();
    let mut t = open_store(db);
    let plain = br#"{"rows":[1,2,3],"note":"from before blobs"}"#.to_vec();
    let big = json_records(300_000);
    let mut jobs = Vec::new();
    for raw in [&plain, &big] {
        let job = t.insert(Some("old"));
        t.finish_with(
            job.id,
            JobState::Succeeded,
            Some(0),
            Some(raw.clone()),
            LogSummary::default(),
        );
        jobs.push((job.id, raw.clone()));
    }
    let TestStore { store, writer, db } = t;
    drop(writer);
    drop(store);
    match db.backend() {
        Backend::Sqlite => {
            let conn = rusqlite::Connection::open(db.dir().join("joblog.db")).unwrap();
            for (id, raw) in &jobs {
                conn.execute(
                    "UPDATE results SET body = ?2 WHERE job_id = ?1",
                    rusqlite::params![id, raw],
                )
                .unwrap();
            }
            let version: i64 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            conn.execute_batch(UNDO_LATEST).unwrap();
            // And the results' conversion to blobs.
            conn.pragma_update(None, "user_version", version - UNDONE_MIGRATIONS - 1)
                .unwrap();
        }
        Backend::Postgres => {
            let pg = PgSession::connect(&url).await;
            for (id, raw) in &jobs {
                pg.client
                    .execute("UPDATE results SET body = $2 WHERE job_id = $1", &[id, raw])
                    .await
                    .unwrap();
            }
            pg.client.batch_execute(UNDO_LATEST).await.unwrap();
            pg.client
                .batch_execute(&format!(
                    "UPDATE joblog_schema SET version = version - {}",
                    UNDONE_MIGRATIONS + 1
                ))
                .await
                .unwrap();
            pg.close().await;
        }
    }
    let t = open_store_at(db, &url);
    for (id, raw) in &jobs {
        let stored = t.store.read_result(*id).await.unwrap().unwrap();
        assert!(stored.starts_with(&result_blob::MAGIC), "job {id}");
        assert!(result_blob::decode(&stored).unwrap() == *raw, "job {id}");
        assert_eq!(
            t.job(*id).await.result.map(|r| r.bytes),
            Some(raw.len() as u64)
        );
    }
    let big_stored = t.store.read_result(jobs[1].0).await.unwrap().unwrap();
    assert!(
        big_stored.len() < big.len() / 4,
        "the large one is compressed"
    );
}
