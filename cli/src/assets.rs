//! Shell completions and man pages, generated from the clap definitions.
//!
//! `runner generate-assets` writes them into `completions/` and `man/`; a
//! test regenerates them into a temp dir and fails when the checked-in
//! copies are stale, so they never drift from `--help`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::Cli;
use crate::exit;

/// Writes completions to `root/completions` and man pages to `root/man`.
/// Returns the files written.
pub fn generate(root: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let completions = root.join("completions");
    fs_err::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
        let mut command = Cli::command();
        let path = clap_complete::generate_to(shell, &mut command, "runner", &completions)
            .with_context(|| format!("writing {shell} completions"))?;
        written.push(path);
    }
    let man = root.join("man");
    fs_err::create_dir_all(&man)?;
    let mut command = Cli::command();
    command.build();
    write_pages(&command, "runner", &man, &mut written)?;
    written.sort();
    Ok(written)
}

/// One page per command and subcommand: `runner.1`, `runner-env-create.1`, …
fn write_pages(
    command: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    if command.is_hide_set() {
        return Ok(());
    }
    let examples = command.get_after_help().map(ToString::to_string);
    // The examples get a section of their own, unfilled (clap_mangen's
    // EXTRA section would let roff fill them into one line).
    let page = command
        .clone()
        .name(name.to_owned())
        .bin_name(name.replace('-', " "))
        .after_help(None::<&str>);
    let mut buffer = Vec::new();
    clap_mangen::Man::new(page)
        .date("")
        .manual("runner manual")
        .render(&mut buffer)
        .with_context(|| format!("rendering the man page of {name}"))?;
    buffer.extend_from_slice(exit_status_section().as_bytes());
    if let Some(examples) = examples {
        buffer.extend_from_slice(examples_section(&examples).as_bytes());
    }
    let path = dir.join(format!("{name}.1"));
    fs_err::write(&path, buffer)?;
    written.push(path);
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        write_pages(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

/// The EXIT STATUS section, from [`exit::TABLE`].
fn exit_status_section() -> String {
    let mut text = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in exit::TABLE {
        let meaning = meaning.replace('\\', "\\\\").replace('-', "\\-");
        text.push_str(&format!(".TP\n\\fB{code}\\fR\n{meaning}\n"));
    }
    text
}

/// The EXAMPLES section from a command's `after_help` (see
/// [`crate::args::examples`]): its heading line dropped, each line kept as
/// it is (`.nf`: no filling, no adjusting, no hyphenation).
fn examples_section(after_help: &str) -> String {
    let mut text = String::from(".SH EXAMPLES\n.nf\n");
    for line in after_help.lines().skip(1) {
        let line = line
            .strip_prefix("  ")
            .unwrap_or(line)
            .replace('\\', "\\e")
            .replace('-', "\\-")
            .replace('\'', "\\(aq");
        // A line starting with `.` or `'` would be a roff request.
        if line.starts_with('.') {
            text.push_str("\\&");
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(".fi\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_stay_one_command_a_line_in_the_man_page() {
        let section =
            examples_section("Examples:\n  # a comment\n  runner run --x 'y'\n\n  .hidden \\ back");
        assert_eq!(
            section,
            ".SH EXAMPLES\n.nf\n# a comment\nrunner run \\-\\-x \\(aqy\\(aq\n\n\\&.hidden \\e back\n.fi\n"
        );
    }

    /// Fails when completions/ or man/ differ from what the clap definitions
    /// generate. Refresh with `cargo run -p runner-cli -- generate-assets`.
    #[test]
    fn checked_in_completions_and_man_pages_are_current() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let fresh = tempfile::tempdir().expect("tempdir");
        let files = generate(fresh.path()).expect("generate");
        assert!(
            files.len() > 20,
            "expected a page per subcommand, got {}",
            files.len()
        );
        let mut stale = Vec::new();
        for file in &files {
            let relative = file.strip_prefix(fresh.path()).expect("under tempdir");
            let checked_in = std::fs::read(repo.join(relative)).unwrap_or_default();
            if checked_in != std::fs::read(file).expect("generated") {
                stale.push(relative.display().to_string());
            }
        }
        assert!(
            stale.is_empty(),
            "stale generated files (run `cargo run -p runner-cli -- generate-assets`): {stale:?}"
        );
    }

    #[test]
    fn the_man_page_documents_exit_codes() {
        let section = exit_status_section();
        for (code, _) in exit::TABLE {
            assert!(section.contains(&format!("\\fB{code}\\fR")), "{code}");
        }
    }
}
