//! The permission engine of `runner`: loads the local permission file and
//! decides, statically, whether a shell script an agent sent may run.
//!
//! # Model
//!
//! A permission file maps `*`-glob patterns to `allow` or `deny`. A script is
//! allowed only if every *candidate text* it contains is allowed, where the
//! candidates are (conventions C1–C8 of `shared/policy-cases.yaml`):
//!
//! * every simple command anywhere in the script — pipelines, lists,
//!   subshells, groups, function bodies, every branch of control flow
//!   (reachable or not), `[[ ]]`, `(( ))`, command and process
//!   substitutions, substitutions inside arithmetic, parameter expansion
//!   operands, subscripts, assignment values, redirect targets,
//!   here-strings and unquoted here-document bodies — as its full text, its
//!   text without leading assignments, and its text with `argv[0]` reduced to
//!   its basename;
//! * the command a wrapper runs (`sudo`, `env`, `timeout`, `xargs`,
//!   `find -exec`, ...; unknown options deny), recursively;
//! * every command of a code string (`bash -c`, `eval`, `trap`, `su -c`,
//!   `alias n=...`, a shell reading a here-document), recursively;
//! * every write redirect, as the pseudo-command `> TARGET` with the target
//!   lexically normalised (writes to exactly `/dev/null` are exempt).
//!
//! Words are compared after quote removal, escape and ANSI-C decoding,
//! line-continuation removal and brace expansion, joined by one space. Parts
//! known only at run time (`$X`, `$(...)`, globs, `~`) are *dynamic*: a
//! dynamic command name, wrapped command, code string or write target is
//! denied unless no rule can deny; a dynamic argument is allowed only if
//! every value it could take is allowed (`cat *` allows `cat $F`, while
//! `kubectl $VERB pod` is denied by `kubectl delete *`). An unquoted word
//! made only of expansions may expand to nothing, so the command without it
//! must be allowed too (`head $(cat f)` can run plain `head`; found by the
//! differential test against bash). Arithmetic that
//! reads a variable the script has not set to a number, `${!x}` and
//! `${x@P}` evaluate run-time text as code and count as dynamic code
//! strings. Relative write targets are resolved against the directory a
//! literal `cd` before them moved to; a wrapper that starts an interactive
//! or login shell needs a rule naming that form. docs/permission-file.md
//! describes these decisions.
//!
//! Rules are tried longest literal prefix first, the catch-all `*` last, deny
//! before allow on equal prefixes; the first match decides; no match denies.
//! Empty, comment-only, NUL-containing, oversized (over [`MAX_SCRIPT_BYTES`])
//! or unparseable scripts are denied even when everything is allowed.
//!
//! # Parser decision
//!
//! We parse with brush-parser (pinned `=0.4.0`), a real bash grammar, rather
//! than tree-sitter-bash or a hand-written lexer. Measured against the
//! conformance corpus it gets line continuations inside names (`r\⏎m`) and
//! inside `"$\⏎(...)"` right, which tree-sitter-bash does not, and it reports
//! a missing here-document terminator as an error. Its gaps are handled here:
//!
//! * it leaves words, arithmetic and parameter operands as strings: we run
//!   its word parser on each and recurse into every substitution;
//! * it reads `( (cmd) )` as arithmetic: every arithmetic body is validated
//!   with its arithmetic parser, and in a script with `(` and `(` apart
//!   any name in arithmetic is dynamic code, so `( (rm) )` cannot slip
//!   through;
//! * it does not support `select`: such scripts fail to parse and are denied;
//! * it recurses once per nesting level and would overflow the stack on
//!   10,000 nested `$(`: scripts are capped at [`MAX_SCRIPT_BYTES`], the
//!   nesting is over-estimated by counting brackets and keywords, scripts
//!   above a small estimate are parsed on a stack of their own (on the
//!   calling thread) sized for the estimate, and above 4,096 they are
//!   refused. Substitutions and code strings nested deeper than
//!   [`MAX_SUBSTITUTION_NESTING`] are denied with a message saying so.
//!
//! The full parser is the expensive part of a check, and every word is
//! parsed again by its word parser. A script made only of plain words
//! joined by `|`, `;`, `&&`, `||` (single-quoted text and double-quoted text
//! without expansions included) therefore takes a lexical fast path (module
//! `fast`) that yields the same commands without the parser; tests check
//! both paths agree. Figures: BENCHMARKS.md (`cargo bench -p runner-policy
//! --bench check`).
//!
//! # Matching
//!
//! Only `*` is a wildcard, so matching is hand-written (see [`rules`]); the
//! loader refuses `?`, `[`, `]`, `{`, `}` rather than silently treating them
//! as literals.
#![forbid(unsafe_code)]

