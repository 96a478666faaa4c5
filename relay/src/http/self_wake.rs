//! Reading a request's body must not wake the connection task that is
//! reading it.
//!
//! hyper 1.12.0's body channel woke the body's sender whenever the handler
//! took a chunk, even after the sender had been dropped. On an HTTP/1
//! server the sender's waker is the connection's own task, which is the
//! task polling the handler, so every request with a body woke its task
//! from inside its own poll. tokio's multi-thread scheduler answers such a
//! wake by queueing the task again and waking a second worker to steal it:
//! a futex wake, a worker's wake-up and an empty poll per call with a
//! body. The workspace builds a patched hyper (`vendor/README.md`); this
//! test fails with the registry's hyper (1.12.0; 1.13.0 has the same
//! code) and passes with the patch.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use axum::extract::FromRequest;
use hyper::body::Incoming;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::error::RawBody;

/// Counts the wakes that come while its task is being polled.
#[derive(Default)]
struct Counter {
    polling: AtomicBool,
    self_wakes: AtomicUsize,
}

impl Wake for Counter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if self.polling.load(Ordering::SeqCst) {
            self.self_wakes.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Serves one request with a JSON body through hyper's HTTP/1 server and
/// the relay's body extractor, polling the connection by hand; returns the
/// response and the self-wakes seen.
async fn serve_one_request() -> (String, usize) {
    let (mut client, server) = tokio::io::duplex(64 * 1024);
    let body = r#"{"tool_name":"ping","args":{"x":1}}"#;
    let request = format!(
        "POST /invoke HTTP/1.1\r\nhost: relay\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    // The whole request is there before the first poll, as when a client
    // writes headers and a small body in one segment.
    client
        .write_all(request.as_bytes())
        .await
        .expect("duplex write");

    let service = hyper::service::service_fn(|request: hyper::Request<Incoming>| async move {
        let request = request.map(axum::body::Body::new);
        let bytes = match RawBody::from_request(request, &()).await {
            Ok(RawBody(bytes)) => bytes,
            Err(_) => bytes::Bytes::from_static(b"rejected"),
        };
        Ok::<_, std::convert::Infallible>(hyper::Response::new(axum::body::Body::from(bytes)))
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(hyper_util::rt::TokioIo::new(server), service);
    let mut connection = pin!(connection);

    let counter = Arc::new(Counter::default());
    let waker = Waker::from(Arc::clone(&counter));
    let mut context = Context::from_waker(&waker);
    let mut response = Vec::new();
    let mut buffer = [0_u8; 4096];
    // Each round polls the connection once, then takes what it wrote. The
    // duplex needs no reactor, so nothing else can move the connection on.
    for _ in 0..100 {
        counter.polling.store(true, Ordering::SeqCst);
        let polled = connection.as_mut().poll(&mut context);
        counter.polling.store(false, Ordering::SeqCst);
        if let Poll::Ready(result) = polled {
            panic!("the connection ended before answering: {result:?}");
        }
        let mut read = pin!(client.read(&mut buffer));
        if let Poll::Ready(Ok(count)) = read.as_mut().poll(&mut context) {
            response.extend_from_slice(&buffer[..count]);
        }
        if response.ends_with(body.as_bytes()) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    (text, counter.self_wakes.load(Ordering::SeqCst))
}

#[tokio::test]
async fn reading_a_request_body_does_not_wake_its_own_connection() {
    let (response, self_wakes) = serve_one_request().await;
    assert!(
        response.starts_with("HTTP/1.1 200 OK"),
        "the request was not answered: {response:?}"
    );
    assert!(
        response.ends_with(r#"{"tool_name":"ping","args":{"x":1}}"#),
        "the handler did not read the whole body: {response:?}"
    );
    assert_eq!(
        self_wakes, 0,
        "the connection task woke itself while reading the body: is the \
         workspace still building vendor/hyper (Cargo.toml, [patch.crates-io])?"
    );
}
