//! `runner-relay admin`: members, API keys and teams, straight in the store
//! (works whether or not the server runs: SQLite in WAL mode).

use anyhow::Context;

use super::{database_url, open_store, say};
use crate::args::{AdminArgs, AdminCommand};
use crate::clock::{Clock, SystemClock};
use crate::members;
use crate::store::{MemberKind, NewMember, StoreError};

pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
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
            tracing::info!(member_id = %created.id, admin = created.is_admin, teams = ?created.teams, "member created");
            // The key alone, so that scripts can capture it.
            say(key.expose())
        }
        AdminCommand::CreateTeam { name } => {
            if name.trim().is_empty() || name.contains(char::is_whitespace) {
                anyhow::bail!("team name {name:?} must be non-empty and contain no spaces");
            }
            store
                .create_team(&name, clock.now())
                .await
                .with_context(|| format!("creating team {name:?}"))?;
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
            eprintln!(
                "{:?} ({}) removed from team {team:?}",
                member.name, member.id
            );
            Ok(())
        }
    }
}
