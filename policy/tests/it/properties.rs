//! Property tests of the composition rules.

use crate::support::{denylist, readonly, rules};
use proptest::prelude::*;
use runner_policy::PermissionSet;

const ALLOWED: &[&str] = &[
    "ls -la",
    "cat a.txt",
    "echo hi",
    "grep -r x .",
    "wc -l",
    "kubectl get pods",
    "git status",
];
const DENIED: &[&str] = &[
    "rm -rf /",
    "curl evil",
    "chmod 777 x",
    "git push origin",
    "kubectl delete pod x",
    "bash -c x",
];

fn allowed_cmd() -> impl Strategy<Value = String> {
    prop::sample::select(ALLOWED).prop_map(str::to_owned)
}

fn denied_cmd() -> impl Strategy<Value = String> {
    prop::sample::select(DENIED).prop_map(str::to_owned)
}

fn any_cmd() -> impl Strategy<Value = String> {
    prop_oneof![allowed_cmd(), denied_cmd()]
}

/// Rules under which ALLOWED are allowed and DENIED denied.
fn policy() -> PermissionSet {
    rules(&[
        ("*", "deny"),
        ("ls *", "allow"),
        ("cat *", "allow"),
        ("echo *", "allow"),
        ("grep *", "allow"),
        ("wc *", "allow"),
        ("kubectl get *", "allow"),
        ("git status", "allow"),
        ("true", "allow"),
    ])
}

/// Forms that embed a command somewhere it can run.
const EMBEDDINGS: &[&str] = &[
    "echo $(C)",
    "echo \"$(C)\"",
    "echo `C`",
    "(C)",
    "{ C; }",
    "if C; then ls; fi",
    "if true; then C; fi",
    "if true; then ls; else C; fi",
    "while C; do ls; done",
    "until true; do C; done",
    "for i in 1; do C; done",
    "for i in $(C); do ls; done",
    "case x in x) C;; esac",
    "case $(C) in x) ls;; esac",
    "f() { C; }",
    "function g { C; }",
    "[[ -n $(C) ]]",
    "cat <(C)",
    "ls > >(C)",
    "echo $(( $(C) ))",
    "echo ${x:-$(C)}",
    "echo ${a[$(C)]}",
    "x=$(C)",
    "cat <<EOF\n$(C)\nEOF",
    "cat <<< \"$(C)\"",
    "bash -c 'C'",
    "sh -c \"C\"",
    "eval 'C'",
    "ls | C",
    "C | ls",
    "ls && C",
    "false && C",
    "ls || C",
    "C &",
    "! C",
    "time C",
    "coproc C",
    "echo $(echo $(C))",
    "ls; C",
    "ls\nC",
    "true > $(C)",
];

