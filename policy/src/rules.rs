//! Rules: `*`-only glob patterns with an action, their evaluation order, and
//! the matching primitives the checker and the linter need.
//!
//! Matching is hand-written rather than delegated to `globset` because the
//! loader refuses every glob metacharacter except `*`, so a pattern is just a
//! list of literal pieces separated by stars. That makes three questions
//! cheap and exact:
//!
//! * does a concrete text match (greedy leftmost search of the pieces);
//! * does *every* text of a symbolic shape (literals and dynamic holes) match
//!   (substitute a sentinel character no pattern can contain for each hole:
//!   only a `*` can absorb it, and if it does, it absorbs any value);
//! * can *some* text of a symbolic shape match (intersection of two star
//!   patterns, a small dynamic programme).
//!
//! `globset` answers only the first, and would need escaping for `?`, `[`
//! and `{`, which we refuse anyway.

use serde::Serialize;
use std::cmp::Reverse;

/// What a rule does with a text it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The text may run.
    Allow,
    /// The text may not run.
    Deny,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
        })
    }
}

/// One `pattern: action` entry of the permission file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pattern: String,
    action: Action,
    /// Line of the pattern in the file (1-based), when known.
    line: Option<usize>,
    /// Literal pieces between the stars; `pieces.len() == stars + 1`.
    pieces: Vec<String>,
}

/// The character that stands for a dynamic hole when testing containment.
/// Patterns containing it are refused at load time.
pub(crate) const HOLE: char = '\0';

impl Rule {
    pub(crate) fn new(pattern: String, action: Action, line: Option<usize>) -> Rule {
        let pieces = pattern.split('*').map(str::to_owned).collect();
        Rule {
            pattern,
            action,
            line,
            pieces,
        }
    }

    /// The pattern as written in the file.
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// The rule's action.
    pub fn action(&self) -> Action {
        self.action
    }

    /// Line of the pattern in the permission file, when known.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Length (in bytes) of the literal text before the first `*`; the whole
    /// pattern when it has no star. This is the specificity used for ordering.
    pub fn literal_prefix_len(&self) -> usize {
        self.pieces[0].len()
    }

    /// True for patterns made only of stars: they match every text.
    pub fn is_catch_all(&self) -> bool {
        self.pieces.iter().all(String::is_empty)
    }

    /// Anchored match of a concrete text: `*` matches any sequence, including
    /// spaces, `/` and newlines.
    pub fn matches(&self, text: &str) -> bool {
        glob_match(&self.pieces, text)
    }

    /// Every text obtained by replacing the holes of `shape` matches.
    pub(crate) fn contains_all(&self, shape: &str) -> bool {
        glob_match(&self.pieces, shape)
    }

    /// Some text obtained by replacing the holes of `shape` matches.
    pub(crate) fn intersects(&self, shape: &str) -> bool {
        star_patterns_intersect(shape, &self.pattern)
    }
}

