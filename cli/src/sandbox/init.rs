//! `runner sandbox-init` (hidden): a sandbox's first process. It starts
//! the bridge to the host's proxy (no network of its own), runs the setup
//! script as root with the template's variables, writing its log and exit
//! where the host reads them, then — setup succeeded — takes the
//! single-use token from its file (deleting it) and runs the sandbox's
//! `runner run`, staying alive (and bridging) until that runner exits.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use anyhow::{Context, Result};
use runner_proto::sandbox::{Network, WORKSPACE};

use super::isolation::enter::SANDBOX_PATH;
use super::layout::{
    InitConfig, SetupExit, BRIDGE_PORT, CA_FILE, INIT_CONFIG, IO_MOUNT, PROXY_SOCKET,
    RUNNER_IN_SANDBOX, RUNNER_STARTED, SETUP_EXIT, SETUP_LOG, SETUP_SCRIPT, TOKEN,
};
use crate::env_vars;

/// Runs init; the exit code is the sandbox runner's (1 when setup failed).
pub fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sandbox-init: starting the runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(Path::new(IO_MOUNT))) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(error) => {
            eprintln!("sandbox-init: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(io: &Path) -> Result<u8> {
    let config: InitConfig = serde_json::from_slice(&fs_err::read(io.join(INIT_CONFIG))?)
        .context("reading the init configuration")?;
    let proxy = start_bridge(io, config.network).await?;
    let base_env = environment(&config, proxy.as_deref());

    let script = io.join(SETUP_SCRIPT);
    if script.exists() {
        let exit = setup(&script, &io.join(SETUP_LOG), &base_env).await;
        let ok = exit.exit_code == Some(0);
        write_atomically(&io.join(SETUP_EXIT), &serde_json::to_vec(&exit)?)?;
        if !ok {
            return Ok(1);
        }
    }

    let token_file = io.join(TOKEN);
    let token = fs_err::read_to_string(&token_file).context("reading the sandbox's token")?;
    fs_err::remove_file(&token_file)?;
    let mut runner = tokio::process::Command::new(RUNNER_IN_SANDBOX);
    runner
        .args(["run", "--url", &config.relay_url, "--workspace", WORKSPACE])
        .args(["--auto-update", "false"])
        .env_clear()
        .envs(base_env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .env(env_vars::TOKEN, token.trim())
        .current_dir(WORKSPACE)
        .stdin(Stdio::null());
    // 0: no limit (a deployment's long-lived runner).
    if config.idle_timeout_s > 0 {
        runner.args(["--idle-exit-s", &config.idle_timeout_s.to_string()]);
    }
    if config.max_lifetime_s > 0 {
        runner.args(["--max-lifetime-s", &config.max_lifetime_s.to_string()]);
    }
    if let Some(proxy) = &proxy {
        runner.args(["--relay-proxy", proxy]);
    }
    if config.ca_file {
        runner.arg("--ca-file").arg(io.join(CA_FILE));
    }
    if config.insecure_skip_tls_verify {
        runner.arg("--insecure-skip-tls-verify=true");
    }
    let mut child = runner.spawn().context("starting the sandbox's runner")?;
    drop(token);
    fs_err::write(io.join(RUNNER_STARTED), b"")?;
    let status = child.wait().await?;
    Ok(status
        .code()
        .and_then(|c| u8::try_from(c).ok())
        .unwrap_or(1))
}

/// The bridge on the sandbox's loopback, when the sandbox has no network
/// of its own; its proxy URL.
async fn start_bridge(io: &Path, network: Network) -> Result<Option<String>> {
    if network == Network::AllowAll {
        return Ok(None);
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", BRIDGE_PORT))
        .await
        .context("listening on the sandbox's loopback")?;
    tokio::spawn(super::network::bridge::serve(
        listener,
        io.join(PROXY_SOCKET),
    ));
    Ok(Some(format!("http://127.0.0.1:{BRIDGE_PORT}")))
}

/// What setup and the runner (so every call) see: `PATH`, `HOME`, the
/// proxy variables for `allowlist` (not for `none`: there the bridge is the
/// runner's own way to its relay), then the template's variables.
fn environment(config: &InitConfig, proxy: Option<&str>) -> Vec<(String, String)> {
    let mut env = vec![
        ("PATH".to_owned(), SANDBOX_PATH.to_owned()),
        ("HOME".to_owned(), "/root".to_owned()),
        ("USER".to_owned(), "root".to_owned()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
    ];
    if let (Network::Allowlist, Some(proxy)) = (config.network, proxy) {
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
            env.push((name.to_owned(), proxy.to_owned()));
        }
    }
    for var in &config.env {
        env.push((var.name.clone(), var.value.clone()));
    }
    env
}

async fn setup(script: &Path, log: &Path, env: &[(String, String)]) -> SetupExit {
    let started = Instant::now();
    let exit_code = match run_setup(script, log, env).await {
        Ok(code) => code,
        Err(error) => {
            let _ = std::fs::write(log, format!("sandbox-init: cannot run setup: {error:#}\n"));
            None
        }
    };
    SetupExit {
        exit_code,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

async fn run_setup(script: &Path, log: &Path, env: &[(String, String)]) -> Result<Option<i32>> {
    let out = fs_err::File::create(log)?.into_parts().0;
    let err = out.try_clone()?;
    let status = tokio::process::Command::new("/bin/bash")
        .arg(script)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(WORKSPACE)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .await?;
    Ok(status.code())
}

/// Written whole or not at all: the host polls for the file.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = PathBuf::from(format!("{}.tmp", path.display()));
    fs_err::write(&temporary, bytes)?;
    fs_err::rename(&temporary, path)?;
    Ok(())
}
