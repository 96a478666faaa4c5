//! The call journal: what `GET /invocations/{call_id}` reads, and what
//! makes a client's `call_id` an idempotency key.
//!
//! Two paths, so that a plain call costs the store nothing in its own
//! critical path:
//!
//! * a call whose `call_id` the client chose is journalled as pending
//!   *before* it is sent ([`JournaledRouter::start_keyed_call`]): the
//!   insert is what tells a repeated id from a new one, on every relay
//!   sharing the store;
//! * everything else (dispatched when the call frame is written, done when
//!   the result arrives, failed when the runner's session ends first, all
//!   on the relay holding the socket; see [`crate::runner_connection`])
//!   goes through the [`JournalWriter`]: a bounded queue that a background
//!   task writes in one transaction per batch, folding the steps of one
//!   call into one row. A call id the relay generated needs no write
//!   before sending: nobody else knows it yet, and the runner and the NATS
//!   layer never run one id twice.
//!
//! When the caller stops waiting (504, runner gone) with a call id in its
//! answer, [`JournaledRouter::ensure_findable`] makes sure that id is in the
//! store at that moment, so the late result can be fetched.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use runner_proto::api::{InvocationState, RUNNER_DISCONNECTED};
use runner_proto::ws::{Call, CallResult, Policy};
use serde_json::Value;
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot, Notify};

use super::{stored_result, CallHandle, CallRouter, Presence, RouteError};
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::store::{state_rank, InvocationRecord, JournalWrite, Settled, Store, StoreError};

/// What a caller is told when the runner's session ends before the call's
/// answer: the message of the 503 `runner_disconnected`, and the `error`
/// of its `failed` journal entry.
pub const DISCONNECTED_MESSAGE: &str = "the runner disconnected before the call finished";

/// Bound on one journal read or write in the call path.
const JOURNAL_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a repeated `call_id` looks for the first call's result.
const JOURNAL_POLL: Duration = Duration::from_millis(200);
/// Journal steps waiting for the writer. Bounded: past it, the session
/// that records a step waits for room, so a relay that takes calls faster
/// than its store can journal them slows down instead of growing (a step
/// written on its own, in a task of its own, would hold memory per call
/// and make the store slower still).
const WRITE_QUEUE: usize = 16_384;
/// Most steps written in one transaction.
const MAX_BATCH: usize = 1024;
/// How long the writer gathers steps after the first one of a batch, so
/// that a short call's dispatched and done steps become one row write,
/// and the calls of a steady trickle share one transaction (each
/// transaction costs the store thread's wake-ups). The price: a kill -9
/// loses up to 20 ms of steps instead of 5, and another relay sharing the
/// store sees a call's row up to 20 ms later. This relay's own reads do
/// not wait: they flush, and a flush cuts the linger short.
const LINGER: Duration = Duration::from_millis(20);
/// Bound on one batch write; a batch that fails is logged and dropped (the
/// journal is best effort beyond the idempotency insert).
const BATCH_TIMEOUT: Duration = Duration::from_secs(10);

// Not boxed: a step only passes through the queue, and a box would cost an
// allocation per journal step on the call path; a flush is rare.
#[allow(clippy::large_enum_variant)]
enum Step {
    Write(JournalWrite),
    /// Answered once every step queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// Writes journal steps in the background, in batches.
#[derive(Debug)]
pub struct JournalWriter {
    store: Arc<dyn Store>,
    queue: mpsc::Sender<Step>,
    /// The queue's receiving end until the writer task starts (lazily, on
    /// the first step, so that building the state needs no runtime).
    idle: Mutex<Option<mpsc::Receiver<Step>>>,
    started: AtomicBool,
    /// Cuts the writer's linger short: a flush is someone waiting.
    flush_now: Arc<Notify>,
    linger: Duration,
    /// What the writer task keeps of results, and where it counts cuts.
    limits: Arc<ResultLimits>,
}

/// The bound on a stored result ([`stored_result`]) and the metrics that
/// count the results cut to it; set after the writer is made (`serve`
/// flags, the state's metrics), read by its task at every batch.
#[derive(Debug)]
struct ResultLimits {
    max_bytes: AtomicUsize,
    metrics: Mutex<Metrics>,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Write(write) => f.debug_tuple("Write").field(&write.entry.call_id).finish(),
            Step::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl JournalWriter {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self::with_queue(store, WRITE_QUEUE)
    }