mod arith;
mod cwd;
mod decision;
mod fast;
mod load;
pub mod rules;
mod shell;
mod variables;
mod words;
mod wrappers;

pub use decision::{Candidate, CandidateKind, Decision};
pub use load::{LoadError, Problem};
pub use rules::{Action, LintWarning, Rule};
pub use shell::MAX_SUBSTITUTION_NESTING;
pub use variables::code_bearing;

use rules::RuleSet;

use std::path::Path;

/// Scripts longer than this are denied without parsing.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;

/// A loaded permission file: the rules in evaluation order.
#[derive(Debug, Clone)]
pub struct PermissionSet {
    rules: RuleSet,
}

impl PermissionSet {
    /// Load and validate a permission file.
    pub fn load(path: &Path) -> Result<PermissionSet, LoadError> {
        Ok(PermissionSet::from_rules(load::load_file(path)?))
    }

    /// Validate permission-file text (errors are labelled `<inline>`).
    pub fn from_yaml_str(text: &str) -> Result<PermissionSet, LoadError> {
        Ok(PermissionSet::from_rules(load::parse_rules(
            text,
            Path::new("<inline>"),
        )?))
    }

    fn from_rules(rules: Vec<Rule>) -> PermissionSet {
        PermissionSet {
            rules: RuleSet::new(rules),
        }
    }

    /// The rules, in evaluation order.
    pub fn rules(&self) -> &[Rule] {
        self.rules.ordered()
    }

    /// True when no text can ever be denied by these rules.
    pub fn never_denies(&self) -> bool {
        self.rules.never_denies()
    }

    /// The rule that decides a concrete text.
    pub fn first_match(&self, text: &str) -> Option<&Rule> {
        self.rules.first_match(text)
    }

    /// Decide whether a shell script may run.
    pub fn check(&self, script: &str) -> Decision {
        if script.contains('\0') {
            return Decision::refused("the script contains a NUL byte");
        }
        if script.len() > MAX_SCRIPT_BYTES {
            return Decision::refused(format!(
                "the script is {} bytes, more than the limit of {MAX_SCRIPT_BYTES}",
                script.len()
            ));
        }
        if script.trim().is_empty() {
            return Decision::refused("the script is empty");
        }
        let mut checker = shell::Checker::new(&self.rules);
        if !fast::check(&mut checker, script) {
            checker.script(script, 0);
        }
        finish(checker)
    }

    /// Decide whether an argv (run without a shell) may run: it is treated
    /// as one simple command with static words.
    pub fn check_argv(&self, argv: &[String]) -> Decision {
        if argv.is_empty() || argv.iter().all(|a| a.trim().is_empty()) {
            return Decision::refused("the command is empty");
        }
        if argv.iter().any(|a| a.contains('\0')) {
            return Decision::refused("the command contains a NUL byte");
        }
        if argv.iter().map(String::len).sum::<usize>() > MAX_SCRIPT_BYTES {
            return Decision::refused("the command is longer than the limit");
        }
        let mut checker = shell::Checker::new(&self.rules);
        checker.argv(argv.iter().map(|a| words::lit(a)).collect());
        finish(checker)
    }

