//! `runner-relay admin`: members, API keys and teams, straight in the store
//! (works whether or not the server runs: SQLite in WAL mode).

use anyhow::Context;

use super::{database_url, open_store, say, store_location};
use crate::args::{AdminArgs, AdminCommand, AuditCommand};
use crate::audit::AuditRecord;
use crate::clock::{Clock, SystemClock};
use crate::members;
use crate::report::Hinted;
use crate::store::{Member, MemberKind, NewMember, Store, StoreError};
use runner_proto::audit::{AuditAction, AuditActor};

pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    refuse_a_new_store(&args)?;
    let url = database_url(&args.store)?;
    let store = open_store(&url).await?;
    let clock = SystemClock;
    match args.command {
        AdminCommand::CreateKey {
            admin,
            teams,
            name,
            agent,
        } => {
            let member = NewMember {
                name,
                is_admin: admin,
                teams,
                kind: if agent {
                    MemberKind::Agent
                } else {
                    MemberKind::Person
                },
            };
            let (created, key) = members::create_with_key(store.as_ref(), &clock, &member)
                .await
                .context("creating the member")?;
            tracing::info!(member_id = %created.id, admin = created.is_admin, teams = %created.teams.join(","), "member created");
            operator_audit(
                store.as_ref(),
                &clock,
                AuditAction::MemberCreate,
                &created.id,
            )
            .await;
            // The key alone, so that scripts can capture it.
            say(key.expose())
        }
        AdminCommand::Audit {
            command: AuditCommand::Verify { json },
        } => super::audit::run_verify(store.as_ref(), json).await,
        AdminCommand::ListKeys { json } => list_keys(store.as_ref(), json).await,
        AdminCommand::ListMembers { json } => list_members(store.as_ref(), json).await,
        AdminCommand::RevokeKey { member, yes } => {
            let member = members::find(store.as_ref(), &member).await?;
            let held = store
                .list_api_keys()
                .await?
                .into_iter()
                .filter(|key| key.member_id == member.id)
                .count();
            if held == 0 {
                anyhow::bail!(
                    "{} {:?} ({}) holds no API key",
                    member.kind.as_str(),
                    member.name,
                    member.id
                );
            }
            if !yes {
                confirm(&format!(
                    "Revoke the API key of {} {:?} ({})? Everything using it stops working.",
                    member.kind.as_str(),
                    member.name,
                    member.id
                ))?;
            }
            let revoked = store
                .revoke_api_keys(&member.id)
                .await
                .with_context(|| format!("revoking the keys of {:?}", member.name))?;
            tracing::info!(member_id = %member.id, revoked, "API keys revoked");
            operator_audit(
                store.as_ref(),
                &clock,
                AuditAction::MemberKeyRevoke,
                &member.id,
            )
            .await;
            eprintln!(
                "revoked {revoked} API key{} of {:?} ({}); a running relay refuses {} within 10 s",
                if revoked == 1 { "" } else { "s" },
                member.name,
                member.id,
                if revoked == 1 { "it" } else { "them" },
            );
            Ok(())
        }
        AdminCommand::CreateTeam { name } => {
            if name.trim().is_empty() || name.contains(char::is_whitespace) {
                anyhow::bail!("team name {name:?} must be non-empty and contain no spaces");
            }
            store
                .create_team(&name, clock.now())
                .await
                .with_context(|| format!("creating team {name:?}"))?;
            operator_audit(store.as_ref(), &clock, AuditAction::TeamCreate, &name).await;
            eprintln!("team {name:?} created");
            Ok(())
        }
        AdminCommand::AddToTeam { team, member } => {
            let member = members::find(store.as_ref(), &member).await?;
            let added = match store.add_team_member(&team, &member.id).await {
                Err(StoreError::UnknownTeam(_)) => {
                    anyhow::bail!(
                        "no team {team:?}: create it with `runner-relay admin create-team {team}`"
                    )
                }
                other => {
                    other.with_context(|| format!("adding {:?} to team {team:?}", member.name))?
                }
            };
            if added {
                let target = format!("{team}/{}", member.id);
                operator_audit(store.as_ref(), &clock, AuditAction::TeamMemberAdd, &target).await;
                eprintln!(
                    "{} {:?} ({}) added to team {team:?}",
                    member.kind.as_str(),
                    member.name,
                    member.id
                );
            } else {
                eprintln!(
                    "{:?} ({}) is already in team {team:?}",
                    member.name, member.id
                );
            }
            Ok(())
        }
        AdminCommand::RemoveFromTeam { team, member } => {
            let member = members::find(store.as_ref(), &member).await?;
            let removed = store
                .remove_team_member(&team, &member.id)
                .await
                .with_context(|| format!("removing {:?} from team {team:?}", member.name))?;
            if !removed {
                anyhow::bail!("{:?} ({}) is not in team {team:?}", member.name, member.id);
            }
            let target = format!("{team}/{}", member.id);
            operator_audit(
                store.as_ref(),
                &clock,
                AuditAction::TeamMemberRemove,
                &target,
            )
            .await;
            eprintln!(
                "{:?} ({}) removed from team {team:?}",
                member.name, member.id
            );
            Ok(())
        }
    }
}

