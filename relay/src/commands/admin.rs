//! `runner-relay admin`: members, API keys and teams, straight in the store
//! (works whether or not the server runs: SQLite in WAL mode).

use anyhow::Context;

use super::{database_url, open_store, say};
use crate::args::{AdminArgs, AdminCommand};
use crate::clock::{Clock, SystemClock};
use crate::members;
use crate::store::NewMember;

pub async fn run(args: AdminArgs) -> anyhow::Result<()> {
    let url = database_url(&args.store)?;
    let store = open_store(&url).await?;
    let clock = SystemClock;
    match args.command {
        AdminCommand::CreateKey { admin, teams, name } => {
            let member = NewMember {
                name,
                is_admin: admin,
                teams,
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
    }
}
