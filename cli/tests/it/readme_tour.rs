//! The README's tour, pasted line by line into a fresh shell: every `sh`
//! and `yaml` block from the one that reads `dev.env` up to the MCP section,
//! run in order against the real binaries, each line required to succeed.
//!
//! What a reader fills in is filled in the same way here, and nothing else
//! is changed: `/path/to/data-dir` is the directory given to `runner-relay
//! dev`; `rnrk_…` is the admin key `runner-relay serve` printed; `rnrt_…`
//! the token `runner token generate` printed; `127.0.0.1:7700` the address
//! the relay really listens on (it is started on port 0); a file a `yaml`
//! block names in its first comment (`# /etc/…`) and every mention of that
//! path are under the test's directory. Long-running commands (`runner-relay
//! serve`, `runner run`) are started in the background as a second
//! terminal would run them; a later `runner run` replaces the earlier one,
//! as Ctrl-C and a new command would. Lines run in one shell session: each
//! line's exported variables are kept for the next.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::support::{relay_bin, runner_bin, READY_DEADLINE};

/// `runner-relay dev`, stopped with SIGTERM when the test ends (passed or
/// not), so that it stops the runner it started: killed, it would leave
/// that runner behind.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            // Its runner gets a moment to stop before the test process
            // (and with it this relay) goes.
            let deadline = Instant::now() + READY_DEADLINE;
            while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A fenced block: its language and lines.
struct Block {
    language: String,
    lines: Vec<String>,
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The tour's blocks: from the block that reads `dev.env` to the heading of
/// the MCP section.
fn tour_blocks(text: &str) -> Vec<Block> {
    let end = text
        .find("\n## From an MCP client")
        .expect("README has its MCP section");
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    for line in text[..end].lines() {
        match (&mut current, line.strip_prefix("```")) {
            (None, Some(language)) => {
                current = Some(Block {
                    language: language.trim().to_owned(),
                    lines: Vec::new(),
                })
            }
            (Some(_), Some(_)) => blocks.extend(current.take()),
            (Some(block), None) => block.lines.push(line.to_owned()),
            (None, None) => {}
        }
    }
    let start = blocks
        .iter()
        .position(|block| commands(block).iter().any(|line| line.contains("dev.env")))
        .expect("README has the dev-mode block that reads dev.env");
    blocks.split_off(start)
}

/// Shell lines of a block: comments and blank lines dropped, lines ending
/// in `\` joined with the next.
fn commands(block: &Block) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in &block.lines {
        if pending.is_empty() && (line.trim().is_empty() || line.trim_start().starts_with('#')) {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(line);
                out.push(std::mem::take(&mut pending));
            }
        }
    }
    out
}

struct Tour {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// (written in the README, filled in by the reader).
    fill: Vec<(String, String)>,
    /// Long-running commands started so far (killed when the test ends).
    relay: Option<Child>,
    runner: Option<Child>,
    log: String,
}

impl Tour {
    fn state(&self) -> PathBuf {
        self.dir.path().join("shell-state.sh")
    }

    fn filled(&self, line: &str) -> String {
        self.fill
            .iter()
            .fold(line.to_owned(), |line, (from, to)| line.replace(from, to))
    }

    /// A shell for one line, in the session's environment.
    fn shell(&self, line: &str) -> Command {
        let home = self.dir.path().join("home");
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let script = format!(
            ". {state}\n{line}\nrc=$?\nexport -p > {state}\nexit $rc\n",
            state = self.state().display()
        );
        let mut command = Command::new("bash");
        command
            .args(["--noprofile", "--norc", "-c", &script])
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            // No keychain on a test machine: the documented file fallback,
            // chosen up front instead of after a keychain's timeout.
            .env("RUNNER_CREDENTIAL_STORE", "file")
            .env("NO_COLOR", "1")
            .env("RUST_LOG", "warn")
            .kill_on_drop(true);
        command
    }

    async fn run_line(&mut self, written: &str) -> String {
        let line = self.filled(written);
        let output = self
            .shell(&line)
            .stdin(Stdio::null())
            .output()
            .await
            .expect("bash runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            output.status.success(),
            "README line failed ({}):\n  {written}\nas run:\n  {line}\nstdout:\n{stdout}\nstderr:\n{stderr}\nearlier:\n{}",
            output.status,
            self.log
        );
        self.log.push_str(&format!("$ {line}\n{stdout}{stderr}"));
        stdout
    }

