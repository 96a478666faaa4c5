//! The subcommands, one module each, and what they share: logging, store
//! location, and the shutdown signal.

mod admin;
mod audit;
mod dev;
mod serve;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use crate::args::{Cli, Command, LogFormat, StoreArgs};
use crate::report::Hinted;
use crate::store::{self, Store};

/// Runs a parsed command line.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    init_logging(cli.log_format, cli.access_log);
    match cli.command {
        Command::Serve(args) => serve::run(*args).await,
        Command::Admin(args) => admin::run(args).await,
        Command::Dev(args) => dev::run(args).await,
        Command::GenerateAssets { out } => {
            for path in crate::assets::generate(&out)? {
                println!("wrote {}", path.display());
            }
            Ok(())
        }
    }
}

fn init_logging(format: LogFormat, access_log: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"))
        // The flag alone decides, whatever RUST_LOG says of other targets:
        // off, the access log's spans and lines are never even built.
        .add_directive(crate::http::invoke::access_log_directive(access_log));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second initialisation (tests calling commands twice) keeps the first.
    let _ = match format {
        LogFormat::Text => builder.with_ansi(use_colour()).try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Colour only on a terminal, never with NO_COLOR.
fn use_colour() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stderr().is_terminal()
}

/// Prints one line on stdout and flushes it at once: tests and scripts
/// read these lines while the process keeps running.
pub(crate) fn say(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}").context("writing to stdout")?;
    stdout.flush().context("flushing stdout")
}

/// The data directory: the flag/env value, else the platform's.
fn data_dir(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(dir.to_owned());
    }
    directories::ProjectDirs::from("dev", "runner", "runner-relay")
        .map(|dirs| dirs.data_dir().to_owned())
        .ok_or_else(|| {
            Hinted::new(
                "no home directory to put the relay's data in",
                "pass --data-dir DIR, or --database-url for a database elsewhere",
            )
            .into()
        })
}

/// The error of binding `address`, with what to do about the usual causes.
pub(crate) fn bind_error(address: std::net::SocketAddr, error: std::io::Error) -> anyhow::Error {
    let hint = match error.kind() {
        std::io::ErrorKind::AddrInUse => Some(format!(
            "another process listens on {address}; stop it, or pick another address with --listen"
        )),
        std::io::ErrorKind::PermissionDenied if address.port() < 1024 => Some(
            "ports below 1024 need root or CAP_NET_BIND_SERVICE; pick a port above 1023 with --listen"
                .to_owned(),
        ),
        std::io::ErrorKind::AddrNotAvailable => Some(format!(
            "{} is not an address of this machine; use one it has, or 0.0.0.0 for all",
            address.ip()
        )),
        _ => None,
    };
    let message = format!("binding {address}");
    let error = anyhow::Error::from(error);
    match hint {
        Some(hint) => error.context(Hinted::new(message, hint)),
        None => error.context(message),
    }
}

/// The database URL of the store arguments, creating the directory a
/// SQLite file goes in.
pub(crate) fn database_url(args: &StoreArgs) -> anyhow::Result<String> {
    let location = store_location(args)?;
    if let Some(parent) = location
        .sqlite_file
        .as_deref()
        .and_then(Path::parent)
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        fs_err::create_dir_all(parent)?;
    }
    Ok(location.url)
}

/// Where the store arguments point, before anything is created.
pub(crate) struct StoreLocation {
    pub url: String,
    /// The SQLite file, when the store is one (not in memory).
    pub sqlite_file: Option<PathBuf>,
    /// How the location was chosen, for people.
    pub chosen_by: &'static str,
}

pub(crate) fn store_location(args: &StoreArgs) -> anyhow::Result<StoreLocation> {
    if let Some(url) = &args.database_url {
        let sqlite_file = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
            .map(|path| path.split('?').next().unwrap_or(path))
            .filter(|path| !path.is_empty() && !path.starts_with(':'))
            .map(PathBuf::from);
        return Ok(StoreLocation {
            url: url.clone(),
            sqlite_file,
            chosen_by: "--database-url (or RUNNER_RELAY_DATABASE_URL)",
        });
    }
    let dir = data_dir(args.data_dir.as_deref())?;
    let file = dir.join("relay.db");
    Ok(StoreLocation {
        url: format!("sqlite://{}", file.display()),
        sqlite_file: Some(file),
        chosen_by: if args.data_dir.is_some() {
            "--data-dir (or RUNNER_RELAY_DATA_DIR)"
        } else {
            "the platform data directory, as neither --data-dir nor --database-url was given"
        },
    })
}

/// Takes the SQLite database at `url` for this process alone (`None` for
/// PostgreSQL, which relays share): a second relay on the same file would
/// hold its own runners and answer for environments it cannot reach. The
/// lock is `<database>.lock`, holding the holder's PID, and lasts as long
/// as the returned file is open; the kernel drops it when the process
/// dies, so a crash leaves nothing to clean up. `runner-relay admin` does
/// not take it: it writes to the store a running relay uses.
pub(crate) fn lock_sqlite(url: &str) -> anyhow::Result<Option<std::fs::File>> {
    use std::io::{Read, Seek};
    let Some(path) = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
    else {
        return Ok(None);
    };
    let database = path.split('?').next().unwrap_or(path);
    if database.is_empty() || database.starts_with(':') {
        // In memory: nothing to share.
        return Ok(None);
    }
    let lock_path = format!("{database}.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_path)
        .with_context(|| format!("opening the store's lock file {lock_path}"))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            let who = if holder.is_empty() {
                "another relay".to_owned()
            } else {
                format!("another relay (PID {holder})")
            };
            return Err(Hinted::new(
                format!("{who} already serves the store {database}"),
                "stop that relay first, or give this one its own --data-dir; several relays \
                 share a store only through PostgreSQL (--database-url postgres://…)",
            )
            .into());
        }
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(anyhow::Error::from(error).context(format!("locking {lock_path}")));
        }
    }
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{}", std::process::id())?;
    Ok(Some(file))
}

/// Opens the store, naming the database in the error (without any
/// password a URL might carry).
pub(crate) async fn open_store(url: &str) -> anyhow::Result<Arc<dyn Store>> {
    let message = format!("opening the store at {}", redact_url(url));
    store::open(url).await.map_err(|error| {
        anyhow::Error::from(error).context(Hinted::new(
            message,
            "check --database-url (a sqlite:// file the relay may write, or a postgres:// \
             server that is up and accepts this user)",
        ))
    })
}

fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://<redacted>@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_owned(),
    }
}

/// Cancels the token on SIGINT or SIGTERM.
pub(crate) fn cancel_on_signal(shutdown: CancellationToken) {
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown requested");
        shutdown.cancel();
    });
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; only Ctrl-C stops the relay");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_passwords_are_redacted() {
        assert_eq!(
            redact_url("postgres://relay:hunter2@db:5432/relay"),
            "postgres://<redacted>@db:5432/relay"
        );
        assert_eq!(redact_url("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
    }
}