    /// A writer whose queue holds `capacity` steps.
    pub(crate) fn with_queue(store: Arc<dyn Store>, capacity: usize) -> Self {
        let (queue, idle) = mpsc::channel(capacity.max(1));
        Self {
            store,
            queue,
            idle: Mutex::new(Some(idle)),
            started: AtomicBool::new(false),
            flush_now: Arc::new(Notify::new()),
            linger: LINGER,
            limits: Arc::new(ResultLimits {
                max_bytes: AtomicUsize::new(stored_result::DEFAULT_RESULT_MAX_BYTES),
                metrics: Mutex::new(Metrics::disabled()),
            }),
        }
    }

    /// Keeps at most `max_bytes` of JSON of each result
    /// (`serve --journal-result-max-kb`).
    pub fn set_result_max_bytes(&self, max_bytes: usize) {
        self.limits.max_bytes.store(max_bytes, Ordering::Relaxed);
    }

    /// Counts the results cut to the bound in `metrics`.
    pub fn use_metrics(&self, metrics: Metrics) {
        *self
            .limits
            .metrics
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = metrics;
    }

    /// The same writer gathering for `linger` instead of [`LINGER`].
    #[cfg(test)]
    pub(crate) fn with_linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    fn start(&self) {
        if self.started.load(Ordering::Acquire) {
            return;
        }
        // Only a take: a poisoned lock still holds a usable value.
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(idle) = idle {
            self.started.store(true, Ordering::Release);
            tokio::spawn(write_batches(
                self.store.clone(),
                idle,
                self.flush_now.clone(),
                self.linger,
                self.limits.clone(),
            ));
        }
    }

    /// Queues one step; written within [`LINGER`] plus the write itself.
    /// Waits while the queue is full: the store is behind.
    pub async fn record(&self, write: JournalWrite) {
        self.start();
        // Closed cannot happen while `self` holds the sender and the
        // writer task runs until it is dropped.
        let _ = self.queue.send(Step::Write(write)).await;
    }

    /// The call was written to the session with this epoch.
    pub async fn dispatched(
        &self,
        environment_id: &str,
        call: &Call,
        epoch: u64,
        at: OffsetDateTime,
    ) {
        self.record(JournalWrite {
            entry: entry(
                &call.call_id,
                environment_id,
                &call.tool,
                InvocationState::Dispatched,
                Some(epoch),
                at,
            ),
            create: true,
        })
        .await;
    }

    /// The runner answered on the session with this epoch; `known` says
    /// whether the call was waiting on that session (see
    /// [`JournalWrite::create`]).
    pub async fn done(
        &self,
        environment_id: &str,
        result: CallResult,
        epoch: u64,
        at: OffsetDateTime,
        known: bool,
    ) {
        let mut record = entry(
            &result.call_id,
            environment_id,
            "",
            InvocationState::Done,
            Some(epoch),
            at,
        );
        record.finished_at = Some(at);
        record.result = result.result;
        record.exit_code = result.exit_code;
        record.error = result.error;
        record.error_code = result.error_code;
        self.record(JournalWrite {
            entry: record,
            create: known,
        })
        .await;
    }

    /// The runner's session with this epoch ended before it answered the
    /// call: `failed` with [`RUNNER_DISCONNECTED`], unless an answer is
    /// journalled already; an answer journalled later replaces it (see
    /// [`crate::runner_connection`] for when a session's end counts). An
    /// empty `tool_name` keeps the one journalled at dispatch.
    pub async fn failed(
        &self,
        environment_id: &str,
        call_id: &str,
        tool_name: &str,
        epoch: u64,
        at: OffsetDateTime,
    ) {
        self.record(disconnected(
            environment_id,
            call_id,
            tool_name,
            Some(epoch),
            at,
        ))
        .await;
    }

