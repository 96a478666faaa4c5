//! Loading the permission file: YAML with a top-level `permission` mapping of
//! pattern to `allow` or `deny`. Loading fails closed on anything doubtful.
//!
//! YAML loaders usually keep the last of two duplicate keys silently, which
//! can hide a deny, and coerce or stringify scalars. We therefore do not
//! deserialize into a map: a small visitor collects the `permission` entries
//! as `(key, value)` pairs in document order, and every check (string keys
//! and values, lowercase action, duplicates, empty patterns, unsupported glob
//! characters) is done on those pairs. serde_norway reports positions only for
//! its own syntax errors, so lines of offending keys are found by looking for
//! the key (plain, single- or double-quoted) at the start of a line.

use crate::rules::{Action, Rule, HOLE};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_norway::Value;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a permission file was refused.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("permission file '{}': cannot read: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The operating system's explanation.
        message: String,
    },
    /// The file is not UTF-8.
    #[error("permission file '{}': not valid UTF-8 (first bad byte at offset {offset})", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The file is not a valid permission file.
    #[error("permission file '{}': {}{problem}", path.display(), line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The line at fault, where it could be determined.
        line: Option<usize>,
        /// What is wrong.
        problem: Problem,
    },
}

impl LoadError {
    /// The line at fault, where known.
    pub fn line(&self) -> Option<usize> {
        match self {
            LoadError::Invalid { line, .. } => *line,
            _ => None,
        }
    }
}

/// What is wrong with a permission file's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// YAML syntax error.
    #[error("invalid YAML: {0}")]
    Yaml(String),
    /// The document is not a mapping.
    #[error("the top level must be a mapping with a `permission` key, found {0}")]
    NotAMapping(&'static str),
    /// No `permission` key; `near` is a top-level key that looks like a
    /// misspelling of it.
    #[error("no `permission` key{}", near.as_ref().map(|key| format!(" (found \"{key}\": did you mean \"permission\"?)")).unwrap_or_default())]
    MissingPermission {
        /// The key that is probably meant as `permission`.
        near: Option<String>,
    },
    /// A top-level key appears twice.
    #[error("duplicate top-level key \"{0}\"")]
    DuplicateTopKey(String),
    /// `permission` is not a mapping.
    #[error("`permission` must be a mapping of pattern to allow or deny, found {0}")]
    PermissionNotMapping(&'static str),
    /// `permission` has no entries.
    #[error("no rules under `permission`")]
    NoRules,
    /// A pattern is not a string.
    #[error("pattern {0} is not a string")]
    NonStringPattern(String),
    /// An action is not a string.
    #[error(
        "action of pattern \"{pattern}\" is not a string: {found} (write \"allow\" or \"deny\")"
    )]
    NonStringAction {
        /// The pattern.
        pattern: String,
        /// The value found.
        found: String,
    },
    /// An action is a string other than `allow` or `deny`.
    #[error(
        "invalid action \"{action}\" for pattern \"{pattern}\": expected \"allow\" or \"deny\""
    )]
    InvalidAction {
        /// The pattern.
        pattern: String,
        /// The action found.
        action: String,
    },
    /// The same pattern appears twice.
    #[error("duplicate pattern \"{0}\"")]
    DuplicatePattern(String),
    /// A pattern is empty or only whitespace.
    #[error("empty pattern \"{0}\"")]
    EmptyPattern(String),
    /// A pattern uses glob syntax other than `*`.
    #[error("pattern \"{pattern}\" contains '{found}': only * is a wildcard (? [ ] {{ }} are not supported)")]
    UnsupportedGlob {
        /// The pattern.
        pattern: String,
        /// The refused character.
        found: char,
    },
    /// A pattern contains a NUL character.
    #[error("pattern \"{0}\" contains a NUL character")]
    NulInPattern(String),
}

/// Raw content of the `permission` key.
enum RawRules {
    Map(Vec<(Value, Value)>),
    Other(&'static str),
}

/// Raw document: the `permission` value, or why there is none.
enum RawDoc {
    Map {
        permission: Option<RawRules>,
        duplicate: Option<String>,
        /// Every string key, in document order.
        keys: Vec<String>,
    },
    Other(&'static str),
}

macro_rules! other_scalars {
    ($what:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Self::Value::other("a boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Self::Value::other("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Self::Value::other("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Self::Value::other("a number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Self::Value::other("a string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::other("null"))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::other("null"))
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(Self::Value::other("a list"))
        }
        fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Ok(Self::Value::other("a tagged value"))
        }
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str($what)
        }
    };
}

impl RawRules {
    fn other(what: &'static str) -> Self {
        RawRules::Other(what)
    }
}

impl RawDoc {
    fn other(what: &'static str) -> Self {
        RawDoc::Other(what)
    }
}

struct RulesVisitor;

impl<'de> Visitor<'de> for RulesVisitor {
    type Value = RawRules;
    other_scalars!("a mapping of pattern to allow or deny");

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRules, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Value>()? {
            let value = map.next_value::<Value>()?;
            entries.push((key, value));
        }
        Ok(RawRules::Map(entries))
    }
}

impl<'de> de::Deserialize<'de> for RawRules {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RulesVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = RawDoc;
    other_scalars!("a mapping with a `permission` key");

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDoc, A::Error> {
        let mut permission = None;
        let mut duplicate = None;
        let mut seen = Vec::new();
        while let Some(key) = map.next_key::<Value>()? {
            let name = match &key {
                Value::String(s) => Some(s.clone()),
                _ => None,
            };
            if let Some(name) = &name {
                if seen.contains(name) && duplicate.is_none() {
                    duplicate = Some(name.clone());
                }
                seen.push(name.clone());
            }
            if name.as_deref() == Some("permission") {
                permission = Some(map.next_value::<RawRules>()?);
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(RawDoc::Map {
            permission,
            duplicate,
            keys: seen,
        })
    }
}

impl<'de> de::Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

/// Whether `found` is probably a misspelling of `wanted`: the same but for
/// case, or at most two single-character edits away (`permissions`,
/// `permision`, `Permission`).
fn looks_like(wanted: &str, found: &str) -> bool {
    found != wanted && edit_distance(wanted, &found.to_lowercase()) <= 2
}

/// Levenshtein distance, by characters (two short keys: quadratic is fine).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current.push(substitute.min(previous[j + 1] + 1).min(current[j] + 1));
        }
        previous = current;
    }
    previous[b.len()]
}

