//! The `.env` format of a template's variables (docs/templates.md):
//!
//! - one `KEY=value` a line, optionally after `export `; blank lines and
//!   lines starting with `#` are skipped;
//! - a key is `[A-Za-z_][A-Za-z0-9_]*`, set at most once;
//! - an unquoted value runs to the end of the line, trimmed, and a `#`
//!   after whitespace starts a comment;
//! - `'…'` is taken literally; `"…"` reads the escapes `\n`, `\r`, `\t`,
//!   `\"` and `\\` (any other backslash stays as written); both may span
//!   lines, and only a comment may follow the closing quote;
//! - nothing is expanded (`$HOME` is five characters).
//!
//! Every error names the line it is on (for an unclosed quote, the line
//! that opened it).

use runner_proto::sandbox::EnvVar;

/// Why a `.env` text could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DotenvError {
    /// From 1.
    pub line: usize,
    pub message: String,
}

/// One variable and the line it was set on (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub line: usize,
    pub var: EnvVar,
}

/// The variables of a `.env` text, in order.
pub fn parse(text: &str) -> Result<Vec<EnvVar>, DotenvError> {
    Ok(parse_entries(text)?
        .into_iter()
        .map(|entry| entry.var)
        .collect())
}

/// [`parse`], with the line each variable is on.
pub fn parse_entries(text: &str) -> Result<Vec<Entry>, DotenvError> {
    let mut reader = Reader {
        rest: text,
        line: 1,
    };
    let mut entries: Vec<Entry> = Vec::new();
    while !reader.rest.is_empty() {
        let line = reader.line;
        let Some(var) = reader.statement()? else {
            continue;
        };
        if let Some(first) = entries.iter().find(|entry| entry.var.name == var.name) {
            return Err(DotenvError {
                line,
                message: format!("{} is already set on line {}", var.name, first.line),
            });
        }
        entries.push(Entry { line, var });
    }
    Ok(entries)
}

