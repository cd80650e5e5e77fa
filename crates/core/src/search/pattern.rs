//! What a search looks for: a literal text (A–Z in either case, as a
//! job's own log search) or a regular expression (RE2 syntax, linear time,
//! case-insensitive unless it says `(?-i)`), and the [`Grams`] every match
//! requires, read from the expression's syntax tree.

use regex_syntax::hir::{Class, Hir, HirKind};

use super::grams::{fold, Grams};
use crate::job::{invalid, ValidationError};
use crate::navigation::LogSearch;

/// Compiled size a regular expression may reach (the regex crate's
/// program and its lazy DFA's cache): a pattern past it is refused.
const MAX_REGEX_BYTES: usize = 1 << 20;

/// Strings an exact set holds at most before it is given up on (`[ab][cd]`
/// is four; `[a-z]{3}` would be thousands).
const MAX_EXACT: usize = 16;

/// Characters a class holds at most to be read as its members.
const MAX_CLASS_CHARS: u32 = 8;

/// What to find in messages.
#[derive(Debug, Clone)]
pub enum SearchPattern {
    Text(LogSearch),
    Regex { regex: regex::Regex, grams: Grams },
}

impl SearchPattern {
    /// `q` as a literal text or, with `regex`, a regular expression. A bad
    /// one (empty, too long, not valid, too large) is an error naming `q`.
    pub fn new(q: &str, regex: bool) -> Result<SearchPattern, ValidationError> {
        let text = LogSearch::new(q)?;
        if !regex {
            return Ok(SearchPattern::Text(text));
        }
        let compiled = regex::RegexBuilder::new(q)
            .case_insensitive(true)
            .size_limit(MAX_REGEX_BYTES)
            .dfa_size_limit(MAX_REGEX_BYTES)
            .build()
            .map_err(|e| match e {
                regex::Error::CompiledTooBig(limit) => invalid(
                    "q",
                    format!("the regular expression is too large: it compiles to more than {limit} bytes"),
                ),
                e => invalid(
                    "q",
                    format!("not a valid regular expression: {}", one_line(&e.to_string())),
                ),
            })?;
        let hir = regex_syntax::ParserBuilder::new()
            .case_insensitive(true)
            .build()
            .parse(q)
            .map_err(|e| {
                invalid(
                    "q",
                    format!(
                        "not a valid regular expression: {}",
                        one_line(&e.to_string())
                    ),
                )
            })?;
        Ok(SearchPattern::Regex {
            regex: compiled,
            grams: Exact::of(&hir).into_grams(),
        })
    }

    /// Whether `message` holds a match.
    pub fn matches(&self, message: &str) -> bool {
        match self {
            SearchPattern::Text(t) => t.matches(message),
            SearchPattern::Regex { regex, .. } => regex.is_match(message),
        }
    }

    /// What every match requires of a segment's text index.
    pub fn grams(&self) -> Grams {
        match self {
            SearchPattern::Text(t) => Grams::text(t.folded().as_bytes()),
            SearchPattern::Regex { grams, .. } => grams.clone(),
        }
    }
}

/// The regex crate's errors draw the pattern over several lines.
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a piece of an expression matches: exactly one of a few strings
/// ([`fold`]ed), or only something that requires some grams.
enum Exact {
    Strings(Vec<Vec<u8>>),
    Requires(Grams),
}

impl Exact {
    fn of(hir: &Hir) -> Exact {
        match hir.kind() {
            HirKind::Empty | HirKind::Look(_) => Exact::Strings(vec![Vec::new()]),
            HirKind::Literal(lit) => Exact::Strings(vec![folded(&lit.0)]),
            HirKind::Class(class) => match class_members(class) {
                Some(members) => Exact::Strings(members),
                None => Exact::Requires(Grams::Any),
            },
            HirKind::Capture(c) => Exact::of(&c.sub),
            HirKind::Repetition(r) => {
                if r.min == 0 {
                    return Exact::Requires(Grams::Any);
                }
                let sub = Exact::of(&r.sub);
                match (r.min, r.max) {
                    (1, Some(1)) => sub,
                    _ => Exact::Requires(sub.into_grams()),
                }
            }
            HirKind::Concat(parts) => concat(parts),
            HirKind::Alternation(arms) => {
                let arms: Vec<Exact> = arms.iter().map(Exact::of).collect();
                let mut union: Vec<Vec<u8>> = Vec::new();
                let all_exact = arms.iter().all(|a| matches!(a, Exact::Strings(_)));
                if all_exact {
                    for arm in &arms {
                        if let Exact::Strings(s) = arm {
                            union.extend(s.iter().cloned());
                        }
                    }
                    union.sort();
                    union.dedup();
                    if union.len() <= MAX_EXACT {
                        return Exact::Strings(union);
                    }
                }
                Exact::Requires(Grams::one_of(
                    arms.into_iter().map(Exact::into_grams).collect(),
                ))
            }
        }
    }

    fn into_grams(self) -> Grams {
        match self {
            Exact::Requires(g) => g,
            Exact::Strings(strings) => {
                Grams::one_of(strings.iter().map(|s| Grams::text(s)).collect())
            }
        }
    }
}

