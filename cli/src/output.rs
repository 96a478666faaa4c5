//! Printing for people and for scripts: data to stdout, everything else to
//! stderr; `--json` prints one JSON document.

use std::io::Write;

use anyhow::Result;
use serde::Serialize;

/// Prints `value` as pretty JSON on stdout.
pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<()> {
    // Serialise first: a write error then stays an io::Error (a broken pipe
    // is recognised as such in `main`), not a serde_json one.
    let mut text = serde_json::to_vec_pretty(value)?;
    text.push(b'\n');
    std::io::stdout().lock().write_all(&text)?;
    Ok(())
}

/// Prints aligned `key: value` lines on stdout.
pub fn fields(rows: &[(&str, String)]) -> Result<()> {
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let mut stdout = std::io::stdout().lock();
    for (key, value) in rows {
        writeln!(stdout, "{key:<width$}  {value}")?;
    }
    Ok(())
}

/// Prints a table with a header row on stdout.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut stdout = std::io::stdout().lock();
    let line = |cells: Vec<String>| -> String {
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = widths.get(i).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    writeln!(
        stdout,
        "{}",
        line(header.iter().map(|s| s.to_string()).collect())
    )?;
    for row in rows {
        writeln!(stdout, "{}", line(row.clone()))?;
    }
    Ok(())
}

/// A status line for people on stderr.
pub fn note(message: &str) {
    let _ = writeln!(std::io::stderr(), "{message}");
}

/// Reads one secret line from stdin (or a prompt on a terminal).
pub fn read_secret_line(prompt: &str) -> Result<String> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        let mut stderr = std::io::stderr();
        write!(stderr, "{prompt}")?;
        stderr.flush()?;
    }
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim().to_owned())
}

/// Asks a person on a terminal to confirm a destructive `action` by typing
/// one of `names` (for what cannot be undone on the relay: deleting an
/// environment, revoking its tokens). See [`refuse_without_terminal`] for
/// scripts.
pub fn confirm_by_name<'a>(
    question: &str,
    names: impl IntoIterator<Item = &'a str>,
    action: &str,
) -> Result<()> {
    refuse_without_terminal(action)?;
    let answer = read_secret_line(&format!("{question} Type the name or id to confirm: "))?;
    if names.into_iter().any(|name| name == answer) {
        Ok(())
    } else {
        Err(not_confirmed(action))
    }
}

/// Asks a person on a terminal a yes/no `question` before a destructive
/// `action` on this machine or one that cuts a runner off; anything but
/// `y`/`yes` declines. See [`refuse_without_terminal`] for scripts.
pub fn confirm(question: &str, action: &str) -> Result<()> {
    refuse_without_terminal(action)?;
    let answer = read_secret_line(&format!("{question} [y/N] "))?;
    if matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes") {
        Ok(())
    } else {
        Err(not_confirmed(action))
    }
}

/// Without a terminal to ask on, a destructive command refuses (exit 2,
/// [`crate::exit::USAGE`]) and points at `--yes`, so a script never
/// destroys by accident.
fn refuse_without_terminal(action: &str) -> Result<()> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Ok(());
    }
    Err(crate::exit::ExitError::new(
        crate::exit::USAGE,
        format!("refusing to {action} without confirmation"),
    )
    .with_hint(format!(
        "stdin is not a terminal to ask on; pass --yes to {action} non-interactively"
    ))
    .into())
}

/// A person declined (exit 1, [`crate::exit::FAILURE`]).
fn not_confirmed(action: &str) -> anyhow::Error {
    crate::exit::ExitError::new(
        crate::exit::FAILURE,
        format!("not confirmed; did not {action}"),
    )
    .into()
}
