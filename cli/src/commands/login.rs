//! `runner login` and `runner logout`: store, and forget, a relay URL and an
//! API key for the admin commands.

use anyhow::Result;
use runner_proto::api::EnvironmentList;

use crate::args::{LoginArgs, LogoutArgs};
use crate::client::ApiClient;
use crate::config::{ConfigFile, Dirs, Login};
use crate::credentials::{self, SecretKind};
use crate::exit::{self, ExitError};
use crate::secret::Secret;
use crate::{env_vars, output};

pub async fn login(dirs: &Dirs, args: LoginArgs) -> Result<()> {
    let url = crate::client::given_url(args.url.as_deref())?;
    let key = match std::env::var(env_vars::API_KEY) {
        Ok(key) if !key.trim().is_empty() && !args.api_key_stdin => key.trim().to_owned(),
        _ => output::read_secret_line("API key: ")?,
    };
    if key.is_empty() {
        return Err(ExitError::new(exit::USAGE, "no API key given")
            .with_hint("set RUNNER_API_KEY or pipe it in with --api-key-stdin")
            .into());
    }
    let key = Secret::new(key);
    let client = ApiClient::new(url, key.clone())?;
    // Prove the key works before storing it.
    let list: EnvironmentList = client.get("/execution-environments").await?;
    let location =
        credentials::store(dirs, SecretKind::ApiKey, &key, args.credential_store).await?;
    let mut config = ConfigFile::load(dirs)?;
    config.login = Some(Login {
        url: client.base_url().to_owned(),
        api_key_location: location,
    });
    config.save(dirs)?;
    output::fields(&[
        ("logged in to", client.base_url().to_owned()),
        (
            "API key stored in",
            credentials::describe(dirs, SecretKind::ApiKey, location),
        ),
        ("environments visible", list.environments.len().to_string()),
    ])?;
    Ok(())
}

/// Removes the stored API key (keychain and file, wherever it is) and the
/// login from the config file. Not logged in is not an error: the goal,
/// nothing stored, holds either way.
pub async fn logout(dirs: &Dirs, args: LogoutArgs) -> Result<()> {
    let mut config = ConfigFile::load(dirs)?;
    let login = config.login.take();
    credentials::remove(dirs, SecretKind::ApiKey).await?;
    if login.is_some() {
        config.save(dirs)?;
    }
    let url = login.as_ref().map(|login| login.url.clone());
    if args.json {
        output::json(&serde_json::json!({ "logged_out_of": url }))?;
    } else {
        match &url {
            Some(url) => output::note(&format!(
                "logged out of {url}: the stored API key is removed"
            )),
            None => output::note("not logged in: nothing was stored"),
        }
        if std::env::var_os(env_vars::API_KEY).is_some() {
            output::note(&format!(
                "{} is still set in this shell and still used",
                env_vars::API_KEY
            ));
        }
    }
    Ok(())
}