fn glob_match(pieces: &[String], text: &str) -> bool {
    let first = &pieces[0];
    if pieces.len() == 1 {
        return text == first;
    }
    if !text.starts_with(first.as_str()) {
        return false;
    }
    let last = &pieces[pieces.len() - 1];
    if text.len() < first.len() + last.len() || !text.ends_with(last.as_str()) {
        return false;
    }
    // Leftmost greedy search of the middle pieces is exact for star-only globs.
    let mut rest = &text[first.len()..text.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece.as_str()) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Do two patterns over `*` (where `HOLE` in `a` also means "any string")
/// share at least one concrete text?
fn star_patterns_intersect(a: &str, b: &str) -> bool {
    let a: Vec<Option<char>> = a
        .chars()
        .map(|c| if c == HOLE || c == '*' { None } else { Some(c) })
        .collect();
    let b: Vec<Option<char>> = b
        .chars()
        .map(|c| if c == '*' { None } else { Some(c) })
        .collect();
    // reach[j]: position j of `b` is reachable having consumed a[..i].
    let mut reach = vec![false; b.len() + 1];
    reach[0] = true;
    for i in 0..=a.len() {
        // Closure within the row: a star on either side may skip a symbol of `b`.
        for j in 0..b.len() {
            if reach[j] && (a.get(i) == Some(&None) || b[j].is_none()) {
                reach[j + 1] = true;
            }
        }
        if i == a.len() {
            break;
        }
        let mut next = vec![false; b.len() + 1];
        for j in 0..=b.len() {
            if !reach[j] {
                continue;
            }
            let star_a = a[i].is_none();
            let star_b = j < b.len() && b[j].is_none();
            if star_a || star_b {
                next[j] = true;
            }
            if j < b.len() {
                if let (Some(x), Some(y)) = (a[i], b[j]) {
                    if x == y {
                        next[j + 1] = true;
                    }
                }
            }
        }
        if !next.iter().any(|&r| r) {
            return false;
        }
        reach = next;
    }
    reach[b.len()]
}

/// Sort rules into evaluation order: longest literal prefix first, pure
/// catch-alls last, deny before allow on equal prefixes (so that when both
/// match, deny wins), then by pattern so the order never depends on the file.
pub(crate) fn sort_rules(rules: &mut [Rule]) {
    rules.sort_by(|x, y| {
        (
            x.is_catch_all(),
            Reverse(x.literal_prefix_len()),
            x.action == Action::Allow,
            &x.pattern,
        )
            .cmp(&(
                y.is_catch_all(),
                Reverse(y.literal_prefix_len()),
                y.action == Action::Allow,
                &y.pattern,
            ))
    });
}

/// The rules of a permission file in evaluation order, with the questions
/// the checker asks of them.
#[derive(Debug, Clone)]
pub(crate) struct RuleSet {
    ordered: Vec<Rule>,
    /// True when the rules can never deny (allow-only with a catch-all).
    never_denies: bool,
}

/// How a candidate text was decided: the verdict, the deciding rule's
/// pattern, and why when no rule alone explains it.
pub(crate) type Verdict = (Action, Option<String>, Option<String>);

impl RuleSet {
    pub(crate) fn new(mut rules: Vec<Rule>) -> RuleSet {
        sort_rules(&mut rules);
        let never_denies = rules.iter().all(|r| r.action() == Action::Allow)
            && rules.iter().any(Rule::is_catch_all);
        RuleSet {
            ordered: rules,
            never_denies,
        }
    }

    pub(crate) fn ordered(&self) -> &[Rule] {
        &self.ordered
    }

    pub(crate) fn never_denies(&self) -> bool {
        self.never_denies
    }

    /// The rule that decides a concrete text.
    pub(crate) fn first_match(&self, text: &str) -> Option<&Rule> {
        let first = text.as_bytes().first().copied();
        self.ordered.iter().find(|r| {
            // Cheap rejection on the first literal byte before the full match.
            match (r.pattern().as_bytes().first(), first) {
                (Some(b'*'), _) | (None, _) => r.matches(text),
                (Some(p), Some(t)) => *p == t && r.matches(text),
                (Some(_), None) => false,
            }
        })
    }

    /// Decide a concrete text: the first matching rule, else deny.
    pub(crate) fn decide_text(&self, text: &str) -> Verdict {
        match self.first_match(text) {
            Some(r) => (r.action(), Some(r.pattern().to_owned()), None),
            None => (Action::Deny, None, Some("no rule matches".to_owned())),
        }
    }

    /// Decide a text with dynamic holes: allowed only if every value of the
    /// holes is allowed. Conservative: an allow rule must cover the whole
    /// shape, and no deny rule tried before it may match any of its values.
    pub(crate) fn decide_shape(&self, shape: &str) -> Verdict {
        for rule in &self.ordered {
            if rule.contains_all(shape) {
                return (
                    rule.action(),
                    Some(rule.pattern().to_owned()),
                    Some("dynamic parts covered".to_owned()),
                );
            }
            if rule.action() == Action::Deny && rule.intersects(shape) {
                return (
                    Action::Deny,
                    Some(rule.pattern().to_owned()),
                    Some("a run-time value could make this match a deny rule".to_owned()),
                );
            }
        }
        (
            Action::Deny,
            None,
            Some("no rule matches every run-time value".to_owned()),
        )
    }

    /// Decide a text that only a rule naming it may allow: the first
    /// matching rule decides, but an allow counts only from a rule whose
    /// pattern passes `names_it`; `why` explains a refused broad allow.
    pub(crate) fn decide_named(
        &self,
        text: &str,
        names_it: impl Fn(&Rule) -> bool,
        why: &str,
    ) -> Verdict {
        match self.first_match(text) {
            Some(rule) if rule.action() == Action::Allow && !names_it(rule) => (
                Action::Deny,
                Some(rule.pattern().to_owned()),
                Some(why.to_owned()),
            ),
            Some(rule) => (rule.action(), Some(rule.pattern().to_owned()), None),
            None => (Action::Deny, None, Some("no rule matches".to_owned())),
        }
    }
}

/// Why a rule can never decide anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintWarning {
    /// The pattern of the useless rule.
    pub pattern: String,
    /// Its line in the file, when known.
    pub line: Option<usize>,
    /// Explanation, naming the rule that makes it useless.
    pub message: String,
}

