//! `runner service install|uninstall|start|stop|status|logs`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::args::{ServiceCommand, ServiceInstallArgs, ServiceUninstallArgs};
use crate::config::{self, ConfigFile, Dirs};
use crate::credentials::{self, SecretKind};
use crate::exit::{self, ExitError};
use crate::output;
use crate::service::{self, launchd, systemd, RunAs, ServiceSpec};
use crate::{client, env_vars};

/// How long `install` waits for the relay's verdict on the token.
const VERIFY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Present while systemd is the running init system (sd_booted(3)).
const SYSTEMD_RUNNING: &str = "/run/systemd/system";

pub async fn run(dirs: &Dirs, command: ServiceCommand) -> Result<()> {
    match command {
        ServiceCommand::Install(args) => install(dirs, args).await,
        ServiceCommand::Uninstall(args) => uninstall(args),
        ServiceCommand::Start => manage(&["start"]),
        ServiceCommand::Stop => manage(&["stop"]),
        ServiceCommand::Status => manage(&["status"]),
        ServiceCommand::Logs { follow, lines } => logs(follow, lines),
    }
}

/// One file the install writes.
struct PlannedFile {
    path: PathBuf,
    mode: u32,
    content: String,
    /// Shown instead of the content in --dry-run (it holds the token).
    redacted: Option<String>,
}

async fn install(dirs: &Dirs, args: ServiceInstallArgs) -> Result<()> {
    let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let real_system = root == Path::new("/") && !args.dry_run;
    let run_as = match &args.run_as {
        Some(name) => Some(lookup_user(name)?),
        None => None,
    };
    let spec = ServiceSpec {
        binary: args
            .binary
            .clone()
            .unwrap_or_else(|| PathBuf::from(service::BINARY)),
        run_as: run_as.clone(),
        state_dir: PathBuf::from(service::STATE_DIR),
        env_file: PathBuf::from(service::ENV_FILE),
    };

    // Settings: flag/env first, else this user's registration.
    let config = ConfigFile::load(dirs)?;
    let url = match (&args.url, &config.registration) {
        (Some(url), _) => url.clone(),
        (None, Some(registration)) => registration.url.clone(),
        (None, None) => {
            return Err(ExitError::new(exit::CONFIG, "no relay URL for the service")
                .with_hint(
                    "pass --url (or RUNNER_URL) with RUNNER_TOKEN, or `runner register` first",
                )
                .into())
        }
    };
    let url = client::normalise_base_url(&url)?;
    check_binary(&root, &spec.binary, args.dry_run)?;
    let token = match std::env::var(env_vars::TOKEN)
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        Some(token) => crate::secret::Secret::new(token.trim()),
        None => match &config.registration {
            Some(registration) => {
                credentials::load(
                    dirs,
                    SecretKind::RegistrationToken,
                    registration.token_location,
                )
                .await?
            }
            None => {
                return Err(
                    ExitError::new(exit::CONFIG, "no registration token for the service")
                        .with_hint("set RUNNER_TOKEN, or `runner register` first")
                        .into(),
                )
            }
        },
    };
    if !args.no_verify {
        verify_token(&url, &token, args.verify).await?;
    }
    let mut settings = vec![
        ("RUNNER_URL", url.clone()),
        ("RUNNER_TOKEN", token.expose().to_owned()),
    ];
    if let Some(path) = &args.permission_config {
        settings.push(("RUNNER_PERMISSION_CONFIG", path.display().to_string()));
    }
    let mut shown = settings.clone();
    for (key, value) in &mut shown {
        if *key == "RUNNER_TOKEN" {
            *value = token.hint();
        }
    }

    let (definition_path, definition) = if cfg!(target_os = "macos") {
        (PathBuf::from(launchd::PLIST_PATH), launchd::plist(&spec))
    } else {
        (PathBuf::from(systemd::UNIT_PATH), systemd::unit(&spec))
    };
    let files = vec![
        PlannedFile {
            path: service::under_root(&root, &spec.env_file),
            mode: 0o600,
            content: service::env_file_text(&settings),
            redacted: Some(service::env_file_text(&shown)),
        },
        PlannedFile {
            path: service::under_root(&root, &definition_path),
            mode: 0o644,
            content: definition,
            redacted: None,
        },
    ];
    let mut commands: Vec<Vec<String>> = Vec::new();
    if run_as.is_none() && cfg!(target_os = "linux") {
        commands.push(
            [
                "useradd",
                "--system",
                "--home-dir",
                service::STATE_DIR,
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                service::SERVICE_USER,
            ]
            .map(str::to_owned)
            .to_vec(),
        );
    }
    if cfg!(target_os = "macos") {
        commands.push(vec![
            "launchctl".into(),
            "load".into(),
            "-w".into(),
            launchd::PLIST_PATH.into(),
        ]);
    } else {
        commands.push(vec!["systemctl".into(), "daemon-reload".into()]);
        // --no-block: with Type=notify, start waits for the first connection.
        commands.push(
            [
                "systemctl",
                "enable",
                "--now",
                "--no-block",
                systemd::UNIT_NAME,
            ]
            .map(str::to_owned)
            .to_vec(),
        );
    }

    if args.dry_run {
        for file in &files {
            output::note(&format!(
                "would write {} (mode {:04o}):",
                file.path.display(),
                file.mode
            ));
            println!("{}", file.redacted.as_deref().unwrap_or(&file.content));
        }
        for command in &commands {
            output::note(&format!("would run: {}", command.join(" ")));
        }
        return Ok(());
    }

    for file in &files {
        if let Some(parent) = file.path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        config::write_atomic(&file.path, file.content.as_bytes(), file.mode)
            .with_context(|| format!("writing {}", file.path.display()))?;
        output::note(&format!("wrote {}", file.path.display()));
    }
    if real_system {
        for command in &commands {
            if command.first().map(String::as_str) == Some("useradd")
                && user_exists(service::SERVICE_USER)
            {
                continue;
            }
            run_command(command)?;
        }
        output::note(
            "the runner service is installed and starting; `runner service status` shows it",
        );
    } else {
        output::note(&format!(
            "files written under {}; not touching the system's users or services (--root)",
            root.display()
        ));
    }
    Ok(())
}

