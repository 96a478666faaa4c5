//! An entry on its way to the store, kept compact: every text field in
//! one buffer. A tool call's entry is built across the call and freed by
//! the writer a second later on another thread; one allocation instead of
//! one for each of its dozen texts is what keeps the audit log's cost per
//! call small (BENCHMARKS.md, issue 29). [`AuditView`] is the borrowed
//! form the chain and the store read, from this or from an
//! [`AuditRecord`].

use runner_proto::audit::{AuditAction, AuditDecision};
use serde::Serialize;
use time::OffsetDateTime;

use super::{unix_ms, AuditRecord};

/// The text fields of an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Text {
    MemberId,
    Name,
    Kind,
    KeyId,
    Client,
    Source,
    Environment,
    Session,
    Tool,
    CallId,
    Target,
    ArgsDigest,
    Args,
    Code,
}

/// How many [`Text`] fields (`Code` is the last).
const TEXTS: usize = Text::Code as usize + 1;

/// A field's place in [`PendingAudit::texts`]; `start > end` for none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

const ABSENT: Span = Span { start: 1, end: 0 };

impl Span {
    /// `start..end`, if both fit.
    fn of(start: usize, end: usize) -> Option<Self> {
        Some(Self {
            start: u32::try_from(start).ok()?,
            end: u32::try_from(end).ok()?,
        })
    }
}

/// What a value too long to keep in one entry is replaced with: an
/// entry's texts stay under 4 GiB, far above any request the relay takes.
const TOO_LONG: &str = "[too long]";

/// See the module documentation.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAudit {
    pub at_ms: i64,
    pub action: AuditAction,
    pub decision: AuditDecision,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    pub bytes_out: Option<u64>,
    texts: String,
    spans: [Span; TEXTS],
}

/// Room for a tool call's usual texts (ids, names, a digest) without
/// growing the buffer.
const USUAL_TEXT_BYTES: usize = 320;

impl PendingAudit {
    /// An allowed `action` at `at` (to the millisecond); no texts yet.
    pub fn new(at: OffsetDateTime, action: AuditAction) -> Self {
        Self {
            at_ms: unix_ms(at),
            action,
            decision: AuditDecision::Allowed,
            exit_code: None,
            duration_ms: None,
            bytes_out: None,
            texts: String::with_capacity(USUAL_TEXT_BYTES),
            spans: [ABSENT; TEXTS],
        }
    }

    /// Sets `field` to `value` (a field set twice keeps the last value).
    pub fn set(&mut self, field: Text, value: &str) {
        self.write(field, |texts| texts.push_str(value));
    }

    /// Sets `field` to `value`, or leaves it absent.
    pub fn set_optional(&mut self, field: Text, value: Option<&str>) {
        match value {
            Some(value) => self.set(field, value),
            None => self.spans[field as usize] = ABSENT,
        }
    }

    /// Sets `field` to what `write` appends to the buffer (text built in
    /// place, e.g. a digest's hex).
    pub fn write(&mut self, field: Text, write: impl FnOnce(&mut String)) {
        let start = self.texts.len();
        write(&mut self.texts);
        let mut span = Span::of(start, self.texts.len());
        if span.is_none() {
            self.texts.truncate(start);
            self.texts.push_str(TOO_LONG);
            span = Span::of(start, self.texts.len());
        }
        self.spans[field as usize] = span.unwrap_or(ABSENT);
    }

    /// The value of `field`.
    pub fn get(&self, field: Text) -> Option<&str> {
        let Span { start, end } = self.spans[field as usize];
        if start > end {
            return None;
        }
        self.texts.get(start as usize..end as usize)
    }

    /// Refused (`Denied`) or failed, with the rule or error code.
    pub fn decided(&mut self, decision: AuditDecision, code: Option<&str>) {
        self.decision = decision;
        self.set_optional(Text::Code, code);
    }

    /// The borrowed form the chain and the store read.
    pub fn view(&self) -> AuditView<'_> {
        AuditView {
            at_ms: self.at_ms,
            action: self.action,
            decision: self.decision,
            member_id: self.get(Text::MemberId),
            name: self.get(Text::Name),
            kind: self.get(Text::Kind),
            key_id: self.get(Text::KeyId),
            client: self.get(Text::Client),
            source: self.get(Text::Source),
            environment_id: self.get(Text::Environment),
            session_id: self.get(Text::Session),
            tool: self.get(Text::Tool),
            call_id: self.get(Text::CallId),
            target: self.get(Text::Target),
            args_digest: self.get(Text::ArgsDigest),
            args: self.get(Text::Args),
            code: self.get(Text::Code),
            exit_code: self.exit_code,
            duration_ms: self.duration_ms,
            bytes_out: self.bytes_out,
        }
    }
}

