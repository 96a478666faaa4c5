//! Lexical fast path for the commonest scripts: plain words (letters,
//! digits and `_./,:=@%+-`) separated by blanks, joined by `|`, `;`, `&&`
//! and `||`, where a word may also contain single-quoted text and
//! double-quoted text without `$`, `` ` ``, `\` or `!`. In that subset bash
//! has no expansion, redirection or compound syntax, and quote removal is
//! the only transformation, so splitting on blanks and operators and
//! dropping the quotes yields exactly the simple commands the full parser
//! would. Anything else (including reserved words, leading assignments and
//! empty quoted words) falls back to the parser.

use std::borrow::Cow;

use crate::shell::Checker;
use crate::words;

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for",
    "in", "select", "function", "time", "coproc",
];

fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'@' | b'%' | b'+' | b'-'
        )
}

/// Text allowed between quotes: printable ASCII (and the blank), never a
/// quote character of either kind (so that dropping every quote character
/// is exactly quote removal); inside double quotes also never a character
/// that starts an expansion or an escape (`$`, `` ` ``, `\`) or a history
/// expansion (`!`).
fn quotable(b: u8, quote: u8) -> bool {
    let printable = b == b' ' || b.is_ascii_graphic();
    printable
        && b != b'\''
        && b != b'"'
        && (quote == b'\'' || !matches!(b, b'$' | b'`' | b'\\' | b'!'))
}

/// Reads one word starting at `start`; returns its value (quotes removed)
/// and the index after it. `None` when the word leaves the subset.
fn word(script: &str, start: usize) -> Option<(Cow<'_, str>, usize)> {
    let bytes = script.as_bytes();
    let mut i = start;
    let mut quoted = false;
    while i < bytes.len() {
        let b = bytes[i];
        if plain(b) {
            i += 1;
        } else if b == b'\'' || b == b'"' {
            quoted = true;
            i += 1;
            while i < bytes.len() && quotable(bytes[i], b) {
                i += 1;
            }
            if bytes.get(i) != Some(&b) {
                return None;
            }
            i += 1;
        } else {
            break;
        }
    }
    if i == start {
        return None;
    }
    let raw = &script[start..i];
    if !quoted {
        return Some((Cow::Borrowed(raw), i));
    }
    let value: String = raw.chars().filter(|c| *c != '\'' && *c != '"').collect();
    if value.is_empty() {
        return None;
    }
    Some((Cow::Owned(value), i))
}

/// Split into commands; `None` when the script is outside the subset or
/// malformed (the parser then decides and reports the error).
pub(crate) fn split(script: &str) -> Option<Vec<Vec<Cow<'_, str>>>> {
    let bytes = script.as_bytes();
    let mut commands: Vec<Vec<Cow<'_, str>>> = Vec::new();
    let mut current: Vec<Cow<'_, str>> = Vec::new();
    let mut i = 0;
    let mut last_was_semicolon = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b' ' || b == b'\t' {
            i += 1;
            continue;
        }
        if plain(b) || b == b'\'' || b == b'"' {
            let start = i;
            let (value, end) = word(script, start)?;
            let raw = &script[start..end];
            i = end;
            if RESERVED.contains(&raw)
                || RESERVED.contains(&value.as_ref())
                || (current.is_empty() && raw.contains('='))
            {
                return None;
            }
            current.push(value);
            last_was_semicolon = false;
            continue;
        }
        let operator_len = match (b, bytes.get(i + 1)) {
            (b'|', Some(b'|')) | (b'&', Some(b'&')) => 2,
            (b'|', Some(b'&')) => return None,
            (b'|', _) | (b';', _) => 1,
            _ => return None,
        };
        if current.is_empty() {
            return None;
        }
        if b == b';' && bytes.get(i + 1) == Some(&b';') {
            return None;
        }
        commands.push(std::mem::take(&mut current));
        last_was_semicolon = b == b';' && operator_len == 1;
        i += operator_len;
    }
    if current.is_empty() {
        // Only a trailing `;` may end the script without a command after it.
        if !last_was_semicolon || commands.is_empty() {
            return None;
        }
    } else {
        commands.push(current);
    }
    Some(commands)
}

