//! How long a stream may stay open on the token that opened it: live
//! tails and job feeds outlast the request that authenticated them, so
//! each ends within a second of its token's expiry or revocation
//! (revocations on any node reach it through the engine's commits).

use std::time::Duration;

use joblog_core::Timestamp;

use super::Identity;
use crate::AppState;

/// Resolves when `identity` may no longer read: its token expired or was
/// revoked. Never resolves for the bootstrap token or an anonymous
/// caller (nothing to revoke: they last as long as the configuration).
pub(crate) async fn ended(state: AppState, identity: Identity) {
    let Some(held) = identity.token else {
        return std::future::pending().await;
    };
    let expiry = async {
        match held.expires_at {
            Some(at) => {
                let left = at.micros().saturating_sub(Timestamp::now().micros());
                tokio::time::sleep(Duration::from_micros(left.max(0) as u64)).await;
            }
            None => std::future::pending().await,
        }
    };
    let mut revoked = state.engine.tokens_revoked();
    let revocation = async {
        // Checked once as soon as this watch is subscribed, then at each
        // revocation: one that came between the request's authentication
        // and the subscription (a stream whose body is first polled late)
        // would otherwise never be seen.
        loop {
            match state.engine.store().token_by_hash(held.hash).await {
                Ok(Some(t)) if !t.is_expired(Timestamp::now()) => {}
                // Gone, expired, or not known to be valid: the stream
                // ends, and a client that still may reads again.
                _ => return,
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
