//! `runner template create|list|show|edit|delete`: sandbox templates, with
//! their variables and setup script read from files.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};
use reqwest::Method;
use runner_proto::sandbox::Network;
use runner_proto::templates::{
    CreateTemplate, Template, TemplateList, TemplateWarning, UpdateTemplate,
};
use serde_json::Value;

use crate::args::{NetworkArg, TemplateCommand, TemplateFields};
use crate::client::{ApiClient, REQUEST_TIMEOUT};
use crate::config::Dirs;
use crate::output;

pub async fn run(dirs: &Dirs, command: TemplateCommand) -> Result<()> {
    match command {
        TemplateCommand::Create(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let files = Files::read(&args.fields)?;
            let body = CreateTemplate {
                name: args.name,
                description: args.fields.description.unwrap_or_default(),
                scope: args.scope,
                network: args.fields.network.map(network),
                allowed_domains: domains(&args.fields.allow_domain).unwrap_or_default(),
                env_text: files.env_text.unwrap_or_default(),
                setup_script: files.setup_script.unwrap_or_default(),
                idle_timeout_s: args.fields.idle_timeout,
                max_lifetime_s: args.fields.max_lifetime,
            };
            let created: Template = client
                .request(Method::POST, "/templates", Some(&body), REQUEST_TIMEOUT)
                .await?;
            warn(&created.warnings);
            show(&created, args.api.json)?;
        }
        TemplateCommand::List(api) => {
            let client = ApiClient::from_args(dirs, &api).await?;
            let list: TemplateList = client.get("/templates").await?;
            if api.json {
                output::json(&list)?;
            } else {
                let rows: Vec<Vec<String>> = list
                    .templates
                    .iter()
                    .map(|template| {
                        vec![
                            template.id.clone(),
                            template.name.clone(),
                            template.scope.clone(),
                            template.network.as_str().to_owned(),
                            template.env_names.len().to_string(),
                            if template.setup_script.is_empty() {
                                "no".to_owned()
                            } else {
                                "yes".to_owned()
                            },
                        ]
                    })
                    .collect();
                output::table(
                    &["ID", "NAME", "SCOPE", "NETWORK", "VARIABLES", "SETUP"],
                    &rows,
                )?;
            }
        }
        TemplateCommand::Show(target) => {
            let client = ApiClient::from_args(dirs, &target.api).await?;
            let template: Template = client.get(&template_path(&target.template)?).await?;
            warn(&template.warnings);
            show(&template, target.api.json)?;
        }
        TemplateCommand::Edit(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let files = Files::read(&args.fields)?;
            let body = UpdateTemplate {
                name: args.name,
                description: args.fields.description,
                network: args.fields.network.map(network),
                allowed_domains: domains(&args.fields.allow_domain),
                env_text: files.env_text,
                setup_script: files.setup_script,
                idle_timeout_s: args.fields.idle_timeout,
                max_lifetime_s: args.fields.max_lifetime,
                scope: None,
            };
            let updated: Template = client
                .request(
                    Method::PATCH,
                    &template_path(&args.template)?,
                    Some(&body),
                    REQUEST_TIMEOUT,
                )
                .await?;
            warn(&updated.warnings);
            show(&updated, args.api.json)?;
        }
        TemplateCommand::Delete(args) => {
            let client = ApiClient::from_args(dirs, &args.api).await?;
            let path = template_path(&args.template)?;
            let template: Template = client.get(&path).await?;
            if !args.yes {
                output::confirm_by_name(
                    &format!(
                        "Delete template {} ({})? This cannot be undone.",
                        template.name, template.id
                    ),
                    [template.name.as_str(), template.id.as_str()],
                    "delete",
                )?;
            }
            let _: Value = client
                .request::<(), Value>(
                    Method::DELETE,
                    &template_path(&template.id)?,
                    None,
                    REQUEST_TIMEOUT,
                )
                .await?;
            if args.api.json {
                output::json(&serde_json::json!({"deleted": template.id}))?;
            } else {
                output::note(&format!(
                    "deleted template {} ({})",
                    template.name, template.id
                ));
            }
        }
    }
    Ok(())
}