    /// The caller's relay lost the call before its answer: the runner or
    /// the relay holding its socket went away, or that relay refused the
    /// call. As [`Self::failed`], for a call whose session is not known
    /// here (its epoch stays whatever the holder journalled).
    pub async fn lost(
        &self,
        environment_id: &str,
        call_id: &str,
        tool_name: &str,
        at: OffsetDateTime,
    ) {
        self.record(disconnected(environment_id, call_id, tool_name, None, at))
            .await;
    }

    /// Waits (bounded) until every step queued so far is written.
    pub async fn flush(&self) {
        if !self.started.load(Ordering::Acquire) {
            return;
        }
        let (done, written) = oneshot::channel();
        let sent = tokio::time::timeout(JOURNAL_TIMEOUT, self.queue.send(Step::Flush(done))).await;
        if !matches!(sent, Ok(Ok(()))) {
            tracing::warn!("could not flush the call journal");
            return;
        }
        // A permit is kept if the writer is not lingering now, so the
        // next linger ends at once: one early batch, no lost wake-up.
        self.flush_now.notify_one();
        if tokio::time::timeout(BATCH_TIMEOUT, written).await.is_err() {
            tracing::warn!("flushing the call journal timed out");
        }
    }
}

/// A `failed` step with [`RUNNER_DISCONNECTED`].
fn disconnected(
    environment_id: &str,
    call_id: &str,
    tool_name: &str,
    epoch: Option<u64>,
    at: OffsetDateTime,
) -> JournalWrite {
    let mut record = entry(
        call_id,
        environment_id,
        tool_name,
        InvocationState::Failed,
        epoch,
        at,
    );
    record.finished_at = Some(at);
    record.error = Some(DISCONNECTED_MESSAGE.to_owned());
    record.error_code = Some(RUNNER_DISCONNECTED.to_owned());
    JournalWrite {
        entry: record,
        create: true,
    }
}

fn entry(
    call_id: &str,
    environment_id: &str,
    tool_name: &str,
    state: InvocationState,
    epoch: Option<u64>,
    at: OffsetDateTime,
) -> InvocationRecord {
    InvocationRecord {
        call_id: call_id.to_owned(),
        environment_id: environment_id.to_owned(),
        tool_name: tool_name.to_owned(),
        state,
        epoch,
        created_at: at,
        finished_at: None,
        result: Value::Null,
        exit_code: None,
        error: None,
        error_code: None,
    }
}

/// The writer task: gathers steps for `linger` (up to [`MAX_BATCH`]),
/// folds them per call and writes them in one transaction.
/// Ends, after writing what is queued, when the [`JournalWriter`] is gone.
async fn write_batches(
    store: Arc<dyn Store>,
    mut queue: mpsc::Receiver<Step>,
    flush_now: Arc<Notify>,
    linger: Duration,
    limits: Arc<ResultLimits>,
) {
    let mut steps = Vec::with_capacity(MAX_BATCH);
    loop {
        if queue.recv_many(&mut steps, MAX_BATCH).await == 0 {
            return;
        }
        // Gather by sleeping, then taking what came without waiting: a
        // receiver that waited on the queue instead would be woken (and
        // scheduled, on the call path's threads) by every step of every
        // call. A flush cuts the linger short.
        if steps.len() < MAX_BATCH && !steps.iter().any(|s| matches!(s, Step::Flush(_))) {
            tokio::select! {
                () = tokio::time::sleep(linger) => {}
                () = flush_now.notified() => {}
            }
            while steps.len() < MAX_BATCH {
                match queue.try_recv() {
                    Ok(step) => steps.push(step),
                    Err(_) => break,
                }
            }
        }
        let mut flushes = Vec::new();
        let mut folded: HashMap<String, JournalWrite> = HashMap::new();
        for step in steps.drain(..) {
            match step {
                Step::Write(write) => match folded.get_mut(&write.entry.call_id) {
                    Some(earlier) => fold(earlier, write),
                    None => {
                        folded.insert(write.entry.call_id.clone(), write);
                    }
                },
                Step::Flush(done) => flushes.push(done),
            }
        }
        let mut writes: Vec<JournalWrite> = folded.into_values().collect();
        cap_results(&mut writes, &limits);
        write_logged(store.as_ref(), &writes).await;
        for done in flushes {
            // The flusher may have given up waiting.
            let _ = done.send(());
        }
    }
}

/// Cuts every result of the batch to the bound, counting the cuts.
fn cap_results(writes: &mut [JournalWrite], limits: &ResultLimits) {
    let max_bytes = limits.max_bytes.load(Ordering::Relaxed);
    let mut cut = 0;
    for write in writes.iter_mut() {
        if stored_result::cap(&mut write.entry.result, max_bytes) {
            cut += 1;
        }
    }
    if cut > 0 {
        limits
            .metrics
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .journal_results_truncated(cut);
    }
}

/// Merges a later step of the same call into an earlier one, as applying
/// both in order to the store would.
fn fold(earlier: &mut JournalWrite, later: JournalWrite) {
    earlier.create |= later.create;
    let entry = &mut earlier.entry;
    let later = later.entry;
    if entry.environment_id != later.environment_id {
        // The store refuses this too; keep the first.
        return;
    }
    if entry.tool_name.is_empty() {
        entry.tool_name = later.tool_name;
    }
    if state_rank(later.state) > state_rank(entry.state) {
        entry.state = later.state;
        entry.epoch = entry.epoch.or(later.epoch);
        entry.finished_at = later.finished_at;
        entry.result = later.result;
        entry.exit_code = later.exit_code;
        entry.error = later.error;
        entry.error_code = later.error_code;
    }
}

async fn write_logged(store: &dyn Store, writes: &[JournalWrite]) {
    if writes.is_empty() {
        return;
    }
    match tokio::time::timeout(BATCH_TIMEOUT, store.write_journal(writes)).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::warn!(%error, steps = writes.len(), "could not write to the call journal")
        }
        Err(_elapsed) => tracing::warn!(steps = writes.len(), "writing the call journal timed out"),
    }
}