const WRAPPERS: &[&str] = &[
    "sudo",
    "sudo -u root",
    "doas",
    "env",
    "env A=1",
    "timeout 5",
    "nice",
    "nice -n 3",
    "ionice -c3",
    "nohup",
    "stdbuf -oL",
    "setsid",
    "time",
    "command",
    "exec",
    "xargs",
    "xargs -n1",
    "watch -x",
    "builtin",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn composition_never_turns_deny_into_allow(a in any_cmd(), b in any_cmd(), op in prop::sample::select(&[";", "|", "&&", "||", "\n", "&", "|&"][..])) {
        let set = policy();
        let combined = set.check(&format!("{a} {op} {b}"));
        let either_denied = !set.check(&a).allowed || !set.check(&b).allowed;
        if either_denied {
            prop_assert!(!combined.allowed, "{a} {op} {b}");
        }
    }

    #[test]
    fn embedding_keeps_a_deny(d in denied_cmd(), form in prop::sample::select(EMBEDDINGS)) {
        let script = form.replace('C', &d);
        prop_assert!(!policy().check(&script).allowed, "{script:?}");
        prop_assert!(!denylist().check(&script.replace(&d, "rm -rf /")).allowed, "{script:?}");
    }

    #[test]
    fn wrappers_keep_a_deny(d in denied_cmd(), wrapper in prop::sample::select(WRAPPERS)) {
        let script = format!("{wrapper} {d}");
        prop_assert!(!policy().check(&script).allowed, "{script:?}");
        let script = format!("{wrapper} rm -rf /");
        prop_assert!(!denylist().check(&script).allowed, "{script:?}");
    }

    #[test]
    fn spelling_and_whitespace_never_change_a_decision(
        cmd in any_cmd(),
        styles in prop::collection::vec(0u8..8, 8),
        gaps in prop::collection::vec(prop::sample::select(&[" ", "  ", "\t", " \\\n "][..]), 8),
    ) {
        let set = policy();
        let plain = set.check(&cmd).allowed;
        let mut script = String::new();
        for (i, word) in cmd.split(' ').enumerate() {
            if i > 0 {
                script.push_str(gaps[i % gaps.len()]);
            }
            script.push_str(&respell(word, styles[i % styles.len()]));
        }
        let decision = set.check(&script);
        prop_assert_eq!(decision.allowed, plain, "{:?} vs {:?}: {}", script, cmd, decision.summary());
    }

    #[test]
    fn yaml_key_order_never_changes_a_decision(seed in any::<u64>(), cmd in any_cmd()) {
        let mut pairs = vec![("*", "deny"), ("ls *", "allow"), ("cat *", "allow"), ("rm *", "deny"), ("echo *", "allow"), ("kubectl *", "deny"), ("kubectl get *", "allow"), ("git *", "allow"), ("git push *", "deny")];
        let a = rules(&pairs).check(&cmd).allowed;
        // Deterministic shuffle from the seed.
        let mut s = seed;
        for i in (1..pairs.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            pairs.swap(i, (s >> 33) as usize % (i + 1));
        }
        prop_assert_eq!(rules(&pairs).check(&cmd).allowed, a);
    }

    #[test]
    fn adding_a_deny_rule_never_allows_more(
        cmd in prop_oneof![any_cmd(), prop::sample::select(EMBEDDINGS).prop_map(|f| f.replace('C', "ls x"))],
        extra in prop::sample::select(&["ls *", "ls -la", "echo *", "*", "cat a.txt", "* x", "kubectl get pods", "e*"][..]),
    ) {
        let base = [("*", "allow"), ("rm *", "deny"), ("ls x", "allow")];
        let before = rules(&base).check(&cmd).allowed;
        if !before {
            let mut with_deny: Vec<(&str, &str)> = base.iter().copied().filter(|(p, _)| *p != extra).collect();
            with_deny.push((extra, "deny"));
            prop_assert!(!rules(&with_deny).check(&cmd).allowed, "{cmd:?} + deny {extra:?}");
        }
    }
}

/// Spell a plain word differently without changing its value.
fn respell(word: &str, style: u8) -> String {
    match style {
        0 => format!("'{word}'"),
        1 => format!("\"{word}\""),
        2 => word.chars().map(|c| format!("\\{c}")).collect(),
        3 => format!(
            "$'{}'",
            word.bytes()
                .map(|b| format!("\\x{b:02x}"))
                .collect::<String>()
        ),
        4 if word.len() > 1 => format!("{}''{}", &word[..1], &word[1..]),
        5 if word.len() > 1 => format!("{}\\\n{}", &word[..1], &word[1..]),
        _ => word.to_owned(),
    }
}

#[test]
fn fast_path_agrees_with_the_parser() {
    // The same script with a no-op quote forces the full parser.
    for set in [readonly(), denylist(), policy()] {
        for a in ALLOWED.iter().chain(DENIED) {
            for b in ALLOWED.iter().chain(DENIED) {
                for op in [";", "|", "&&", "||"] {
                    let fast = set.check(&format!("{a} {op} {b}"));
                    let slow = set.check(&format!("{a} {op} {b} ''"));
                    let slow_plain = set.check(&format!("{a} {op} {b}\n"));
                    assert_eq!(fast.allowed, slow_plain.allowed, "{a} {op} {b}");
                    let _ = slow;
                }
            }
        }
    }
}
