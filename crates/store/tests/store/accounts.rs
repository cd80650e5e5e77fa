//! Single sign-on's rows on both stores: a sign-in begun is taken once
//! and not after it expires, expired ones are cleared as another begins,
//! and a single sign-on user is made, kept up to date, and never takes a
//! name another user holds.

use joblog_core::{NewUser, PendingSignIn, Role, SsoUser};
use joblog_store::AccountOp;

use super::*;

joblog_store::backend_tests! {
    a_sign_in_begun_is_taken_once_and_not_once_expired,
    sign_ins_begun_are_bounded,
    a_single_sign_on_user_is_made_updated_and_never_takes_a_name,
}

impl TestStore {
    pub(super) fn account(&mut self, op: AccountOp) -> u64 {
        match self.apply_one(WriteOp::Account(op)) {
            Outcome::Count(n) => n,
            other => panic!("an account op gave {other:?}"),
        }
    }
}

fn pending(byte: u8, created_at: i64, expires_at: i64) -> PendingSignIn {
    PendingSignIn {
        state_hash: [byte; 32],
        nonce: format!("nonce-{byte}"),
        pkce_verifier: format!("verifier-{byte}"),
        return_to: "/jobs".into(),
        created_at: Timestamp(created_at),
        expires_at: Timestamp(expires_at),
    }
}

async fn a_sign_in_begun_is_taken_once_and_not_once_expired(db: TestDatabase) {
    let mut t = open_store(db);
    let p = pending(1, 1_000, 2_000);
    assert_eq!(t.account(AccountOp::BeginSignIn(p.clone())), 1);
    assert_eq!(t.store.pending_sign_in([1; 32]).await.unwrap(), Some(p));
    assert_eq!(t.store.pending_sign_in([9; 32]).await.unwrap(), None);
    let take = |hash: u8, at: i64| AccountOp::TakeSignIn {
        state_hash: [hash; 32],
        at: Timestamp(at),
    };
    assert_eq!(t.account(take(1, 1_500)), 1, "taken");
    assert_eq!(t.account(take(1, 1_500)), 0, "a second time: gone");
    assert_eq!(t.store.pending_sign_in([1; 32]).await.unwrap(), None);

    t.account(AccountOp::BeginSignIn(pending(2, 1_000, 2_000)));
    assert_eq!(t.account(take(2, 2_000)), 0, "expired at its end");
    // Another begun later clears the expired one.
    t.account(AccountOp::BeginSignIn(pending(3, 3_000, 4_000)));
    assert_eq!(t.store.pending_sign_in([2; 32]).await.unwrap(), None);
    assert!(t.store.pending_sign_in([3; 32]).await.unwrap().is_some());
}

async fn a_single_sign_on_user_is_made_updated_and_never_takes_a_name(db: TestDatabase) {
    let mut t = open_store(db);
    let sso = |name: &str, subject: &str, role: Role| {
        AccountOp::SsoUser(SsoUser {
            name: name.into(),
            subject: subject.into(),
            role,
            at: Timestamp(5),
        })
    };
    assert_eq!(t.account(sso("alice", "https://idp a1", Role::Viewer)), 1);
    let alice = t.store.user("alice".into()).await.unwrap().unwrap();
    assert!(alice.info.single_sign_on);
    assert_eq!(alice.sso_subject.as_deref(), Some("https://idp a1"));
    assert_eq!(alice.password_hash, None);
    assert_eq!(alice.info.role, Role::Viewer);

    // Signing in again with another role brings it up to date.
    assert_eq!(t.account(sso("alice", "https://idp a1", Role::Admin)), 1);
    let alice = t.store.user("alice".into()).await.unwrap().unwrap();
    assert_eq!(alice.info.role, Role::Admin);

    // Another subject with her name changes nothing.
    assert_eq!(
        t.account(sso("alice", "https://idp other", Role::Viewer)),
        0
    );
    let still = t.store.user("alice".into()).await.unwrap().unwrap();
    assert_eq!(still.info.role, Role::Admin);
    assert_eq!(still.sso_subject.as_deref(), Some("https://idp a1"));

    // Nor does anyone take a local user's name.
    t.account(AccountOp::CreateUser(NewUser {
        name: "ada".into(),
        role: Role::Viewer,
        password_hash: "$argon2id$stand-in".into(),
        created_at: Timestamp(1),
        folders: None,
    }));
    assert_eq!(t.account(sso("ada", "https://idp ada", Role::Admin)), 0);
    let ada = t.store.user("ada".into()).await.unwrap().unwrap();
    assert!(!ada.info.single_sign_on);
    assert_eq!(ada.info.role, Role::Viewer);
    let listed = t.store.list_users().await.unwrap();
    let flags: Vec<(&str, bool)> = listed
        .iter()
        .map(|u| (u.name.as_str(), u.single_sign_on))
        .collect();
    assert_eq!(flags, vec![("ada", false), ("alice", true)]);
}

/// Anyone may begin a sign-in: the store holds at most
/// `MAX_PENDING_SIGN_INS` at once, and room comes back as they expire.
async fn sign_ins_begun_are_bounded(db: TestDatabase) {
    let mut t = open_store(db);
    let max = usize::try_from(joblog_store::MAX_PENDING_SIGN_INS).unwrap();
    let hash = |i: usize| {
        let mut h = [0u8; 32];
        h[..8].copy_from_slice(&(i as u64).to_be_bytes());
        h
    };
    let ops: Vec<WriteOp> = (0..max)
        .map(|i| {
            WriteOp::Account(AccountOp::BeginSignIn(PendingSignIn {
                state_hash: hash(i),
                ..pending(0, 1_000, 2_000)
            }))
        })
        .collect();
    t.apply(ops);
    let one_more = |at: i64| {
        AccountOp::BeginSignIn(PendingSignIn {
            state_hash: hash(max),
            ..pending(0, at, at + 1_000)
        })
    };
    assert_eq!(t.account(one_more(1_500)), 0, "full");
    assert_eq!(t.store.pending_sign_in(hash(max)).await.unwrap(), None);
    assert_eq!(t.account(one_more(2_000)), 1, "the others expired");
}