/// Check the script if it is in the subset; false when it is not.
pub(crate) fn check(checker: &mut Checker<'_>, script: &str) -> bool {
    let Some(commands) = split(script) else {
        return false;
    };
    for command in commands {
        let argv = command.iter().map(|w| words::lit(w)).collect();
        checker.argv(argv);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{check, split};

    #[test]
    fn subset() {
        let owned = |commands: Option<Vec<Vec<std::borrow::Cow<'_, str>>>>| {
            commands.map(|c| {
                c.into_iter()
                    .map(|w| w.into_iter().map(|w| w.into_owned()).collect::<Vec<_>>())
                    .collect::<Vec<_>>()
            })
        };
        let expect = |commands: &[&[&str]]| {
            Some(
                commands
                    .iter()
                    .map(|c| c.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>())
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            owned(split("ls -la | grep x")),
            expect(&[&["ls", "-la"], &["grep", "x"]])
        );
        assert_eq!(owned(split("ls;")), expect(&[&["ls"]]));
        assert_eq!(
            owned(split("cat 'a b' | grep \"E*R\"x")),
            expect(&[&["cat", "a b"], &["grep", "E*Rx"]])
        );
        assert_eq!(split("ls 'x"), None);
        assert_eq!(split("ls \"$x\""), None);
        assert_eq!(split("ls \"a\\b\""), None);
        assert_eq!(split("ls \"it's\""), None);
        assert_eq!(split("ls ''"), None);
        assert_eq!(split("ls 'a\nb'"), None);
        assert_eq!(split("'if' x"), None);
        assert_eq!(split("a='1' ls"), None);
        assert_eq!(split("; ls"), None);
        assert_eq!(split("ls &&"), None);
        assert_eq!(split("ls |& x"), None);
        assert_eq!(split("a=1 ls"), None);
        assert_eq!(split("if x"), None);
        assert_eq!(split("ls &"), None);
    }

    #[test]
    fn plain_commands_are_one_command_of_plain_words() {
        use crate::plain_command;
        let argv = |words: &[&str]| Some(words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
        assert_eq!(plain_command("true"), argv(&["true"]));
        assert_eq!(
            plain_command("  ls -la 'a b' \"c*d\";"),
            argv(&["ls", "-la", "a b", "c*d"])
        );
        assert_eq!(
            plain_command("git log --format=%H -n1"),
            argv(&["git", "log", "--format=%H", "-n1"])
        );
        for outside in [
            "",
            " ",
            ";",
            "a | b",
            "a; b",
            "a && b",
            "a &",
            "FOO=1 ls",
            "ls $HOME",
            "ls ~",
            "ls *.rs",
            "ls {a,b}",
            "ls > out",
            "echo `id`",
            "ls \\x",
            "if true",
            "ls\nid",
        ] {
            assert_eq!(plain_command(outside), None, "{outside:?}");
        }
    }

    /// Every script here is in the subset; the fast path must decide it
    /// exactly as the full parser does (same candidates, rules and verdicts).
    #[test]
    fn quoted_words_decide_as_the_parser_does() {
        use crate::shell::Checker;
        use crate::PermissionSet;

        let sets = [
            "permission:\n  '*': deny\n  'cat *': allow\n  'grep *': allow\n  'sort': allow\n  'head *': allow\n  'wc *': allow\n  'echo *': allow\n  'git log *': allow\n  'kubectl get *': allow\n  'rm *': deny\n",
            "permission:\n  '*': allow\n  'rm *': deny\n  'git push *': deny\n  '> *': deny\n",
            "permission:\n  '*': allow\n",
            "permission:\n  'grep a b *': allow\n  'grep *': deny\n  'echo a|b': allow\n  'echo *': deny\n",
        ];
        let scripts = [
            "cat 'app.log' | grep \"ERROR\" | sort | head -n 20 | wc -l",
            "grep 'a b' file",
            "grep \"a*b\" f",
            "echo 'rm -rf /'",
            "'rm' -rf x",
            "r'm' -rf /",
            "\"rm\" x; ls",
            "sudo 'rm' x",
            "env 'A=1' rm x",
            "xargs 'rm'",
            "bash -c 'rm -rf /'",
            "bash -c \"ls; rm x\"",
            "sh -c 'git push origin'",
            "kubectl get 'pods' -A",
            "timeout 5 'rm' x",
            "git log '--format=%H %s'",
            "echo \"a|b\"",
            "echo 'a;b' ; rm x",
            "echo \"~\" '*' \"#x\" '{a,b}' '>' out",
            "nice -n 5 \"git\" push x",
            "git 'push' x && echo \"ok\"",
            "echo a'b'\"c\"d || wc -l",
        ];
        for rules in sets {
            let set = PermissionSet::from_yaml_str(rules).expect("test rules load");
            for script in scripts {
                let mut fast = Checker::new(&set.rules);
                assert!(
                    check(&mut fast, script),
                    "{script:?} should take the fast path"
                );
                let mut slow = Checker::new(&set.rules);
                slow.script(script, 0);
                assert_eq!(
                    crate::finish(fast),
                    crate::finish(slow),
                    "{script:?} with {rules:?}"
                );
            }
        }
    }
}
