//! Installing Chromium when the environment asks for browser tools.
//!
//! The relay says `install_browser_tools` in `welcome` and again in a
//! `policy` frame when an admin changes it. [`Installer::want`] takes its
//! word; a task of its own does the rest, so the session's calls and
//! heartbeats never wait on it. When browser tools are wanted and no
//! browser is on PATH, the task runs one install ([`plan`]): the operator's
//! `browser_install_command` when set, else the package manager found on
//! PATH, only as root (no sudo, no prompt). An install is bounded by
//! [`INSTALL_TIMEOUT`], its output goes to the log, and it is tried at most
//! once per runner start, again only when the setting is turned off and on.
//! Once a browser is on PATH, the toolbox's refresh announces `browser`.
//!
//! What happened is kept in `STATE_DIR/browser-install.json` ([`Record`])
//! for `runner doctor`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, BufReader};
use tokio::sync::watch;

use super::super::toolbox::find_browser;
use super::lines::next_line;
use crate::exec::program::find_on_path;

/// Longest an install may take, every step together; then its processes
/// are stopped and the attempt counts as failed.
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// The record `runner doctor` reads, in the state directory.
pub const RECORD_FILE: &str = "browser-install.json";
/// The package every known package manager calls Chromium by.
pub const PACKAGE: &str = "chromium";
/// Longest output line logged as it is; longer ones are cut.
const LOG_LINE_CHARS: usize = 2000;

/// The package managers looked for on PATH, in this order.
pub const PACKAGE_MANAGERS: [&str; 5] = ["apt-get", "dnf", "apk", "zypper", "pacman"];

/// An operator's own install command: a program and its arguments, run
/// without a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallCommand(Vec<String>);

impl InstallCommand {
    /// From `--browser-install-command` / `RUNNER_BROWSER_INSTALL_COMMAND`:
    /// words split on whitespace, no quoting (a script takes anything more).
    pub fn parse_line(line: &str) -> Result<InstallCommand, String> {
        InstallCommand::from_argv(line.split_whitespace().map(str::to_owned).collect())
    }

    /// From the config file's list.
    pub fn from_argv(argv: Vec<String>) -> Result<InstallCommand, String> {
        match argv.first() {
            None => Err("the browser install command is empty".to_owned()),
            Some(program) if program.trim().is_empty() => {
                Err("the browser install command's program is blank".to_owned())
            }
            Some(_) => Ok(InstallCommand(argv)),
        }
    }

    pub fn argv(&self) -> &[String] {
        &self.0
    }
}

/// Where a plan comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `browser_install_command`, as the operator gave it.
    Configured,
    /// The package manager found on PATH.
    PackageManager { name: String },
}

/// One command of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub argv: Vec<String>,
    /// Variables added to the runner's environment.
    pub env: Vec<(&'static str, &'static str)>,
    /// Its failure is logged, and the next step runs all the same
    /// (refreshing apt's lists, which may fail offline while the cache
    /// still has the package).
    pub may_fail: bool,
}

/// How Chromium would be installed on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub source: Source,
    pub steps: Vec<Step>,
}

impl Plan {
    /// The steps as one line, for the log and the record.
    pub fn describe(&self) -> String {
        self.steps
            .iter()
            .map(|step| step.argv.join(" "))
            .collect::<Vec<_>>()
            .join(" && ")
    }
}

/// Why Chromium cannot be installed here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Blocked {
    #[error(
        "no known package manager on PATH (looked for {})",
        PACKAGE_MANAGERS.join(", ")
    )]
    NoPackageManager,
    #[error(
        "not root: {manager} installs packages as root only, and the runner never asks for sudo"
    )]
    NotRoot { manager: String },
}

