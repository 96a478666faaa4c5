//! `runner-relay admin`: members, API keys and teams, straight in the store
//! (works whether or not the server runs: SQLite in WAL mode).

use anyhow::Context;

use super::{database_url, open_store, say, store_location};
use crate::args::{AdminArgs, AdminCommand, AuditCommand};
use crate::audit::AuditRecord;
use crate::clock::{Clock, SystemClock};
use crate::members;
use crate::report::Hinted;
use crate::store::{MemberKind, NewMember, Store, StoreError};
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
    if let Err(error) = store.append_audit(&[record]).await {
        eprintln!("warning: could not record this change in the audit log: {error}");
    }
}