/// A sequence: runs of exact pieces multiply out into strings (while few),
/// and every run and every other piece is required.
fn concat(parts: &[Hir]) -> Exact {
    let mut required = Vec::new();
    let mut run: Vec<Vec<u8>> = vec![Vec::new()];
    let mut all_exact = true;
    for part in parts {
        match Exact::of(part) {
            Exact::Strings(next) if run.len() * next.len() <= MAX_EXACT => {
                run = run
                    .iter()
                    .flat_map(|a| next.iter().map(move |b| [a.as_slice(), b].concat()))
                    .collect();
            }
            Exact::Strings(next) => {
                all_exact = false;
                required.push(Exact::Strings(std::mem::take(&mut run)).into_grams());
                run = next;
            }
            Exact::Requires(g) => {
                all_exact = false;
                required.push(
                    Exact::Strings(std::mem::replace(&mut run, vec![Vec::new()])).into_grams(),
                );
                required.push(g);
            }
        }
    }
    if all_exact {
        return Exact::Strings(run);
    }
    required.push(Exact::Strings(run).into_grams());
    Exact::Requires(Grams::all(required))
}

fn folded(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    fold(text, &mut out);
    out
}

/// The members of a small class, each [`fold`]ed and deduplicated
/// (`(?i)k` is `[Kk\u{212A}]`: one member, `k`).
fn class_members(class: &Class) -> Option<Vec<Vec<u8>>> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut count = 0u32;
    match class {
        Class::Unicode(c) => {
            for r in c.ranges() {
                count += u32::from(r.end()) - u32::from(r.start()) + 1;
                if count > MAX_CLASS_CHARS {
                    return None;
                }
                for ch in r.start()..=r.end() {
                    let mut buf = [0u8; 4];
                    out.push(folded(ch.encode_utf8(&mut buf).as_bytes()));
                }
            }
        }
        Class::Bytes(c) => {
            for r in c.ranges() {
                count += u32::from(r.end()) - u32::from(r.start()) + 1;
                if count > MAX_CLASS_CHARS {
                    return None;
                }
                out.extend((r.start()..=r.end()).map(|b| folded(&[b])));
            }
        }
    }
    out.sort();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grams(q: &str) -> Grams {
        SearchPattern::new(q, true).unwrap().grams()
    }

    #[test]
    fn a_literal_requires_its_folded_text() {
        assert_eq!(grams("Disk Full"), Grams::Text(b"disk full".to_vec()));
        assert_eq!(
            SearchPattern::new("Disk Full", false).unwrap().grams(),
            Grams::Text(b"disk full".to_vec())
        );
    }

    #[test]
    fn sequences_alternations_and_repetitions() {
        assert_eq!(
            grams("error: .* not found"),
            Grams::All(vec![
                Grams::Text(b"error: ".to_vec()),
                Grams::Text(b" not found".to_vec())
            ])
        );
        assert_eq!(
            grams("(timeout|refused)"),
            Grams::OneOf(vec![
                Grams::Text(b"refused".to_vec()),
                Grams::Text(b"timeout".to_vec())
            ])
        );
        assert_eq!(grams("(abc)+"), Grams::Text(b"abc".to_vec()));
        assert_eq!(grams("(abc)*"), Grams::Any);
        assert_eq!(grams("."), Grams::Any);
        assert_eq!(grams("ab"), Grams::Any);
        assert_eq!(grams("[0-9]+ rows"), Grams::Text(b" rows".to_vec()));
        // `[ab]cd` multiplies out.
        assert_eq!(
            grams("[ab]cd"),
            Grams::OneOf(vec![
                Grams::Text(b"acd".to_vec()),
                Grams::Text(b"bcd".to_vec())
            ])
        );
    }

    #[test]
    fn letters_case_insensitive_beyond_ascii_fold_as_the_index_does() {
        // (?i)k also matches KELVIN SIGN, which the index folds to `k`.
        assert_eq!(
            grams("kernel process"),
            Grams::Text(b"kernel process".to_vec())
        );
        let p = SearchPattern::new("kernel", true).unwrap();
        assert!(p.matches("\u{212A}ERNEL"));
    }

    #[test]
    fn regular_expressions_are_case_insensitive_unless_told() {
        let p = SearchPattern::new("disk\\s+full", true).unwrap();
        assert!(p.matches("DISK   FULL"));
        let p = SearchPattern::new("(?-i)disk", true).unwrap();
        assert!(!p.matches("DISK"));
        assert!(p.matches("disk"));
    }

    #[test]
    fn bad_patterns_name_q() {
        let e = SearchPattern::new("(unclosed", true).unwrap_err();
        assert_eq!(e.field, "q");
        assert!(
            e.message.contains("not a valid regular expression"),
            "{}",
            e.message
        );
        assert!(!e.message.contains('\n'));
        let e = SearchPattern::new("\\w{1000}\\w{1000}\\w{1000}", true).unwrap_err();
        assert!(e.message.contains("too large"), "{}", e.message);
        // As text, the same is fine.
        assert!(SearchPattern::new("(unclosed", false).is_ok());
    }
}
