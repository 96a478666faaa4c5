//! Words after the shell's static expansions: quote removal, escape and
//! ANSI-C decoding, and brace expansion. What cannot be known before run time
//! (parameters, substitutions, tildes, unquoted globs) becomes a dynamic
//! fragment that keeps its source text for display.

use crate::rules::HOLE;

/// A piece of an expanded word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Frag {
    /// Text known statically.
    Lit(String),
    /// A run-time value; the string is the source text, for display.
    Dyn(String),
}

/// One word after static expansion.
pub(crate) type Word = Vec<Frag>;

pub(crate) fn lit(s: &str) -> Word {
    vec![Frag::Lit(s.to_owned())]
}

/// Whether a word is made only of characters that no expansion of bash
/// touches (no quotes, escapes, `$`, backquotes, tildes, braces, globs,
/// extglob parentheses, `#` or `!`): then it expands to itself, as one
/// word that cannot vanish.
pub(crate) fn is_plain(raw: &str) -> bool {
    !raw.is_empty()
        && raw.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'-' | b'_' | b'.' | b'/' | b',' | b':' | b'=' | b'+' | b'@' | b'%' | b'^'
                )
        })
}

pub(crate) fn dyn_word(source: &str) -> Word {
    vec![Frag::Dyn(source.to_owned())]
}

/// The word's text if it has no dynamic part.
pub(crate) fn static_text(word: &Word) -> Option<String> {
    let mut out = String::new();
    for frag in word {
        match frag {
            Frag::Lit(s) => out.push_str(s),
            Frag::Dyn(_) => return None,
        }
    }
    Some(out)
}

pub(crate) fn is_static(word: &Word) -> bool {
    word.iter().all(|f| matches!(f, Frag::Lit(_)))
}

/// Join words with single spaces into one fragment list.
pub(crate) fn join(words: &[Word]) -> Word {
    let mut out: Word = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            push_lit(&mut out, " ");
        }
        for frag in word {
            match frag {
                Frag::Lit(s) => push_lit(&mut out, s),
                Frag::Dyn(s) => out.push(Frag::Dyn(s.clone())),
            }
        }
    }
    out
}

pub(crate) fn push_lit(word: &mut Word, s: &str) {
    if let Some(Frag::Lit(last)) = word.last_mut() {
        last.push_str(s);
    } else {
        word.push(Frag::Lit(s.to_owned()));
    }
}

/// Text for display: dynamic parts as written in the script.
pub(crate) fn display(word: &Word) -> String {
    word.iter()
        .map(|f| match f {
            Frag::Lit(s) | Frag::Dyn(s) => s.as_str(),
        })
        .collect()
}

/// Text for symbolic matching: each dynamic part becomes one hole.
pub(crate) fn shape(word: &Word) -> String {
    let mut out = String::new();
    for frag in word {
        match frag {
            Frag::Lit(s) => out.push_str(s),
            Frag::Dyn(_) => out.push(HOLE),
        }
    }
    out
}

/// An element of a word before brace expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Atom {
    /// An unquoted character (brace and glob characters are special).
    Char(char),
    /// Quoted or escaped text: always literal.
    Quoted(String),
    /// A run-time value (source text).
    Dyn(String),
}

/// Upper bound on the words one brace expansion may produce.
pub(crate) const MAX_BRACE_WORDS: usize = 4096;

/// Brace-expand, then turn unquoted glob characters into dynamic words.
/// `Err` when the expansion would exceed [`MAX_BRACE_WORDS`].
#[cfg(test)]
pub(crate) fn finish(atoms: Vec<Atom>, source: &str, braces: bool) -> Result<Vec<Word>, String> {
    Ok(finish_flagged(atoms, source, braces)?
        .into_iter()
        .map(|(w, _)| w)
        .collect())
}

/// Like [`finish`], also telling for each word whether it may vanish: an
/// unquoted word made only of expansions (`$F`, `$(cmd)`) expands to no word
/// at all when the value is empty.
pub(crate) fn finish_flagged(
    atoms: Vec<Atom>,
    source: &str,
    braces: bool,
) -> Result<Vec<(Word, bool)>, String> {
    let expanded = if braces {
        let mut budget = MAX_BRACE_WORDS;
        brace_expand(&atoms, &mut budget)?
    } else {
        vec![atoms]
    };
    Ok(expanded
        .into_iter()
        .map(|atoms| {
            let vanishes = !atoms.is_empty() && atoms.iter().all(|a| matches!(a, Atom::Dyn(_)));
            (to_word(atoms, source), vanishes)
        })
        .collect())
}