    /// A long-running command, started in the background; returns once it
    /// is ready (the relay listens; the runner's environment is online).
    async fn start(&mut self, written: &str) {
        let filled = self.filled(written);
        let line = filled
            .split(" #")
            .next()
            .unwrap_or(&filled)
            .trim()
            .to_owned();
        if line.starts_with("runner-relay serve") {
            // Port 0, then the real address stands in for the README's.
            let line = line.replace("127.0.0.1:7700", "127.0.0.1:0");
            let mut child = self
                .shell(&format!("exec {line}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start the relay");
            let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
            let mut key = None;
            let url = tokio::time::timeout(READY_DEADLINE, async {
                while let Some(out) = lines.next_line().await.expect("relay stdout") {
                    if let Some(found) = out.strip_prefix("admin API key (shown once): ") {
                        key = Some(found.trim().to_owned());
                    }
                    if let Some(url) = out.strip_prefix("runner-relay listening on ") {
                        return url.trim().to_owned();
                    }
                }
                panic!("`{line}` exited before listening");
            })
            .await
            .expect("the relay listens in time");
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            let address = url.trim_start_matches("http://").to_owned();
            self.fill.push(("127.0.0.1:7700".to_owned(), address));
            self.fill.push((
                "rnrk_…".to_owned(),
                key.expect("a first start prints the admin key"),
            ));
            self.relay = Some(child);
        } else if line.starts_with("runner run") {
            if let Some(mut previous) = self.runner.take() {
                // Ctrl-C, as in a terminal.
                if let Some(pid) = previous.id() {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid as i32),
                        nix::sys::signal::Signal::SIGINT,
                    );
                }
                let _ = tokio::time::timeout(READY_DEADLINE, previous.wait()).await;
            }
            let child = self
                .shell(&format!("exec {line}"))
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start the runner");
            self.runner = Some(child);
            self.wait_online().await;
        } else {
            panic!("no way to start `{line}` in the background");
        }
        self.log.push_str(&format!("$ {line} &\n"));
    }

    /// Until the runner says it is connected (`runner status --local`
    /// exits 0 then), asked with the session's variables.
    async fn wait_online(&mut self) {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let output = self
                .shell("runner status --local")
                .output()
                .await
                .expect("runner status");
            if output.status.success() {
                return;
            }
            if let Some(Some(status)) = self
                .runner
                .as_mut()
                .map(|child| child.try_wait().ok().flatten())
            {
                panic!("`runner run` exited ({status}); earlier:\n{}", self.log);
            }
            assert!(
                Instant::now() < deadline,
                "the runner did not connect: {}; earlier:\n{}",
                String::from_utf8_lossy(&output.stdout),
                self.log
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn long_running(line: &str) -> bool {
    ["runner-relay serve", "runner run"]
        .iter()
        .any(|daemon| line.trim_start().starts_with(daemon))
}

#[tokio::test]
async fn the_readme_tour_runs_line_by_line_as_written() {
    let text = readme();
    assert!(
        text.lines().count() <= 150,
        "README.md is {} lines, over 150",
        text.lines().count()
    );
    let blocks = tour_blocks(&text);
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = runner_bin().parent().expect("bin dir").to_path_buf();
    assert!(relay_bin().exists());
    std::fs::create_dir_all(dir.path().join("home")).expect("home");
    std::fs::write(dir.path().join("shell-state.sh"), "").expect("state");

    // Dev mode, started as README's first block says, in a directory the
    // reader chose with --data-dir.
    let data = dir.path().join("dev-data");
    let dev = Command::new(relay_bin())
        .args(["dev", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("runner-relay dev");
    let mut dev = Stopped(dev);
    let mut lines = BufReader::new(dev.0.stdout.take().expect("stdout")).lines();
    tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read") {
            if line.contains("Press Ctrl-C to stop") {
                return;
            }
        }
        panic!("dev mode ended before it was ready");
    })
    .await
    .expect("dev mode is ready in time");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let mut tour = Tour {
        bin: bin.clone(),
        fill: vec![
            ("/path/to/data-dir".to_owned(), data.display().to_string()),
            ("target/release/".to_owned(), format!("{}/", bin.display())),
        ],
        dir,
        relay: None,
        runner: None,
        log: String::new(),
    };
    let mut ran = 0;
    for block in &blocks {
        match block.language.as_str() {
            "yaml" => {
                // Written where its first comment says.
                let named = block
                    .lines
                    .first()
                    .and_then(|line| line.strip_prefix("# "))
                    .expect("a yaml block names its file in its first line");
                let local = tour.dir.path().join(named.trim_start_matches('/'));
                std::fs::create_dir_all(local.parent().expect("parent")).expect("mkdir");
                std::fs::write(&local, block.lines.join("\n") + "\n").expect("write yaml");
                tour.fill
                    .push((named.to_owned(), local.display().to_string()));
            }
            "sh" => {
                for line in commands(block) {
                    if long_running(&line) {
                        tour.start(&line).await;
                    } else {
                        let stdout = tour.run_line(&line).await;
                        if line.trim_start().starts_with("runner token generate") {
                            tour.fill
                                .push(("rnrt_…".to_owned(), stdout.trim().to_owned()));
                        }
                    }
                    ran += 1;
                }
            }
            other => panic!("a tour block in {other:?}: run it here or move it"),
        }
    }
    assert!(ran >= 15, "only {ran} lines of the tour ran:\n{}", tour.log);
    drop(dev);
}