    /// Decide whether a call may set the environment variable `name` to
    /// `value` for the process it starts (the `env` argument of `shell`,
    /// `git`, …): the text `NAME=VALUE` is matched like a leading
    /// assignment (C2), so `"*": deny` refuses every variable no rule
    /// allows. A variable that makes a shell, the dynamic loader or a tool
    /// run code of its choosing ([`code_bearing`]) needs more than a
    /// broad pattern: only an allow rule whose pattern starts with its
    /// name (or with its family's prefix, `GIT_*`) allows it, so that a
    /// denylist (`"*": allow`) or a loose rule (`"B*": allow`) cannot be
    /// sidestepped with `BASH_ENV` or `LD_PRELOAD`.
    pub fn check_env(&self, name: &str, value: &str) -> Decision {
        if name.contains('\0') || value.contains('\0') {
            return Decision::refused("an environment variable contains a NUL byte");
        }
        let text = format!("{name}={value}");
        let family = variables::code_family(name);
        let (verdict, rule, reason) = self.rules.decide_named(
            &text,
            |rule| family.is_none_or(|family| rule.pattern().starts_with(family)),
            &format!(
                "{name} can make the program run other code: only a rule naming it (e.g. \"{name}=*\") allows it"
            ),
        );
        Decision {
            allowed: verdict == Action::Allow,
            candidates: vec![Candidate {
                text,
                kind: CandidateKind::Environment,
                dynamic: false,
                rule,
                verdict,
                reason,
            }],
            error: None,
        }
    }

    /// Rules that can never decide anything.
    pub fn lint(&self) -> Vec<LintWarning> {
        rules::lint(self.rules.ordered())
    }
}

/// The words of `script` when it is exactly one simple command of plain
/// words: the lexical subset in which bash does nothing but quote removal
/// (no expansion, redirection, assignment, operator or reserved word; see
/// module `fast`). Then `bash -c script` runs this argv and nothing else,
/// so a caller may run it without bash (as GNU make does for recipe lines
/// without shell syntax). `None` for everything else, including two
/// commands, an empty script and a trailing `;` after nothing.
pub fn plain_command(script: &str) -> Option<Vec<String>> {
    let mut commands = fast::split(script)?;
    if commands.len() != 1 {
        return None;
    }
    let words = commands.pop()?;
    Some(words.into_iter().map(|word| word.into_owned()).collect())
}

fn finish(mut checker: shell::Checker<'_>) -> Decision {
    checker.settle();
    let shell::Checker {
        candidates, error, ..
    } = checker;
    if let Some(error) = error {
        return Decision {
            allowed: false,
            candidates,
            error: Some(error),
        };
    }
    if candidates.is_empty() {
        return Decision {
            allowed: false,
            candidates,
            error: Some("the script runs no command and writes no file".to_owned()),
        };
    }
    let allowed = candidates.iter().all(|c| c.verdict == Action::Allow);
    Decision {
        allowed,
        candidates,
        error: None,
    }
}

#[cfg(test)]
mod env_tests {
    use super::*;

    fn rules(yaml: &str) -> PermissionSet {
        PermissionSet::from_yaml_str(yaml).expect("valid rules")
    }

    #[test]
    fn an_allowlist_allows_only_the_variables_it_names() {
        let set = rules("permission:\n  '*': deny\n  'ls *': allow\n  'LANG=*': allow\n  'PATH=/usr/bin': allow\n");
        assert!(set.check_env("LANG", "C.UTF-8").allowed);
        assert!(!set.check_env("FOO", "bar").allowed);
        assert!(!set.check_env("BASH_ENV", "/tmp/x").allowed);
        // Named by a rule: allowed, code-bearing or not, for that value only.
        assert!(set.check_env("PATH", "/usr/bin").allowed);
        assert!(!set.check_env("PATH", "/tmp/evil:/usr/bin").allowed);
        let denied = set.check_env("FOO", "bar");
        assert_eq!(denied.candidates[0].kind, CandidateKind::Environment);
        assert_eq!(denied.candidates[0].text, "FOO=bar");
        assert!(
            denied
                .summary()
                .contains("environment variable \"FOO=bar\""),
            "{}",
            denied.summary()
        );
    }