/// The texts of `--env-file` and `--setup-script`, when given.
struct Files {
    env_text: Option<String>,
    setup_script: Option<String>,
}

impl Files {
    fn read(fields: &TemplateFields) -> Result<Self> {
        if fields.env_file.as_deref() == Some(Path::new("-"))
            && fields.setup_script.as_deref() == Some(Path::new("-"))
        {
            anyhow::bail!("--env-file and --setup-script cannot both read standard input");
        }
        Ok(Self {
            env_text: fields.env_file.as_deref().map(read_text).transpose()?,
            setup_script: fields.setup_script.as_deref().map(read_text).transpose()?,
        })
    }
}

/// A file's text (`-`: standard input).
fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading standard input")?;
        return Ok(text);
    }
    fs_err::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn network(arg: NetworkArg) -> Network {
    match arg {
        NetworkArg::None => Network::None,
        NetworkArg::AllowAll => Network::AllowAll,
        NetworkArg::Allowlist => Network::Allowlist,
    }
}

/// `--allow-domain` values: `None` when not given, so an edit keeps the
/// list; `''` alone clears it.
fn domains(values: &[String]) -> Option<Vec<String>> {
    (!values.is_empty()).then(|| {
        values
            .iter()
            .filter(|value| !value.trim().is_empty())
            .cloned()
            .collect()
    })
}

/// `/templates/{id or name}`, the name encoded as one path segment.
fn template_path(id_or_name: &str) -> Result<String> {
    // Only for its path encoder: the client adds the relay's address.
    let mut url = reqwest::Url::parse("http://relay/templates").context("building the path")?;
    url.path_segments_mut()
        .map_err(|()| anyhow::anyhow!("building the path"))?
        .push(id_or_name);
    Ok(url.path().to_owned())
}

/// Secret-looking values, on stderr (also with --json: stdout stays data).
fn warn(warnings: &[TemplateWarning]) {
    for warning in warnings {
        output::note(&format!(
            "warning: line {}: {}",
            warning.line, warning.message
        ));
    }
}

fn show(template: &Template, json: bool) -> Result<()> {
    if json {
        return output::json(template);
    }
    let or_none = |list: &[String]| {
        if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        }
    };
    let setup = if template.setup_script.is_empty() {
        "none".to_owned()
    } else {
        format!(
            "{} lines, {} bytes",
            template.setup_script.lines().count(),
            template.setup_script.len()
        )
    };
    output::fields(&[
        ("id", template.id.clone()),
        ("name", template.name.clone()),
        ("description", template.description.clone()),
        ("scope", template.scope.clone()),
        ("network", template.network.as_str().to_owned()),
        ("allowed domains", or_none(&template.allowed_domains)),
        ("variables", or_none(&template.env_names)),
        ("setup script", setup),
        ("idle timeout", duration(template.idle_timeout_s)),
        ("max lifetime", duration(template.max_lifetime_s)),
        ("created by", template.created_by.name.clone()),
        ("created", template.created_at.clone()),
        ("updated", template.updated_at.clone()),
    ])
}

/// Seconds in the largest unit that divides them (`900` → `15m`).
fn duration(seconds: u64) -> String {
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if seconds >= size && seconds.is_multiple_of(size) {
            return format!("{}{unit}", seconds / size);
        }
    }
    format!("{seconds}s")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_one_path_segment() {
        assert_eq!(
            template_path("tpl_1").expect("accepted"),
            "/templates/tpl_1"
        );
        assert_eq!(
            template_path("my py/3 ?x").expect("accepted"),
            "/templates/my%20py%2F3%20%3Fx"
        );
    }

    #[test]
    fn durations_read_back_in_their_unit() {
        assert_eq!(duration(900), "15m");
        assert_eq!(duration(28_800), "8h");
        assert_eq!(duration(90), "90s");
        assert_eq!(duration(172_800), "2d");
    }
}
