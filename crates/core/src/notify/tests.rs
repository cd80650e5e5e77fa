use serde_json::json;

use super::*;
use crate::{Given, JobSpec, LogSummary, Record, Stream};

fn rule_json(extra: serde_json::Value) -> serde_json::Value {
    let mut doc = json!({
        "name": "backup-failures",
        "when": {"states": ["failed", "timed_out"], "name": "backup*"},
        "webhook": {"url": "https://hooks.example.com/T0/B0", "headers": {"X-Team": "ops"},
                    "secret_name": "HOOK_KEY"}
    });
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            doc.as_object_mut().unwrap().remove(k);
        } else {
            doc[k] = v.clone();
        }
    }
    doc
}

fn validate(doc: serde_json::Value) -> Result<ValidRule, ValidationError> {
    serde_json::from_value::<NewRule>(doc)
        .map_err(|e| invalid("body", e.to_string()))?
        .validate()
}

fn refused(doc: serde_json::Value) -> ValidationError {
    validate(doc.clone()).expect_err(&format!("{doc} was accepted"))
}

fn job(id: i64, name: Option<&str>, state: JobState, schedule: Option<i64>) -> Job {
    Job {
        id,
        name: name.map(str::to_owned),
        state,
        exit_code: Some(3),
        command: vec!["sh".into()],
        command_truncated: false,
        env_truncated: false,
        node: Some("a".into()),
        created_at: Timestamp(1_000_000),
        started_at: Some(Timestamp(2_000_000)),
        finished_at: Some(Timestamp(14_300_000)),
        duration_ms: Some(12_300.0),
        log: LogSummary::default(),
        result: None,
        given: Given {
            schedule_id: schedule,
            ..Given::default()
        },
        run_after: None,
        waiting_for: None,
        spec: JobSpec::default(),
    }
}

fn record(seq: u64, stream: Stream, message: &str) -> Record {
    Record {
        seq,
        ts: Timestamp(2_000_000 + seq as i64),
        stream,
        message: message.into(),
        fields: None,
    }
}

fn stored(rule: ValidRule) -> Rule {
    Rule::new(7, rule, Timestamp(1), Timestamp(1))
}

#[test]
fn a_whole_rule_is_read_and_its_states_kept_once_in_order() {
    let mut doc = rule_json(json!({}));
    doc["when"]["states"] = json!(["timed_out", "failed", "failed"]);
    let rule = validate(doc).unwrap();
    assert_eq!(rule.name, "backup-failures");
    assert_eq!(rule.when.states, [JobState::Failed, JobState::TimedOut]);
    let Target::Webhook(w) = &rule.target else {
        panic!("not a webhook: {rule:?}")
    };
    assert_eq!(w.format, Format::Json);
    assert_eq!(w.secret_name.as_deref(), Some("HOOK_KEY"));
    assert!(rule.enabled);
}

#[test]
fn each_bad_field_is_refused_naming_it() {
    let cases = [
        (json!({"name": " "}), "name"),
        (json!({"when": {"states": []}}), "when.states"),
        (json!({"when": {"states": ["running"]}}), "when.states"),
        (
            json!({"when": {"states": ["failed"], "name": ""}}),
            "when.name",
        ),
        (
            json!({"when": {"states": ["failed"], "schedule_id": 0}}),
            "when.schedule_id",
        ),
        (
            json!({"webhook": {"url": "ftp://x.example.com/"}}),
            "webhook.url",
        ),
        (json!({"webhook": {"url": "https://"}}), "webhook.url"),
        (
            json!({"webhook": {"url": "https://user:pw@x.example.com/"}}),
            "webhook.url",
        ),
        (
            json!({"webhook": {"url": "https://x.example.com/a b"}}),
            "webhook.url",
        ),
        (
            json!({"webhook": {"url": "https://x.example.com/", "headers": {"Joblog-Delivery": "1"}}}),
            "webhook.headers",
        ),
        (
            json!({"webhook": {"url": "https://x.example.com/", "headers": {"Bad Name": "1"}}}),
            "webhook.headers",
        ),
        (
            json!({"webhook": {"url": "https://x.example.com/", "headers": {"X-A": "a\r\nX-B: b"}}}),
            "webhook.headers",
        ),
        (
            json!({"webhook": {"url": "https://x.example.com/", "secret_name": "s3cr3t value"}}),
            "webhook.secret_name",
        ),
        (json!({"webhook": null}), "webhook"),
        (json!({"email": {"to": ["ops@example.com"]}}), "webhook"),
        (json!({"webhook": null, "email": {"to": []}}), "email.to"),
        (
            json!({"webhook": null, "email": {"to": ["ops"]}}),
            "email.to",
        ),
        (
            json!({"webhook": null, "email": {"to": ["a@b.com\r\nBcc: x@y.com"]}}),
            "email.to",
        ),
    ];
    for (change, field) in cases {
        let e = refused(rule_json(change.clone()));
        assert_eq!(e.field, field, "{change}: {e:?}");
        assert!(!e.message.is_empty());
    }
}

