//! Caller side: one subscription for the replies of every call this relay
//! sends to another, instead of an inbox subscribed and unsubscribed per
//! call (two more messages to the NATS server per call, and a change to
//! its subscription table each time).
//!
//! Replies go to `<prefix>.reply.<nonce>.<n>` (a random nonce per relay
//! process: an instance id may hold characters a subject cannot); [`Replies`] holds the
//! wildcard subscription and hands each message to the [`Inbox`] of call
//! `n`, in the order NATS delivered them. An inbox is unbounded: what may
//! wait in it is bounded by the protocol (a result, and output up to the
//! credit the caller granted), and a full inbox must not hold up the
//! replies of other calls.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_nats::{Client, Message, Subscriber};
use futures_util::StreamExt;
use tokio::sync::mpsc;

/// The open inboxes of one relay.
#[derive(Debug)]
pub struct Replies {
    /// `<prefix>.reply.<nonce>`: an inbox's subject is this, a dot and
    /// its number.
    base: String,
    next: AtomicU64,
    /// `None` once the subscription ended: every inbox, open or new,
    /// then reads its end at once rather than waiting for nothing.
    open: Mutex<Option<HashMap<u64, mpsc::UnboundedSender<Message>>>>,
}

impl Replies {
    /// Subscribes to this relay's replies and starts handing them out
    /// (until the client's connection ends for good).
    pub async fn start(
        client: &Client,
        subject_prefix: &str,
    ) -> Result<Arc<Replies>, async_nats::SubscribeError> {
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let replies = Arc::new(Replies {
            base: format!("{subject_prefix}.reply.{nonce}"),
            next: AtomicU64::new(1),
            open: Mutex::new(Some(HashMap::new())),
        });
        let subscriber = client.subscribe(format!("{}.*", replies.base)).await?;
        let handing = Arc::clone(&replies);
        tokio::spawn(async move { handing.hand_out(subscriber).await });
        Ok(replies)
    }

    fn open(&self) -> MutexGuard<'_, Option<HashMap<u64, mpsc::UnboundedSender<Message>>>> {
        // Single map operations: a poisoned map is still consistent.
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn hand_out(self: Arc<Self>, mut subscriber: Subscriber) {
        while let Some(message) = subscriber.next().await {
            let Some(number) = message
                .subject
                .rsplit('.')
                .next()
                .and_then(|last| last.parse::<u64>().ok())
            else {
                continue;
            };
            let open = self.open();
            if let Some(inbox) = open.as_ref().and_then(|open| open.get(&number)) {
                // A closed inbox is removed by its drop; until then its
                // messages have nobody to read them.
                let _ = inbox.send(message);
            }
        }
        tracing::error!(subject = %self.base, "the NATS reply subscription ended");
        // The calls waiting for replies end as their inboxes close.
        *self.open() = None;
    }

    /// A new inbox, open until dropped.
    pub fn inbox(self: &Arc<Self>) -> Inbox {
        let number = self.next.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = mpsc::unbounded_channel();
        if let Some(open) = self.open().as_mut() {
            open.insert(number, sender);
        }
        Inbox {
            subject: format!("{}.{number}", self.base),
            number,
            receiver,
            replies: Arc::clone(self),
        }
    }
}

/// The replies of one call.
#[derive(Debug)]
pub struct Inbox {
    /// Where the holder sends them.
    pub subject: String,
    number: u64,
    receiver: mpsc::UnboundedReceiver<Message>,
    replies: Arc<Replies>,
}

impl Inbox {
    /// The next reply, in the order NATS delivered them.
    pub async fn next(&mut self) -> Option<Message> {
        self.receiver.recv().await
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        if let Some(open) = self.replies.open().as_mut() {
            open.remove(&self.number);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A call waiting for replies ends when the subscription does, and so
    /// does one that starts after, instead of waiting for nothing.
    #[tokio::test]
    #[ignore = "needs NATS at 127.0.0.1:4222 (run by .ci/run with --include-ignored)"]
    async fn inboxes_end_when_the_subscription_ends() {
        let client = async_nats::connect("127.0.0.1:4222")
            .await
            .expect("NATS at 127.0.0.1:4222");
        let replies = Replies::start(&client, "test-replies")
            .await
            .expect("start");
        let mut waiting = replies.inbox();
        client
            .publish(waiting.subject.clone(), "first".into())
            .await
            .expect("publish");
        let first = tokio::time::timeout(Duration::from_secs(5), waiting.next())
            .await
            .expect("a reply within 5 s")
            .expect("a reply");
        assert_eq!(&first.payload[..], b"first");

        client.drain().await.expect("drain");
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting.next()).await;
        assert!(
            matches!(ended, Ok(None)),
            "an open inbox still waits after its subscription ended"
        );
        let mut late = replies.inbox();
        let ended = tokio::time::timeout(Duration::from_secs(1), late.next()).await;
        assert!(matches!(ended, Ok(None)), "a new inbox waits for nothing");
    }
}