    #[test]
    fn a_catch_all_allow_does_not_cover_variables_that_run_code() {
        let set = rules("permission:\n  '*': allow\n  'rm *': deny\n");
        assert!(set.check_env("LANG", "C").allowed);
        for (name, value) in [
            ("BASH_ENV", "$(id)"),
            ("ENV", "/tmp/x"),
            ("BASH_FUNC_ls%%", "() { id; }"),
            ("LD_PRELOAD", "/tmp/x.so"),
            ("GIT_CONFIG_VALUE_0", "id"),
            ("PS4", "$(id)"),
            ("SHELLOPTS", "xtrace"),
            ("KUBECONFIG", "/tmp/k"),
            ("PATH", "/tmp"),
        ] {
            let decision = set.check_env(name, value);
            assert!(!decision.allowed, "{name}");
            assert!(
                decision.summary().contains("only a rule naming it"),
                "{}",
                decision.summary()
            );
        }
        // A rule that names one allows it.
        let set = rules("permission:\n  '*': allow\n  'GIT_*': allow\n");
        assert!(set.check_env("GIT_DIR", "/srv/repo").allowed);
        // A loose pattern that happens to match does not.
        let set = rules("permission:\n  '*': deny\n  'B*': allow\n  '*PRELOAD*': allow\n");
        assert!(!set.check_env("BASH_ENV", "/tmp/x").allowed);
        assert!(!set.check_env("LD_PRELOAD", "/tmp/x.so").allowed);
        assert!(set.check_env("BUILD", "1").allowed);
    }

    #[test]
    fn a_deny_rule_denies_a_variable() {
        let set = rules("permission:\n  '*': allow\n  'AWS_*': deny\n");
        assert!(!set.check_env("AWS_PROFILE", "prod").allowed);
        assert!(!set.check_env("A\0B", "x").allowed);
    }
}

#[cfg(test)]
mod evaluated_operand_tests {
    use super::*;

    const ALLOWLIST: &str = "permission:\n  '*': deny\n  'ls': allow\n  'ls *': allow\n  'printf *': allow\n  'test *': allow\n  'read *': allow\n  'declare *': allow\n  'let *': allow\n  'mapfile *': allow\n  'source *': allow\n  'bash *': allow\n";
    const DENYLIST: &str = "permission:\n  '*': allow\n  'rm *': deny\n  'id': deny\n";

    fn check(rules: &str, command: &str) -> Decision {
        PermissionSet::from_yaml_str(rules)
            .expect("valid rules")
            .check(command)
    }

    /// Each runs `id` (or `rm`) in bash 5.2 although no word of it is a
    /// command: found by review, reproduced with `bash -c`.
    #[test]
    fn code_in_evaluated_operands_is_checked() {
        for (rules, command) in [
            (ALLOWLIST, "ls; [[ -v 'a[$(id)]' ]]"),
            (ALLOWLIST, "ls; [[ ! -v 'a[$(id)]' ]]"),
            (ALLOWLIST, "printf -v 'a[$(id >&2)]' x"),
            (ALLOWLIST, "test -v 'a[$(id >&2)]'"),
            (DENYLIST, "[ -v 'a[$(id >&2)]' ]"),
            (DENYLIST, "read 'a[$(id)]' <<<x"),
            (DENYLIST, "declare 'a[$(id)]=1'"),
            (DENYLIST, "declare -i x; x='a[$(rm -rf /tmp/x)]'"),
            (DENYLIST, "declare -n r='a[$(id)]'; echo $r"),
            (DENYLIST, "let 'a[$(id)]'"),
            (DENYLIST, "mapfile -C 'id' -c 1 a <<<x"),
            (DENYLIST, "compgen -C id x"),
            (DENYLIST, "hash -p /usr/bin/id ls; ls"),
            (DENYLIST, "PS4='$(id)'; set -x; ls"),
            (DENYLIST, "BASH_ENV='$(id)' bash -c true"),
            (DENYLIST, "PROMPT_COMMAND=id"),
            (DENYLIST, "source /dev/stdin <<< id"),
            (DENYLIST, "bash /dev/stdin <<< 'rm -rf /x'"),
            (DENYLIST, "unset 'a[$(id)]'"),
            (DENYLIST, "read -pd 'a[$(id)]'"),
            (DENYLIST, "read -rp prompt 'a[$(id)]'"),
            (DENYLIST, "export 'a[$(id)]'=$x"),
            (DENYLIST, "export \"$name\""),
            (DENYLIST, "getopts 'ab:' 'a[$(id)]'"),
        ] {
            let decision = check(rules, command);
            assert!(
                !decision.allowed,
                "{command} was allowed: {}",
                decision.summary()
            );
        }
    }

