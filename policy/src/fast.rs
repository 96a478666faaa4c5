//! Lexical fast path for the commonest scripts: plain words (letters,
//! digits and `_./,:=@%+-`) separated by blanks, joined by `|`, `;`, `&&`
//! and `||`. In that subset bash has no quoting, expansion, redirection or
//! compound syntax, so splitting on blanks and operators yields exactly the
//! simple commands the full parser would. Anything else (including reserved
//! words and leading assignments) falls back to the parser.

use crate::decision::CandidateKind;
use crate::shell::{Checker, Stdin};
use crate::words;

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in", "select",
    "function", "time", "coproc",
];

fn plain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'@' | b'%' | b'+' | b'-')
}

/// Split into commands; `None` when the script is outside the subset or
/// malformed (the parser then decides and reports the error).
pub(crate) fn split(script: &str) -> Option<Vec<Vec<&str>>> {
    let bytes = script.as_bytes();
    let mut commands: Vec<Vec<&str>> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut i = 0;
    let mut last_was_semicolon = false;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b' ' || b == b'\t' {
            i += 1;
            continue;
        }
        if plain(b) {
            let start = i;
            while i < bytes.len() && plain(bytes[i]) {
                i += 1;
            }
            let word = &script[start..i];
            if RESERVED.contains(&word) || (current.is_empty() && word.contains('=')) {
                return None;
            }
            current.push(word);
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
        checker.command_words(&[], argv, CandidateKind::Command, &Stdin::Unknown, 0);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn subset() {
        assert_eq!(split("ls -la | grep x"), Some(vec![vec!["ls", "-la"], vec!["grep", "x"]]));
        assert_eq!(split("ls;"), Some(vec![vec!["ls"]]));
        assert_eq!(split("; ls"), None);
        assert_eq!(split("ls &&"), None);
        assert_eq!(split("ls |& x"), None);
        assert_eq!(split("a=1 ls"), None);
        assert_eq!(split("if x"), None);
        assert_eq!(split("ls 'x'"), None);
        assert_eq!(split("ls &"), None);
    }
}
