//! How long a stream may stay open on the credential that opened it: live
//! tails and job feeds outlast the request that authenticated them, so
//! each ends within a second of its token's expiry or revocation, or its
//! session's end (signed out, revoked, its user disabled, deleted or given
//! a new password, or its lifetime over); revocations on any node reach it
//! through the engine's commits. A session's idle timeout does not end a
//! stream: watching a log is using the session.

use std::time::Duration;

use joblog_core::Timestamp;

use super::{Held, Identity};
use crate::AppState;

/// Resolves when `identity` may no longer read. Never resolves for the
/// bootstrap token or an anonymous caller (nothing to revoke: they last
/// as long as the configuration).
pub(crate) async fn ended(state: AppState, identity: Identity) {
    let Some(held) = identity.held else {
        return std::future::pending().await;
    };
    let expires_at = match &held {
        Held::Token { expires_at, .. } => *expires_at,
        Held::Session { expires_at, .. } => Some(*expires_at),
    };
    let expiry = async {
        match expires_at {
            Some(at) => {
                let left = at.micros().saturating_sub(Timestamp::now().micros());
                tokio::time::sleep(Duration::from_micros(left.max(0) as u64)).await;
            }
            None => std::future::pending().await,
        }
    };
    let mut revoked = state.engine.revocations();
    let revocation = async {
        // Checked once as soon as this watch is subscribed, then at each
        // revocation: one that came between the request's authentication
        // and the subscription (a stream whose body is first polled late)
        // would otherwise never be seen.
        loop {
            if !still_valid(&state, &held).await {
                // Gone, expired, or not known to be valid: the stream
                // ends, and a client that still may reads again.
                return;
            }
            if revoked.changed().await.is_err() {
                // The engine is gone: the server is stopping.
                return std::future::pending().await;
            }
        }
    };
    tokio::select! {
        () = expiry => {}
        () = revocation => {}
    }
}

async fn still_valid(state: &AppState, held: &Held) -> bool {
    let now = Timestamp::now();
    let store = state.engine.store();
    match held {
        Held::Token { hash, .. } => {
            matches!(store.token_by_hash(*hash).await, Ok(Some(t)) if !t.is_expired(now))
        }
        Held::Session { hash, .. } => matches!(
            store.session_by_hash(*hash).await,
            Ok(Some(s)) if !s.disabled && now < s.info.expires_at
        ),
    }
}