impl std::fmt::Display for LintWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// The pattern as a symbolic shape: its stars become holes.
fn shape_of(rule: &Rule) -> String {
    rule.pattern.replace('*', &HOLE.to_string())
}

/// Rules (in evaluation order) that can never decide anything.
pub(crate) fn lint(ordered: &[Rule]) -> Vec<LintWarning> {
    let mut warnings = Vec::new();
    for (i, rule) in ordered.iter().enumerate() {
        let shape = shape_of(rule);
        // Unreachable: an earlier rule matches everything this one matches.
        if let Some(earlier) = ordered[..i].iter().find(|e| e.contains_all(&shape)) {
            warnings.push(LintWarning {
                pattern: rule.pattern.clone(),
                line: rule.line,
                message: format!(
                    "rule \"{}\" is unreachable: every command it matches is decided first by \"{}\" ({})",
                    rule.pattern, earlier.pattern, earlier.action
                ),
            });
            continue;
        }
        // Redundant: without it, the same action would be taken anyway by a
        // later rule covering all of it, and nothing in between could differ.
        for (k, later) in ordered.iter().enumerate().skip(i + 1) {
            if later.action != rule.action && later.intersects(&shape) {
                break;
            }
            if later.action == rule.action && later.contains_all(&shape) {
                let between_ok = ordered[i + 1..k]
                    .iter()
                    .all(|m| m.action == rule.action || !m.intersects(&shape));
                if between_ok {
                    warnings.push(LintWarning {
                        pattern: rule.pattern.clone(),
                        line: rule.line,
                        message: format!(
                            "rule \"{}\" is redundant: \"{}\" ({}) decides the same for everything it matches",
                            rule.pattern, later.pattern, later.action
                        ),
                    });
                }
                break;
            }
        }
        // A deny rule with nothing after it is redundant when there is no
        // catch-all (unmatched commands are denied anyway); we do not report
        // that: writing denies explicitly is good practice.
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(p: &str) -> Rule {
        Rule::new(p.to_owned(), Action::Allow, None)
    }

    #[test]
    fn glob_basics() {
        assert!(rule("cat *").matches("cat x"));
        assert!(!rule("cat *").matches("cat"));
        assert!(rule("echo a*b").matches("echo ab"));
        assert!(rule("*").matches(""));
        assert!(rule("a*b*c").matches("a\nb/c"));
        assert!(!rule("a*b*c").matches("acb"));
        assert!(rule("ls").matches("ls"));
        assert!(!rule("ls").matches("LS"));
    }

    #[test]
    fn symbolic() {
        let h = HOLE.to_string();
        assert!(rule("cat *").contains_all(&format!("cat {h}")));
        assert!(!rule("cat x*").contains_all(&format!("cat {h}")));
        assert!(rule("kubectl delete *").intersects(&format!("kubectl {h} pod x")));
        assert!(!rule("rm *").intersects(&format!("X={h} cat")));
        assert!(rule("*").intersects(""));
        assert!(!rule("a").intersects("b"));
        assert!(rule("a*c").intersects(&format!("{h}c")));
    }
}
