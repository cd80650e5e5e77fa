//! A request body as the server reads it: at a minimum rate, and within a
//! budget of bytes buffered per connection and in all. A client that
//! sends a body slower than [`MIN_RATE`] (after [`GRACE`]) gets `408`; one
//! whose bodies would take more than its connection's budget (HTTP/2 runs
//! many requests on one connection), or more than the server's, gets
//! `503 server_busy` before the bytes are kept. The budget's bytes are
//! held until the request is answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use http_body::Frame;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// A body must arrive at this rate (bytes a second) once [`GRACE`] is over.
pub const MIN_RATE: u64 = 1024;
/// Time a body has before the rate counts.
pub const GRACE: Duration = Duration::from_secs(10);
/// Request bodies buffered at once by the whole server, in bytes.
pub const SERVER_BUDGET: usize = 64 << 20;
/// The budget's unit: permits are KiB.
const UNIT: usize = 1024;

/// Why a body was cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("the request body arrived slower than {MIN_RATE} bytes a second")]
    TooSlow,
    #[error("the server is receiving too many request bodies at once")]
    Busy,
}

impl BodyError {
    /// This error among the sources of a body's read error, if it is one.
    pub(crate) fn find(mut e: Option<&(dyn std::error::Error + 'static)>) -> Option<BodyError> {
        while let Some(err) = e {
            if let Some(found) = err.downcast_ref::<BodyError>() {
                return Some(*found);
            }
            e = err.source();
        }
        None
    }
}

/// The budgets a body's bytes are taken from: the server's, and its
/// connection's (set by the HTTP server; absent in tests without one).
#[derive(Debug, Clone)]
pub struct Budgets {
    pub server: Arc<Semaphore>,
    pub connection: Option<Arc<Semaphore>>,
}

/// A connection's budget of body bytes, in the request's extensions.
#[derive(Debug, Clone)]
pub struct ConnectionBudget(pub Arc<Semaphore>);

impl ConnectionBudget {
    /// A budget of `bytes` for one connection.
    pub fn of(bytes: usize) -> ConnectionBudget {
        ConnectionBudget(Arc::new(Semaphore::new(bytes.div_ceil(UNIT))))
    }
}

/// The server's budget.
pub(crate) fn server_budget() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(SERVER_BUDGET / UNIT))
}

/// The bytes a request holds; released when the request is answered.
pub(crate) type Held = Arc<Mutex<Vec<OwnedSemaphorePermit>>>;

pub(crate) struct Metered {
    inner: Body,
    started: Instant,
    got: u64,
    deadline: Pin<Box<Sleep>>,
    grace: Duration,
    budgets: Budgets,
    held: Held,
}

impl Metered {
    pub(crate) fn new(inner: Body, budgets: Budgets, held: Held) -> Metered {
        Metered::with_grace(inner, budgets, held, GRACE)
    }

    fn with_grace(inner: Body, budgets: Budgets, held: Held, grace: Duration) -> Metered {
        let started = Instant::now();
        Metered {
            inner,
            started,
            got: 0,
            deadline: Box::pin(tokio::time::sleep_until(started + grace)),
            grace,
            budgets,
            held,
        }
    }

    fn take(&mut self, bytes: usize) -> Result<(), BodyError> {
        let units = u32::try_from(bytes.div_ceil(UNIT)).map_err(|_| BodyError::Busy)?;
        let mut taken = Vec::with_capacity(2);
        for budget in std::iter::once(&self.budgets.server).chain(&self.budgets.connection) {
            taken.push(
                budget
                    .clone()
                    .try_acquire_many_owned(units)
                    .map_err(|_| BodyError::Busy)?,
            );
        }
        self.held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(taken);
        Ok(())
    }
}

impl HttpBody for Metered {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let n = data.len();
                    if let Err(e) = this.take(n) {
                        return Poll::Ready(Some(Err(axum::Error::new(e))));
                    }
                    this.got += n as u64;
                    let due = this.started + this.grace + Duration::from_secs(this.got / MIN_RATE);
                    this.deadline.as_mut().reset(due);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => match this.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(BodyError::TooSlow)))),
                Poll::Pending => Poll::Pending,
            },
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn budgets(server: usize, connection: usize) -> Budgets {
        Budgets {
            server: Arc::new(Semaphore::new(server / UNIT)),
            connection: Some(ConnectionBudget::of(connection).0),
        }
    }

    #[tokio::test]
    async fn bodies_are_held_to_the_connections_and_the_servers_budget() {
        let b = budgets(8 * UNIT, 3 * UNIT);
        let held = Held::default();
        let body = Metered::new(Body::from(vec![b'x'; 2 * UNIT]), b.clone(), held.clone());
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 2 * UNIT);
        // Held until the request is answered: a second body on the same
        // connection does not fit beside it.
        let second = Metered::new(Body::from(vec![b'x'; 2 * UNIT]), b.clone(), Held::default());
        let e = second.collect().await.unwrap_err();
        assert_eq!(BodyError::find(Some(&e)), Some(BodyError::Busy));
        drop(held);
        let third = Metered::new(Body::from(vec![b'x'; 2 * UNIT]), b.clone(), Held::default());
        assert!(third.collect().await.is_ok(), "given back");
        // The server's budget binds across connections.
        let other = budgets(UNIT, 3 * UNIT);
        let big = Metered::new(Body::from(vec![b'x'; 2 * UNIT]), other, Held::default());
        assert!(big.collect().await.is_err());
    }

    /// (A grace of 100 ms here; 10 s in the server.)
    #[tokio::test]
    async fn a_body_slower_than_the_minimum_rate_is_cut_off() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, axum::Error>>(4);
        let frames = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|frame| (frame, rx))
        });
        let body = Body::new(http_body_util::StreamBody::new(frames));
        let grace = Duration::from_millis(100);
        let metered = Metered::with_grace(body, budgets(1 << 20, 1 << 20), Held::default(), grace);
        let reader = tokio::spawn(metered.collect());
        tx.send(Ok(Frame::data(Bytes::from_static(b"{"))))
            .await
            .unwrap();
        // Nothing more (the sender stays open): after the grace the body
        // is too slow.
        let e = tokio::time::timeout(Duration::from_secs(30), reader)
            .await
            .expect("cut off")
            .unwrap()
            .unwrap_err();
        assert_eq!(BodyError::find(Some(&e)), Some(BodyError::TooSlow));
        drop(tx);
    }
}