/// The service starts `binary`: it must be an absolute path to a file that
/// exists, under `root` or as given (a package may install it later into
/// the real system). A dry run only warns.
fn check_binary(root: &Path, binary: &Path, dry_run: bool) -> Result<()> {
    let this = std::env::current_exe()
        .map(|path| format!("--binary {}", path.display()))
        .unwrap_or_else(|_| "--binary PATH".to_owned());
    let problem = if !binary.is_absolute() {
        Some(format!(
            "the service's binary must be an absolute path, not {}",
            binary.display()
        ))
    } else if ![service::under_root(root, binary), binary.to_path_buf()]
        .iter()
        .any(|path| path.is_file())
    {
        Some(format!(
            "the service would start {}, which does not exist",
            binary.display()
        ))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(problem) if dry_run => {
            output::note(&format!("warning: {problem}"));
            Ok(())
        }
        Some(problem) => Err(ExitError::new(exit::CONFIG, problem)
            .with_hint(format!(
                "install the runner binary there first, or pass {this}"
            ))
            .into()),
    }
}

/// Asks the relay whether it accepts `token` (`GET /runner/register`,
/// which registers nothing). A refused token stops the install; a relay
/// that cannot be reached only does when `required` (--verify).
async fn verify_token(url: &str, token: &crate::secret::Secret, required: bool) -> Result<()> {
    let endpoint = format!("{url}{}", runner_proto::RUNNER_REGISTER_PATH);
    let unverified = |why: String| -> Result<()> {
        if required {
            Err(ExitError::new(
                exit::UNREACHABLE,
                format!("cannot verify the token: {why}"),
            )
            .with_hint("check the URL and that the relay runs; --no-verify installs without checking")
            .into())
        } else {
            output::note(&format!(
                "warning: the token was not checked ({why}); installing anyway (--verify refuses instead)"
            ));
            Ok(())
        }
    };
    let answer = client::http_client()?
        .get(&endpoint)
        .bearer_auth(token.expose())
        .timeout(VERIFY_TIMEOUT)
        .send()
        .await;
    let response = match answer {
        Ok(response) => response,
        Err(error) => {
            return unverified(format!(
                "{endpoint} could not be reached: {}",
                client::error_chain(&error)
            ))
        }
    };
    let status = response.status();
    if status.is_success() {
        let environment = response
            .json::<runner_proto::api::RegisterResponse>()
            .await
            .map(|answer| {
                format!(
                    " for environment {} ({})",
                    answer.environment.name, answer.environment.id
                )
            })
            .unwrap_or_default();
        output::note(&format!(
            "the relay accepts the token ({}){environment}",
            token.hint()
        ));
        return Ok(());
    }
    if status == reqwest::StatusCode::UNAUTHORIZED {
        let message = response
            .json::<runner_proto::api::ErrorBody>()
            .await
            .map(|body| body.error.message)
            .unwrap_or_else(|_| "invalid token".to_owned());
        return Err(ExitError::new(
            exit::UNAUTHORIZED,
            format!(
                "the relay at {url} refuses the token {}: {message}",
                token.hint()
            ),
        )
        .with_hint(
            "generate a new one (`runner token generate ENV`); --no-verify installs it anyway",
        )
        .into());
    }
    if status == reqwest::StatusCode::METHOD_NOT_ALLOWED {
        return unverified(
            "this relay cannot check a token without registering it (older than this runner)"
                .to_owned(),
        );
    }
    unverified(format!("{endpoint} answered {status}"))
}

