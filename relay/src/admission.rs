//! Admission control of runner handshakes (`GET /runner/connect`).
//!
//! At most `max_handshakes` connects are between their request and their
//! `welcome` at once. A connect finding every slot taken waits for one, but
//! only [`ADMISSION_WAIT`] (well inside the runner's 15 s connect timeout,
//! so an admitted handshake is never thrown away by the runner giving up)
//! and only while fewer than [`WAITING_PER_SLOT`] × `max_handshakes` wait;
//! otherwise it is answered 503 with `Retry-After` at once, and the runner
//! retries after its backoff.
//!
//! Why wait at all: a relay restarting under 10,000 runners receives them
//! within the first few hundred milliseconds. Turned away at once, they back
//! off exponentially and the relay idles between their retries, for minutes.
//! Queued briefly, they are served as fast as the relay can (slots are
//! granted first come, first served).
//!
//! Nobody may keep the others out. A handshake holds its slot until its
//! runner says `hello`, so connects that upgrade and stay silent hold
//! slots until the hello timeout; two bounds keep that from delaying
//! everyone else's reconnects:
//!
//! * **per environment**: one environment's token gets at most
//!   [`PER_ENVIRONMENT`] handshakes at once (its runner needs one); more
//!   are turned away at once, after the token check that names the
//!   environment;
//! * **per source address**: one address holds at most three quarters of
//!   the slots and of the waiting places, so connects from elsewhere always
//!   find room. Not less: many runners behind one NAT, or every runner
//!   behind a load balancer, reconnect together after a relay restart and
//!   must still get most of the relay.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Longest a connect waits for a handshake slot.
pub const ADMISSION_WAIT: Duration = Duration::from_secs(5);
/// Connects allowed to wait, per handshake slot: with the default 256
/// slots, 16,384, about what a two-core relay admits within
/// [`ADMISSION_WAIT`]. Fewer turn a reconnect storm's runners away in its
/// first second, and their exponential backoff then stretches the storm.
pub const WAITING_PER_SLOT: usize = 64;
/// Handshakes one environment may have in progress at once: its runner
/// needs one; a few more cover a runner replaced while it connects.
pub const PER_ENVIRONMENT: usize = 4;

/// Why a connect was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Too many connects are already waiting (from its address, or in all).
    QueueFull,
    /// No slot came free within [`ADMISSION_WAIT`].
    Waited,
    /// Its environment already has [`PER_ENVIRONMENT`] handshakes in progress.
    EnvironmentBusy,
}

impl Refused {
    /// The reason as a log value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QueueFull => "queue_full",
            Self::Waited => "waited",
            Self::EnvironmentBusy => "environment_busy",
        }
    }
}

/// Slots for handshakes in progress, and the connects waiting for one.
#[derive(Debug)]
pub struct Admission {
    slots: Arc<Semaphore>,
    size: usize,
    waiting: AtomicUsize,
    max_waiting: usize,
    /// Slots and waiting places one source address may take.
    address_slots: usize,
    address_waiting: usize,
    /// The shares of the source addresses with a connect in progress, and
    /// how many connects use each.
    addresses: Mutex<HashMap<IpAddr, (Arc<AddressShare>, usize)>>,
    /// Handshakes in progress per environment, past the token check.
    environments: Mutex<HashMap<String, usize>>,
    /// Connects given a slot since start (for [`crate::heap`]).
    admitted: AtomicU64,
}

/// One source address's part of the slots and of the waiting places.
#[derive(Debug)]
struct AddressShare {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
}

/// A connect's use of its address's share; the last one to go removes the
/// share, so the map holds only addresses with a connect in progress.
#[derive(Debug)]
struct ShareUse {
    admission: Arc<Admission>,
    ip: IpAddr,
    share: Arc<AddressShare>,
}

impl Drop for ShareUse {
    fn drop(&mut self) {
        let mut addresses = lock(&self.admission.addresses);
        if let Some((_, users)) = addresses.get_mut(&self.ip) {
            *users -= 1;
            if *users == 0 {
                addresses.remove(&self.ip);
            }
        }
    }
}

/// A connect's place among the handshakes in progress: held until the
/// handshake ends (the runner is welcomed or turned away), then dropped.
#[derive(Debug)]
pub struct Admitted {
    admission: Arc<Admission>,
    _slot: OwnedSemaphorePermit,
    _address: Option<(OwnedSemaphorePermit, ShareUse)>,
    environment: Option<String>,
}

