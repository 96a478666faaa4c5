//! The call journal in front of the router: every call is recorded as
//! pending before it is sent, so a `call_id` seen before (a client's
//! idempotency key, or a retry) is never sent to a runner twice. The relay
//! holding the socket moves the entry on (dispatched when the call frame is
//! written, done when the result arrives; see [`crate::runner_connection`]),
//! which is what lets `GET /invocations/{call_id}` answer after the
//! caller's relay stopped waiting.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use runner_proto::ws::{Call, Policy};
use tokio::sync::{mpsc, oneshot};

use super::{CallHandle, CallRouter, Presence, RouteError};
use crate::clock::Clock;
use crate::store::{InvocationRecord, Store};

/// Bound on one journal read or write in the call path.
const JOURNAL_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a repeated `call_id` looks for the first call's result.
const JOURNAL_POLL: Duration = Duration::from_millis(200);

/// Journals calls around another router.
#[derive(Debug)]
pub struct JournaledRouter {
    inner: Arc<dyn CallRouter>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl JournaledRouter {
    pub fn new(inner: Arc<dyn CallRouter>, store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner,
            store,
            clock,
        }
    }

    /// A handle answered from the journal: at once when the first call is
    /// done, else as soon as it is (or never, if the waiter gives up first).
    fn handle_from_journal(&self, existing: InvocationRecord) -> CallHandle {
        let (_no_output, output) = mpsc::channel(1);
        let (result_tx, result) = oneshot::channel();
        let call_id = existing.call_id.clone();
        if let Some(answer) = existing.call_result() {
            // The receiver is in the handle returned below: it is alive.
            let _ = result_tx.send(answer);
        } else {
            let store = self.store.clone();
            let call_id = call_id.clone();
            tokio::spawn(async move { wait_for_first(store, call_id, result_tx).await });
        }
        CallHandle {
            call_id,
            output,
            result,
        }
    }
}

/// Polls the journal until the first call with this id is done. Dropping
/// `result` without a value (entry gone: the first call never reached a
/// runner) reads as "runner disconnected" to the waiter.
async fn wait_for_first(
    store: Arc<dyn Store>,
    call_id: String,
    mut result: oneshot::Sender<runner_proto::ws::CallResult>,
) {
    loop {
        tokio::select! {
            () = result.closed() => return,
            () = tokio::time::sleep(JOURNAL_POLL) => {}
        }
        match tokio::time::timeout(JOURNAL_TIMEOUT, store.invocation(&call_id)).await {
            Ok(Ok(Some(entry))) => {
                if let Some(answer) = entry.call_result() {
                    let _ = result.send(answer);
                    return;
                }
            }
            Ok(Ok(None)) => return,
            Ok(Err(error)) => tracing::warn!(%error, %call_id, "could not read the call journal"),
            Err(_elapsed) => tracing::warn!(%call_id, "reading the call journal timed out"),
        }
    }
}

#[async_trait]
impl CallRouter for JournaledRouter {
    async fn presence(&self, environment_id: &str) -> Option<Presence> {
        self.inner.presence(environment_id).await
    }

    async fn start_call(&self, environment_id: &str, call: Call) -> Result<CallHandle, RouteError> {
        let begun = tokio::time::timeout(
            JOURNAL_TIMEOUT,
            self.store.begin_invocation(
                &call.call_id,
                environment_id,
                &call.tool,
                self.clock.now(),
            ),
        )
        .await;
        match begun {
            Ok(Ok(None)) => {}
            Ok(Ok(Some(existing))) => {
                if existing.environment_id != environment_id {
                    return Err(RouteError::CallIdTaken(call.call_id));
                }
                tracing::info!(call_id = %call.call_id, state = ?existing.state, "call id seen before; not sending it again");
                return Ok(self.handle_from_journal(existing));
            }
            // Without the journal the call still runs (availability over
            // idempotency); the log says so.
            Ok(Err(error)) => {
                tracing::warn!(%error, call_id = %call.call_id, "could not journal the call; sending it unjournalled");
            }
            Err(_elapsed) => {
                tracing::warn!(call_id = %call.call_id, "journalling the call timed out; sending it unjournalled");
            }
        }
        let call_id = call.call_id.clone();
        let started = self.inner.start_call(environment_id, call).await;
        if let Err(RouteError::NotConnected(_)) = &started {
            // It never reached a runner: the same id may be sent again.
            let forgotten = tokio::time::timeout(
                JOURNAL_TIMEOUT,
                self.store.forget_pending_invocation(&call_id),
            )
            .await;
            if !matches!(forgotten, Ok(Ok(()))) {
                tracing::warn!(%call_id, "could not forget an undelivered call");
            }
        }
        started
    }

    async fn cancel(&self, environment_id: &str, call_id: &str) {
        self.inner.cancel(environment_id, call_id).await;
    }

    async fn disconnect(&self, environment_id: &str, code: u16, reason: &str) -> bool {
        self.inner.disconnect(environment_id, code, reason).await
    }

    async fn push_policy(&self, environment_id: &str, policy: Policy) -> bool {
        self.inner.push_policy(environment_id, policy).await
    }
}