/// The text not read yet, and the line it starts on.
struct Reader<'a> {
    rest: &'a str,
    line: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, message: impl Into<String>) -> DotenvError {
        DotenvError {
            line: self.line,
            message: message.into(),
        }
    }

    /// Takes the rest of the current line (without its line break) and
    /// moves to the next.
    fn take_line(&mut self) -> &'a str {
        let (line, rest) = match self.rest.split_once('\n') {
            Some((line, rest)) => {
                self.line += 1;
                (line, rest)
            }
            None => (self.rest, ""),
        };
        self.rest = rest;
        line.strip_suffix('\r').unwrap_or(line)
    }

    /// Skips spaces and tabs (not line breaks).
    fn skip_blanks(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// Reads one line's statement: `None` for a blank or comment line.
    fn statement(&mut self) -> Result<Option<EnvVar>, DotenvError> {
        self.skip_blanks();
        if self.rest.starts_with(['#', '\n', '\r']) {
            let line = self.line;
            let rest = self.take_line();
            if rest.starts_with('\r') {
                return Err(DotenvError {
                    line,
                    message: "a carriage return that does not end the line".to_owned(),
                });
            }
            return Ok(None);
        }
        if self.rest.is_empty() {
            return Ok(None);
        }
        if let Some(after) = self.rest.strip_prefix("export") {
            if after.starts_with([' ', '\t']) {
                self.rest = after;
                self.skip_blanks();
            }
        }
        let name = self.key()?;
        self.skip_blanks();
        match self.rest.strip_prefix('=') {
            Some(after) => self.rest = after,
            None => {
                let found = self
                    .rest
                    .chars()
                    .next()
                    .filter(|c| *c != '\n' && *c != '\r');
                return Err(self.error(match found {
                    Some(c) => format!("expected `=` after {name}, found {c:?}"),
                    None => format!("expected `=` after {name}: a line sets KEY=value"),
                }));
            }
        }
        self.skip_blanks();
        let value = match self.rest.chars().next() {
            Some('\'') => self.quoted('\'')?,
            Some('"') => self.quoted('"')?,
            _ => self.unquoted(),
        };
        if value.contains('\0') {
            return Err(self.error(format!("the value of {name} contains a NUL character")));
        }
        Ok(Some(EnvVar { name, value }))
    }

    /// Reads a key: `[A-Za-z_][A-Za-z0-9_]*`.
    /// The word at the cursor, for an error message (at most 40
    /// characters, up to `=` or white space).
    fn word(&self) -> String {
        self.rest
            .chars()
            .take_while(|c| !matches!(c, '=' | '\n' | '\r' | ' ' | '\t'))
            .take(40)
            .collect()
    }

    fn key(&mut self) -> Result<String, DotenvError> {
        let end = self
            .rest
            .char_indices()
            .find(|(at, c)| {
                !(c.is_ascii_alphabetic() || *c == '_' || (*at > 0 && c.is_ascii_digit()))
            })
            .map_or(self.rest.len(), |(at, _)| at);
        if end == 0 {
            let word = self.word();
            return Err(self.error(format!(
                "{word:?} is not a variable name: a name starts with a letter or `_` and has \
                 only letters, digits and `_`"
            )));
        }
        let (key, rest) = self.rest.split_at(end);
        if !rest.starts_with(['=', ' ', '\t', '\n', '\r']) && !rest.is_empty() {
            let word = self.word();
            return Err(self.error(format!(
                "{word:?} is not a variable name: a name has only letters, digits and `_`"
            )));
        }
        self.rest = rest;
        Ok(key.to_owned())
    }

    /// An unquoted value: the rest of the line, trimmed, up to a comment.
    fn unquoted(&mut self) -> String {
        let line = self.take_line();
        let mut end = line.len();
        let mut previous_blank = true;
        for (at, c) in line.char_indices() {
            if c == '#' && previous_blank {
                end = at;
                break;
            }
            previous_blank = c == ' ' || c == '\t';
        }
        line[..end].trim_matches([' ', '\t']).to_owned()
    }

    /// A quoted value, `self.rest` starting at its opening quote.
    fn quoted(&mut self, quote: char) -> Result<String, DotenvError> {
        let opened = self.line;
        let mut value = String::new();
        let mut chars = self.rest[quote.len_utf8()..].char_indices();
        let offset = quote.len_utf8();
        let mut lines = 0;
        let closed_at = loop {
            let Some((at, c)) = chars.next() else {
                return Err(DotenvError {
                    line: opened,
                    message: format!(
                        "the {} quote opened here is never closed",
                        if quote == '"' { "double" } else { "single" }
                    ),
                });
            };
            match c {
                c if c == quote => break offset + at + c.len_utf8(),
                '\\' if quote == '"' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, 'r')) => value.push('\r'),
                    Some((_, 't')) => value.push('\t'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, other)) => {
                        if other == '\n' {
                            lines += 1;
                        }
                        value.push('\\');
                        value.push(other);
                    }
                    None => value.push('\\'),
                },
                '\n' => {
                    lines += 1;
                    value.push('\n');
                }
                c => value.push(c),
            }
        };
        self.rest = &self.rest[closed_at..];
        self.line += lines;
        let closing_line = self.line;
        self.skip_blanks();
        let after = self.take_line();
        if !after.is_empty() && !after.starts_with('#') {
            return Err(DotenvError {
                line: closing_line,
                message: format!(
                    "unexpected text after the closing quote: {:?}",
                    after.chars().take(40).collect::<String>()
                ),
            });
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(text: &str) -> Vec<(String, String)> {
        parse(text)
            .unwrap_or_else(|error| panic!("{text:?}: {error}"))
            .into_iter()
            .map(|var| (var.name, var.value))
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    fn error(text: &str) -> String {
        match parse(text) {
            Ok(vars) => panic!("{text:?} parsed as {vars:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn plain_lines_exports_comments_and_blanks() {
        let text = "# settings\n\nA=1\nexport B=two words\n  C = spaced  \nD=\nE=x # note\nF=a#b\n\tG=tab\r\nexportH=1\n";
        assert_eq!(
            vars(text),
            pairs(&[
                ("A", "1"),
                ("B", "two words"),
                ("C", "spaced"),
                ("D", ""),
                ("E", "x"),
                ("F", "a#b"),
                ("G", "tab"),
                ("exportH", "1"),
            ])
        );
        assert_eq!(vars(""), pairs(&[]));
        assert_eq!(vars("A=1"), pairs(&[("A", "1")]), "no final line break");
        assert_eq!(vars("_x9=y"), pairs(&[("_x9", "y")]));
        assert_eq!(
            vars("URL=http://h/?a=b&c=$HOME"),
            pairs(&[("URL", "http://h/?a=b&c=$HOME")])
        );
    }

    #[test]
    fn single_quotes_are_literal() {
        assert_eq!(
            vars(r#"A='x\ny "z" # not a comment' # a comment"#),
            pairs(&[("A", r#"x\ny "z" # not a comment"#)])
        );
        assert_eq!(vars("A=''"), pairs(&[("A", "")]));
    }

    #[test]
    fn double_quotes_read_escapes() {
        assert_eq!(
            vars(r#"A="line\nnext \"q\" back\\slash \t tab \$ kept""#),
            pairs(&[("A", "line\nnext \"q\" back\\slash \t tab \\$ kept")])
        );
    }

    #[test]
    fn quoted_values_span_lines_and_count_them() {
        let text = "A=1\nKEY=\"-----BEGIN-----\nabc\n-----END-----\"\nB='x\ny'\nC=3\n";
        assert_eq!(
            vars(text),
            pairs(&[
                ("A", "1"),
                ("KEY", "-----BEGIN-----\nabc\n-----END-----"),
                ("B", "x\ny"),
                ("C", "3"),
            ])
        );
        let entries = parse_entries(text).expect("accepted");
        let lines: Vec<usize> = entries.iter().map(|entry| entry.line).collect();
        assert_eq!(lines, [1, 2, 5, 7]);
        // The line after a multi-line value is counted right in errors too.
        assert_eq!(error("A=\"x\ny\"\nB=1\n9X=2\n"), error_at(4));
    }

    fn error_at(line: usize) -> String {
        format!(
            "line {line}: \"9X\" is not a variable name: a name starts with a letter or `_` and \
             has only letters, digits and `_`"
        )
    }

    /// Every text of up to five characters from the format's own
    /// characters reads or fails with a line number within the text: no
    /// panic, no loop.
    #[test]
    fn short_texts_never_panic() {
        const ALPHABET: [char; 11] = ['A', '=', '"', '\'', '\\', '#', ' ', '\n', '\r', 'x', 'é'];
        let mut text = String::new();
        let mut indices = Vec::new();
        loop {
            text.clear();
            text.extend(indices.iter().map(|&index: &usize| ALPHABET[index]));
            if let Err(error) = parse(&text) {
                assert!(
                    error.line >= 1 && error.line <= text.matches('\n').count() + 1,
                    "{text:?}: {error}"
                );
            }
            // The next combination, shortest first.
            let mut position = 0;
            loop {
                if position == indices.len() {
                    if indices.len() == 5 {
                        return;
                    }
                    indices.push(0);
                    break;
                }
                indices[position] += 1;
                if indices[position] < ALPHABET.len() {
                    break;
                }
                indices[position] = 0;
                position += 1;
            }
        }
    }

    /// A value written in double quotes with its escapes reads back as it
    /// was, whatever it holds.
    #[test]
    fn escaped_values_read_back() {
        let values = [
            "",
            "plain",
            "two\nlines",
            "quote \" inside",
            "back\\slash\\",
            "tab\tand\rreturn",
            "# not a comment",
            "'single'",
            "ünïcödé ✓",
            "trailing space ",
            "\\n literally",
        ];
        let mut text = String::new();
        for (index, value) in values.iter().enumerate() {
            let escaped = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n")
                .replace('\r', "\\r")
                .replace('\t', "\\t");
            text.push_str(&format!("V{index}=\"{escaped}\"\n"));
        }
        let read = parse(&text).expect("escaped values read");
        let values_read: Vec<&str> = read.iter().map(|var| var.value.as_str()).collect();
        assert_eq!(values_read, values);
    }

    /// The example of docs/templates.md reads as the page says.
    #[test]
    fn the_documented_example_reads_as_documented() {
        let docs = include_str!("../../../docs/templates.md");
        let example = docs
            .split_once("## The `.env` format\n\n```sh\n")
            .and_then(|(_, rest)| rest.split_once("```"))
            .map(|(example, _)| example)
            .expect("the example");
        let read = vars(example);
        let value = |name: &str| {
            read.iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.as_str())
        };
        assert_eq!(value("LANG"), Some("C.UTF-8"));
        assert_eq!(value("GREETING"), Some("hello world"));
        assert_eq!(value("LITERAL"), Some(r"no $expansion, no \n escapes"));
        assert_eq!(value("MOTD"), Some("first line\nsecond line"));
        assert_eq!(
            value("CERT"),
            Some("-----BEGIN CERTIFICATE-----\nMIIB...\n-----END CERTIFICATE-----")
        );
        assert_eq!(read.len(), 6);
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(error("A=1\n\n9X=2\n"), error_at(3));
        assert_eq!(
            error("A=1\nJUST_A_WORD\n"),
            "line 2: expected `=` after JUST_A_WORD: a line sets KEY=value"
        );
        assert_eq!(
            error("A=1\nB:2\n"),
            "line 2: \"B:2\" is not a variable name: a name has only letters, digits and `_`"
        );
        assert_eq!(error("A B=1"), "line 1: expected `=` after A, found 'B'");
        assert_eq!(
            error("A=1\nB=\"open\nC=2\n"),
            "line 2: the double quote opened here is never closed"
        );
        assert_eq!(
            error("A='open"),
            "line 1: the single quote opened here is never closed"
        );
        assert_eq!(
            error("A=1\nB=\"x\" y\n"),
            "line 2: unexpected text after the closing quote: \"y\""
        );
        assert_eq!(
            error("A=\"x\ny\" z\nB=1"),
            "line 2: unexpected text after the closing quote: \"z\""
        );
        assert_eq!(
            error("A=1\nB=2\nA=3\n"),
            "line 3: A is already set on line 1"
        );
        assert_eq!(
            error("A=\"a\\0b\"\nB=x\0y"),
            "line 2: the value of B contains a NUL character"
        );
        assert!(error("=1").starts_with("line 1: \"\" is not a variable name"));
        assert!(error("export =1").starts_with("line 1: \"\" is not a variable name"));
    }
}