/// Counts a connect among the waiting ones while it waits.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    /// Takes a waiting place unless `max` are taken.
    fn enter(count: &'a AtomicUsize, max: usize) -> Result<Self, Refused> {
        if count.fetch_add(1, Ordering::AcqRel) >= max {
            count.fetch_sub(1, Ordering::AcqRel);
            return Err(Refused::QueueFull);
        }
        Ok(Waiting(count))
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    /// `max_handshakes` slots (at least one).
    pub fn new(max_handshakes: usize) -> Self {
        let slots = max_handshakes.max(1);
        let max_waiting = slots.saturating_mul(WAITING_PER_SLOT);
        Self {
            slots: Arc::new(Semaphore::new(slots)),
            size: slots,
            waiting: AtomicUsize::new(0),
            max_waiting,
            address_slots: address_share(slots),
            address_waiting: address_share(max_waiting),
            addresses: Mutex::new(HashMap::new()),
            environments: Mutex::new(HashMap::new()),
            admitted: AtomicU64::new(0),
        }
    }

    /// A slot for a connect from `address` (when known), held until the
    /// handshake ends (dropping it).
    pub async fn admit(self: &Arc<Self>, address: Option<IpAddr>) -> Result<Admitted, Refused> {
        let share = address.map(|ip| self.share(ip));
        let mut address_permit = share
            .as_ref()
            .and_then(|share| Arc::clone(&share.share.slots).try_acquire_owned().ok());
        if share.is_none() || address_permit.is_some() {
            if let Ok(slot) = Arc::clone(&self.slots).try_acquire_owned() {
                return Ok(self.grant(slot, address_permit.zip(share)));
            }
        }
        let address_share = share.as_ref().map(|share| Arc::clone(&share.share));
        let _waiting = Waiting::enter(&self.waiting, self.max_waiting)?;
        let _address_waiting = match &address_share {
            Some(address_share) => Some(Waiting::enter(
                &address_share.waiting,
                self.address_waiting,
            )?),
            None => None,
        };
        // The address's share first, then a slot: a connect never holds a
        // slot while it waits for its address's turn.
        let wait = async {
            if let (Some(address_share), false) = (&address_share, address_permit.is_some()) {
                let permit = Arc::clone(&address_share.slots).acquire_owned().await;
                // Never closed; treated as a full queue rather than a panic.
                address_permit = Some(permit.map_err(|_closed| Refused::QueueFull)?);
            }
            Arc::clone(&self.slots)
                .acquire_owned()
                .await
                .map_err(|_closed| Refused::QueueFull)
        };
        let slot = tokio::time::timeout(ADMISSION_WAIT, wait)
            .await
            .unwrap_or(Err(Refused::Waited))?;
        Ok(self.grant(slot, address_permit.zip(share)))
    }

    fn grant(
        self: &Arc<Self>,
        slot: OwnedSemaphorePermit,
        address: Option<(OwnedSemaphorePermit, ShareUse)>,
    ) -> Admitted {
        self.admitted.fetch_add(1, Ordering::Relaxed);
        Admitted {
            admission: Arc::clone(self),
            _slot: slot,
            _address: address,
            environment: None,
        }
    }

    /// A use of the share of `ip`, made on its first connect.
    fn share(self: &Arc<Self>, ip: IpAddr) -> ShareUse {
        let mut addresses = lock(&self.addresses);
        let (share, users) = addresses.entry(ip).or_insert_with(|| {
            let share = AddressShare {
                slots: Arc::new(Semaphore::new(self.address_slots)),
                waiting: AtomicUsize::new(0),
            };
            (Arc::new(share), 0)
        });
        *users += 1;
        ShareUse {
            admission: Arc::clone(self),
            ip,
            share: Arc::clone(share),
        }
    }

    /// Connects waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Connects holding a slot or waiting for one now.
    pub fn in_progress(&self) -> usize {
        self.size.saturating_sub(self.slots.available_permits()) + self.waiting()
    }

    /// Connects given a slot since start.
    pub fn admitted(&self) -> u64 {
        self.admitted.load(Ordering::Relaxed)
    }
}

impl Admitted {
    /// Counts this handshake against `environment_id`, once its token named
    /// it; refused when the environment has [`PER_ENVIRONMENT`] already.
    pub fn claim_environment(&mut self, environment_id: &str) -> Result<(), Refused> {
        if self.environment.is_some() {
            return Ok(());
        }
        let mut environments = lock(&self.admission.environments);
        let count = environments.entry(environment_id.to_owned()).or_insert(0);
        if *count >= PER_ENVIRONMENT {
            return Err(Refused::EnvironmentBusy);
        }
        *count += 1;
        self.environment = Some(environment_id.to_owned());
        Ok(())
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let Some(id) = self.environment.take() else {
            return;
        };
        let mut environments = lock(&self.admission.environments);
        if let Some(count) = environments.get_mut(&id) {
            *count -= 1;
            if *count == 0 {
                environments.remove(&id);
            }
        }
    }
}

/// What one source address may take of `total` (at least one).
fn address_share(total: usize) -> usize {
    (total - total / 4).max(1)
}

