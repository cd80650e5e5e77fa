//! What the kit's servers (the HTTP receiver, the SMTP server) share: a
//! loopback listener that serves each connection on a task of its own,
//! state shared with the test, and waiting until enough has arrived. The
//! listener stops when dropped.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::net::{TcpListener, TcpStream};

pub(crate) struct Listening<S> {
    pub(crate) port: u16,
    shared: Arc<Mutex<S>>,
    task: tokio::task::JoinHandle<()>,
}

impl<S: Send + 'static> Listening<S> {
    /// Listens on a free loopback port; each connection is `session`'s.
    pub(crate) async fn start<F, Fut>(what: &str, state: S, session: F) -> Listening<S>
    where
        F: Fn(TcpStream, Arc<Mutex<S>>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("a loopback port for the {what}: {e}"));
        let port = listener.local_addr().expect("its address").port();
        let shared = Arc::new(Mutex::new(state));
        let served = shared.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(session(stream, served.clone()));
            }
        });
        Listening { port, shared, task }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, S> {
        lock(&self.shared)
    }

    /// Waits until `items` of the state holds `n` (at most the kit's
    /// patience), and gives them.
    pub(crate) async fn wait_for<T: Clone>(
        &self,
        what: &str,
        n: usize,
        items: impl Fn(&S) -> &Vec<T>,
    ) -> Vec<T> {
        crate::eventually(&format!("{n} {what}"), crate::PATIENCE, || async {
            let got = items(&self.lock()).clone();
            if got.len() >= n {
                Ok(got)
            } else {
                Err(format!("{} so far", got.len()))
            }
        })
        .await
    }
}

/// The state, whether or not a session panicked holding it.
pub(crate) fn lock<S>(shared: &Mutex<S>) -> MutexGuard<'_, S> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S> Drop for Listening<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}