/// One key of `list-keys --json`.
#[derive(serde::Serialize)]
struct KeyView {
    id: String,
    hint: String,
    created_at: String,
    member: MemberView,
}

/// One member of `list-members --json` (and a key's member).
#[derive(serde::Serialize)]
struct MemberView {
    id: String,
    name: String,
    kind: &'static str,
    admin: bool,
    teams: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    api_keys: Option<usize>,
}

fn member_view(member: &Member, api_keys: Option<usize>) -> MemberView {
    MemberView {
        id: member.id.clone(),
        name: member.name.clone(),
        kind: member.kind.as_str(),
        admin: member.is_admin,
        teams: member.teams.clone(),
        api_keys,
    }
}

/// `admin`, `agent` or `person`, then the teams.
fn role(member: &MemberView) -> String {
    let kind = if member.admin { "admin" } else { member.kind };
    if member.teams.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind} ({})", member.teams.join(","))
    }
}

async fn list_keys(store: &dyn Store, json: bool) -> anyhow::Result<()> {
    let members = store.list_members().await?;
    let mut views = Vec::new();
    for key in store.list_api_keys().await? {
        let Some(member) = members.iter().find(|member| member.id == key.member_id) else {
            continue;
        };
        views.push(KeyView {
            id: key.id,
            hint: key.hint,
            created_at: crate::clock::rfc3339(key.created_at),
            member: member_view(member, None),
        });
    }
    if json {
        return say(&serde_json::to_string(&views)?);
    }
    if views.is_empty() {
        eprintln!("no API keys (`runner-relay admin create-key` makes one)");
        return Ok(());
    }
    let rows: Vec<[String; 5]> = views
        .iter()
        .map(|view| {
            [
                view.hint.clone(),
                view.member.id.clone(),
                view.member.name.clone(),
                role(&view.member),
                view.created_at.clone(),
            ]
        })
        .collect();
    table(["KEY", "MEMBER", "NAME", "ROLE", "CREATED"], &rows)
}

async fn list_members(store: &dyn Store, json: bool) -> anyhow::Result<()> {
    let keys = store.list_api_keys().await?;
    let views: Vec<MemberView> = store
        .list_members()
        .await?
        .iter()
        .map(|member| {
            let held = keys.iter().filter(|key| key.member_id == member.id).count();
            member_view(member, Some(held))
        })
        .collect();
    if json {
        return say(&serde_json::to_string(&views)?);
    }
    let rows: Vec<[String; 4]> = views
        .iter()
        .map(|view| {
            [
                view.id.clone(),
                view.name.clone(),
                role(view),
                view.api_keys.unwrap_or_default().to_string(),
            ]
        })
        .collect();
    table(["ID", "NAME", "ROLE", "KEYS"], &rows)
}

/// Columns padded to their widest cell, on stdout.
fn table<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> anyhow::Result<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    say(&line(header.to_vec()))?;
    for row in rows {
        say(&line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// Asks on the terminal; without one, refuses and points at --yes (as
/// `runner`'s destructive commands do).
fn confirm(question: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return Err(Hinted::new(
            "refusing to revoke without confirmation: no terminal to ask on",
            "pass --yes",
        )
        .into());
    }
    let mut stderr = std::io::stderr().lock();
    write!(stderr, "{question} [y/N] ")?;
    stderr.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(answer.trim(), "y" | "Y" | "yes") {
        Ok(())
    } else {
        anyhow::bail!("not revoked")
    }
}

/// `admin` works on the store a relay serves: where there is no SQLite
/// file yet it would create one and hand out keys no running relay knows
/// (the usual cause: a forgotten --data-dir). Refused unless --create,
/// naming where it looked and why there.
fn refuse_a_new_store(args: &AdminArgs) -> anyhow::Result<()> {
    let location = store_location(&args.store)?;
    let Some(file) = location.sqlite_file else {
        return Ok(());
    };
    if args.create || file.exists() {
        return Ok(());
    }
    Err(Hinted::new(
        format!(
            "no relay store at {} (looked there because of {})",
            file.display(),
            location.chosen_by
        ),
        "pass the running relay's --data-dir DIR (or --database-url), before or after the \
         subcommand; or --create to start a new store there",
    )
    .into())
}

/// Audits a change made here, straight in the store, by whoever runs
/// `runner-relay admin` (an operator with access to the database). A
/// failure is reported, not fatal: the change is made already.
async fn operator_audit(store: &dyn Store, clock: &dyn Clock, action: AuditAction, target: &str) {
    let actor = AuditActor {
        kind: Some("operator".to_owned()),
        client: Some("runner-relay admin".to_owned()),
        ..AuditActor::default()
    };
    let record = AuditRecord::new(clock.now(), actor, action).target(target);
    if let Err(error) = store.append_audit(&[record.view()]).await {
        eprintln!("warning: could not record this change in the audit log: {error}");
    }
}
