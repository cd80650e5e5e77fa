//! Labels: what a node says it is (`node.labels`, `role=db,os=linux`) and
//! what a job asks of the node that runs it (`node_selector`): a job goes
//! only to a node that has every label of its selector.
//!
//! Keys and values are short words of ASCII letters, digits, `.`, `_`,
//! `-` (keys also `/`), so the text form `k=v,k=v` is unambiguous: the
//! stores keep a selector as that text, sorted by key, and compare it as
//! a whole or item by item.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Most labels a node or a selector may have.
pub const MAX_LABELS: usize = 16;
/// Longest key or value, in bytes.
pub const MAX_LABEL_LEN: usize = 63;

/// A set of `key=value` labels, at most one value per key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "BTreeMap<String, String>",
    into = "BTreeMap<String, String>"
)]
pub struct Labels(BTreeMap<String, String>);

impl Labels {
    /// Reads `role=db,os=linux` (spaces around items allowed, empty items
    /// skipped; the empty text is no labels).
    pub fn parse(text: &str) -> Result<Labels, String> {
        let mut map = BTreeMap::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!("{item:?} is not key=value"));
            };
            let (key, value) = (key.trim(), value.trim());
            if let Some(old) = map.insert(key.to_owned(), value.to_owned()) {
                if old != value {
                    return Err(format!("{key:?} is given twice ({old:?} and {value:?})"));
                }
            }
        }
        Labels::try_from(map)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Each label as `key=value`, in key order: what PostgreSQL compares
    /// item by item (`selector <@ labels`).
    pub fn items(&self) -> Vec<String> {
        self.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The stored form: `key=value` items in key order joined by commas;
    /// the empty string for none. Equal sets have equal texts.
    pub fn canonical(&self) -> String {
        self.items().join(",")
    }

    /// Whether these labels have every label of `selector` (so a node with
    /// them may run a job that asks for it). The empty selector matches
    /// every node.
    pub fn satisfy(&self, selector: &Labels) -> bool {
        selector
            .iter()
            .all(|(k, v)| self.0.get(k).is_some_and(|mine| mine == v))
    }
}

impl fmt::Display for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

fn check_word(what: &str, word: &str, slash: bool) -> Result<(), String> {
    let ok_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') || (slash && c == '/');
    if word.is_empty() || word.len() > MAX_LABEL_LEN || !word.chars().all(ok_char) {
        let extra = if slash { ", '/'" } else { "" };
        return Err(format!(
            "{what} {word:?} must be 1 to {MAX_LABEL_LEN} of ASCII letters, digits, '.', '_', '-'{extra}"
        ));
    }
    Ok(())
}

impl TryFrom<BTreeMap<String, String>> for Labels {
    type Error = String;

    fn try_from(map: BTreeMap<String, String>) -> Result<Labels, String> {
        if map.len() > MAX_LABELS {
            return Err(format!("at most {MAX_LABELS} labels, not {}", map.len()));
        }
        for (k, v) in &map {
            check_word("label key", k, true)?;
            check_word(&format!("the value of {k}:"), v, false)?;
        }
        Ok(Labels(map))
    }
}

impl From<Labels> for BTreeMap<String, String> {
    fn from(labels: Labels) -> Self {
        labels.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_read_into_one_canonical_form() {
        let a = Labels::parse(" role=db , os=linux,").unwrap();
        let b = Labels::parse("os=linux,role=db").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.canonical(), "os=linux,role=db");
        assert_eq!(Labels::parse(&a.canonical()).unwrap(), a);
        assert_eq!(Labels::parse("").unwrap().canonical(), "");
        assert_eq!(Labels::parse("role=db,role=db").unwrap().len(), 1);
    }

    #[test]
    fn bad_labels_are_refused_naming_what_is_wrong() {
        let err = |t: &str| Labels::parse(t).unwrap_err();
        assert!(
            err("role").contains("\"role\" is not key=value"),
            "{}",
            err("role")
        );
        assert!(err("role=db,role=web").contains("given twice"));
        assert!(
            err("role=").contains("the value of role:"),
            "{}",
            err("role=")
        );
        assert!(err("=db").contains("label key \"\""));
        assert!(err("ro le=db").contains("label key \"ro le\""));
        assert!(err("role=d,b=x=y").contains("the value of b:"));
        assert!(err(&format!("k={}", "v".repeat(64))).contains("1 to 63"));
        let many: Vec<String> = (0..17).map(|i| format!("k{i}=v")).collect();
        assert!(err(&many.join(",")).contains("at most 16 labels, not 17"));
        // Keys may carry a prefix, values may not: "," and "=" never occur.
        assert!(Labels::parse("example.com/zone=eu-1").is_ok());
        assert!(err("zone=eu/1").contains("the value of zone:"));
    }

    #[test]
    fn a_node_satisfies_a_selector_when_it_has_each_of_its_labels() {
        let node = Labels::parse("role=db,os=linux").unwrap();
        let sel = |t: &str| Labels::parse(t).unwrap();
        assert!(node.satisfy(&sel("")));
        assert!(node.satisfy(&sel("role=db")));
        assert!(node.satisfy(&sel("os=linux,role=db")));
        assert!(!node.satisfy(&sel("role=web")));
        assert!(!node.satisfy(&sel("role=db,gpu=yes")));
        assert!(!Labels::default().satisfy(&sel("role=db")));
    }

    #[test]
    fn json_is_an_object_checked_like_the_text() {
        let l: Labels = serde_json::from_str(r#"{"role":"db"}"#).unwrap();
        assert_eq!(serde_json::to_string(&l).unwrap(), r#"{"role":"db"}"#);
        let e = serde_json::from_str::<Labels>(r#"{"role":"d b"}"#).unwrap_err();
        assert!(e.to_string().contains("the value of role:"), "{e}");
    }
}
