//! `runner audit`: the relay's audit log (`GET /audit`), as a table, as
//! JSON Lines, or followed as it grows.

use std::time::Duration;

use anyhow::Result;
use runner_proto::audit::{AuditEntry, AuditPage, MAX_AUDIT_PAGE};

use crate::args::AuditArgs;
use crate::client::{with_query, ApiClient};
use crate::config::Dirs;
use crate::output;

/// Entries the table shows without --limit.
const DEFAULT_TABLE_ROWS: u64 = 50;
/// How often --follow asks for new entries.
const FOLLOW_POLL: Duration = Duration::from_secs(2);

pub async fn run(dirs: &Dirs, args: AuditArgs) -> Result<()> {
    let client = ApiClient::from_args(dirs, &args.api).await?;
    let json = args.api.json;
    let mut printer = Printer {
        json,
        header: !json,
    };
    let mut cursor = if json {
        // An export: every matching entry, oldest first.
        let mut remaining = args.limit;
        let mut cursor = None;
        loop {
            let limit = page_limit(remaining);
            let page = fetch(&client, &args, "asc", limit, cursor.as_deref()).await?;
            printer.print(&page.entries)?;
            if let Some(left) = &mut remaining {
                *left = left.saturating_sub(page.entries.len() as u64);
            }
            cursor = page.next_cursor.clone();
            if page.entries.len() < limit as usize || remaining == Some(0) {
                break;
            }
        }
        cursor
    } else {
        // A table: the newest entries, shown oldest first.
        let rows = args.limit.unwrap_or(DEFAULT_TABLE_ROWS).max(1);
        let page = fetch(&client, &args, "desc", page_limit(Some(rows)), None).await?;
        let mut entries = page.entries;
        entries.reverse();
        printer.print(&entries)?;
        if entries.is_empty() && !args.follow {
            output::note("no audit entries match");
        }
        Some(entries.last().map_or(0, |entry| entry.seq).to_string())
    };
    if !args.follow {
        return Ok(());
    }
    loop {
        tokio::time::sleep(FOLLOW_POLL).await;
        let page = fetch(&client, &args, "asc", MAX_AUDIT_PAGE, cursor.as_deref()).await?;
        printer.print(&page.entries)?;
        if page.next_cursor.is_some() {
            cursor = page.next_cursor;
        }
    }
}

fn page_limit(remaining: Option<u64>) -> u32 {
    let most = u64::from(MAX_AUDIT_PAGE);
    u32::try_from(remaining.unwrap_or(most).clamp(1, most)).unwrap_or(MAX_AUDIT_PAGE)
}

async fn fetch(
    client: &ApiClient,
    args: &AuditArgs,
    order: &str,
    limit: u32,
    cursor: Option<&str>,
) -> Result<AuditPage> {
    let limit = limit.to_string();
    let path = with_query(
        "/audit",
        &[
            ("environment", args.env.as_deref()),
            ("actor", args.actor.as_deref()),
            ("action", args.action.as_deref()),
            ("session", args.session.as_deref()),
            ("tool", args.tool.as_deref()),
            ("since", args.since.as_deref()),
            ("until", args.until.as_deref()),
            ("cursor", cursor),
            ("order", Some(order)),
            ("limit", Some(&limit)),
        ],
    )?;
    client.get(&path).await
}

struct Printer {
    json: bool,
    /// The table's header is still to print.
    header: bool,
}

impl Printer {
    fn print(&mut self, entries: &[AuditEntry]) -> Result<()> {
        if self.json {
            for entry in entries {
                println!("{}", serde_json::to_string(entry)?);
            }
            return Ok(());
        }
        if entries.is_empty() {
            return Ok(());
        }
        let rows: Vec<Vec<String>> = entries.iter().map(row).collect();
        if std::mem::take(&mut self.header) {
            return output::table(
                &[
                    "SEQ",
                    "TIME",
                    "ACTOR",
                    "ACTION",
                    "ENVIRONMENT",
                    "TOOL/TARGET",
                    "DECISION",
                    "SOURCE",
                ],
                &rows,
            );
        }
        // Followed entries: the same columns, unaligned with the first page.
        for row in rows {
            println!("{}", row.join("  "));
        }
        Ok(())
    }
}

fn row(entry: &AuditEntry) -> Vec<String> {
    let actor = &entry.actor;
    let who = match (&actor.name, &actor.member_id, &actor.kind) {
        (Some(name), _, _) => name.clone(),
        (None, Some(id), _) => id.clone(),
        (None, None, Some(kind)) => kind.clone(),
        _ => "-".to_owned(),
    };
    let what = entry
        .tool
        .clone()
        .or_else(|| entry.target.clone())
        .unwrap_or_else(|| "-".to_owned());
    let decision = match (&entry.code, entry.exit_code) {
        (Some(code), _) => format!("{} ({code})", entry.decision.as_str()),
        (None, Some(exit)) => format!("{} (exit {exit})", entry.decision.as_str()),
        (None, None) => entry.decision.as_str().to_owned(),
    };
    vec![
        entry.seq.to_string(),
        entry.at.clone(),
        who,
        entry.action.as_str().to_owned(),
        entry
            .environment_id
            .clone()
            .unwrap_or_else(|| "-".to_owned()),
        what,
        decision,
        actor.source.clone().unwrap_or_else(|| "-".to_owned()),
    ]
}
