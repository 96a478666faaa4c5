//! The hash chain: each entry's hash covers its sequence number, its
//! fields and the previous entry's hash, so changing a row changes its
//! hash, and deleting one leaves a gap in the sequence and a `prev_hash`
//! that no longer matches.

use runner_proto::audit::{AuditAction, AuditDecision};
use serde::Serialize;

use super::{AuditRecord, StoredAudit};

/// The `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The fields an entry's hash covers, in a fixed order (struct fields
/// serialise in declaration order; the arguments are already canonical
/// text).
#[derive(Serialize)]
struct Hashed<'a> {
    v: u8,
    seq: u64,
    prev_hash: &'a str,
    at_ms: i64,
    action: AuditAction,
    member_id: Option<&'a str>,
    name: Option<&'a str>,
    kind: Option<&'a str>,
    key_id: Option<&'a str>,
    client: Option<&'a str>,
    source: Option<&'a str>,
    environment_id: Option<&'a str>,
    session_id: Option<&'a str>,
    tool: Option<&'a str>,
    call_id: Option<&'a str>,
    target: Option<&'a str>,
    args_digest: Option<&'a str>,
    args: Option<&'a str>,
    decision: AuditDecision,
    code: Option<&'a str>,
    exit_code: Option<i32>,
    duration_ms: Option<u64>,
    bytes_out: Option<u64>,
}

/// Hex SHA-256 of entry `seq` holding `record` after `prev_hash`.
pub fn hash(prev_hash: &str, seq: u64, record: &AuditRecord) -> String {
    hash_in(&mut Vec::new(), prev_hash, seq, record)
}

/// [`hash`], serialising into `buffer` (cleared first), so that a batch
/// reuses one allocation.
fn hash_in(buffer: &mut Vec<u8>, prev_hash: &str, seq: u64, record: &AuditRecord) -> String {
    let actor = &record.actor;
    let hashed = Hashed {
        v: 1,
        seq,
        prev_hash,
        at_ms: record.at_ms(),
        action: record.action,
        member_id: actor.member_id.as_deref(),
        name: actor.name.as_deref(),
        kind: actor.kind.as_deref(),
        key_id: actor.key_id.as_deref(),
        client: actor.client.as_deref(),
        source: actor.source.as_deref(),
        environment_id: record.environment_id.as_deref(),
        session_id: record.session_id.as_deref(),
        tool: record.tool.as_deref(),
        call_id: record.call_id.as_deref(),
        target: record.target.as_deref(),
        args_digest: record.args_digest.as_deref(),
        args: record.args.as_deref(),
        decision: record.decision,
        code: record.code.as_deref(),
        exit_code: record.exit_code,
        duration_ms: record.duration_ms,
        bytes_out: record.bytes_out,
    };
    buffer.clear();
    // Strings, integers and unit enums into memory: serialising cannot fail.
    let _ = serde_json::to_writer(&mut *buffer, &hashed);
    crate::canonical::sha256_hex(buffer)
}

/// Chains `records` after the entry (`seq`, `hash`): their sequence
/// numbers and hashes.
pub fn link(mut seq: u64, mut prev: String, records: &[AuditRecord]) -> Vec<(u64, String, String)> {
    let mut linked = Vec::with_capacity(records.len());
    let mut buffer = Vec::with_capacity(1024);
    for record in records {
        seq += 1;
        let own = hash_in(&mut buffer, &prev, seq, record);
        linked.push((seq, prev, own.clone()));
        prev = own;
    }
    linked
}

/// What is wrong with the chain at one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum Break {
    /// The row's fields no longer give its stored hash: it was edited.
    ChangedRow { seq: u64 },
    /// The row's `prev_hash` is not the previous row's hash: the previous
    /// row was replaced, or this one edited to hide a deletion.
    BrokenLink { seq: u64 },
    /// Sequence numbers jump: rows `from..=to` are missing.
    MissingRows { from: u64, to: u64 },
    /// The head says the chain is longer than its last row: rows at the
    /// end were deleted.
    MissingTail { from: u64, to: u64 },
}

impl Break {
    /// The first entry concerned.
    pub fn seq(&self) -> u64 {
        match self {
            Self::ChangedRow { seq } | Self::BrokenLink { seq } => *seq,
            Self::MissingRows { from, .. } | Self::MissingTail { from, .. } => *from,
        }
    }
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ChangedRow { seq } => write!(
                f,
                "entry {seq} was changed: its fields do not give its stored hash"
            ),
            Self::BrokenLink { seq } => write!(
                f,
                "entry {seq} does not follow entry {}: its prev_hash is not that entry's hash",
                seq.saturating_sub(1)
            ),
            Self::MissingRows { from, to } if from == to => {
                write!(f, "entry {from} is missing (deleted)")
            }
            Self::MissingRows { from, to } => {
                write!(f, "entries {from} to {to} are missing (deleted)")
            }
            Self::MissingTail { from, to } => write!(
                f,
                "entries {from} to {to} at the end of the chain are missing (deleted)"
            ),
        }
    }
}

