//! Parsing of workflow commands (`::name key=value,...::message`) and of the
//! percent escapes CI tools use inside them.

use std::borrow::Cow;

use serde_json::Value;

/// Commands joblog interprets; any other `::name::` line is ordinary text.
const KNOWN: [&str; 12] = [
    "error",
    "warning",
    "notice",
    "info",
    "verbose",
    "debug",
    "progress",
    "group",
    "endgroup",
    "add-mask",
    "set-result",
    "stop-commands",
];

/// A workflow command as written, before its effects.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Command<'a> {
    pub name: &'a str,
    /// Keys as written, values unescaped.
    pub params: Vec<(&'a str, String)>,
    /// As written: each command decides whether its message is escaped.
    pub message: &'a str,
}

/// Parses a line that starts with `::`; `None` means it is ordinary text
/// (unknown name, no closing `::`, or a parameter without `=`).
pub(crate) fn parse(line: &str) -> Option<Command<'_>> {
    let rest = line.strip_prefix("::")?;
    let end = rest.find("::")?;
    let (head, message) = (&rest[..end], &rest[end + 2..]);
    let (name, params_text) = match head.split_once(' ') {
        Some((name, params)) => (name, Some(params)),
        None => (head, None),
    };
    if !KNOWN.contains(&name) {
        return None;
    }
    let mut params = Vec::new();
    for part in params_text.unwrap_or_default().split(',') {
        if part.trim().is_empty() {
            continue;
        }
        let (key, value) = part.split_once('=')?;
        let key = key.trim();
        if key.is_empty() {
            return None;
        }
        params.push((key, unescape(value, true).into_owned()));
    }
    Some(Command {
        name,
        params,
        message,
    })
}

/// Undoes GitHub's escaping: `%25 %0D %0A` everywhere, plus `%3A %2C` in
/// parameter values (where `:` and `,` are delimiters).
pub(crate) fn unescape(text: &str, param: bool) -> Cow<'_, str> {
    if !text.contains('%') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3);
        let decoded = match code {
            Some("25") => Some('%'),
            Some("0D") => Some('\r'),
            Some("0A") => Some('\n'),
            Some("3A") if param => Some(':'),
            Some("2C") if param => Some(','),
            _ => None,
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A parameter value as a field: JSON numbers become numbers (`line=3`),
/// everything else stays text. Integers too large for 64 bits stay text so
/// IDs are not rounded.
pub(crate) fn field_value(value: String) -> Value {
    let looks_numeric = value.starts_with(|c: char| c == '-' || c.is_ascii_digit())
        && value.ends_with(|c: char| c.is_ascii_digit());
    if looks_numeric {
        if let Ok(n) = serde_json::from_str::<serde_json::Number>(&value) {
            let integral = !value.contains(['.', 'e', 'E']);
            if !(integral && n.is_f64()) {
                return Value::Number(n);
            }
        }
    }
    Value::String(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_name_params_and_message() {
        let c = parse("::warning file=app.py, line=3::deprecated call").unwrap();
        assert_eq!(c.name, "warning");
        assert_eq!(
            c.params,
            vec![("file", "app.py".to_string()), ("line", "3".to_string())]
        );
        assert_eq!(c.message, "deprecated call");
        let c = parse("::endgroup::").unwrap();
        assert_eq!((c.name, c.message, c.params.len()), ("endgroup", "", 0));
        // The first `::` after the name closes it; later ones belong to the message.
        assert_eq!(parse("::error::a::b").unwrap().message, "a::b");
    }

    #[test]
    fn bad_shapes_are_not_commands() {
        for line in [
            "::",
            "::::",
            "::warning",
            "::warning deprecated",
            "::bogus::x",
            "::Warning::x",
            ":: warning::x",
            "::warning file::x",
            "::warning =3::x",
            "x::warning::y",
        ] {
            assert_eq!(parse(line), None, "{line}");
        }
        // An empty entry (trailing comma) is tolerated.
        assert!(parse("::warning a=1,::x").is_some());
    }

    #[test]
    fn unescapes_like_github() {
        assert_eq!(unescape("50%25 a%0Db%0Ac", false), "50% a\rb\nc");
        assert_eq!(unescape("a%3Ab%2Cc", false), "a%3Ab%2Cc");
        assert_eq!(unescape("a%3Ab%2Cc", true), "a:b,c");
        assert_eq!(unescape("%252C%", true), "%2C%");
        assert_eq!(unescape("%0", false), "%0");
        assert_eq!(unescape("%é", false), "%é");
        let c = parse("::warning title=a%2Cb%3A%0A::x").unwrap();
        assert_eq!(c.params[0].1, "a,b:\n");
    }

    #[test]
    fn numbers_become_numbers() {
        assert_eq!(field_value("3".into()), json!(3));
        assert_eq!(field_value("-2.5".into()), json!(-2.5));
        assert_eq!(field_value("1e3".into()), json!(1000.0));
        for text in [
            "app.py",
            "",
            " 3",
            "3 ",
            "007",
            "1.",
            "99999999999999999999999",
            "NaN",
        ] {
            assert_eq!(field_value(text.into()), json!(text), "{text}");
        }
    }
}
