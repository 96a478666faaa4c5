//! A throwaway sshd on 127.0.0.1 (its own config, host key, client key and
//! authorized_keys in a temporary directory), and ssh commands against it:
//! cold (a new connection per call) or over a warm ControlMaster.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tokio::process::{Child, Command};

/// How long sshd and the master connection get to come up.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

pub struct Sshd {
    pub port: u16,
    dir: tempfile::TempDir,
    _daemon: Child,
    master: Option<Child>,
}

impl Sshd {
    /// Starts sshd, or says why it cannot (the caller records that).
    pub async fn start() -> anyhow::Result<Sshd> {
        let sshd = ["/usr/sbin/sshd", "/usr/bin/sshd"]
            .into_iter()
            .map(PathBuf::from)
            .find(|path| path.is_file())
            .context("sshd is not installed (scripts/bench.sh installs openssh-server)")?;
        let dir = tempfile::Builder::new()
            .prefix("runner-bench-ssh-")
            .tempdir()
            .context("creating the sshd directory")?;
        let path = dir.path();
        for (key, kind) in [("host_key", "ed25519"), ("client_key", "ed25519")] {
            let status = std::process::Command::new("ssh-keygen")
                .args(["-q", "-t", kind, "-N", "", "-f"])
                .arg(path.join(key))
                .stdout(Stdio::null())
                .status()
                .context("running ssh-keygen")?;
            if !status.success() {
                bail!("ssh-keygen failed ({status})");
            }
        }
        fs_err::copy(path.join("client_key.pub"), path.join("authorized_keys"))?;
        // The privilege-separation directory sshd insists on.
        let _ = fs_err::create_dir_all("/run/sshd");
        let port = free_port()?;
        let config = format!(
            "ListenAddress 127.0.0.1:{port}\n\
             HostKey {dir}/host_key\n\
             AuthorizedKeysFile {dir}/authorized_keys\n\
             PidFile {dir}/sshd.pid\n\
             PermitRootLogin prohibit-password\n\
             PasswordAuthentication no\n\
             KbdInteractiveAuthentication no\n\
             StrictModes no\n\
             UsePAM no\n\
             UseDNS no\n\
             PrintMotd no\n\
             MaxStartups 100:30:200\n\
             MaxSessions 1000\n\
             SetEnv SHLVL=1\n\
             Subsystem sftp internal-sftp\n",
            dir = path.display()
        );
        fs_err::write(path.join("sshd_config"), config)?;
        let daemon = Command::new(&sshd)
            .args(["-D", "-e", "-f"])
            .arg(path.join("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(
                fs_err::File::create(path.join("sshd.log"))?.into_parts().0,
            ))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", sshd.display()))?;
        let sshd = Sshd {
            port,
            dir,
            _daemon: daemon,
            master: None,
        };
        // Ready when a cold call succeeds.
        let start = Instant::now();
        loop {
            let ok = sshd
                .command(false, "true")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await
                .map(|status| status.success())
                .unwrap_or(false);
            if ok {
                break;
            }
            if start.elapsed() > READY_TIMEOUT {
                let log =
                    fs_err::read_to_string(sshd.dir.path().join("sshd.log")).unwrap_or_default();
                bail!(
                    "sshd did not accept a login within {} s: {}",
                    READY_TIMEOUT.as_secs(),
                    log.trim()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(sshd)
    }

    fn control_path(&self) -> PathBuf {
        self.dir.path().join("control.sock")
    }

    /// Opens the ControlMaster connection and waits until it answers.
    pub async fn open_master(&mut self) -> anyhow::Result<()> {
        let mut command = self.base(false);
        command
            .args(["-M", "-N", "-o", "ControlPersist=no", "-S"])
            .arg(self.control_path())
            .arg("root@127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        self.master = Some(command.spawn().context("starting the ssh master")?);
        let start = Instant::now();
        loop {
            let ok = self
                .base(false)
                .arg("-S")
                .arg(self.control_path())
                .args(["-O", "check", "root@127.0.0.1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await
                .map(|status| status.success())
                .unwrap_or(false);
            if ok {
                return Ok(());
            }
            if start.elapsed() > READY_TIMEOUT {
                bail!("the ssh master connection did not come up");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn base(&self, _warm: bool) -> Command {
        let mut command = Command::new("ssh");
        command
            .args(["-p", &self.port.to_string(), "-i"])
            .arg(self.dir.path().join("client_key"))
            .args([
                "-o",
                "StrictHostKeyChecking=no",
                "-o",
                "UserKnownHostsFile=/dev/null",
                "-o",
                "BatchMode=yes",
                "-o",
                "LogLevel=ERROR",
                "-o",
                "IdentitiesOnly=yes",
            ])
            .kill_on_drop(true);
        command
    }

    /// `ssh … 127.0.0.1 REMOTE`, over the master when `warm`.
    pub fn command(&self, warm: bool, remote: &str) -> Command {
        let mut command = self.base(warm);
        if warm {
            command
                .args(["-o", "ControlMaster=auto", "-o"])
                .arg(format!("ControlPath={}", self.control_path().display()));
        } else {
            command.args(["-o", "ControlMaster=no", "-o", "ControlPath=none"]);
        }
        command
            .arg("root@127.0.0.1")
            .arg(remote)
            .stdin(Stdio::null());
        command
    }
}

/// A free port on 127.0.0.1 (bound, read, released).
pub fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener
        .local_addr()
        .context("reading the free port")?
        .port())
}