/// Walks stored entries in sequence order. The first one's `prev_hash` is
/// trusted (it is the anchor left by pruning); from then on every link is
/// checked.
#[derive(Debug, Default)]
pub struct Verifier {
    last: Option<(u64, String)>,
    pub checked: u64,
}

impl Verifier {
    /// A walk whose first entry must be `pruned_through + 1`.
    pub fn after_pruning(pruned_through: u64) -> Self {
        Self {
            // An empty hash: the pruned entry's is not known.
            last: (pruned_through > 0).then(|| (pruned_through, String::new())),
            checked: 0,
        }
    }

    /// Checks the next entry.
    pub fn check(&mut self, entry: &StoredAudit) -> Result<(), Break> {
        let expected = self.last.as_ref().map_or(1, |(seq, _)| seq + 1);
        if entry.seq > expected {
            return Err(Break::MissingRows {
                from: expected,
                to: entry.seq - 1,
            });
        }
        if entry.seq < expected {
            // Read in order with a unique key: only a corrupt store repeats.
            return Err(Break::BrokenLink { seq: entry.seq });
        }
        if hash(&entry.prev_hash, entry.seq, &entry.record) != entry.hash {
            return Err(Break::ChangedRow { seq: entry.seq });
        }
        // The previous entry's hash, unless it was pruned (then the stored
        // prev_hash is the anchor).
        if let Some((_, previous)) = &self.last {
            if !previous.is_empty() && *previous != entry.prev_hash {
                return Err(Break::BrokenLink { seq: entry.seq });
            }
        } else if entry.seq == 1 && entry.prev_hash != GENESIS {
            return Err(Break::BrokenLink { seq: 1 });
        }
        self.last = Some((entry.seq, entry.hash.clone()));
        self.checked += 1;
        Ok(())
    }

    /// After the last entry: the head must be the last entry checked.
    pub fn finish(&self, head_seq: u64, head_hash: &str) -> Result<(), Break> {
        let (last_seq, last_hash) = self
            .last
            .as_ref()
            .map_or((0, GENESIS), |(seq, hash)| (*seq, hash.as_str()));
        if head_seq > last_seq {
            return Err(Break::MissingTail {
                from: last_seq + 1,
                to: head_seq,
            });
        }
        if head_seq == last_seq && !last_hash.is_empty() && last_hash != head_hash && head_seq > 0 {
            return Err(Break::ChangedRow { seq: head_seq });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use runner_proto::audit::AuditActor;
    use time::OffsetDateTime;

    use super::*;

    fn chain(n: u64) -> Vec<StoredAudit> {
        let records: Vec<AuditRecord> = (0..n)
            .map(|i| {
                let mut record = AuditRecord::new(
                    OffsetDateTime::UNIX_EPOCH,
                    AuditActor::default(),
                    AuditAction::ToolInvoke,
                );
                record.tool = Some(format!("tool{i}"));
                record
            })
            .collect();
        link(0, GENESIS.to_owned(), &records)
            .into_iter()
            .zip(records)
            .map(|((seq, prev_hash, hash), record)| StoredAudit {
                seq,
                record,
                prev_hash,
                hash,
            })
            .collect()
    }

    fn verify(entries: &[StoredAudit], pruned: u64, head: (u64, &str)) -> Result<u64, Break> {
        let mut verifier = Verifier::after_pruning(pruned);
        for entry in entries {
            verifier.check(entry)?;
        }
        verifier.finish(head.0, head.1)?;
        Ok(verifier.checked)
    }

    #[test]
    fn an_intact_chain_verifies() {
        let entries = chain(5);
        let head = entries[4].hash.clone();
        assert_eq!(verify(&entries, 0, (5, &head)), Ok(5));
        // Pruned: the rest still verifies from its first entry.
        assert_eq!(verify(&entries[2..], 2, (5, &head)), Ok(3));
    }

    #[test]
    fn edits_and_deletions_are_named() {
        let entries = chain(5);
        let head = entries[4].hash.clone();
        let mut edited = entries.clone();
        edited[2].record.decision = AuditDecision::Denied;
        assert_eq!(
            verify(&edited, 0, (5, &head)),
            Err(Break::ChangedRow { seq: 3 })
        );

        let mut deleted = entries.clone();
        deleted.remove(1);
        assert_eq!(
            verify(&deleted, 0, (5, &head)),
            Err(Break::MissingRows { from: 2, to: 2 })
        );
        // Deleted and renumbered: the next link does not match.
        let mut renumbered = chain(5);
        renumbered.remove(1);
        renumbered[1].seq = 2;
        assert!(verify(&renumbered, 0, (5, &head)).is_err());

        assert_eq!(
            verify(&entries[..3], 0, (5, &head)),
            Err(Break::MissingTail { from: 4, to: 5 })
        );
        // Oldest rows deleted beyond what pruning recorded.
        assert_eq!(
            verify(&entries[2..], 0, (5, &head)),
            Err(Break::MissingRows { from: 1, to: 2 })
        );
    }
}
