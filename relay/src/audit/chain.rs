//! The hash chain: each entry's hash covers its sequence number, its
//! fields and the previous entry's hash, so changing a row changes its
//! hash, and deleting one leaves a gap in the sequence and a `prev_hash`
//! that no longer matches.
//!
//! Two row formats verify side by side (docs/audit.md). Format 2, which
//! the relay writes, keeps the fields a query filters on in columns and
//! the rest in one JSON array, `entry`; its hash covers the columns and
//! that text, framed by length. Format 1, rows written before, keeps
//! every field in a column; its hash covers a fixed JSON rendering of
//! them.

use std::ops::Range;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{AuditRecord, AuditView, RowFormat, StoredAudit};

/// The `prev_hash` of the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What a format 1 hash covers: the version, the entry's place and its
/// fields, in a fixed order (struct fields serialise in declaration
/// order, the view's included; the arguments are already canonical text).
#[derive(Serialize)]
struct Format1<'a> {
    v: u8,
    seq: u64,
    prev_hash: &'a str,
    #[serde(flatten)]
    fields: AuditView<'a>,
}

/// Hex SHA-256 of a format 1 row: entry `seq` holding `record` after
/// `prev_hash`.
pub fn columns_hash(prev_hash: &str, seq: u64, record: &AuditRecord) -> String {
    let hashed = Format1 {
        v: 1,
        seq,
        prev_hash,
        fields: record.view(),
    };
    // Strings, integers and unit enums into memory: serialising cannot fail.
    let text = serde_json::to_vec(&hashed).unwrap_or_default();
    crate::canonical::sha256_hex(&text)
}

// A format 2 row's `entry`: the fields without a column, as a JSON array
// in this order, absent ones as `null`: actor name, kind, key id, client
// and source; call id, target, arguments' digest, arguments, code, exit
// code, duration and bytes out (docs/audit.md lists the same order). An
// array, not an object: an object repeats every name in every row.

/// An `entry` as read back, in its order.
type StoredEntry = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i32>,
    Option<u64>,
    Option<u64>,
);

/// The `entry` of `record` in a format 2 row.
#[cfg(test)]
fn entry_text(record: &AuditView<'_>) -> String {
    let mut text = String::new();
    push_entry(&mut text, &mut Vec::new(), record);
    text
}

/// Appends the `entry` of `record` to `text`, written first into
/// `scratch` (cleared here: a batch reuses it).
fn push_entry(text: &mut String, scratch: &mut Vec<u8>, record: &AuditView<'_>) {
    scratch.clear();
    write_entry(scratch, record);
    // JSON of `str`s and integers: always UTF-8, so the lossy branch is
    // never taken.
    match std::str::from_utf8(scratch) {
        Ok(entry) => text.push_str(entry),
        Err(_) => text.push_str(&String::from_utf8_lossy(scratch)),
    }
}

/// Appends the `entry` of `record` to `out`.
fn write_entry(out: &mut Vec<u8>, record: &AuditView<'_>) {
    let fields = (
        record.name,
        record.kind,
        record.key_id,
        record.client,
        record.source,
        record.call_id,
        record.target,
        record.args_digest,
        record.args,
        record.code,
        record.exit_code,
        record.duration_ms,
        record.bytes_out,
    );
    // Strings and integers into memory: serialising cannot fail.
    let _ = serde_json::to_writer(out, &fields);
}

/// Puts the fields of a stored `entry` into `record`, whose columns are
/// already set; false (and `record` unchanged) if `text` is not an entry.
pub fn fill_from_entry(text: &str, record: &mut AuditRecord) -> bool {
    let Ok(fields) = serde_json::from_str::<StoredEntry>(text) else {
        return false;
    };
    let actor = &mut record.actor;
    (
        actor.name,
        actor.kind,
        actor.key_id,
        actor.client,
        actor.source,
        record.call_id,
        record.target,
        record.args_digest,
        record.args,
        record.code,
        record.exit_code,
        record.duration_ms,
        record.bytes_out,
    ) = fields;
    true
}

/// What a format 2 hash covers, before the fields: the format's name, so
/// that no format 1 text (JSON, starting `{`) is ever the same bytes.
const FORMAT2_TAG: &[u8] = b"runner audit 2\n";