/// Finished calls pruned at once while the journal is over its size.
const JOURNAL_PRUNE_CHUNK: u32 = 500;
/// Chunks pruned at most per check (the next check goes on).
const JOURNAL_PRUNE_CHUNKS: usize = 200;

/// The journal is "near its cap" from this share of `--journal-max-mb` on
/// (in percent): past it pruning eats into the 7 days kept, so an operator
/// is warned before the history gets short.
pub const JOURNAL_NEAR_CAP_PERCENT: u64 = 80;

/// What one check of the journal's size found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalShrink {
    /// Finished calls pruned (the oldest first).
    pub pruned: u64,
    /// Bytes of results the journal holds after pruning.
    pub bytes: u64,
    /// The cap (`serve --journal-max-mb`, in bytes).
    pub max_bytes: u64,
}

impl JournalShrink {
    /// At or above [`JOURNAL_NEAR_CAP_PERCENT`] of the cap.
    pub fn near_cap(&self) -> bool {
        u128::from(self.bytes) * 100
            >= u128::from(self.max_bytes) * u128::from(JOURNAL_NEAR_CAP_PERCENT)
    }
}

/// Prunes the oldest finished calls until the journal's results fit in
/// `max_bytes`; sets the size gauges and warns (once per check) when what
/// is left is near the cap.
pub async fn shrink_journal(
    store: &dyn Store,
    metrics: &Metrics,
    max_bytes: u64,
) -> Result<JournalShrink, StoreError> {
    let mut pruned = 0;
    let (mut bytes, mut finished) = store.journal_size().await?;
    for _ in 0..JOURNAL_PRUNE_CHUNKS {
        if bytes <= max_bytes || finished == 0 {
            break;
        }
        // As many of the oldest as the excess needs at their average size
        // (a small journal loses one entry, not a chunk of them).
        let average = (bytes / finished).max(1);
        let needed = (bytes - max_bytes).div_ceil(average);
        let count = u32::try_from(needed.clamp(1, u64::from(JOURNAL_PRUNE_CHUNK)))
            .unwrap_or(JOURNAL_PRUNE_CHUNK);
        let removed = store.prune_oldest_invocations(count).await?;
        if removed == 0 {
            break;
        }
        pruned += removed;
        (bytes, finished) = store.journal_size().await?;
    }
    metrics.set_journal_bytes(bytes);
    metrics.set_journal_max_bytes(max_bytes);
    let shrink = JournalShrink {
        pruned,
        bytes,
        max_bytes,
    };
    if shrink.near_cap() {
        tracing::warn!(
            bytes,
            max_bytes,
            pruned,
            "the call journal is near its size cap (--journal-max-mb): past it the oldest finished calls go before their 7 days"
        );
    }
    Ok(shrink)
}