/// The plan for this machine: the configured command when there is one
/// (run as the runner's user, whoever that is: the operator chose it),
/// else the first package manager `find` finds, as root only.
pub fn plan(
    configured: Option<&InstallCommand>,
    is_root: bool,
    find: impl Fn(&str) -> Option<PathBuf>,
) -> Result<Plan, Blocked> {
    if let Some(command) = configured {
        return Ok(Plan {
            source: Source::Configured,
            steps: vec![Step {
                argv: command.argv().to_vec(),
                env: Vec::new(),
                may_fail: false,
            }],
        });
    }
    let (manager, path) = PACKAGE_MANAGERS
        .iter()
        .find_map(|name| find(name).map(|path| (*name, path)))
        .ok_or(Blocked::NoPackageManager)?;
    if !is_root {
        return Err(Blocked::NotRoot {
            manager: manager.to_owned(),
        });
    }
    let program = path.display().to_string();
    let step = |args: &[&str], may_fail: bool| Step {
        argv: std::iter::once(program.clone())
            .chain(args.iter().map(|arg| (*arg).to_owned()))
            .collect(),
        env: Vec::new(),
        may_fail,
    };
    let steps = match manager {
        "apt-get" => {
            // No question may wait for an answer nobody can give.
            let quiet = vec![("DEBIAN_FRONTEND", "noninteractive")];
            vec![
                Step {
                    env: quiet.clone(),
                    ..step(&["update"], true)
                },
                Step {
                    env: quiet,
                    ..step(
                        &["install", "-y", "--no-install-recommends", PACKAGE],
                        false,
                    )
                },
            ]
        }
        "dnf" => vec![step(&["install", "-y", PACKAGE], false)],
        "apk" => vec![step(&["add", "--no-cache", PACKAGE], false)],
        "zypper" => vec![step(&["--non-interactive", "install", PACKAGE], false)],
        _ => vec![step(&["-S", "--noconfirm", "--needed", PACKAGE], false)],
    };
    Ok(Plan {
        source: Source::PackageManager {
            name: manager.to_owned(),
        },
        steps,
    })
}

/// The plan for this machine as the runner sees it now.
pub fn plan_here(configured: Option<&InstallCommand>) -> Result<Plan, Blocked> {
    plan(configured, nix::unistd::geteuid().is_root(), find_on_path)
}

/// How an install ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    /// Still running (or the runner stopped while it ran: see
    /// [`Outcome::Interrupted`], which a new start writes instead).
    Running,
    Succeeded,
    Failed {
        exit_code: i32,
    },
    Killed {
        signal: i32,
    },
    TimedOut {
        after_s: u64,
    },
    NotStarted {
        error: String,
    },
    /// The runner stopped while it ran.
    Interrupted,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Running => write!(f, "running"),
            Outcome::Succeeded => write!(f, "succeeded"),
            Outcome::Failed { exit_code } => write!(f, "failed with exit code {exit_code}"),
            Outcome::Killed { signal } => write!(f, "was killed by signal {signal}"),
            Outcome::TimedOut { after_s } => write!(f, "timed out after {after_s} s"),
            Outcome::NotStarted { error } => write!(f, "could not start: {error}"),
            Outcome::Interrupted => write!(f, "was interrupted when the runner stopped"),
        }
    }
}

/// One install.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    /// Its commands ([`Plan::describe`]).
    pub command: String,
    pub source: Source,
    /// Seconds since the Unix epoch.
    pub started_at_unix: u64,
    pub outcome: Outcome,
}

/// `STATE_DIR/browser-install.json`: the relay's word, last heard, and
/// what the runner did about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The environment's `install_browser_tools`, as last heard.
    pub wanted: bool,
    /// Why the runner could not install, the last time it was wanted and
    /// no browser was there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
    /// The last install, of this start or an earlier one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<Attempt>,
}