fn to_word(atoms: Vec<Atom>, source: &str) -> Word {
    // An unquoted glob character makes the whole word a run-time value: it
    // may expand to any number of file names.
    if atoms
        .iter()
        .any(|a| matches!(a, Atom::Char('*' | '?' | '[' | '(')))
    {
        return dyn_word(source);
    }
    let mut word: Word = Vec::new();
    for atom in atoms {
        match atom {
            Atom::Char(c) => {
                let mut buf = [0u8; 4];
                push_lit(&mut word, c.encode_utf8(&mut buf));
            }
            Atom::Quoted(s) => push_lit(&mut word, &s),
            Atom::Dyn(s) => word.push(Frag::Dyn(s)),
        }
    }
    if word.is_empty() {
        word.push(Frag::Lit(String::new()));
    }
    word
}

/// Bash brace expansion over atoms; only unquoted braces and commas count.
fn brace_expand(atoms: &[Atom], budget: &mut usize) -> Result<Vec<Vec<Atom>>, String> {
    for open in 0..atoms.len() {
        if atoms[open] != Atom::Char('{') {
            continue;
        }
        // Find the matching close brace and the top-level commas.
        let mut depth = 0usize;
        let mut commas = Vec::new();
        let mut close = None;
        for (k, atom) in atoms.iter().enumerate().skip(open) {
            match atom {
                Atom::Char('{') => depth += 1,
                Atom::Char('}') => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(k);
                        break;
                    }
                }
                Atom::Char(',') if depth == 1 => commas.push(k),
                _ => {}
            }
        }
        let Some(close) = close else { continue };
        let preamble = &atoms[..open];
        let postscript = &atoms[close + 1..];
        let alternatives: Vec<Vec<Atom>> = if commas.is_empty() {
            match sequence(&atoms[open + 1..close])? {
                Some(items) => items.into_iter().map(|s| vec![Atom::Quoted(s)]).collect(),
                None => continue,
            }
        } else {
            let mut bounds = vec![open];
            bounds.extend(&commas);
            bounds.push(close);
            bounds
                .windows(2)
                .map(|w| atoms[w[0] + 1..w[1]].to_vec())
                .collect()
        };
        let mut out = Vec::new();
        for alternative in alternatives {
            let mut rest = alternative;
            rest.extend_from_slice(postscript);
            for tail in brace_expand(&rest, budget)? {
                if *budget == 0 {
                    return Err(format!(
                        "brace expansion yields more than {MAX_BRACE_WORDS} words"
                    ));
                }
                *budget -= 1;
                let mut word = preamble.to_vec();
                word.extend(tail);
                out.push(word);
            }
        }
        return Ok(out);
    }
    Ok(vec![atoms.to_vec()])
}

/// `{a..e}`, `{1..10..2}`: the items, or `None` if not a sequence.
fn sequence(inner: &[Atom]) -> Result<Option<Vec<String>>, String> {
    let mut text = String::new();
    for atom in inner {
        match atom {
            Atom::Char(c) => text.push(*c),
            _ => return Ok(None),
        }
    }
    let parts: Vec<&str> = text.split("..").collect();
    if parts.len() != 2 && parts.len() != 3 {
        return Ok(None);
    }
    let step: i64 = match parts.get(2) {
        Some(s) => match s.parse::<i64>() {
            Ok(v) => v.checked_abs().unwrap_or(1).max(1),
            Err(_) => return Ok(None),
        },
        None => 1,
    };
    let too_many = || format!("brace sequence {{{text}}} is too long");
    if let (Ok(a), Ok(b)) = (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        let count = (i128::from(a) - i128::from(b)).unsigned_abs() / step as u128 + 1;
        if count > MAX_BRACE_WORDS as u128 {
            return Err(too_many());
        }
        let width =
            if parts[0].starts_with('0') || parts[1].starts_with('0') || parts[0].starts_with("-0")
            {
                parts[0].len().max(parts[1].len())
            } else {
                0
            };
        let mut items = Vec::new();
        let mut v = i128::from(a);
        for _ in 0..count {
            items.push(format!("{v:0width$}"));
            if a <= b {
                v += i128::from(step);
            } else {
                v -= i128::from(step);
            }
        }
        return Ok(Some(items));
    }
    let single = |s: &str| {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    if let (Some(a), Some(b)) = (single(parts[0]), single(parts[1])) {
        let (a, b) = (a as u32, b as u32);
        let mut items = Vec::new();
        let mut v = i64::from(a);
        let count = (i64::from(a) - i64::from(b)).abs() / step + 1;
        for _ in 0..count {
            if let Some(c) = char::from_u32(v as u32) {
                items.push(c.to_string());
            }
            v += if a <= b { step } else { -step };
        }
        return Ok(Some(items));
    }
    Ok(None)
}

/// Decode the body of `$'...'` as bash does. A NUL ends the string.
pub(crate) fn decode_ansi_c(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' || i >= chars.len() {
            out.push(c);
            continue;
        }
        let e = chars[i];
        i += 1;
        let decoded: Option<char> = match e {
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' | 'E' => Some('\x1b'),
            'f' => Some('\x0c'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\x0b'),
            '\\' | '\'' | '"' | '?' => Some(e),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < chars.len() && chars[i].is_digit(8) {
                    v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                // Bash keeps the low byte; bytes >= 0x80 are not valid UTF-8
                // on their own, so they become a replacement character.
                let byte = (v & 0xff) as u8;
                Some(if byte < 0x80 {
                    byte as char
                } else {
                    char::REPLACEMENT_CHARACTER
                })
            }
            'x' | 'u' | 'U' => {
                let max = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                let mut n = 0;
                while n < max && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if n == 0 {
                    out.push('\\');
                    Some(e)
                } else if e == 'x' && v >= 0x80 {
                    Some(char::REPLACEMENT_CHARACTER)
                } else {
                    Some(char::from_u32(v).unwrap_or(char::REPLACEMENT_CHARACTER))
                }
            }
            'c' if i < chars.len() => {
                let ctl = chars[i];
                i += 1;
                Some(char::from_u32((ctl as u32) & 0x1f).unwrap_or('\0'))
            }
            other => {
                out.push('\\');
                Some(other)
            }
        };
        match decoded {
            Some('\0') => break,
            Some(d) => out.push(d),
            None => {}
        }
    }
    out
}

