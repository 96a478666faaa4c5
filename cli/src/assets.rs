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
    let page = command
        .clone()
        .name(name.to_owned())
        .bin_name(name.replace('-', " "));
    let mut buffer = Vec::new();
    clap_mangen::Man::new(page)
        .date("")
        .manual("runner manual")
        .render(&mut buffer)
        .with_context(|| format!("rendering the man page of {name}"))?;
    buffer.extend_from_slice(exit_status_section().as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;

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
