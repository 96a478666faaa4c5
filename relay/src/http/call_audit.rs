//! The audit entry of one tool call: started when the call's environment
//! is known, completed with its outcome, and recorded exactly once, when
//! it ends or (a caller that went away, a dropped stream) when dropped.

use std::sync::Arc;
use std::time::Instant;

use runner_proto::api::InvokeRequest;
use runner_proto::audit::{AuditAction, AuditDecision};
use runner_proto::ws::CallResult;

use super::error::ApiError;
use super::origin::Origin;
use crate::audit::{PendingAudit, Text};
use crate::audit_writer::AuditLog;
use crate::routing::stored_result::json_len;
use crate::state::AppState;
use crate::store::Member;

/// What a call ended with when nobody saw its end (the caller went away).
const ABANDONED: &str = "abandoned";

/// See the module documentation.
#[derive(Debug)]
pub struct CallAudit {
    log: Arc<AuditLog>,
    /// `None` once recorded, or when the audit is off. Boxed: the guard
    /// lives in request futures, which stay small when it is a pointer.
    record: Option<Box<PendingAudit>>,
    started: Instant,
}

impl CallAudit {
    /// A call by `caller` from `origin` to environment `environment_id`,
    /// maybe through a work session.
    pub fn start(
        state: &AppState,
        origin: &Origin,
        caller: &Member,
        environment_id: &str,
        session_id: Option<&str>,
    ) -> Self {
        let record = state.audit.enabled().then(|| {
            let mut record = PendingAudit::new(state.clock.now(), AuditAction::ToolInvoke);
            origin.write_actor(caller, &mut record);
            record.set(Text::Environment, environment_id);
            record.set_optional(Text::Session, session_id);
            Box::new(record)
        });
        Self {
            log: state.audit.clone(),
            record,
            started: Instant::now(),
        }
    }

    /// The parsed request: tool and arguments (digest; masked copy with
    /// `--audit-arguments`).
    pub fn request(&mut self, request: &InvokeRequest) {
        if let Some(record) = &mut self.record {
            record.set(Text::Tool, &request.tool_name);
            self.log.write_args(record, &request.args);
        }
    }

    pub fn call_id(&mut self, call_id: &str) {
        if let Some(record) = &mut self.record {
            record.set(Text::CallId, call_id);
        }
    }

    /// Output relayed to the caller (streamed calls).
    pub fn add_bytes(&mut self, bytes: usize) {
        if let Some(record) = &mut self.record {
            let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
            record.bytes_out = Some(record.bytes_out.unwrap_or(0).saturating_add(bytes));
        }
    }

    /// The runner answered: allowed, or an error the runner reported
    /// (its permission file, a failed start).
    pub fn completed(&mut self, result: &CallResult) {
        if self.record.is_none() {
            return;
        }
        let bytes = json_len(&result.result);
        self.add_bytes(bytes);
        if let Some(record) = &mut self.record {
            record.exit_code = result.exit_code;
        }
        match &result.error {
            None => self.finish(AuditDecision::Allowed, None),
            Some(_) => self.finish(AuditDecision::Error, Some("runner_error")),
        }
    }

    /// The call was refused or failed with `error`.
    pub fn failed(&mut self, error: &ApiError) {
        let decision = match error.code {
            "timeout" => AuditDecision::Timeout,
            "tool_not_allowed"
            | "approval_required"
            | "path_not_allowed"
            | "denied_by_runner_policy" => AuditDecision::Denied,
            _ => AuditDecision::Error,
        };
        self.finish(decision, Some(error.code));
    }

    /// Ended with `decision` and `code` (streamed calls, whose errors are
    /// events rather than answers).
    pub fn ended(&mut self, decision: AuditDecision, code: &str) {
        self.finish(decision, Some(code));
    }

    /// The call did not run now but became something else, e.g. an
    /// approval request (`AuditAction::ApprovalRequest`, target: the
    /// approval id): records the entry as that action, allowed.
    pub fn became(&mut self, action: AuditAction, target: &str) {
        if let Some(record) = &mut self.record {
            record.action = action;
            record.set(Text::Target, target);
        }
        self.finish(AuditDecision::Allowed, None);
    }

    /// Moves the pending entry into a new guard (a stream that outlives
    /// the handler); this one then records nothing.
    pub fn take(&mut self) -> Self {
        Self {
            log: self.log.clone(),
            record: self.record.take(),
            started: self.started,
        }
    }

    fn finish(&mut self, decision: AuditDecision, code: Option<&str>) {
        let Some(mut record) = self.record.take() else {
            return;
        };
        record.decided(decision, code);
        record.duration_ms =
            Some(u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX));
        self.log.record(*record);
    }
}

impl Drop for CallAudit {
    fn drop(&mut self) {
        self.finish(AuditDecision::Error, Some(ABANDONED));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::AuditQuery;
    use crate::state::RelayConfig;

    #[tokio::test]
    async fn a_call_recorded_as_another_action_is_recorded_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let url = format!("sqlite://{}", dir.path().join("relay.db").display());
        let store = crate::store::open(&url).await.expect("store");
        let state = AppState::new(RelayConfig::new(store.clone()));
        let caller = Member {
            id: "mem_1".to_owned(),
            name: "ada".to_owned(),
            is_admin: false,
            teams: Vec::new(),
            kind: crate::store::MemberKind::Person,
            default_environment: None,
        };
        let mut audit = CallAudit::start(&state, &Origin::default(), &caller, "env_1", None);
        audit.became(AuditAction::ApprovalRequest, "apr_1");
        drop(audit);
        state.audit.flush().await;
        let entries = store
            .audit_entries(&AuditQuery {
                limit: 10,
                ..AuditQuery::default()
            })
            .await
            .expect("read");
        assert_eq!(entries.len(), 1, "{entries:?}");
        let record = &entries[0].record;
        assert_eq!(record.action, AuditAction::ApprovalRequest);
        assert_eq!(record.target.as_deref(), Some("apr_1"));
        assert_eq!(record.environment_id.as_deref(), Some("env_1"));
        assert_eq!(record.actor.member_id.as_deref(), Some("mem_1"));
        assert_eq!(record.actor.name.as_deref(), Some("ada"));
    }
}