impl Record {
    /// The record in `state_dir`, if the runner ever wrote one (one that
    /// does not parse is treated as none).
    pub fn load(state_dir: &Path) -> Option<Record> {
        let text = std::fs::read(state_dir.join(RECORD_FILE)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn save(&self, state_dir: &Path) {
        let path = state_dir.join(RECORD_FILE);
        // Serialising our own type cannot fail; a record that cannot be
        // written is in the log all the same.
        let text = serde_json::to_vec_pretty(self).unwrap_or_default();
        if let Err(error) = crate::config::write_atomic(&path, &text, 0o644) {
            tracing::warn!(path = %path.display(), %error, "cannot keep the browser install record for `runner doctor`");
        }
    }
}

/// The relay's word as the worker sees it: the setting, and how many
/// times it was turned on (each turn allows one more install).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Wanted {
    on: Option<bool>,
    turned_on: u64,
}

/// Takes the relay's word and installs in the background.
#[derive(Debug)]
pub struct Installer {
    wanted: watch::Sender<Wanted>,
}

impl Installer {
    /// Starts the worker (it waits for the relay's word). `state_dir`
    /// holds the [`Record`].
    pub fn start(state_dir: PathBuf, configured: Option<InstallCommand>) -> Installer {
        let (wanted, changes) = watch::channel(Wanted::default());
        let mut record = Record::load(&state_dir).unwrap_or_default();
        if let Some(attempt) = &mut record.attempt {
            if attempt.outcome == Outcome::Running {
                attempt.outcome = Outcome::Interrupted;
                record.save(&state_dir);
            }
        }
        let worker = Worker {
            state_dir,
            configured,
            record,
        };
        tokio::spawn(worker.run(changes));
        Installer { wanted }
    }

    /// The environment's `install_browser_tools`, from `welcome` or a
    /// `policy` frame. Returns at once.
    pub fn want(&self, on: bool) {
        self.wanted.send_if_modified(|wanted| {
            if wanted.on == Some(on) {
                return false;
            }
            if on {
                wanted.turned_on += 1;
            }
            wanted.on = Some(on);
            true
        });
    }
}

struct Worker {
    state_dir: PathBuf,
    configured: Option<InstallCommand>,
    record: Record,
}

impl Worker {
    async fn run(mut self, mut changes: watch::Receiver<Wanted>) {
        // The turn an install (or finding a browser there) was last
        // decided for.
        let mut decided = 0;
        while changes.changed().await.is_ok() {
            let wanted = *changes.borrow_and_update();
            let Some(on) = wanted.on else { continue };
            self.record.wanted = on;
            if !on || wanted.turned_on == decided {
                self.record.save(&self.state_dir);
                continue;
            }
            decided = wanted.turned_on;
            if let Some(browser) = find_browser() {
                tracing::info!(browser = %browser.display(), "browser tools wanted: a browser is installed already");
                self.record.blocked = None;
                self.record.save(&self.state_dir);
                continue;
            }
            match plan_here(self.configured.as_ref()) {
                Err(blocked) => {
                    tracing::warn!(reason = %blocked, "browser tools wanted, but Chromium cannot be installed here; `runner doctor` says more");
                    self.record.blocked = Some(blocked);
                    self.record.save(&self.state_dir);
                }
                Ok(plan) => {
                    self.record.blocked = None;
                    self.install(&plan).await;
                }
            }
        }
    }

