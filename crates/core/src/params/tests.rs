use proptest::prelude::*;
use serde_json::json;

use super::*;

fn schema(v: Value) -> Result<ParamsSchema, ParamsError> {
    ParamsSchema::parse(&v)
}

fn fill(s: &ParamsSchema, v: Value) -> Result<Params, String> {
    s.fill(v.as_object().unwrap()).map_err(|e| e.to_string())
}

fn restore() -> ParamsSchema {
    schema(json!({
        "type": "object",
        "properties": {
            "env": {"type": "string", "enum": ["prod", "staging"], "description": "where"},
            "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
            "ratio": {"type": "number", "minimum": 0.5},
            "dry_run": {"type": "boolean", "default": false},
            "host": {"type": "string", "pattern": "^[a-z0-9.-]+$", "minLength": 3, "maxLength": 20},
            "notes": {"type": "string", "format": "multiline"},
            "password": {"type": "string", "secret": true}
        },
        "required": ["env", "host"]
    }))
    .unwrap()
}

#[test]
fn every_keyword_is_taken_and_given_back() {
    let s = restore();
    let back = s.to_json();
    assert_eq!(ParamsSchema::parse(&back).unwrap(), s, "{back}");
    assert_eq!(
        back["properties"]["env"]["enum"],
        json!(["prod", "staging"])
    );
    assert_eq!(back["properties"]["notes"]["format"], "multiline");
    assert_eq!(back["properties"]["password"]["secret"], true);
    assert_eq!(back["required"], json!(["env", "host"]));
    assert_eq!(s.unfillable(), ["env", "host"]);
}

#[test]
fn a_keyword_outside_the_subset_is_refused_naming_it() {
    for (bad, at) in [
        (
            json!({"properties": {"a": {"type": "string", "oneOf": []}}}),
            "params.properties.a.oneOf",
        ),
        (
            json!({"properties": {"a": {"type": "array"}}}),
            "params.properties.a.type",
        ),
        (json!({"properties": {"a": {}}}), "params.properties.a.type"),
        (
            json!({"additionalProperties": false}),
            "params.additionalProperties",
        ),
        (json!({"type": "array"}), "params.type"),
        (
            json!({"properties": {"a": {"type": "integer", "pattern": "x"}}}),
            "params.properties.a.pattern",
        ),
        (
            json!({"properties": {"a": {"type": "string", "minimum": 1}}}),
            "params.properties.a.minimum",
        ),
        (
            json!({"properties": {"a": {"type": "string", "format": "email"}}}),
            "params.properties.a.format",
        ),
        (
            json!({"properties": {"a": {"type": "integer", "secret": true}}}),
            "params.properties.a.secret",
        ),
        (
            json!({"properties": {"a": {"type": "string", "pattern": "("}}}),
            "params.properties.a.pattern",
        ),
        (
            json!({"properties": {"a": {"type": "string", "enum": []}}}),
            "params.properties.a.enum",
        ),
        (
            json!({"properties": {"a": {"type": "string", "enum": [1]}}}),
            "params.properties.a.enum",
        ),
        (
            json!({"properties": {"a": {"type": "integer", "default": 1.5}}}),
            "params.properties.a.default",
        ),
        (
            json!({"properties": {"a": {"type": "integer", "minimum": 5, "default": 1}}}),
            "params.properties.a.default",
        ),
        (
            json!({"properties": {"a": {"type": "string", "secret": true, "default": "x"}}}),
            "params.properties.a.default",
        ),
        (
            json!({"properties": {"a": {"type": "integer", "minimum": 5, "maximum": 1}}}),
            "params.properties.a.minimum",
        ),
        (
            json!({"properties": {"a": {"type": "string", "minLength": -1}}}),
            "params.properties.a.minLength",
        ),
        (
            json!({"properties": {"a-b": {"type": "string"}}}),
            "params.properties",
        ),
        (
            json!({"properties": {"a": {"type": "string"}, "A": {"type": "string"}}}),
            "params.properties.a",
        ),
        (
            json!({"properties": {"a": {"type": "string"}}, "required": ["b"]}),
            "params.required",
        ),
        (json!([]), "params"),
    ] {
        let e = schema(bad.clone()).expect_err(&bad.to_string());
        assert_eq!(e.at, at, "{bad}: {e}");
    }
}

