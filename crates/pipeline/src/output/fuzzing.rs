//! Thin entry points for the fuzz targets in `fuzz/` to reach parsers
//! that are private to this crate. Not an API: hidden, and they change
//! with the parsers.

/// A workflow command as the parser read it.
#[derive(Debug)]
pub struct ParsedCommand {
    pub name: String,
    /// Keys as written, values unescaped.
    pub params: Vec<(String, String)>,
    /// As written.
    pub message: String,
}

/// `line` as the workflow command parser reads it; `None` for ordinary
/// text.
pub fn parse_command(line: &str) -> Option<ParsedCommand> {
    super::command::parse(line).map(|c| ParsedCommand {
        name: c.name.to_string(),
        params: c
            .params
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        message: c.message.to_string(),
    })
}

/// `text` with GitHub's escapes undone, as in a parameter value (`param`)
/// or in a message.
pub fn unescape(text: &str, param: bool) -> String {
    super::command::unescape(text, param).into_owned()
}
