use chrono::TimeZone as _;

use super::*;
use crate::JobState;

fn zone(name: &str) -> Zone {
    Zone::parse(name).unwrap()
}

fn timing(cron: &str, tz: &str) -> Timing {
    Timing {
        cron: CronExpr::parse(cron).unwrap(),
        zone: zone(tz),
    }
}

/// The instant of a wall-clock time in `tz` (the earlier one if it
/// happens twice).
fn at(tz: &str, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> Timestamp {
    let t = zone(tz)
        .0
        .with_ymd_and_hms(y, mo, d, h, mi, 0)
        .earliest()
        .unwrap();
    Timestamp(t.timestamp_micros())
}

/// `t` on the wall in `tz`, with the zone's abbreviation.
fn wall(tz: &str, t: Timestamp) -> String {
    zone(tz)
        .0
        .timestamp_micros(t.0)
        .unwrap()
        .format("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

fn fires(t: &Timing, after: Timestamp, n: usize) -> Vec<String> {
    t.fires_after(after)
        .take(n)
        .map(|f| wall(t.zone.name(), f))
        .collect()
}

#[test]
fn a_fixed_time_in_the_spring_gap_fires_once_right_after_it() {
    // Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST.
    let t = timing("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        fires(&t, at("Europe/Berlin", 2026, 3, 28, 12, 0), 3),
        [
            "2026-03-29 03:00:00 CEST",
            "2026-03-30 02:30:00 CEST",
            "2026-03-31 02:30:00 CEST"
        ]
    );
    // America/New_York, 2026-03-08: 02:00 EST becomes 03:00 EDT.
    let t = timing("30 2 * * *", "America/New_York");
    assert_eq!(
        fires(&t, at("America/New_York", 2026, 3, 7, 12, 0), 2),
        ["2026-03-08 03:00:00 EDT", "2026-03-09 02:30:00 EDT"]
    );
}

#[test]
fn a_fixed_time_in_the_repeated_autumn_hour_fires_once() {
    // Europe/Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET.
    let t = timing("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        fires(&t, at("Europe/Berlin", 2026, 10, 24, 12, 0), 2),
        ["2026-10-25 02:30:00 CEST", "2026-10-26 02:30:00 CET"]
    );
    // America/New_York, 2026-11-01: 02:00 EDT goes back to 01:00 EST.
    let t = timing("30 1 * * *", "America/New_York");
    assert_eq!(
        fires(&t, at("America/New_York", 2026, 10, 31, 12, 0), 2),
        ["2026-11-01 01:30:00 EDT", "2026-11-02 01:30:00 EST"]
    );
}

/// Lists and ranges of hours and minutes are fixed times too (Vixie
/// cron's rule: a field not starting with `*`): the skipped hour's fires
/// run once right after it, the repeated hour's once, the first time —
/// also with a seconds field, and walking back as forth.
#[test]
fn lists_and_ranges_are_fixed_times_through_both_changes() {
    let berlin = "Europe/Berlin";
    let spring = at(berlin, 2026, 3, 28, 12, 0);
    let autumn = at(berlin, 2026, 10, 24, 12, 0);
    for (cron, in_spring, in_autumn) in [
        (
            "30,40 2 * * *",
            &["2026-03-29 03:00:00 CEST", "2026-03-30 02:30:00 CEST"][..],
            &[
                "2026-10-25 02:30:00 CEST",
                "2026-10-25 02:40:00 CEST",
                "2026-10-26 02:30:00 CET",
            ][..],
        ),
        (
            "30 2,3 * * *",
            &["2026-03-29 03:00:00 CEST", "2026-03-29 03:30:00 CEST"][..],
            &[
                "2026-10-25 02:30:00 CEST",
                "2026-10-25 03:30:00 CET",
                "2026-10-26 02:30:00 CET",
            ][..],
        ),
        (
            "30 1-3 * * *",
            &[
                "2026-03-29 01:30:00 CET",
                "2026-03-29 03:00:00 CEST",
                "2026-03-29 03:30:00 CEST",
            ][..],
            &[
                "2026-10-25 01:30:00 CEST",
                "2026-10-25 02:30:00 CEST",
                "2026-10-25 03:30:00 CET",
            ][..],
        ),
        (
            "0 30,40 2 * * *",
            &["2026-03-29 03:00:00 CEST", "2026-03-30 02:30:00 CEST"][..],
            &[
                "2026-10-25 02:30:00 CEST",
                "2026-10-25 02:40:00 CEST",
                "2026-10-26 02:30:00 CET",
            ][..],
        ),
        (
            "0 5/20 2 * * *",
            &["2026-03-29 03:00:00 CEST", "2026-03-30 02:05:00 CEST"][..],
            &[
                "2026-10-25 02:05:00 CEST",
                "2026-10-25 02:25:00 CEST",
                "2026-10-25 02:45:00 CEST",
                "2026-10-26 02:05:00 CET",
            ][..],
        ),
    ] {
        let t = timing(cron, berlin);
        let from_spring = at(berlin, 2026, 3, 29, 0, 0);
        assert_eq!(fires(&t, from_spring, in_spring.len()), in_spring, "{cron}");
        let from_autumn = at(berlin, 2026, 10, 25, 0, 0);
        assert_eq!(fires(&t, from_autumn, in_autumn.len()), in_autumn, "{cron}");
        // Walking back gives the same fires, each once.
        for (from, expected) in [(spring, in_spring), (autumn, in_autumn)] {
            let last = t.fires_after(from).take(expected.len() + 2).last().unwrap();
            let mut back = Vec::new();
            let mut cursor = last;
            while let Some(f) = t.previous_before(cursor).filter(|f| *f > from) {
                back.push(f);
                cursor = f;
            }
            back.reverse();
            let forth: Vec<Timestamp> = t.fires_after(from).take(back.len()).collect();
            assert_eq!(back, forth, "{cron}: back and forth differ");
        }
    }
    // From inside the repeated hour's second half, a fixed time of that
    // hour has fired already; walking back from there finds it.
    let t = timing("30,40 2 * * *", berlin);
    let second_half = Timestamp(at(berlin, 2026, 10, 25, 2, 35).0 + 3_600_000_000);
    assert_eq!(wall(berlin, second_half), "2026-10-25 02:35:00 CET");
    assert_eq!(fires(&t, second_half, 1), ["2026-10-26 02:30:00 CET"]);
    let back = t.previous_before(second_half).unwrap();
    assert_eq!(wall(berlin, back), "2026-10-25 02:40:00 CEST");
    // The interval forms stay by the wall clock: `*` starts a field.
    let t = timing("*/20 2 * * *", berlin);
    assert_eq!(
        fires(&t, at(berlin, 2026, 10, 25, 0, 0), 4),
        [
            "2026-10-25 02:00:00 CEST",
            "2026-10-25 02:20:00 CEST",
            "2026-10-25 02:40:00 CEST",
            "2026-10-25 02:00:00 CET"
        ]
    );
}

/// Lord Howe moves its clocks by half an hour (02:00 → 02:30 on
/// 2026-10-04): only that half hour is skipped; 02:35 exists and fires.
/// (cronsim, the reference the cross-check uses, skips it.)
#[test]
fn a_half_hour_change_skips_only_its_half_hour() {
    let zone = "Australia/Lord_Howe";
    let t = timing("35 * * * *", zone);
    assert_eq!(
        fires(&t, at(zone, 2026, 10, 4, 1, 0), 3),
        [
            "2026-10-04 01:35:00 +1030",
            "2026-10-04 02:35:00 +11",
            "2026-10-04 03:35:00 +11"
        ]
    );
    // A fixed time in the skipped half hour fires once, right after it.
    let t = timing("10,20 2 * * *", zone);
    assert_eq!(
        fires(&t, at(zone, 2026, 10, 4, 0, 0), 2),
        ["2026-10-04 02:30:00 +11", "2026-10-05 02:10:00 +11"]
    );
}

#[test]
fn an_interval_fires_by_the_wall_clock_through_both_changes() {
    // The repeated hour has its fires twice, once in each offset.
    let t = timing("*/30 * * * *", "Europe/Berlin");
    assert_eq!(
        fires(&t, at("Europe/Berlin", 2026, 10, 25, 1, 45), 5),
        [
            "2026-10-25 02:00:00 CEST",
            "2026-10-25 02:30:00 CEST",
            "2026-10-25 02:00:00 CET",
            "2026-10-25 02:30:00 CET",
            "2026-10-25 03:00:00 CET"
        ]
    );
    // The skipped hour has none.
    let t = timing("0 * * * *", "America/New_York");
    assert_eq!(
        fires(&t, at("America/New_York", 2026, 3, 8, 0, 30), 3),
        [
            "2026-03-08 01:00:00 EST",
            "2026-03-08 03:00:00 EDT",
            "2026-03-08 04:00:00 EDT"
        ]
    );
}

#[test]
fn february_29th_and_the_ends_of_months() {
    let t = timing("0 12 29 2 *", "UTC");
    assert_eq!(
        fires(&t, at("UTC", 2026, 1, 1, 0, 0), 2),
        ["2028-02-29 12:00:00 UTC", "2032-02-29 12:00:00 UTC"]
    );
    let last = timing("0 0 L * *", "UTC");
    assert_eq!(
        fires(&last, at("UTC", 2026, 1, 15, 0, 0), 4),
        [
            "2026-01-31 00:00:00 UTC",
            "2026-02-28 00:00:00 UTC",
            "2026-03-31 00:00:00 UTC",
            "2026-04-30 00:00:00 UTC"
        ]
    );
    let leap = fires(&last, at("UTC", 2028, 2, 1, 0, 0), 1);
    assert_eq!(leap, ["2028-02-29 00:00:00 UTC"]);
    // The 31st: months without one are passed over.
    let t = timing("0 6 31 * *", "Europe/Berlin");
    assert_eq!(
        fires(&t, at("Europe/Berlin", 2026, 4, 1, 0, 0), 2),
        ["2026-05-31 06:00:00 CEST", "2026-07-31 06:00:00 CEST"]
    );
}

#[test]
fn shortcuts_and_the_seconds_field() {
    let from = at("UTC", 2026, 11, 24, 10, 17);
    for (shortcut, first) in [
        ("@hourly", "2026-11-24 11:00:00 UTC"),
        ("@daily", "2026-11-25 00:00:00 UTC"),
        ("@midnight", "2026-11-25 00:00:00 UTC"),
        ("@weekly", "2026-11-29 00:00:00 UTC"),
        ("@monthly", "2026-12-01 00:00:00 UTC"),
        ("@yearly", "2027-01-01 00:00:00 UTC"),
        ("@ANNUALLY", "2027-01-01 00:00:00 UTC"),
    ] {
        let t = timing(shortcut, "UTC");
        assert!(!t.cron.has_seconds(), "{shortcut}");
        assert_eq!(fires(&t, from, 1), [first], "{shortcut}");
    }
    let t = timing("*/15 * * * * *", "UTC");
    assert!(t.cron.has_seconds());
    assert_eq!(
        fires(&t, from, 3),
        [
            "2026-11-24 10:17:15 UTC",
            "2026-11-24 10:17:30 UTC",
            "2026-11-24 10:17:45 UTC"
        ]
    );
    let t = timing("0 9 * * MON-FRI", "UTC");
    assert_eq!(
        fires(&t, at("UTC", 2026, 11, 27, 12, 0), 2),
        ["2026-11-30 09:00:00 UTC", "2026-12-01 09:00:00 UTC"],
        "Friday noon to Monday, then Tuesday"
    );
}

#[test]
fn bad_expressions_and_zones_are_refused_naming_the_field() {
    for (text, says) in [
        ("", "cron: is empty"),
        ("* * * *", "has 4 fields"),
        ("0 0 * * * * 2027", "has 7 fields"),
        ("* * * * * *", "would fire every second"),
        ("61 * * * *", "is not a cron expression"),
        ("every day", "has 2 fields"),
        ("@fortnightly", "is not a cron expression"),
    ] {
        let err = CronExpr::parse(text).unwrap_err();
        assert_eq!(err.field, "cron", "{text:?}");
        assert!(err.to_string().contains(says), "{text:?}: {err}");
    }
    assert!(
        CronExpr::parse("*/1 * * * * *").is_ok(),
        "every second, meant"
    );
    let err = Zone::parse("Europe/Berln").unwrap_err();
    assert_eq!(err.field, "timezone");
    assert!(err.to_string().contains("\"Europe/Berln\""), "{err}");
    assert_eq!(zone("UTC").name(), "UTC");
    assert_eq!(zone(" America/New_York ").name(), "America/New_York");
}

#[test]
fn fires_come_in_order_strictly_after_the_start() {
    let t = timing("*/7 * * * *", "Asia/Kolkata");
    let start = at("UTC", 2026, 6, 30, 23, 58);
    let all: Vec<Timestamp> = t.fires_after(start).take(50).collect();
    assert!(all[0] > start);
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    // A fire is not its own successor.
    assert_eq!(t.next_after(all[3]), Some(all[4]));
}

#[test]
fn retries_are_checked_and_back_off_doubling() {
    assert!(Retries::NONE.validate().is_ok());
    let r = Retries {
        attempts: 4,
        backoff_s: 10.0,
    }
    .validate()
    .unwrap();
    let secs: Vec<u64> = (1..=3).map(|a| r.delay_after(a).as_secs()).collect();
    assert_eq!(secs, [10, 20, 40]);
    for (attempts, backoff_s, field) in [
        (0, 1.0, "retries.attempts"),
        (101, 1.0, "retries.attempts"),
        (3, -1.0, "retries.backoff_s"),
        (3, f64::NAN, "retries.backoff_s"),
    ] {
        let err = Retries {
            attempts,
            backoff_s,
        }
        .validate()
        .unwrap_err();
        assert_eq!(err.field, field);
    }
    assert_eq!(
        serde_json::from_str::<Overlap>("\"queue\"").unwrap(),
        Overlap::Queue
    );
    assert!(serde_json::from_str::<Missed>("\"some\"").is_err());
    assert_eq!(Overlap::default(), Overlap::Skip);
    assert_eq!(Missed::default(), Missed::Skip);
}

#[test]
fn an_expression_that_never_fires_has_no_next_fire() {
    // February 30th: valid field by field, never a date.
    let t = timing("0 0 30 2 *", "UTC");
    assert_eq!(t.next_after(at("UTC", 2026, 1, 1, 0, 0)), None);
    assert_eq!(t.fires_after(at("UTC", 2026, 1, 1, 0, 0)).count(), 0);
}

fn new_schedule(body: serde_json::Value) -> Result<ValidSchedule, String> {
    let now = at("UTC", 2026, 11, 24, 12, 0);
    serde_json::from_value::<NewSchedule>(body)
        .map_err(|e| e.to_string())?
        .validate(now)
        .map_err(|e| e.to_string())
}

#[test]
fn a_schedule_as_the_api_takes_it_is_checked_whole() {
    let s = new_schedule(serde_json::json!({
        "name": "nightly-backup",
        "cron": "30 2 * * *",
        "timezone": "Europe/Berlin",
        "script": "pg_dump app > /backups/app.sql",
        "env": {"PGHOST": "db"},
        "timeout_s": 3600,
        "overlap": "queue",
        "missed": "one",
        "retries": {"attempts": 3, "backoff_s": 60},
        "enabled": false
    }))
    .unwrap();
    assert_eq!(s.name, "nightly-backup");
    assert_eq!(s.firing.cron().unwrap().zone.name(), "Europe/Berlin");
    assert_eq!(s.job.name.as_deref(), Some("nightly-backup"));
    assert_eq!(s.job.spec.env["PGHOST"], "db");
    assert_eq!((s.overlap, s.missed), (Overlap::Queue, Missed::One));
    assert_eq!(s.retries.attempts, 3);
    assert!(!s.enabled);

    let minimal = new_schedule(serde_json::json!({
        "name": "tick", "cron": "@hourly", "command": ["true"]
    }))
    .unwrap();
    assert_eq!(minimal.firing.cron().unwrap().zone, Zone::UTC);
    assert_eq!(
        (minimal.overlap, minimal.missed),
        (Overlap::Skip, Missed::Skip)
    );
    assert_eq!(minimal.retries, Retries::NONE);
    assert!(minimal.enabled, "enabled unless said otherwise");
}

#[test]
fn a_bad_schedule_is_refused_naming_its_field() {
    let base = || serde_json::json!({"name": "n", "cron": "0 * * * *", "command": ["true"]});
    let with = |key: &str, value: serde_json::Value| {
        let mut body = base();
        body[key] = value;
        body
    };
    for (body, says) in [
        (with("name", "  ".into()), "name: missing"),
        (
            with("cron", "0 25 * * *".into()),
            "cron: \"0 25 * * *\" is not a cron expression",
        ),
        (
            with("cron", "0 0 30 2 *".into()),
            "cron: \"0 0 30 2 *\" never fires again",
        ),
        (
            with("timezone", "Mars/Olympus".into()),
            "timezone: \"Mars/Olympus\"",
        ),
        (
            with("retries", serde_json::json!({"attempts": 0})),
            "retries.attempts",
        ),
        (
            with("overlap", "sometimes".into()),
            "overlap: \"sometimes\" is not one of skip, queue, allow",
        ),
        (
            with("secrets", serde_json::json!({"K": "v"})),
            "secrets: a schedule takes a list of secret names",
        ),
        (
            with("secrets", serde_json::json!(["K=v"])),
            "secrets: \"K=v\" is not a secret name",
        ),
        (
            with("concurrency_key", "schedule:9".into()),
            "concurrency_key: keys starting with",
        ),
        (
            with("max_concurrent", 2.into()),
            "max_concurrent: goes with concurrency_key",
        ),
        (with("timeout_s", (-1).into()), "timeout_s"),
        (
            with(
                "after",
                serde_json::json!({"schedule_id": 3, "states": ["failed"]}),
            ),
            "after: a schedule fires on cron or after another schedule, not both",
        ),
    ] {
        let err = new_schedule(body).unwrap_err();
        assert!(err.contains(says), "{err:?} should say {says:?}");
    }
    // Neither cron nor after: a saved job, which never fires by itself.
    let saved = new_schedule(with("cron", serde_json::Value::Null)).map(|s| s.firing);
    assert_eq!(saved, Ok(Firing::OnDemand));
    assert_eq!(Firing::OnDemand.next_after(Timestamp(0)), None);
    let mut neither = base();
    neither.as_object_mut().unwrap().remove("command");
    assert!(new_schedule(neither)
        .unwrap_err()
        .starts_with("command: missing"));
}

#[test]
fn a_schedule_after_another_names_final_states_and_the_field_at_fault() {
    let after = |after: serde_json::Value| {
        new_schedule(serde_json::json!({"name": "report", "after": after, "command": ["true"]}))
    };
    let s =
        after(serde_json::json!({"schedule_id": 3, "states": ["failed", "succeeded", "failed"]}))
            .unwrap();
    assert_eq!(
        s.firing.next_after(Timestamp(0)),
        None,
        "never by the clock"
    );
    let a = s.firing.after().unwrap();
    assert_eq!(a.schedule_id, 3);
    assert_eq!(
        a.states,
        [JobState::Succeeded, JobState::Failed],
        "each once, in order"
    );
    assert_eq!(a.states_text(), "succeeded,failed");
    for (body, says) in [
        (
            serde_json::json!({"schedule_id": 3, "states": []}),
            "after: states is empty",
        ),
        (
            serde_json::json!({"schedule_id": 3, "states": ["running"]}),
            "after: \"running\" is not a state a job ends in",
        ),
        (
            serde_json::json!({"schedule_id": 3, "states": ["done"]}),
            "after: unknown state \"done\"",
        ),
        (
            serde_json::json!({"schedule_id": 3, "states": ["succeeded,failed"]}),
            "after: unknown state \"succeeded,failed\"",
        ),
        (
            serde_json::json!({"schedule_id": 0, "states": ["failed"]}),
            "after: schedule_id 0 is not a schedule's id",
        ),
    ] {
        let err = after(body).unwrap_err();
        assert!(err.contains(says), "{err:?} should say {says:?}");
    }
}

#[test]
fn a_trigger_goes_one_deeper_up_to_the_longest_chain() {
    let mut ended = crate::Job {
        id: 9,
        name: None,
        state: JobState::Failed,
        exit_code: Some(1),
        command: vec![],
        command_truncated: false,
        env_truncated: false,
        node: None,
        created_at: Timestamp(0),
        started_at: None,
        finished_at: None,
        duration_ms: None,
        log: Default::default(),
        result: None,
        given: Default::default(),
        run_after: None,
        waiting_for: None,
        spec: Default::default(),
    };
    let first = TriggeredBy::of(&ended).unwrap();
    assert_eq!(
        (first.job_id, first.state, first.depth),
        (9, JobState::Failed, 2)
    );
    ended.spec.schedule = Some(ScheduledRun {
        schedule_id: 1,
        fire_us: None,
        attempt: 1,
        retries: Retries::NONE,
        trigger: Some(TriggeredBy {
            depth: MAX_CHAIN - 1,
            ..first
        }),
        previous: None,
    });
    assert_eq!(TriggeredBy::of(&ended).unwrap().depth, MAX_CHAIN);
    ended
        .spec
        .schedule
        .as_mut()
        .unwrap()
        .trigger
        .as_mut()
        .unwrap()
        .depth = MAX_CHAIN;
    assert_eq!(TriggeredBy::of(&ended), None, "no deeper than MAX_CHAIN");
}