/// Read and validate a permission file.
pub(crate) fn load_file(path: &Path) -> Result<Vec<Rule>, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError::Read {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| LoadError::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    parse_rules(&text, path)
}

/// Validate permission-file text; `path` only labels errors.
pub(crate) fn parse_rules(text: &str, path: &Path) -> Result<Vec<Rule>, LoadError> {
    let invalid = |line: Option<usize>, problem: Problem| LoadError::Invalid {
        path: path.to_owned(),
        line,
        problem,
    };
    let doc: RawDoc = if text.trim().is_empty() {
        RawDoc::Other("an empty document")
    } else {
        serde_norway::from_str(text).map_err(|e| {
            let line = e.location().map(|l| l.line());
            invalid(line, Problem::Yaml(e.to_string()))
        })?
    };
    let (permission, duplicate, keys) = match doc {
        RawDoc::Map {
            permission,
            duplicate,
            keys,
        } => (permission, duplicate, keys),
        RawDoc::Other(found) => return Err(invalid(None, Problem::NotAMapping(found))),
    };
    if let Some(key) = duplicate {
        return Err(invalid(
            find_key_line(text, &key, 2),
            Problem::DuplicateTopKey(key),
        ));
    }
    let entries = match permission {
        None => {
            let near = keys.into_iter().find(|key| looks_like("permission", key));
            let line = near.as_deref().and_then(|key| find_key_line(text, key, 1));
            return Err(invalid(line, Problem::MissingPermission { near }));
        }
        Some(RawRules::Other(found)) => {
            return Err(invalid(
                find_key_line(text, "permission", 1),
                Problem::PermissionNotMapping(found),
            ))
        }
        Some(RawRules::Map(entries)) => entries,
    };
    if entries.is_empty() {
        return Err(invalid(
            find_key_line(text, "permission", 1),
            Problem::NoRules,
        ));
    }
    let mut rules: Vec<Rule> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let pattern = match key {
            Value::String(s) => s,
            other => return Err(invalid(None, Problem::NonStringPattern(describe(&other)))),
        };
        let nth = if rules.iter().any(|r| r.pattern() == pattern) {
            2
        } else {
            1
        };
        let line = find_key_line(text, &pattern, nth);
        if nth == 2 {
            return Err(invalid(line, Problem::DuplicatePattern(pattern)));
        }
        if pattern.trim().is_empty() {
            return Err(invalid(line, Problem::EmptyPattern(pattern)));
        }
        if let Some(found) = pattern
            .chars()
            .find(|c| matches!(c, '?' | '[' | ']' | '{' | '}'))
        {
            return Err(invalid(line, Problem::UnsupportedGlob { pattern, found }));
        }
        if pattern.contains(HOLE) {
            return Err(invalid(line, Problem::NulInPattern(pattern)));
        }
        let action = match value {
            Value::String(s) if s == "allow" => Action::Allow,
            Value::String(s) if s == "deny" => Action::Deny,
            Value::String(action) => {
                return Err(invalid(line, Problem::InvalidAction { pattern, action }))
            }
            other => {
                return Err(invalid(
                    line,
                    Problem::NonStringAction {
                        pattern,
                        found: describe(&other),
                    },
                ))
            }
        };
        rules.push(Rule::new(pattern, action, line));
    }
    Ok(rules)
}

fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("\"{s}\""),
        Value::Sequence(_) => "a list".to_owned(),
        Value::Mapping(_) => "a mapping".to_owned(),
        Value::Tagged(t) => format!("a value tagged {}", t.tag),
    }
}

/// Line (1-based) of the `nth` line that starts (after indentation) with
/// `key` written plain, single- or double-quoted, followed by `:`.
fn find_key_line(text: &str, key: &str, nth: usize) -> Option<usize> {
    let single = format!("'{}'", key.replace('\'', "''"));
    let double = serde_json::to_string(key).ok()?;
    let spellings = [key.to_owned(), single, double];
    let mut count = 0;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let hit = spellings.iter().any(|s| {
            trimmed
                .strip_prefix(s.as_str())
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        });
        if hit {
            count += 1;
            if count == nth {
                return Some(index + 1);
            }
        }
    }
    None
}
