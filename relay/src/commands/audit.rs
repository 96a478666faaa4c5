//! `runner-relay admin audit verify`: walks the audit log's hash chain
//! (docs/audit.md).

use serde::Serialize;

use super::say;
use crate::audit::chain::{Break, Verifier};
use crate::audit::AuditQuery;
use crate::store::Store;

/// Entries read at a time.
const PAGE: u32 = 1000;

/// What a walk found.
#[derive(Debug, Serialize)]
pub struct Verification {
    pub ok: bool,
    /// Entries whose hash and link were checked.
    pub checked: u64,
    /// The chain's newest entry as its head row records it: note it
    /// somewhere else to detect a later truncation of the whole tail.
    pub head_seq: u64,
    pub head_hash: String,
    /// Entries up to here were pruned (retention).
    pub pruned_through: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<Break>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Walks the whole chain.
pub async fn verify(store: &dyn Store) -> anyhow::Result<Verification> {
    let head = store.audit_head().await?;
    let mut verifier = Verifier::after_pruning(head.pruned_through);
    let mut cursor = None;
    let mut problem = None;
    'walk: loop {
        let page = store
            .audit_entries(&AuditQuery {
                cursor,
                limit: PAGE,
                ..AuditQuery::default()
            })
            .await?;
        for entry in &page {
            if let Err(found) = verifier.check(entry) {
                problem = Some(found);
                break 'walk;
            }
        }
        match page.last() {
            Some(last) if page.len() == PAGE as usize => cursor = Some(last.seq),
            _ => break,
        }
    }
    if problem.is_none() {
        problem = verifier.finish(head.seq, &head.hash).err();
    }
    Ok(Verification {
        ok: problem.is_none(),
        checked: verifier.checked,
        head_seq: head.seq,
        head_hash: head.hash,
        pruned_through: head.pruned_through,
        message: problem.as_ref().map(ToString::to_string),
        problem,
    })
}

/// Prints the result; an error (exit 1) when the chain is broken.
pub async fn run_verify(store: &dyn Store, json: bool) -> anyhow::Result<()> {
    let verification = verify(store).await?;
    if json {
        say(&serde_json::to_string(&verification)?)?;
    } else if verification.ok {
        say(&format!(
            "audit log intact: {} entries checked (head {} {}, pruned through {})",
            verification.checked,
            verification.head_seq,
            verification.head_hash,
            verification.pruned_through
        ))?;
    }
    match &verification.problem {
        None => Ok(()),
        Some(problem) => anyhow::bail!(
            "audit log broken at entry {}: {problem} ({} entries before it verified)",
            problem.seq(),
            verification.checked
        ),
    }
}