    async fn install(&mut self, plan: &Plan) {
        let command = plan.describe();
        tracing::info!(%command, timeout_s = INSTALL_TIMEOUT.as_secs(), "browser tools wanted and no browser found: installing Chromium");
        self.record.attempt = Some(Attempt {
            command: command.clone(),
            source: plan.source.clone(),
            started_at_unix: now_unix(),
            outcome: Outcome::Running,
        });
        self.record.save(&self.state_dir);
        let deadline = tokio::time::Instant::now() + INSTALL_TIMEOUT;
        let mut outcome = Outcome::Succeeded;
        for step in &plan.steps {
            let ended = run_step(step, deadline).await;
            match ended {
                Outcome::Succeeded => {}
                failed if step.may_fail && !matches!(failed, Outcome::TimedOut { .. }) => {
                    tracing::warn!(command = %step.argv.join(" "), outcome = %failed, "install step failed; going on");
                }
                failed => {
                    outcome = failed;
                    break;
                }
            }
        }
        match (&outcome, find_browser()) {
            (Outcome::Succeeded, Some(browser)) => {
                tracing::info!(browser = %browser.display(), "Chromium installed: `browser` is announced at the next catalogue refresh");
            }
            (Outcome::Succeeded, None) => tracing::warn!(
                %command,
                "the browser install succeeded, but no browser is on PATH (looked for {})",
                super::super::toolbox::BROWSER_NAMES.join(", ")
            ),
            (failed, _) => {
                tracing::warn!(%command, outcome = %failed, "browser install failed; `runner doctor` says more")
            }
        }
        if let Some(attempt) = &mut self.record.attempt {
            attempt.outcome = outcome;
        }
        self.record.save(&self.state_dir);
    }
}

/// Runs one command to its end or `deadline`, its output logged line by
/// line. No stdin and a process group of its own: a command that asks a
/// question gets end of file, and one reading the terminal is stopped
/// (a background group), then ended by the deadline.
async fn run_step(step: &Step, deadline: tokio::time::Instant) -> Outcome {
    let Some((program, args)) = step.argv.split_first() else {
        return Outcome::NotStarted {
            error: "empty command".to_owned(),
        };
    };
    let mut command = tokio::process::Command::new(program);
    crate::exec::keep_secrets_from(&mut command);
    command
        .args(args)
        .envs(step.env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            return Outcome::NotStarted {
                error: format!("{program}: {error}"),
            }
        }
    };
    let Some(group) = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
    else {
        return Outcome::NotStarted {
            error: format!("{program}: no process id"),
        };
    };
    // Stops the whole group if this task is dropped mid-install (the
    // runner shutting down): nothing of it outlives the runner.
    let mut guard = GroupGuard(Some(group));
    if let Some(stdout) = child.stdout.take() {
        tokio::spawn(log_lines(stdout, program.clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_lines(stderr, program.clone()));
    }
    let status = tokio::select! {
        status = child.wait() => status,
        () = tokio::time::sleep_until(deadline) => {
            let _ = killpg(group, Signal::SIGTERM);
            if tokio::time::timeout(crate::exec::KILL_GRACE, child.wait()).await.is_err() {
                let _ = killpg(group, Signal::SIGKILL);
                let _ = child.wait().await;
            }
            guard.0 = None;
            return Outcome::TimedOut { after_s: INSTALL_TIMEOUT.as_secs() };
        }
    };
    guard.0 = None;
    match status {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(0), _) => Outcome::Succeeded,
                (Some(exit_code), _) => Outcome::Failed { exit_code },
                (None, Some(signal)) => Outcome::Killed { signal },
                (None, None) => Outcome::Failed { exit_code: -1 },
            }
        }
        Err(error) => Outcome::NotStarted {
            error: format!("{program}: {error}"),
        },
    }
}