#[test]
fn each_value_is_checked_naming_the_parameter_and_what_was_wrong() {
    let s = restore();
    let base = json!({"env": "prod", "host": "db1.local"});
    let with = |k: &str, v: Value| {
        let mut b = base.clone();
        b[k] = v;
        b
    };
    for (given, message) in [
        (with("env", json!("qa")), "params.env: \"qa\" is not one of prod, staging"),
        (with("count", json!(11)), "params.count: 11 is above the maximum, 10"),
        (with("count", json!(0)), "params.count: 0 is below the minimum, 1"),
        (with("count", json!(2.5)), "params.count: 2.5 is not an integer"),
        (with("count", json!("3")), "params.count: \"3\" is not an integer"),
        (with("ratio", json!(0.25)), "params.ratio: 0.25 is below the minimum, 0.5"),
        (with("dry_run", json!("yes")), "params.dry_run: \"yes\" is not a boolean"),
        (with("host", json!("DB!")), "params.host: \"DB!\" does not match the pattern ^[a-z0-9.-]+$"),
        (with("host", json!("ab")), "params.host: 2 characters, fewer than 3"),
        (with("host", json!("a\nb")), "params.host: one line expected (format \"multiline\" takes several)"),
        (with("notes", json!("a\0b")), "params.notes: contains NUL, which no environment variable can hold"),
        (with("other", json!(1)), "params.other: not a parameter of this job (it takes count, dry_run, env, host, notes, password, ratio)"),
        (json!({"env": "prod"}), "params.host: missing: a required parameter"),
    ] {
        assert_eq!(fill(&s, given.clone()).unwrap_err(), message, "{given}");
    }
    let ok = fill(&s, with("count", json!(4.0))).unwrap();
    assert_eq!(ok.values["count"].value, json!(4.0));
    assert_eq!(
        ok.values["dry_run"].value,
        json!(false),
        "the default fills it"
    );
    assert!(
        !ok.values.contains_key("notes"),
        "no value, no default: absent"
    );
    assert_eq!(
        fill(&ParamsSchema::default(), json!({"x": 1})).unwrap_err(),
        "params.x: this job takes no parameters"
    );
}

#[test]
fn a_secret_is_recorded_by_name_only_and_each_value_is_its_own_variable() {
    let s = restore();
    let p = fill(
        &s,
        json!({"env": "staging", "host": "db1", "password": "hunter2", "ratio": 0.75, "notes": "a\nb"}),
    )
    .unwrap();
    assert_eq!(
        p.env(),
        vec![
            ("JOBLOG_PARAM_COUNT".into(), "3".into(), false),
            ("JOBLOG_PARAM_DRY_RUN".into(), "false".into(), false),
            ("JOBLOG_PARAM_ENV".into(), "staging".into(), false),
            ("JOBLOG_PARAM_HOST".into(), "db1".into(), false),
            ("JOBLOG_PARAM_NOTES".into(), "a\nb".into(), false),
            ("JOBLOG_PARAM_PASSWORD".into(), "hunter2".into(), true),
            ("JOBLOG_PARAM_RATIO".into(), "0.75".into(), false),
        ]
    );
    assert_eq!(p.recorded()["password"], Value::Null);
    assert!(!Value::Object(p.recorded()).to_string().contains("hunter2"));
    assert_eq!(p.to_json()["password"], "hunter2");
}

