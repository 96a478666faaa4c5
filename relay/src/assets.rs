//! Shell completions and man pages of `runner-relay`, generated from its
//! clap definitions as `runner`'s are.
//!
//! `runner-relay generate-assets` writes them into `completions/` and
//! `man/` (beside `runner`'s); a test regenerates them into a temp dir and
//! fails when the checked-in copies are stale.
//!
//! The same steps as `cli/src/assets.rs`, written twice on purpose: the two
//! binaries share no crate but `proto` (wire types only), and a crate of its
//! own for forty lines of build tooling would cost more than it saves.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::args::Cli;

/// The binary's name, for completions and page names.
const NAME: &str = "runner-relay";

/// What an exit status means (the relay has few: it reports what went
/// wrong on stderr instead).
pub const EXIT_STATUS: &[(u8, &str)] = &[
    (0, "success"),
    (1, "the command failed; stderr says why and, where it can, what to do (`audit verify`: the chain is broken, naming the first bad entry)"),
    (2, "usage error: an unknown flag or a bad value"),
];

/// Writes completions to `root/completions` and man pages to `root/man`.
/// Returns the files written.
pub fn generate(root: &Path) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let completions = root.join("completions");
    fs_err::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::PowerShell] {
        let mut command = Cli::command();
        let path = clap_complete::generate_to(shell, &mut command, NAME, &completions)
            .with_context(|| format!("writing {shell} completions"))?;
        written.push(path);
    }
    let man = root.join("man");
    fs_err::create_dir_all(&man)?;
    let mut command = Cli::command();
    command.build();
    write_pages(&command, NAME, NAME, &man, &mut written)?;
    written.sort();
    Ok(written)
}

/// One page per command and subcommand: `runner-relay.1`,
/// `runner-relay-admin-create-key.1`, …; `invocation` is how the page's
/// synopsis spells the command (`runner-relay admin create-key`).
fn write_pages(
    command: &clap::Command,
    name: &str,
    invocation: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    if command.is_hide_set() {
        return Ok(());
    }
    let page = command
        .clone()
        .name(name.to_owned())
        .bin_name(invocation.to_owned());
    let mut buffer = Vec::new();
    clap_mangen::Man::new(page)
        .date("")
        .manual("runner-relay manual")
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
        write_pages(
            sub,
            &format!("{name}-{}", sub.get_name()),
            &format!("{invocation} {}", sub.get_name()),
            dir,
            written,
        )?;
    }
    Ok(())
}

/// The EXIT STATUS section, from [`EXIT_STATUS`].
fn exit_status_section() -> String {
    let mut text = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in EXIT_STATUS {
        let meaning = meaning.replace('\\', "\\\\").replace('-', "\\-");
        text.push_str(&format!(".TP\n\\fB{code}\\fR\n{meaning}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fails when the checked-in completions or man pages of `runner-relay`
    /// differ from what the clap definitions generate. Refresh with
    /// `cargo run -p runner-relay -- generate-assets`.
    #[test]
    fn checked_in_completions_and_man_pages_are_current() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let fresh = tempfile::tempdir().expect("tempdir");
        let files = generate(fresh.path()).expect("generate");
        assert!(
            files.len() > 8,
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
            "stale generated files (run `cargo run -p runner-relay -- generate-assets`): {stale:?}"
        );
    }

    #[test]
    fn pages_name_the_binary_and_its_exit_codes() {
        let fresh = tempfile::tempdir().expect("tempdir");
        generate(fresh.path()).expect("generate");
        let page =
            std::fs::read_to_string(fresh.path().join("man/runner-relay-admin-create-key.1"))
                .expect("a page per subcommand");
        assert!(page.contains("runner\\-relay admin create\\-key"), "{page}");
        for (code, _) in EXIT_STATUS {
            assert!(page.contains(&format!("\\fB{code}\\fR")), "{code}");
        }
    }
}