/// SIGKILLs a process group when dropped armed.
struct GroupGuard(Option<Pid>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

/// Logs each line of an install's output, until the pipe closes. Reads to
/// the end whatever the bytes are: a pipe closed early would kill the
/// install with SIGPIPE at its next write.
async fn log_lines(pipe: impl AsyncRead + Unpin, program: String) {
    let mut pipe = BufReader::new(pipe);
    let mut buffer = Vec::new();
    while let Some(line) = next_line(&mut pipe, &mut buffer).await {
        let text: String = line.chars().take(LOG_LINE_CHARS).collect();
        tracing::info!(%program, "browser install: {text}");
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on_path(names: &'static [&'static str]) -> impl Fn(&str) -> Option<PathBuf> {
        move |name| {
            names
                .contains(&name)
                .then(|| PathBuf::from(format!("/usr/bin/{name}")))
        }
    }

    /// An install whose output is not UTF-8 keeps its pipe: the next
    /// write succeeds instead of meeting a closed pipe (SIGPIPE).
    #[tokio::test]
    async fn output_that_is_not_utf8_is_read_to_the_end() {
        use tokio::io::AsyncWriteExt;
        let (mut install, pipe) = tokio::io::duplex(64);
        let reading = tokio::spawn(log_lines(pipe, "apt-get".to_owned()));
        install
            .write_all(b"Unpacking \xff\xfe\n")
            .await
            .expect("write");
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        install
            .write_all(b"Setting up chromium\n")
            .await
            .expect("the pipe is still read after a line that is not UTF-8");
        drop(install);
        reading
            .await
            .expect("the reader ends at the end of the output");
    }

    #[test]
    fn a_configured_command_wins_and_needs_no_root() {
        let configured =
            InstallCommand::parse_line("  /opt/get-browser  --quiet ").expect("parses");
        let plan = plan(Some(&configured), false, on_path(&["apt-get"])).expect("a plan");
        assert_eq!(plan.source, Source::Configured);
        assert_eq!(plan.describe(), "/opt/get-browser --quiet");
    }

    #[test]
    fn package_managers_need_root_and_are_tried_in_order() {
        assert_eq!(
            plan(None, false, on_path(&["dnf"])),
            Err(Blocked::NotRoot {
                manager: "dnf".to_owned()
            })
        );
        assert_eq!(
            plan(None, true, on_path(&[])),
            Err(Blocked::NoPackageManager)
        );
        let apt = plan(None, true, on_path(&["pacman", "apt-get"])).expect("a plan");
        assert_eq!(
            apt.describe(),
            "/usr/bin/apt-get update && /usr/bin/apt-get install -y --no-install-recommends chromium"
        );
        assert!(apt.steps[0].may_fail && !apt.steps[1].may_fail);
        assert_eq!(
            apt.steps[1].env,
            vec![("DEBIAN_FRONTEND", "noninteractive")]
        );
        for (manager, line) in [
            ("dnf", "/usr/bin/dnf install -y chromium"),
            ("apk", "/usr/bin/apk add --no-cache chromium"),
            (
                "zypper",
                "/usr/bin/zypper --non-interactive install chromium",
            ),
            ("pacman", "/usr/bin/pacman -S --noconfirm --needed chromium"),
        ] {
            let found: &'static [&'static str] = match manager {
                "dnf" => &["dnf"],
                "apk" => &["apk"],
                "zypper" => &["zypper"],
                _ => &["pacman"],
            };
            assert_eq!(
                plan(None, true, on_path(found)).expect("a plan").describe(),
                line
            );
        }
    }

    #[test]
    fn blank_commands_are_refused() {
        assert!(InstallCommand::parse_line("   ").is_err());
        assert!(InstallCommand::from_argv(vec![]).is_err());
        assert!(InstallCommand::from_argv(vec![" ".to_owned()]).is_err());
    }

    #[test]
    fn outcomes_read_as_doctor_says_them() {
        assert_eq!(
            Outcome::Failed { exit_code: 100 }.to_string(),
            "failed with exit code 100"
        );
        let record = Record {
            wanted: true,
            blocked: Some(Blocked::NotRoot {
                manager: "apt-get".to_owned(),
            }),
            attempt: None,
        };
        let text = serde_json::to_string(&record).expect("json");
        assert_eq!(serde_json::from_str::<Record>(&text).expect("back"), record);
    }

    #[tokio::test]
    async fn a_step_past_its_deadline_is_stopped_with_its_group() {
        let step = Step {
            argv: vec!["sleep".to_owned(), "30".to_owned()],
            env: Vec::new(),
            may_fail: false,
        };
        let started = std::time::Instant::now();
        let outcome = run_step(
            &step,
            tokio::time::Instant::now() + Duration::from_millis(200),
        )
        .await;
        assert!(matches!(outcome, Outcome::TimedOut { .. }), "{outcome:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