/// SHA-256 of a format 2 row: entry `seq` holding `record`, whose other
/// fields are `entry`, after `prev_hash`. Every value is framed by its
/// length (and an absent one told from an empty one), so no two rows give
/// the same bytes. `buffer` is cleared first: a batch reuses it.
fn entry_hash_in(
    buffer: &mut Vec<u8>,
    prev_hash: &str,
    seq: u64,
    record: &AuditView<'_>,
    entry: &str,
) -> [u8; 32] {
    fn text(buffer: &mut Vec<u8>, value: &str) {
        let length = u64::try_from(value.len()).unwrap_or(u64::MAX);
        buffer.extend_from_slice(&length.to_le_bytes());
        buffer.extend_from_slice(value.as_bytes());
    }
    fn optional(buffer: &mut Vec<u8>, value: Option<&str>) {
        match value {
            None => buffer.push(0),
            Some(value) => {
                buffer.push(1);
                text(buffer, value);
            }
        }
    }
    buffer.clear();
    buffer.extend_from_slice(FORMAT2_TAG);
    buffer.extend_from_slice(&seq.to_le_bytes());
    text(buffer, prev_hash);
    buffer.extend_from_slice(&record.at_ms.to_le_bytes());
    text(buffer, record.action.as_str());
    optional(buffer, record.member_id);
    optional(buffer, record.environment_id);
    optional(buffer, record.session_id);
    optional(buffer, record.tool);
    text(buffer, record.decision.as_str());
    text(buffer, entry);
    Sha256::digest(&buffer[..]).into()
}

/// Hex SHA-256 of a format 2 row (see [`entry_hash_in`]).
pub fn entry_hash(prev_hash: &str, seq: u64, record: &AuditView<'_>, entry: &str) -> String {
    crate::canonical::hex_of(&entry_hash_in(
        &mut Vec::new(),
        prev_hash,
        seq,
        record,
        entry,
    ))
}

/// Records chained in format 2, as a batch appends them: every row's
/// texts in one buffer.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    text: String,
    rows: Vec<LinkSpans>,
}

/// Where one row's texts lie in [`Chain::text`].
#[derive(Debug, Clone)]
struct LinkSpans {
    seq: u64,
    prev_hash: Range<usize>,
    hash: Range<usize>,
    entry: Range<usize>,
}

/// A record's place in the chain, as appended in format 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Linked<'a> {
    pub seq: u64,
    pub prev_hash: &'a str,
    pub hash: &'a str,
    /// The fields without a column, as stored and hashed.
    pub entry: &'a str,
}

impl Chain {
    /// The rows, in order.
    pub fn iter(&self) -> impl Iterator<Item = Linked<'_>> {
        self.rows.iter().map(|row| self.linked(row))
    }

    /// The newest row.
    pub fn last(&self) -> Option<Linked<'_>> {
        self.rows.last().map(|row| self.linked(row))
    }

    fn linked(&self, row: &LinkSpans) -> Linked<'_> {
        let text = |range: &Range<usize>| self.text.get(range.clone()).unwrap_or_default();
        Linked {
            seq: row.seq,
            prev_hash: text(&row.prev_hash),
            hash: text(&row.hash),
            entry: text(&row.entry),
        }
    }
}

