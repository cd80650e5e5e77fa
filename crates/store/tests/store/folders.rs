//! Folders in the store: a job's folder kept and walked by the listing
//! (alone, with other filters, several at once), looked up by id, and
//! counted above an id for a feed; a token's and a user's folders kept.

use std::collections::BTreeMap;

use joblog_core::{Folders, NewUser, UserChange};
use joblog_store::AccountOp;

use super::*;

joblog_store::backend_tests! {
    listings_limited_to_folders_walk_each_folder_and_merge,
    folders_of_jobs_tokens_and_users_are_kept,
}

fn insert_in(t: &mut TestStore, folder: Option<&str>, name: &str) -> JobId {
    let op = WriteOp::InsertJob {
        name: Some(name.into()),
        spec: Box::new(JobSpec {
            command: vec!["true".into()],
            folder: folder.map(str::to_owned),
            ..JobSpec::default()
        }),
    };
    match t.apply_one(op) {
        Outcome::Job(job) => {
            assert_eq!(job.spec.folder.as_deref(), folder);
            assert_eq!(job.given.folder.as_deref(), folder);
            job.id
        }
        other => panic!("InsertJob gave {other:?}"),
    }
}

fn in_folders(folders: &[&str]) -> JobQuery {
    JobQuery {
        folders: Some(folders.iter().map(|f| f.to_string()).collect()),
        limit: 100,
        ..JobQuery::default()
    }
}

async fn listings_limited_to_folders_walk_each_folder_and_merge(db: TestDatabase) {
    let mut t = open_store(db);
    let a1 = insert_in(&mut t, Some("a"), "x");
    let b1 = insert_in(&mut t, Some("b"), "y");
    let none = insert_in(&mut t, None, "x");
    let a2 = insert_in(&mut t, Some("a"), "y");
    let c1 = insert_in(&mut t, Some("c"), "x");

    assert_eq!(t.query(in_folders(&["a"])).await, [a2, a1]);
    assert_eq!(t.query(in_folders(&["a", "c"])).await, [c1, a2, a1]);
    assert_eq!(t.query(in_folders(&[])).await, Vec::<JobId>::new());
    assert_eq!(t.query(in_folders(&["zz"])).await, Vec::<JobId>::new());
    // With a name (its index walked, the folders checked) and paged.
    let named = JobQuery {
        name: Some(NameFilter::parse("x")),
        ..in_folders(&["a", "b", "c"])
    };
    assert_eq!(t.query(named).await, [c1, a1]);
    let page = JobQuery {
        before_id: Some(a2),
        limit: 1,
        ..in_folders(&["a", "b"])
    };
    assert_eq!(t.query(page).await, [b1]);
    let queued = JobQuery {
        states: vec![JobState::Queued],
        ..in_folders(&["b"])
    };
    assert_eq!(t.query(queued).await, [b1]);
    // Unlimited: every job, in a folder or none.
    assert_eq!(
        t.query(JobQuery {
            limit: 100,
            ..JobQuery::default()
        })
        .await,
        [c1, a2, none, b1, a1]
    );

    let mut found = t
        .store
        .job_folders(vec![a1, none, c1, 999_999])
        .await
        .unwrap();
    found.sort();
    assert_eq!(
        found,
        [(a1, Some("a".into())), (none, None), (c1, Some("c".into()))]
    );
    assert_eq!(t.store.latest_job_id().await.unwrap(), Some(c1));
    let mut newer = t
        .store
        .newer_in_folders(vec!["a".into(), "b".into()], a1, 10)
        .await
        .unwrap();
    newer.sort();
    assert_eq!(newer, [b1, a2]);
    assert_eq!(
        t.store
            .newer_in_folders(vec!["a".into()], a1, 0)
            .await
            .unwrap(),
        Vec::<JobId>::new()
    );
}

async fn folders_of_jobs_tokens_and_users_are_kept(db: TestDatabase) {
    let mut t = open_store(db);
    let folders: Folders = BTreeMap::from([
        ("team-a".into(), Role::Operator),
        ("b".into(), Role::Viewer),
    ]);
    let token = NewToken {
        folders: Some(folders.clone()),
        ..new_token("scoped", Role::Viewer, 7, None)
    };
    t.apply(vec![WriteOp::CreateToken(token)]);
    let kept = t.store.token_by_hash([7; 32]).await.unwrap().unwrap();
    assert_eq!(kept.folders, Some(folders.clone()));
    assert_eq!(kept.scope().role_in(Some("team-a")), Some(Role::Operator));

    t.account(AccountOp::CreateUser(NewUser {
        name: "ann".into(),
        role: Role::Viewer,
        password_hash: "$argon2id$stand-in".into(),
        created_at: Timestamp(1),
        folders: Some(folders.clone()),
    }));
    let ann = t.store.user("ann".into()).await.unwrap().unwrap();
    assert_eq!(ann.info.folders, Some(folders.clone()));
    assert_eq!(ann.password_hash.as_deref(), Some("$argon2id$stand-in"));
    // A change that leaves the folders out keeps them; `Some(None)` frees.
    let change = |folders| AccountOp::UpdateUser {
        name: "ann".into(),
        change: UserChange {
            role: Some(Role::Operator),
            folders,
            ..UserChange::default()
        },
        at: Timestamp(2),
    };
    assert_eq!(t.account(change(None)), 1);
    let ann = t.store.user("ann".into()).await.unwrap().unwrap();
    assert_eq!(
        (ann.info.role, ann.info.folders),
        (Role::Operator, Some(folders))
    );
    assert_eq!(t.account(change(Some(None))), 1);
    let ann = t.store.user("ann".into()).await.unwrap().unwrap();
    assert_eq!(ann.info.folders, None);
}