/// Lexical path normalisation: collapse `//`, drop `.`, fold `name/..`.
pub(crate) fn normalize_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if matches!(parts.last(), Some(p) if *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    }
}

/// A normalised absolute path that reaches a file by another name than its
/// own, through a process's root or working directory
/// (`/proc/self/root/etc/passwd` is `/etc/passwd`): matching its text
/// against the rules would miss the rules about the file itself. (A file
/// descriptor, `/dev/fd/3` or `/dev/stderr`, was opened by a redirect that
/// was checked itself.)
pub(crate) fn another_name_for_a_path(normalized: &str) -> bool {
    let mut parts = normalized.trim_start_matches('/').split('/');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some("proc"), Some(_), Some("root" | "cwd"))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_names_for_paths() {
        for path in [
            "/proc/self/root/etc/passwd",
            "/proc/1/root/etc/passwd",
            "/proc/thread-self/cwd/x",
        ] {
            assert!(another_name_for_a_path(path), "{path}");
        }
        for path in [
            "/etc/passwd",
            "/proc/sys/vm/drop_caches",
            "/tmp/proc/self/root/x",
            "/dev/null",
        ] {
            assert!(!another_name_for_a_path(path), "{path}");
        }
    }

    fn chars(s: &str) -> Vec<Atom> {
        s.chars().map(Atom::Char).collect()
    }

    fn expand(s: &str) -> Vec<String> {
        finish(chars(s), s, true)
            .unwrap_or_default()
            .iter()
            .map(display)
            .collect()
    }

    #[test]
    fn braces() {
        assert_eq!(expand("{-rf,/tmp/x}"), ["-rf", "/tmp/x"]);
        assert_eq!(expand("a{b,c}d"), ["abd", "acd"]);
        assert_eq!(expand("{}"), ["{}"]);
        assert_eq!(expand("{a}"), ["{a}"]);
        assert_eq!(expand("{1..3}"), ["1", "2", "3"]);
        assert_eq!(expand("{a,{b,c}}"), ["a", "b", "c"]);
        assert_eq!(expand("{x,{a,b}"), ["{x,a", "{x,b"]);
        assert!(finish(chars("{1..100000}"), "", true).is_err());
    }

    #[test]
    fn ansi_c() {
        assert_eq!(decode_ansi_c(r"\162\155"), "rm");
        assert_eq!(decode_ansi_c(r"\x72\x6d"), "rm");
        assert_eq!(decode_ansi_c(r"a\0b"), "a");
        assert_eq!(decode_ansi_c(r"\u0041"), "A");
    }

    #[test]
    fn paths() {
        assert_eq!(normalize_path("/tmp/../etc//passwd"), "/etc/passwd");
        assert_eq!(normalize_path("/dev/./null"), "/dev/null");
        assert_eq!(normalize_path("a/../../x"), "../x");
        assert_eq!(normalize_path("/.."), "/");
    }
}