/// Chains `records` after the entry (`seq`, `prev`), in format 2.
pub fn link(mut seq: u64, prev: &str, records: &[AuditView<'_>]) -> Chain {
    // A row's entry, its hash and the previous hash: about 400 bytes.
    let mut text = String::with_capacity(prev.len() + records.len() * 400);
    let mut rows = Vec::with_capacity(records.len());
    let mut hashed = Vec::with_capacity(1024);
    let mut scratch = Vec::with_capacity(512);
    text.push_str(prev);
    let mut prev_hash = 0..text.len();
    for record in records {
        seq += 1;
        let start = text.len();
        push_entry(&mut text, &mut scratch, record);
        let entry = start..text.len();
        let digest = entry_hash_in(
            &mut hashed,
            text.get(prev_hash.clone()).unwrap_or_default(),
            seq,
            record,
            text.get(entry.clone()).unwrap_or_default(),
        );
        let start = text.len();
        crate::canonical::push_hex(&mut text, &digest);
        let hash = start..text.len();
        rows.push(LinkSpans {
            seq,
            prev_hash,
            hash: hash.clone(),
            entry,
        });
        prev_hash = hash;
    }
    Chain { text, rows }
}

/// Whether a stored row's fields still give its stored hash.
pub fn intact(entry: &StoredAudit) -> bool {
    match &entry.format {
        RowFormat::Columns => {
            columns_hash(&entry.prev_hash, entry.seq, &entry.record) == entry.hash
        }
        RowFormat::Entry { text, damaged } => {
            !damaged
                && entry_hash(&entry.prev_hash, entry.seq, &entry.record.view(), text) == entry.hash
        }
    }
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
        if !intact(entry) {
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
    use runner_proto::audit::{AuditAction, AuditActor, AuditDecision};
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
        stored(0, GENESIS, records)
    }

    /// `records` chained after (`seq`, `prev`) and read back as stored.
    fn stored(seq: u64, prev: &str, records: Vec<AuditRecord>) -> Vec<StoredAudit> {
        let views: Vec<AuditView<'_>> = records.iter().map(AuditRecord::view).collect();
        let chain = link(seq, prev, &views);
        chain
            .iter()
            .zip(records)
            .map(|(linked, record)| StoredAudit {
                seq: linked.seq,
                record,
                prev_hash: linked.prev_hash.to_owned(),
                hash: linked.hash.to_owned(),
                format: RowFormat::Entry {
                    text: linked.entry.to_owned(),
                    damaged: false,
                },
            })
            .collect()
    }

    /// The record a format 2 row reads back as: its columns, then its entry.
    fn read_back(record: &AuditRecord, entry: &str) -> AuditRecord {
        let mut columns = AuditRecord::new(record.at, AuditActor::default(), record.action);
        columns.actor.member_id = record.actor.member_id.clone();
        columns.environment_id = record.environment_id.clone();
        columns.session_id = record.session_id.clone();
        columns.tool = record.tool.clone();
        columns.decision = record.decision;
        assert!(fill_from_entry(entry, &mut columns), "{entry}");
        columns
    }

    #[test]
    fn an_entry_holds_every_field_without_a_column() {
        for record in [
            super::super::full_record(),
            AuditRecord::new(
                OffsetDateTime::UNIX_EPOCH,
                AuditActor::default(),
                AuditAction::AuthFailed,
            ),
        ] {
            let entry = entry_text(&record.view());
            assert_eq!(read_back(&record, &entry), record, "{entry}");
        }
        // Absent fields are `null`, each in its place.
        let bare = AuditRecord::new(
            OffsetDateTime::UNIX_EPOCH,
            AuditActor::default(),
            AuditAction::AuthFailed,
        );
        assert_eq!(
            entry_text(&bare.view()),
            "[null,null,null,null,null,null,null,null,null,null,null,null,null]"
        );
        assert_eq!(
            entry_text(&super::super::full_record().view()),
            r#"["Ada \"the\" admin\n","person","0123456789ab","runner/1.0","127.0.0.1","call_1","apr_1","abababababababababababababababababababababababababababababababab","{\"command\":\"true\"}","runner_error",-1,12,34]"#
        );
        for bad in [
            "not json",
            "{}",
            "[null]",
            "[1,null,null,null,null,null,null,null,null,null,null,null,null]",
        ] {
            let mut record = bare.clone();
            assert!(!fill_from_entry(bad, &mut record), "{bad}");
            assert_eq!(record, bare);
        }
    }

    #[test]
    fn hashes_of_both_formats_are_pinned() {
        // A change of either format's bytes would make every stored row
        // fail `verify`: these values must never change.
        let record = super::super::full_record();
        assert_eq!(
            columns_hash(GENESIS, 7, &record),
            "77dbf4bd3d4aac9deb7d97db9330ebd7d4643645b88f1889b8a77262b204adbc"
        );
        assert_eq!(
            entry_hash(GENESIS, 7, &record.view(), &entry_text(&record.view())),
            "5ef77f06e2c5bdd177fffe09a03a04b92aefa5216a01ed6e4cf74a92bad5067b"
        );
    }

    #[test]
    fn rows_of_both_formats_verify_in_one_chain() {
        let first = super::super::full_record();
        let first_hash = columns_hash(GENESIS, 1, &first);
        let mut rest: Vec<AuditRecord> = (0..3).map(|_| super::super::full_record()).collect();
        rest[1].tool = Some("other".into());
        let mut entries = vec![StoredAudit {
            seq: 1,
            record: first,
            prev_hash: GENESIS.to_owned(),
            hash: first_hash.clone(),
            format: RowFormat::Columns,
        }];
        entries.extend(stored(1, &first_hash, rest));
        let head = entries[3].hash.clone();
        assert_eq!(verify(&entries, 0, (4, &head)), Ok(4));

        // Format 1: an edited column.
        let mut edited = entries.clone();
        edited[0].record.actor.name = Some("mallory".into());
        assert_eq!(
            verify(&edited, 0, (4, &head)),
            Err(Break::ChangedRow { seq: 1 })
        );
        // Format 2: an edited column, an edited entry, a stray column.
        let mut edited = entries.clone();
        edited[2].record.environment_id = Some("env_2".into());
        assert_eq!(
            verify(&edited, 0, (4, &head)),
            Err(Break::ChangedRow { seq: 3 })
        );
        let mut edited = entries.clone();
        if let RowFormat::Entry { text, .. } = &mut edited[2].format {
            *text = text.replace("Ada", "Eve");
        }
        assert_eq!(
            verify(&edited, 0, (4, &head)),
            Err(Break::ChangedRow { seq: 3 })
        );
        let mut edited = entries.clone();
        if let RowFormat::Entry { damaged, .. } = &mut edited[3].format {
            *damaged = true;
        }
        assert_eq!(
            verify(&edited, 0, (4, &head)),
            Err(Break::ChangedRow { seq: 4 })
        );
        // A format 2 row claimed to be format 1 does not verify either.
        let mut edited = entries;
        edited[1].format = RowFormat::Columns;
        assert_eq!(
            verify(&edited, 0, (4, &head)),
            Err(Break::ChangedRow { seq: 2 })
        );
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