/// Journals calls around another router.
#[derive(Debug)]
pub struct JournaledRouter {
    inner: Arc<dyn CallRouter>,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    writer: Arc<JournalWriter>,
}

impl JournaledRouter {
    pub fn new(
        inner: Arc<dyn CallRouter>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        writer: Arc<JournalWriter>,
    ) -> Self {
        Self {
            inner,
            store,
            clock,
            writer,
        }
    }

    /// The batched writer behind this journal.
    pub fn writer(&self) -> &Arc<JournalWriter> {
        &self.writer
    }

    /// A handle answered from the journal: at once when the first call is
    /// settled (answered, or failed: then the result channel closes, which
    /// the waiter reads as "runner disconnected", as the first caller got),
    /// else as soon as it is (or never, if the waiter gives up first).
    fn handle_from_journal(&self, existing: InvocationRecord) -> CallHandle {
        let (_no_output, output) = mpsc::channel(1);
        let (result_tx, result) = oneshot::channel();
        let call_id = existing.call_id.clone();
        match existing.settled() {
            // The receiver is in the handle returned below: it is alive.
            Settled::Answered(answer) => {
                let _ = result_tx.send(answer);
            }
            Settled::Disconnected => drop(result_tx),
            Settled::Running => {
                let store = self.store.clone();
                let call_id = call_id.clone();
                tokio::spawn(async move { wait_for_first(store, call_id, result_tx).await });
            }
        }
        CallHandle {
            call_id,
            output,
            result,
        }
    }

    /// Sends a call whose id the client chose: journalled as pending first,
    /// so the same id is never sent to a runner twice (by any relay sharing
    /// the store); a repeat gets the first call's answer.
    pub async fn start_keyed_call(
        &self,
        environment_id: &str,
        call: Call,
    ) -> Result<CallHandle, RouteError> {
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
        let tool = call.tool.clone();
        let started = self.inner.start_call(environment_id, call).await;
        match &started {
            Err(RouteError::NotConnected(_)) => {
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
            // Lost on its way (the holder refused it, or went away before
            // saying whether it took it): it may have reached the runner,
            // so the id stays taken, and its entry ends failed rather than
            // pending forever (a late answer still replaces it).
            Err(RouteError::Disconnected(_)) => {
                self.journal_lost(environment_id, &call_id, &tool).await
            }
            Err(RouteError::CallIdTaken(_)) | Ok(_) => {}
        }
        started
    }

    /// The call was lost before its answer (see [`JournalWriter::lost`]);
    /// written before this returns, so the id the caller is given finds it.
    pub async fn journal_lost(&self, environment_id: &str, call_id: &str, tool: &str) {
        self.writer
            .lost(environment_id, call_id, tool, self.clock.now())
            .await;
        self.writer.flush().await;
    }

    /// The caller stopped waiting for a call whose id it was given (504,
    /// runner gone): makes sure the id is in the journal now, so its late
    /// result (journalled by whichever relay receives it) can be fetched.
    pub async fn ensure_findable(&self, environment_id: &str, call_id: &str, tool: &str) {
        // Steps of this relay first (the usual case: the call was
        // dispatched here), then the entry itself if nobody wrote it yet.
        self.writer.flush().await;
        let begun = tokio::time::timeout(
            JOURNAL_TIMEOUT,
            self.store
                .begin_invocation(call_id, environment_id, tool, self.clock.now()),
        )
        .await;
        if !matches!(begun, Ok(Ok(_))) {
            tracing::warn!(%call_id, "could not journal a call its caller gave up on");
        }
    }
}

/// Polls the journal until the first call with this id is settled.
/// Dropping `result` without a value (the entry failed: its runner's
/// session ended; or it is gone: the first call never reached a runner)
/// reads as "runner disconnected" to the waiter.
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
            Ok(Ok(Some(entry))) => match entry.settled() {
                Settled::Answered(answer) => {
                    let _ = result.send(answer);
                    return;
                }
                Settled::Disconnected => return,
                Settled::Running => {}
            },
            Ok(Ok(None)) => return,
            Ok(Err(error)) => tracing::warn!(%error, %call_id, "could not read the call journal"),
            Err(_elapsed) => tracing::warn!(%call_id, "reading the call journal timed out"),
        }
    }
}