fn uninstall(args: ServiceUninstallArgs) -> Result<()> {
    let root = args.root.clone().unwrap_or_else(|| PathBuf::from("/"));
    let real_system = root == Path::new("/");
    let env_file = service::under_root(&root, Path::new(service::ENV_FILE));
    if args.purge && !args.yes && env_file.exists() {
        output::confirm(
            &format!(
                "Remove the service and {} (the runner's token and settings)?",
                env_file.display()
            ),
            "purge",
        )?;
    }
    if real_system {
        if cfg!(target_os = "macos") {
            let _ = run_command(&[
                "launchctl".into(),
                "unload".into(),
                launchd::PLIST_PATH.into(),
            ]);
        } else {
            let _ = run_command(&[
                "systemctl".into(),
                "disable".into(),
                "--now".into(),
                systemd::UNIT_NAME.into(),
            ]);
        }
    }
    let definition = if cfg!(target_os = "macos") {
        launchd::PLIST_PATH
    } else {
        systemd::UNIT_PATH
    };
    let mut removed = vec![service::under_root(&root, Path::new(definition))];
    if args.purge {
        removed.push(env_file);
    }
    for path in &removed {
        match fs_err::remove_file(path) {
            Ok(()) => output::note(&format!("removed {}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }
    }
    if real_system && !cfg!(target_os = "macos") {
        let _ = run_command(&["systemctl".into(), "daemon-reload".into()]);
    }
    if !args.purge {
        output::note(&format!(
            "kept {} (use --purge to remove it)",
            service::ENV_FILE
        ));
    }
    Ok(())
}

/// Refuses, with what to do instead, where there is no systemd to manage
/// the service: `systemctl` missing, or a machine not booted with systemd
/// (a container), where systemctl's own error names neither the cause
/// nor a way on.
fn systemd_available() -> Result<()> {
    if cfg!(target_os = "macos") {
        return Ok(());
    }
    let why = if !on_path("systemctl") {
        "systemctl is not installed (no systemctl on PATH)"
    } else if !Path::new(SYSTEMD_RUNNING).exists() {
        "this machine was not booted with systemd (a container?)"
    } else {
        return Ok(());
    };
    Err(ExitError::new(
        exit::FAILURE,
        format!("no service manager to ask: {why}"),
    )
    .with_hint(
        "run the runner in the foreground with `runner run` (or under this machine's own supervisor); `runner status --local` shows whether it runs and is connected",
    )
    .into())
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn manage(verb: &[&str]) -> Result<()> {
    systemd_available()?;
    let mut command: Vec<String> = if cfg!(target_os = "macos") {
        let launchd_verb = match verb.first().copied() {
            Some("status") => "list",
            Some(other) => other,
            None => "list",
        };
        vec![
            "launchctl".into(),
            launchd_verb.into(),
            launchd::LABEL.into(),
        ]
    } else {
        let mut command = vec!["systemctl".to_owned()];
        command.extend(verb.iter().map(|s| s.to_string()));
        command.push(systemd::UNIT_NAME.into());
        command
    };
    if verb == ["status"] && !cfg!(target_os = "macos") {
        command.insert(1, "--no-pager".into());
    }
    run_command(&command)
}

fn logs(follow: bool, lines: u32) -> Result<()> {
    systemd_available()?;
    let command: Vec<String> = if cfg!(target_os = "macos") {
        let mut c = vec!["tail".to_owned(), "-n".into(), lines.to_string()];
        if follow {
            c.push("-f".into());
        }
        c.push("/var/log/runner.log".into());
        c
    } else {
        let mut c = vec![
            "journalctl".to_owned(),
            "--no-pager".into(),
            "-u".into(),
            systemd::UNIT_NAME.into(),
            "-n".into(),
            lines.to_string(),
        ];
        if follow {
            c.push("-f".into());
        }
        c
    };
    run_command(&command)
}

fn run_command(command: &[String]) -> Result<()> {
    let (program, rest) = command.split_first().context("empty command")?;
    let status = Command::new(program)
        .args(rest)
        .status()
        .with_context(|| format!("running {program}"))?;
    if !status.success() {
        return Err(ExitError::new(
            exit::FAILURE,
            format!("`{}` failed with {status}", command.join(" ")),
        )
        .into());
    }
    Ok(())
}

fn user_exists(name: &str) -> bool {
    matches!(nix::unistd::User::from_name(name), Ok(Some(_)))
}

fn lookup_user(name: &str) -> Result<RunAs> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(user)) => Ok(RunAs {
            name: user.name,
            home: user.dir,
        }),
        Ok(None) => Err(ExitError::new(
            exit::USAGE,
            format!("no user named {name:?} on this machine"),
        )
        .with_hint(
            "--run-as takes an existing user; without it a dedicated `runner` user is created",
        )
        .into()),
        Err(error) => Err(anyhow::anyhow!("looking up user {name:?}: {error}")),
    }
}