    #[test]
    fn plain_uses_of_those_builtins_stay_allowed() {
        for (rules, command) in [
            (ALLOWLIST, "printf -v x '%s' y"),
            (ALLOWLIST, "test -v x"),
            (ALLOWLIST, "test -v 'a[1]'"),
            (ALLOWLIST, "ls; [[ -v x ]]"),
            (ALLOWLIST, "read -r line"),
            (ALLOWLIST, "declare -a arr"),
            (ALLOWLIST, "let '2 + 3'"),
            (ALLOWLIST, "source ./env.sh"),
            (ALLOWLIST, "bash ./build.sh"),
            (DENYLIST, "PS4='+ '; set -x; ls"),
            (DENYLIST, "source /dev/stdin <<< 'echo hi'"),
            (DENYLIST, "export PATH=$PATH:/opt/bin"),
            (DENYLIST, "local x=\"$1\""),
            (DENYLIST, "readonly X=$Y"),
            (DENYLIST, "read -p \"Enter $thing: \" answer"),
            (DENYLIST, "read -r -a words"),
            (DENYLIST, "getopts 'ab:' opt \"$@\""),
        ] {
            let decision = check(rules, command);
            assert!(
                decision.allowed,
                "{command} was denied: {}",
                decision.summary()
            );
        }
    }
}

#[cfg(test)]
mod more_wrapper_tests {
    use super::*;

    /// Wrappers beyond the spec's list unwrap too, so a deny rule reaches
    /// the command they run.
    #[test]
    fn a_deny_rule_sees_through_more_wrappers() {
        let set = PermissionSet::from_yaml_str("permission:\n  '*': allow\n  'rm *': deny\n")
            .expect("valid rules");
        for command in [
            "busybox rm -rf x",
            "flock /tmp/l rm x",
            "flock -n /tmp/l rm x",
            "flock -c 'rm x' /tmp/l",
            "flock /tmp/l -c 'rm x'",
            "chroot / rm x",
            "chroot --userspec=1:1 / rm x",
            "taskset 1 rm x",
            "taskset -c 0 rm x",
            "chrt 1 rm x",
            "chrt -f 1 rm x",
            "pkexec rm x",
            "pkexec --user root rm x",
            "runuser -u root -- rm x",
            "runuser -l root -c 'rm x'",
            "sg root -c 'rm x'",
            "sg root 'rm x'",
            "script -c 'rm x' /dev/null",
            "unshare -m rm x",
            "unshare --mount-proc -f rm x",
        ] {
            let decision = set.check(command);
            assert!(!decision.allowed, "{command}: {}", decision.summary());
        }
        for command in [
            "busybox ls",
            "busybox --list",
            "flock /tmp/l ls",
            "taskset -p 1",
            "chrt -p 1",
            "sg root ls",
        ] {
            let decision = set.check(command);
            assert!(decision.allowed, "{command}: {}", decision.summary());
        }
    }
}

#[cfg(test)]
mod structure_tests {
    /// The walker and the wrapper analysis meet at one function: the walker
    /// calls `wrappers::analyse` in one place, and the wrapper analysis
    /// knows nothing of the walker.
    #[test]
    fn the_walker_and_the_wrappers_meet_at_one_function() {
        let wrappers = include_str!("wrappers.rs");
        assert!(!wrappers.contains("crate::shell"));
        assert!(!wrappers.contains("Checker"));
        let walker = include_str!("shell.rs");
        let uses: Vec<&str> = walker
            .lines()
            .filter(|line| line.contains("wrappers::"))
            .map(str::trim)
            .collect();
        assert_eq!(
            uses,
            [
                "use crate::wrappers::{self, Runs, Stdin};",
                "let runs = wrappers::analyse(&base, &argv, stdin);"
            ]
        );
    }
}