impl From<&AuditView<'_>> for PendingAudit {
    fn from(view: &AuditView<'_>) -> Self {
        let mut pending = Self {
            at_ms: view.at_ms,
            action: view.action,
            decision: view.decision,
            exit_code: view.exit_code,
            duration_ms: view.duration_ms,
            bytes_out: view.bytes_out,
            texts: String::new(),
            spans: [ABSENT; TEXTS],
        };
        for (field, value) in [
            (Text::MemberId, view.member_id),
            (Text::Name, view.name),
            (Text::Kind, view.kind),
            (Text::KeyId, view.key_id),
            (Text::Client, view.client),
            (Text::Source, view.source),
            (Text::Environment, view.environment_id),
            (Text::Session, view.session_id),
            (Text::Tool, view.tool),
            (Text::CallId, view.call_id),
            (Text::Target, view.target),
            (Text::ArgsDigest, view.args_digest),
            (Text::Args, view.args),
            (Text::Code, view.code),
        ] {
            pending.set_optional(field, value);
        }
        pending
    }
}

impl From<AuditRecord> for PendingAudit {
    fn from(record: AuditRecord) -> Self {
        Self::from(&record.view())
    }
}

/// An entry's fields, borrowed: what its row and its hash are made of.
///
/// Serialised, the fields come in declaration order: a format 1 row's
/// hash covers exactly that text (`chain::columns_hash`), so the order
/// must never change (the pinned-hash test in `chain` fails if it does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AuditView<'a> {
    pub at_ms: i64,
    pub action: AuditAction,
    pub member_id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub key_id: Option<&'a str>,
    pub client: Option<&'a str>,
    pub source: Option<&'a str>,
    pub environment_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
    pub tool: Option<&'a str>,
    pub call_id: Option<&'a str>,
    pub target: Option<&'a str>,
    pub args_digest: Option<&'a str>,
    pub args: Option<&'a str>,
    pub decision: AuditDecision,
    pub code: Option<&'a str>,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
    pub bytes_out: Option<u64>,
}

impl AuditRecord {
    /// The borrowed form the chain and the store read.
    pub fn view(&self) -> AuditView<'_> {
        let actor = &self.actor;
        AuditView {
            at_ms: self.at_ms(),
            action: self.action,
            decision: self.decision,
            member_id: actor.member_id.as_deref(),
            name: actor.name.as_deref(),
            kind: actor.kind.as_deref(),
            key_id: actor.key_id.as_deref(),
            client: actor.client.as_deref(),
            source: actor.source.as_deref(),
            environment_id: self.environment_id.as_deref(),
            session_id: self.session_id.as_deref(),
            tool: self.tool.as_deref(),
            call_id: self.call_id.as_deref(),
            target: self.target.as_deref(),
            args_digest: self.args_digest.as_deref(),
            args: self.args.as_deref(),
            code: self.code.as_deref(),
            exit_code: self.exit_code,
            duration_ms: self.duration_ms,
            bytes_out: self.bytes_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use runner_proto::audit::AuditActor;

    use super::*;

    #[test]
    fn a_pending_entry_reads_back_every_field_of_its_record() {
        let record = super::super::full_record();
        let pending = PendingAudit::from(record.clone());
        assert_eq!(pending.view(), record.view());

        let bare = AuditRecord::new(
            OffsetDateTime::UNIX_EPOCH,
            AuditActor::default(),
            AuditAction::AuthFailed,
        );
        assert_eq!(PendingAudit::from(bare.clone()).view(), bare.view());
    }

    #[test]
    fn a_field_set_again_keeps_the_last_value_and_empty_is_not_absent() {
        let mut pending = PendingAudit::new(OffsetDateTime::UNIX_EPOCH, AuditAction::ToolInvoke);
        pending.set(Text::Code, "first");
        pending.set(Text::Tool, "");
        pending.decided(AuditDecision::Error, Some("second"));
        assert_eq!(pending.get(Text::Code), Some("second"));
        assert_eq!(pending.get(Text::Tool), Some(""));
        assert_eq!(pending.get(Text::CallId), None);
        pending.set_optional(Text::Code, None);
        assert_eq!(pending.get(Text::Code), None);
        pending.write(Text::Source, |texts| texts.push_str("::1"));
        assert_eq!(pending.view().source, Some("::1"));
    }
}