/// A poisoned lock still guards plain counts: a panic elsewhere cannot
/// leave them half-written.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 2)));
    const THERE: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3)));

    /// Lets every spawned waiter reach its wait (one yield may not run
    /// them all).
    async fn until(check: impl Fn() -> bool) {
        for _ in 0..1_000 {
            if check() {
                return;
            }
            tokio::task::yield_now().await;
        }
        assert!(check(), "never reached");
    }

    #[tokio::test(start_paused = true)]
    async fn connects_wait_briefly_then_are_refused() {
        let admission = Arc::new(Admission::new(1));
        let held = admission.admit(HERE).await.expect("a free slot");

        // A waiter gets the slot as soon as it is free.
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit(HERE).await.map(drop) })
        };
        until(|| admission.waiting() == 1).await;
        drop(held);
        assert_eq!(waiter.await.expect("joined"), Ok(()));

        // Nobody frees it: refused after the wait.
        let _held = admission.admit(None).await.expect("free again");
        assert_eq!(admission.admit(HERE).await.map(drop), Err(Refused::Waited));
        assert_eq!(admission.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn admitted_and_in_progress_count_connects() {
        let admission = Arc::new(Admission::new(2));
        assert_eq!((admission.admitted(), admission.in_progress()), (0, 0));
        let first = admission.admit(HERE).await.expect("a free slot");
        let second = admission.admit(THERE).await.expect("a free slot");
        let waiter = {
            let admission = admission.clone();
            tokio::spawn(async move { admission.admit(None).await.map(drop) })
        };
        until(|| admission.waiting() == 1).await;
        assert_eq!((admission.admitted(), admission.in_progress()), (2, 3));
        drop((first, second));
        assert_eq!(waiter.await.expect("joined"), Ok(()));
        assert_eq!((admission.admitted(), admission.in_progress()), (3, 0));
        assert!(lock(&admission.addresses).is_empty(), "addresses kept");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_queue_refuses_at_once() {
        let admission = Arc::new(Admission::new(1));
        let _held = admission.admit(None).await.expect("a free slot");
        let mut waiters = Vec::new();
        for i in 0..WAITING_PER_SLOT {
            let admission = admission.clone();
            // From two addresses, each within its share of the places.
            let from = if i % 2 == 0 { HERE } else { THERE };
            waiters.push(tokio::spawn(async move {
                admission.admit(from).await.map(drop)
            }));
        }
        until(|| admission.waiting() == WAITING_PER_SLOT).await;
        let started = tokio::time::Instant::now();
        assert_eq!(
            admission.admit(None).await.map(drop),
            Err(Refused::QueueFull)
        );
        assert_eq!(started.elapsed(), Duration::ZERO);
        for waiter in waiters {
            assert_eq!(waiter.await.expect("joined"), Err(Refused::Waited));
        }
    }

    /// One address holds at most three quarters of the slots and of the
    /// waiting places: a connect from elsewhere is admitted at once while
    /// it floods.
    #[tokio::test(start_paused = true)]
    async fn one_address_leaves_room_for_the_others() {
        let admission = Arc::new(Admission::new(4));
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(admission.admit(HERE).await.expect("a free slot"));
        }
        let places = address_share(4 * WAITING_PER_SLOT);
        let mut flood = Vec::new();
        for _ in 0..places {
            let admission = admission.clone();
            flood.push(tokio::spawn(async move {
                admission.admit(HERE).await.map(drop)
            }));
        }
        until(|| admission.waiting() == places).await;
        // The fourth slot is free, but not the flood's to take.
        assert_eq!(admission.in_progress(), 3 + places);
        let started = tokio::time::Instant::now();
        assert_eq!(
            admission.admit(HERE).await.map(drop),
            Err(Refused::QueueFull),
            "its share of the waiting places is taken"
        );
        let elsewhere = admission
            .admit(THERE)
            .await
            .expect("room for another address");
        assert_eq!(started.elapsed(), Duration::ZERO);
        drop((elsewhere, held));
        for waiter in flood {
            assert!(matches!(
                waiter.await.expect("joined"),
                Ok(()) | Err(Refused::Waited)
            ));
        }
        assert!(lock(&admission.addresses).is_empty(), "addresses kept");
    }

    #[tokio::test(start_paused = true)]
    async fn one_environment_has_a_few_handshakes_at_most() {
        let admission = Arc::new(Admission::new(64));
        let mut held = Vec::new();
        for _ in 0..PER_ENVIRONMENT {
            let mut admitted = admission.admit(None).await.expect("a free slot");
            admitted.claim_environment("env_a").expect("room");
            held.push(admitted);
        }
        let mut one_more = admission.admit(None).await.expect("a free slot");
        assert_eq!(
            one_more.claim_environment("env_a"),
            Err(Refused::EnvironmentBusy)
        );
        one_more
            .claim_environment("env_b")
            .expect("another environment");
        drop(held.pop());
        let mut again = admission.admit(None).await.expect("a free slot");
        again.claim_environment("env_a").expect("one came free");
        drop((held, again, one_more));
        assert!(lock(&admission.environments).is_empty(), "counts kept");
    }
}