#[test]
fn a_secret_value_given_as_its_name_is_not_echoed_whole() {
    let e = refused(rule_json(
        json!({"webhook": {"url": "https://x.example.com/", "secret_name": "hunter2 hunter2"}}),
    ));
    assert_eq!(e.field, "webhook.secret_name");
    assert!(!e.message.contains("hunter2"), "{e:?}");
}

#[test]
fn when_matches_state_name_pattern_and_schedule() {
    let rule = validate(rule_json(json!({}))).unwrap();
    let when = &rule.when;
    assert!(when.matches(&job(1, Some("backup-db"), JobState::Failed, None)));
    assert!(!when.matches(&job(1, Some("backup-db"), JobState::Succeeded, None)));
    assert!(!when.matches(&job(1, Some("report"), JobState::Failed, None)));
    assert!(!when.matches(&job(1, None, JobState::Failed, None)));
    let by_schedule = When {
        states: vec![JobState::Failed],
        name: None,
        schedule_id: Some(3),
        folder: None,
    };
    assert!(by_schedule.matches(&job(1, None, JobState::Failed, Some(3))));
    assert!(!by_schedule.matches(&job(1, None, JobState::Failed, Some(4))));
    assert!(!by_schedule.matches(&job(1, None, JobState::Failed, None)));
    let by_folder = When {
        schedule_id: None,
        folder: Some("team-a".into()),
        ..by_schedule
    };
    let mut in_a = job(1, None, JobState::Failed, None);
    in_a.spec.folder = Some("team-a".into());
    let mut in_b = in_a.clone();
    in_b.spec.folder = Some("team-b".into());
    assert!(by_folder.matches(&in_a));
    assert!(!by_folder.matches(&in_b));
    assert!(!by_folder.matches(&job(1, None, JobState::Failed, None)));
    let bad = validate(rule_json(
        json!({"when": {"states": ["failed"], "folder": "a/b"}}),
    ));
    assert_eq!(bad.unwrap_err().field, "when.folder");
}

#[test]
fn a_patch_replaces_fields_and_webhook_and_email_replace_each_other() {
    let rule = stored(validate(rule_json(json!({}))).unwrap());
    let patched = rule
        .patched(
            json!({"email": {"to": ["ops@example.com"]}, "enabled": false})
                .as_object()
                .unwrap()
                .clone(),
        )
        .unwrap();
    assert_eq!(
        patched.target,
        Target::Email(Email {
            to: vec!["ops@example.com".into()]
        })
    );
    assert!(!patched.enabled);
    assert_eq!(patched.when, rule.when);
    let e = rule
        .patched(json!({"when": {"states": []}}).as_object().unwrap().clone())
        .unwrap_err();
    assert_eq!(e.field, "when.states");
    let e = rule
        .patched(json!({"colour": "red"}).as_object().unwrap().clone())
        .unwrap_err();
    assert!(e.message.contains("colour"), "{e:?}");
}

#[test]
fn the_stored_form_reads_back_as_the_same_rule() {
    let rule = validate(rule_json(json!({}))).unwrap();
    let back: NewRule = serde_json::from_str(&Rule::spec_json(&rule)).unwrap();
    assert_eq!(back.validate().unwrap(), rule);
}

fn notice(url: Option<&str>) -> Notice {
    let rule = stored(validate(rule_json(json!({}))).unwrap());
    let j = job(42, Some("backup-db"), JobState::Failed, Some(3));
    let problems: Vec<Record> = (1..=30)
        .map(|i| record(i, Stream::Warning, &format!("warn {i}")))
        .collect();
    let tail: Vec<Record> = (100..=120)
        .map(|i| record(i, Stream::Output, &format!("line {i} <b>&")))
        .collect();
    let first = record(5, Stream::Error, "disk <full> & \"gone\"");
    Notice::new(&rule, &j, Some(&first), &problems, &tail, url, Some(9))
}