proptest! {
    /// Any text a multiline string parameter accepts reaches its variable
    /// as it was: Unicode, newlines, quotes and shell metacharacters.
    #[test]
    fn any_accepted_text_reaches_its_variable_unchanged(text in "[^\u{0}]{0,200}") {
        let s = schema(json!({"properties": {"t": {"type": "string", "format": "multiline"}}})).unwrap();
        let p = fill(&s, json!({"t": text})).unwrap();
        prop_assert_eq!(&p.env()[0].1, &text);
        let json = p.to_json();
        prop_assert_eq!(json["t"].as_str(), Some(text.as_str()));
    }

    /// An integer within bounds is taken and written in decimal; one
    /// outside is refused naming the bound.
    #[test]
    fn integers_are_bounded_and_written_plainly(n in -1_000_000i64..1_000_000, lo in -1000i64..1000, span in 0i64..2000) {
        let hi = lo + span;
        let s = schema(json!({"properties": {"n": {"type": "integer", "minimum": lo, "maximum": hi}}})).unwrap();
        match fill(&s, json!({"n": n})) {
            Ok(p) => {
                prop_assert!(lo <= n && n <= hi);
                prop_assert_eq!(&p.env()[0].1, &n.to_string());
            }
            Err(e) => {
                prop_assert!(n < lo || n > hi, "{}", e);
                prop_assert!(e.starts_with("params.n: "), "{}", e);
            }
        }
    }

    /// A value is accepted exactly when it is one of the enum's.
    #[test]
    fn an_enum_admits_its_values_only(choices in prop::collection::btree_set("[a-z]{1,8}", 1..6), given in "[a-z]{1,8}") {
        let list: Vec<&String> = choices.iter().collect();
        let s = schema(json!({"properties": {"e": {"type": "string", "enum": list}}})).unwrap();
        prop_assert_eq!(fill(&s, json!({"e": given})).is_ok(), choices.contains(&given));
    }
}

#[test]
fn text_from_a_command_line_is_read_as_the_parameter_s_type() {
    let s = restore();
    assert_eq!(s.typed("count", "3").unwrap(), json!(3));
    assert_eq!(s.typed("ratio", "0.75").unwrap(), json!(0.75));
    assert_eq!(s.typed("dry_run", "true").unwrap(), json!(true));
    assert_eq!(
        s.typed("env", "007").unwrap(),
        json!("007"),
        "a string stays text"
    );
    assert_eq!(s.typed("unknown", "x").unwrap(), json!("x"));
    let e = s.typed("count", "three").unwrap_err();
    assert_eq!(e.to_string(), r#"params.count: "three" is not an integer"#);
    assert!(s.typed("dry_run", "yes").is_err());
    assert!(s.typed("ratio", "NaN").is_err());
}

#[test]
fn a_schema_travels_in_a_spec_as_its_json() {
    let s = restore();
    let text = serde_json::to_string(&s).unwrap();
    let back: ParamsSchema = serde_json::from_str(&text).unwrap();
    assert_eq!(back, s);
    let bad = serde_json::from_str::<ParamsSchema>(r#"{"properties": {"a": {"type": "x"}}}"#);
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("params.properties.a.type"));
}

#[test]
fn a_trigger_s_mapping_takes_values_from_the_result() {
    let s = schema(json!({
        "properties": {
            "db": {"type": "string", "pattern": "^[a-z]+$"},
            "keep": {"type": "integer", "default": 7},
            "pw": {"type": "string", "secret": true}
        },
        "required": ["db"]
    }))
    .unwrap();
    let mapping: BTreeMap<String, String> =
        [("db".to_string(), "/out/database".to_string())].into();
    s.check_mapping(&mapping).unwrap();
    let to_secret: BTreeMap<String, String> = [("pw".to_string(), "/pw".to_string())].into();
    assert!(s
        .check_mapping(&to_secret)
        .unwrap_err()
        .message
        .contains("secret"));
    let not_pointer: BTreeMap<String, String> = [("db".to_string(), "db".to_string())].into();
    assert!(s.check_mapping(&not_pointer).is_err());
    let result = json!({"out": {"database": "sales"}});
    let p = s.fill_from_result(&mapping, Some(&result), 4).unwrap();
    assert_eq!(p.to_json(), json!({"db": "sales", "keep": 7}));
    let e = s
        .fill_from_result(&mapping, Some(&json!({})), 4)
        .unwrap_err();
    assert_eq!(e.at, "params.db");
    assert!(
        e.message
            .contains("job 4's result has nothing at \"/out/database\""),
        "{e}"
    );
    let e = s.fill_from_result(&mapping, None, 4).unwrap_err();
    assert!(e.message.contains("left no result"), "{e}");
    let e = s
        .fill_from_result(&mapping, Some(&json!({"out": {"database": "Bad Name"}})), 4)
        .unwrap_err();
    assert!(e.message.ends_with("(from job 4's result)"), "{e}");
}

#[test]
fn defaults_fill_a_run_nobody_gave_values() {
    let s = restore();
    assert_eq!(
        s.defaults().to_json(),
        json!({"count": 3, "dry_run": false})
    );
}
