use serde_json::json;

use super::*;

/// Records of every stream, with fields on some, text of every kind
/// (empty, multi-byte, control characters, a continued line's marker
/// field, a masked secret, the cap's marker), timestamps that go back as
/// well as forward.
fn records(first_seq: u64, n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let seq = first_seq + i as u64;
            let stream = Stream::ALL[i % Stream::ALL.len()];
            let message = match i % 6 {
                0 => format!("message {seq} of job 7"),
                1 => String::new(),
                2 => format!("é ✓ 日本 \u{1b}[31mred\u{1b}[0m \0 {seq}"),
                3 => "password=*** in the middle".to_string(),
                4 => "x".repeat(i % 300),
                _ => format!("joblog: {seq} records dropped"),
            };
            let fields = match i % 4 {
                0 => None,
                1 => Some(json!({"continued": true})),
                2 => Some(json!({"percent": i % 101, "activity": "copy", "nested": {"a": [1, 2]}})),
                _ => Some(json!({"dropped_records": seq, "dropped_bytes": seq * 80})),
            }
            .map(|v| match v {
                Value::Object(m) => m,
                _ => unreachable!("objects above"),
            });
            let ts =
                1_700_000_000_000_000 + (i as i64) * 1_000 - if i % 7 == 3 { 5_000 } else { 0 };
            Record {
                seq,
                ts: Timestamp(ts),
                stream,
                message,
                fields,
            }
        })
        .collect()
}

#[test]
fn records_come_back_exactly_at_every_size() {
    for n in [0, 1, 2, 999, 1000, 1001, 5000] {
        let rs = records(41, n);
        let bytes = encode(&rs).unwrap();
        assert_eq!(decode(&bytes).unwrap(), rs, "{n} records");
        let h = SegmentHeader::parse(&bytes).unwrap();
        assert_eq!((h.version, h.count), (VERSION, n as u64));
        if n > 0 {
            assert_eq!((h.first_seq, h.last_seq()), (41, 40 + n as u64));
        }
        for s in Stream::ALL {
            let expected = rs.iter().filter(|r| r.stream == s).count() as u64;
            assert_eq!(h.streams.get(s), expected, "{s:?}");
        }
        let text: usize = rs.iter().map(|r| r.message.len()).sum();
        assert_eq!(h.text_bytes, text as u64);
    }
}

#[test]
fn short_lines_take_a_few_bytes_a_record() {
    let rs: Vec<Record> = (1..=1000u64)
        .map(|seq| Record {
            seq,
            ts: Timestamp(1_700_000_000_000_000 + seq as i64 * 37),
            stream: Stream::Output,
            message: format!("message {seq} of job 12345"),
            fields: None,
        })
        .collect();
    let bytes = encode(&rs).unwrap();
    // The size is measured by `joblog bench`; this only catches a format
    // that stopped compressing at all.
    assert!(bytes.len() < 10 * 1000, "{} bytes", bytes.len());
}

#[test]
fn gaps_and_disorder_are_refused_when_encoding() {
    let mut rs = records(1, 3);
    rs[2].seq = 4;
    assert!(matches!(encode(&rs), Err(SegmentError::Corrupt(m)) if m.contains("seq 4")));
}

#[test]
fn damaged_segments_are_errors_never_panics() {
    let bytes = encode(&records(1, 300)).unwrap();
    assert_eq!(decode(b"nope"), Err(SegmentError::Magic));
    let mut newer = bytes.clone();
    newer[3] = VERSION + 1;
    assert_eq!(decode(&newer), Err(SegmentError::Version(VERSION + 1)));
    for cut in 0..bytes.len() {
        assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    // Every byte flipped, one at a time: an error or (where zstd cannot
    // tell) the same count of records, but never a panic.
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x5a;
        if let Ok(rs) = decode(&bad) {
            assert_eq!(rs.len() as u64, SegmentHeader::parse(&bad).unwrap().count);
        }
    }
    let mut long = bytes.clone();
    long.push(0);
    assert_eq!(decode(&long), Err(SegmentError::Truncated("body")));
}

#[test]
fn a_header_announcing_huge_sizes_is_refused_without_allocating_them() {
    let mut bytes = MAGIC.to_vec();
    bytes.push(VERSION);
    put_varint(&mut bytes, 1);
    put_varint(&mut bytes, u64::MAX / 2);
    put_varint(&mut bytes, u64::MAX / 2);
    for _ in 1..Stream::ALL.len() {
        put_varint(&mut bytes, 0);
    }
    put_varint(&mut bytes, u64::MAX / 2);
    put_varint(&mut bytes, 0);
    put_varint(&mut bytes, 0);
    assert!(matches!(decode(&bytes), Err(SegmentError::Corrupt(_))));
}

#[test]
fn varints_round_trip_and_zigzag_keeps_the_sign() {
    for v in [0u64, 1, 127, 128, 300, u64::MAX / 3, u64::MAX] {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        let mut r = Reader {
            bytes: &b,
            at: 0,
            part: "test",
        };
        assert_eq!(r.varint().unwrap(), v);
        assert_eq!(r.at, b.len());
    }
    for v in [0i64, 1, -1, 5_000, -5_000, i64::MAX, i64::MIN] {
        assert_eq!(unzigzag(zigzag(v)), v);
    }
    let eleven = [0xffu8; 11];
    let mut r = Reader {
        bytes: &eleven,
        at: 0,
        part: "test",
    };
    assert!(r.varint().is_err());
}

/// Version 1 as it was first written keeps decoding into the same records
/// in every later version of joblog. The fixture was written by this
/// code's first version (`JOBLOG_WRITE_SEGMENT_FIXTURE=1` writes it again:
/// only ever for a new version's fixture, under a new name).
#[test]
fn the_version_1_fixture_keeps_decoding() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/segment-v1.bin");
    let expected = records(1001, 1001);
    if std::env::var_os("JOBLOG_WRITE_SEGMENT_FIXTURE").is_some() {
        std::fs::write(path, encode(&expected).unwrap()).unwrap();
    }
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(bytes[3], 1, "the fixture is of version 1");
    assert_eq!(decode(&bytes).unwrap(), expected);
}