#[test]
fn the_json_document_carries_the_job_its_problems_tail_and_link() {
    let n = notice(Some("https://joblog.example.com/"));
    let doc: serde_json::Value = serde_json::from_slice(&n.render(Format::Json).body).unwrap();
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["event"], "job.finished");
    assert_eq!(doc["delivery_id"], 9);
    assert_eq!(doc["rule"], json!({"id": 7, "name": "backup-failures"}));
    assert_eq!(doc["job"]["id"], 42);
    assert_eq!(doc["job"]["state"], "failed");
    assert_eq!(doc["job"]["exit_code"], 3);
    assert_eq!(doc["job"]["schedule_id"], 3);
    assert_eq!(doc["job"]["node"], "a");
    assert_eq!(doc["job"]["duration_ms"], 12_300.0);
    assert_eq!(doc["first_error"]["seq"], 5);
    assert_eq!(doc["first_error"]["stream"], "error");
    let problems = doc["problems"].as_array().unwrap();
    assert_eq!(problems.len(), NOTICE_PROBLEMS);
    assert_eq!(
        problems[0]["message"], "warn 11",
        "the last 20, oldest first"
    );
    let tail = doc["output_tail"].as_array().unwrap();
    assert_eq!(tail.len(), NOTICE_TAIL);
    assert_eq!(tail[9]["seq"], 120);
    assert_eq!(doc["url"], "https://joblog.example.com/jobs/42#seq-5");
    assert_eq!(notice(None).url, None);
}

#[test]
fn a_long_record_is_cut_in_a_notice() {
    let r = record(1, Stream::Error, &"é".repeat(5000));
    let n = NoticeRecord::of(&r);
    assert_eq!(n.message.chars().count(), 1001);
    assert!(n.message.ends_with('…'));
}

#[test]
fn slack_blocks_escape_the_output_and_link_the_job() {
    let n = notice(Some("https://joblog.example.com"));
    let doc: serde_json::Value = serde_json::from_slice(&n.render(Format::Slack).body).unwrap();
    assert_eq!(
        doc["text"],
        "backup-db (job 42) failed with exit code 3 on node a"
    );
    let text = doc.to_string();
    assert!(
        text.contains("<https://joblog.example.com/jobs/42#seq-5|"),
        "{text}"
    );
    assert!(text.contains("disk &lt;full&gt; &amp;"), "{text}");
    assert!(!text.contains("<b>"), "output is escaped: {text}");
    for block in doc["blocks"].as_array().unwrap() {
        if let Some(t) = block["text"]["text"].as_str() {
            assert!(t.chars().count() <= 3000, "a section over Slack's limit");
        }
    }
}

#[test]
fn a_teams_card_holds_the_facts_and_an_open_action() {
    let n = notice(Some("https://joblog.example.com"));
    let doc: serde_json::Value = serde_json::from_slice(&n.render(Format::Teams).body).unwrap();
    let card = &doc["attachments"][0]["content"];
    assert_eq!(card["type"], "AdaptiveCard");
    assert_eq!(
        card["actions"][0]["url"],
        "https://joblog.example.com/jobs/42#seq-5"
    );
    let facts = card["body"][1]["facts"].as_array().unwrap();
    assert!(facts
        .iter()
        .any(|f| f["title"] == "Exit code" && f["value"] == "3"));
    assert!(doc.to_string().contains(r"\\<b\\>"), "Markdown is escaped");
}

#[test]
fn the_mail_is_text_and_escaped_html_with_the_same_content() {
    let mail = notice(Some("https://joblog.example.com")).mail();
    assert_eq!(
        mail.subject,
        "[joblog] backup-db (job 42) failed with exit code 3 on node a"
    );
    assert!(
        mail.text.contains("[5] disk <full> & \"gone\""),
        "{}",
        mail.text
    );
    assert!(mail.text.contains("[120] line 120 <b>&"));
    assert!(
        mail.html
            .contains("[5] disk &lt;full&gt; &amp; &quot;gone&quot;"),
        "{}",
        mail.html
    );
    assert!(!mail.html.contains("<b>&"), "output never becomes HTML");
    assert!(mail
        .html
        .contains("href=\"https://joblog.example.com/jobs/42#seq-5\""));
}

#[test]
fn a_test_notice_says_so() {
    let rule = stored(validate(rule_json(json!({}))).unwrap());
    let n = Notice::new(
        &rule,
        &job(1, None, JobState::Succeeded, None),
        None,
        &[],
        &[],
        None,
        None,
    );
    assert_eq!(n.event, "test");
    assert_eq!(n.headline(), "[test] job 1 succeeded on node a");
}