#[async_trait]
impl CallRouter for JournaledRouter {
    async fn presence(&self, environment_id: &str) -> Option<Arc<Presence>> {
        self.inner.presence(environment_id).await
    }

    /// A call with an id the relay generated: sent at once; its journal
    /// entry is written in the background by the relay holding the socket.
    async fn start_call(&self, environment_id: &str, call: Call) -> Result<CallHandle, RouteError> {
        self.inner.start_call(environment_id, call).await
    }

    async fn cancel(&self, environment_id: &str, call_id: &str) {
        self.inner.cancel(environment_id, call_id).await;
    }

    async fn disconnect(&self, environment_id: &str, code: u16, reason: &str) -> bool {
        self.inner.disconnect(environment_id, code, reason).await
    }

    async fn push_policy(
        &self,
        environment_id: &str,
        policy: Policy,
        install_browser_tools: Option<bool>,
    ) -> bool {
        self.inner
            .push_policy(environment_id, policy, install_browser_tools)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(state: InvocationState, tool: &str, epoch: Option<u64>, create: bool) -> JournalWrite {
        JournalWrite {
            entry: entry("c", "e", tool, state, epoch, OffsetDateTime::UNIX_EPOCH),
            create,
        }
    }

    #[test]
    fn folding_moves_only_forward_and_keeps_what_each_step_knew() {
        let mut first = step(InvocationState::Dispatched, "ping", Some(3), true);
        let mut done = step(InvocationState::Done, "", Some(4), false);
        done.entry.exit_code = Some(0);
        fold(&mut first, done);
        assert_eq!(first.entry.state, InvocationState::Done);
        assert_eq!(first.entry.tool_name, "ping");
        assert_eq!(first.entry.epoch, Some(3), "the dispatch epoch is kept");
        assert_eq!(first.entry.exit_code, Some(0));
        assert!(first.create);

        // A late dispatch step does not undo the result.
        fold(
            &mut first,
            step(InvocationState::Dispatched, "ping", Some(9), true),
        );
        assert_eq!(first.entry.state, InvocationState::Done);
        assert_eq!(first.entry.exit_code, Some(0));
    }

    #[test]
    fn folding_lets_a_result_beat_a_failure_and_never_the_reverse() {
        let failed = || {
            let mut failed = step(InvocationState::Failed, "", Some(3), true);
            failed.entry.error_code = Some(RUNNER_DISCONNECTED.to_owned());
            failed
        };
        let mut done = step(InvocationState::Done, "", Some(4), false);
        done.entry.exit_code = Some(0);

        let mut first = step(InvocationState::Dispatched, "ping", Some(3), true);
        fold(&mut first, failed());
        assert_eq!(first.entry.state, InvocationState::Failed);
        assert_eq!(first.entry.error_code.as_deref(), Some(RUNNER_DISCONNECTED));
        fold(&mut first, done.clone());
        assert_eq!(first.entry.state, InvocationState::Done);
        assert_eq!(
            first.entry.error_code, None,
            "the result's, not the failure's"
        );
        assert_eq!(first.entry.exit_code, Some(0));

        let mut answered = done;
        fold(&mut answered, failed());
        assert_eq!(answered.entry.state, InvocationState::Done);
        assert_eq!(answered.entry.error_code, None);
    }
}
