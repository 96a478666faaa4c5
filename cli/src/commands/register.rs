//! `runner register` / `runner unregister`.

use anyhow::Result;
use runner_proto::api::{ConnectedRunner, RegisterResponse};
use runner_proto::RUNNER_REGISTER_PATH;
use serde_json::json;

use crate::args::{RegisterArgs, UnregisterArgs};
use crate::client::{self, REQUEST_TIMEOUT};
use crate::config::{ConfigFile, Dirs, Registration};
use crate::credentials::{self, SecretKind};
use crate::exit::{self, ExitError};
use crate::output;
use crate::secret::Secret;

pub async fn register(dirs: &Dirs, args: RegisterArgs) -> Result<()> {
    // Before the token prompt: a missing URL is said first.
    let base = client::normalise_base_url(client::given_url(args.url.as_deref())?)?;
    let token = match (&args.token, args.token_stdin) {
        (Some(token), false) => token.trim().to_owned(),
        _ => output::read_secret_line("Registration token: ")?,
    };
    if token.is_empty() {
        return Err(ExitError::new(exit::USAGE, "no registration token given")
            .with_hint("set RUNNER_TOKEN, or pipe it in with --token-stdin")
            .into());
    }
    let token = Secret::new(token);
    let url = format!("{base}{RUNNER_REGISTER_PATH}");
    let response = client::http_client()?
        .post(&url)
        .bearer_auth(token.expose())
        .timeout(REQUEST_TIMEOUT)
        .send()
        .await
        .map_err(|error| client::unreachable(&url, &error))?;
    let answer: RegisterResponse =
        client::decode(response, &url).await.map_err(|error| {
            match error.downcast::<ExitError>() {
                Ok(mut error) if error.code == exit::UNAUTHORIZED => {
                    error.hint =
                        Some("ask for a new token: `runner token generate ENV`".to_owned());
                    error.into()
                }
                Ok(error) => error.into(),
                Err(error) => error,
            }
        })?;
    if let Some(connected) = &answer.connected_runner {
        check_takeover(&answer, connected, args.replace)?;
    }

    let location = credentials::store(
        dirs,
        SecretKind::RegistrationToken,
        &token,
        args.credential_store,
    )
    .await?;
    let mut config = ConfigFile::load(dirs)?;
    config.registration = Some(Registration {
        url: base.clone(),
        environment_id: answer.environment.id.clone(),
        environment_name: answer.environment.name.clone(),
        token_location: location,
    });
    config.save(dirs)?;

    let stored = credentials::describe(dirs, SecretKind::RegistrationToken, location);
    if args.json {
        output::json(&json!({
            "url": base,
            "environment": answer.environment,
            "token_stored_in": stored,
            "config_file": dirs.config_file(),
        }))?;
    } else {
        let name = if answer.environment.name.is_empty() {
            "(unnamed until the runner connects)".to_owned()
        } else {
            answer.environment.name.clone()
        };
        output::fields(&[
            ("registered with", base),
            ("environment", format!("{name} ({})", answer.environment.id)),
            ("token stored in", stored),
            ("config", dirs.config_file().display().to_string()),
        ])?;
        output::note("next: `runner run` (or `runner service install`)");
    }
    Ok(())
}

/// One environment has one runner: a runner started with this token
/// replaces the connected one. Taking over from another machine needs
/// `--replace` (nothing is stored without it); on the same machine it is a
/// re-registration, and a note says so.
fn check_takeover(
    answer: &RegisterResponse,
    connected: &ConnectedRunner,
    replace: bool,
) -> Result<()> {
    let environment = if answer.environment.name.is_empty() {
        answer.environment.id.clone()
    } else {
        format!("{} ({})", answer.environment.name, answer.environment.id)
    };
    let here = super::run::hostname();
    let runner = format!(
        "a runner on {} is connected to environment {environment} (since {})",
        connected.hostname, connected.connected_since
    );
    if connected.hostname == here {
        output::note(&format!("note: {runner}; `runner run` here replaces it"));
        return Ok(());
    }
    if !replace {
        return Err(ExitError::new(
            exit::FAILURE,
            format!("{runner}; a runner started here with this token would replace it"),
        )
        .with_hint(
            "pass --replace to move the environment to this machine (the other runner stops), \
             or give this machine an environment of its own: `runner env create NAME` and \
             `runner token generate NAME`",
        )
        .into());
    }
    output::note(&format!(
        "warning: {runner}; `runner run` here will replace it (--replace)"
    ));
    Ok(())
}

pub async fn unregister(dirs: &Dirs, args: UnregisterArgs) -> Result<()> {
    let mut config = ConfigFile::load(dirs)?;
    if let (Some(registration), false) = (&config.registration, args.yes) {
        output::confirm(
            &format!(
                "Remove this machine's registration with {} (environment {})? The token cannot be read back; `runner run` will not start until registered again.",
                registration.url, registration.environment_id
            ),
            "unregister",
        )?;
    }
    credentials::remove(dirs, SecretKind::RegistrationToken).await?;
    let was = config.registration.take();
    config.save(dirs)?;
    match was {
        Some(registration) => output::note(&format!(
            "unregistered from {} (environment {}); the token was removed from this machine",
            registration.url, registration.environment_id
        )),
        None => output::note("this machine was not registered; nothing to remove"),
    }
    Ok(())
}
