//! One body per behaviour, run against every backend: `memory::…`, `sqlite::…` (a temporary
//! file) and `postgres::…` (a fresh schema on the server of TOOLBRIDGE_TEST_POSTGRES_URL).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod common;

use bytes::Bytes;
use common::{conversation, file, response, Backend, Kind, MAX_FILE};
use serde_json::json;
use toolbridge_state::{FileFilter, StoreError, MAX_RECORD_JSON_BYTES};

every_backend!(
    response_round_trip,
    conversation_round_trip,
    file_round_trip_and_listing,
    owner_isolation,
    conversation_writers_with_one_version_one_wins,
    recover_fails_only_running_rows_of_the_instance_or_stale,
    heartbeat_keeps_a_row_out_of_the_stale_rule,
    expire_deletes_expired_rows_and_file_contents,
    file_size_cap,
    record_json_cap,
    approvals_are_claimed_once_all_or_none,
    two_instances_claiming_one_approval_at_once_one_wins,
);

fn conflict<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    assert!(
        matches!(result, Err(StoreError::Conflict(_))),
        "expected a conflict, got {result:?}"
    );
}

async fn response_round_trip(b: &Backend) {
    let s = &b.store;
    let mut r = response("ada", "resp_1");
    s.put_response(&r).await.unwrap();
    let got = s.get_response("ada", "resp_1").await.unwrap().unwrap();
    assert_eq!(got, r);
    // Byte for byte: key order and escapes as stored.
    assert_eq!(
        serde_json::to_string(&got.body).unwrap(),
        serde_json::to_string(&r.body).unwrap()
    );

    // An upsert replaces every field; a paused run comes back as stored, `Some(Null)` included.
    r.status = "completed".into();
    r.updated_at = 2_000;
    r.expires_at = Some(9_000);
    r.instance = "i2".into();
    r.previous_response_id = None;
    r.conversation_id = None;
    r.body = json!({"id": "resp_1", "status": "completed"});
    r.input_items = json!([]);
    r.context = serde_json::Value::Null;
    r.run = Some(json!({"machine": {"round": 2}}));
    s.put_response(&r).await.unwrap();
    assert_eq!(s.get_response("ada", "resp_1").await.unwrap().unwrap(), r);
    r.run = Some(serde_json::Value::Null);
    s.put_response(&r).await.unwrap();
    assert_eq!(s.get_response("ada", "resp_1").await.unwrap().unwrap(), r);

    assert!(s.get_response("ada", "resp_none").await.unwrap().is_none());
    assert!(s.delete_response("ada", "resp_1").await.unwrap());
    assert!(!s.delete_response("ada", "resp_1").await.unwrap());
    assert!(s.get_response("ada", "resp_1").await.unwrap().is_none());
}

async fn conversation_round_trip(b: &Backend) {
    let s = &b.store;
    let mut c = conversation("ada", "conv_1");
    c.version = 42; // ignored: the store sets versions
    let created = s.put_conversation(c.clone(), None).await.unwrap();
    assert_eq!(created.version, 1);
    assert_eq!(
        created,
        toolbridge_state::ConversationRecord {
            version: 1,
            ..c.clone()
        }
    );
    assert_eq!(
        s.get_conversation("ada", "conv_1").await.unwrap().unwrap(),
        created
    );

    let mut next = created.clone();
    next.items = json!([{"type": "message", "role": "user", "content": "hi"}]);
    next.metadata = json!({"topic": "changed"});
    next.context = json!({"messages": 1});
    next.updated_at = 600;
    next.created_at = 1; // a put does not move the creation time
    let updated = s.put_conversation(next.clone(), Some(1)).await.unwrap();
    assert_eq!(updated.version, 2);
    assert_eq!(updated.created_at, 500);
    assert_eq!(updated.items, next.items);
    assert_eq!(
        s.get_conversation("ada", "conv_1").await.unwrap().unwrap(),
        updated
    );

    // Creating an existing id, or updating a version that is not the stored one, conflicts.
    conflict(s.put_conversation(c.clone(), None).await);
    conflict(s.put_conversation(next.clone(), Some(1)).await);
    conflict(
        s.put_conversation(conversation("ada", "conv_missing"), Some(1))
            .await,
    );

    assert!(s.delete_conversation("ada", "conv_1").await.unwrap());
    assert!(!s.delete_conversation("ada", "conv_1").await.unwrap());
    assert!(s.get_conversation("ada", "conv_1").await.unwrap().is_none());
}

async fn file_round_trip_and_listing(b: &Backend) {
    let s = &b.store;
    let mut meta = file("ada", "file-1", 100, None);
    meta.bytes = 999; // the store records the content's real length
    meta.expires_at = Some(5_000);
    s.put_file(meta.clone(), Bytes::from_static(b"hello"))
        .await
        .unwrap();
    let got = s.get_file("ada", "file-1").await.unwrap().unwrap();
    assert_eq!(
        got,
        toolbridge_state::FileRecord {
            bytes: 5,
            ..meta.clone()
        }
    );
    assert_eq!(
        s.file_content("ada", "file-1").await.unwrap().unwrap(),
        Bytes::from_static(b"hello")
    );

    // Binary content, empty content.
    let binary: Vec<u8> = (0..=255u8).collect();
    s.put_file(
        file("ada", "file-2", 200, None),
        Bytes::from(binary.clone()),
    )
    .await
    .unwrap();
    assert_eq!(
        s.file_content("ada", "file-2").await.unwrap().unwrap(),
        binary
    );
    s.put_file(file("ada", "file-3", 200, Some("cntr_1")), Bytes::new())
        .await
        .unwrap();
    assert_eq!(
        s.file_content("ada", "file-3").await.unwrap().unwrap(),
        Bytes::new()
    );
    s.put_file(
        file("ada", "file-4", 50, Some("cntr_1")),
        Bytes::from_static(b"x"),
    )
    .await
    .unwrap();
    s.put_file(
        file("ada", "file-5", 300, Some("cntr_2")),
        Bytes::from_static(b"y"),
    )
    .await
    .unwrap();

    let ids = |files: Vec<toolbridge_state::FileRecord>| {
        files.into_iter().map(|f| f.id).collect::<Vec<_>>()
    };
    // Newest first; file-2 and file-3 share a created_at, and file-3 was stored later.
    assert_eq!(
        ids(s.list_files("ada", FileFilter::All).await.unwrap()),
        ["file-5", "file-3", "file-2", "file-1", "file-4"]
    );
    assert_eq!(
        ids(s.list_files("ada", FileFilter::Uploads).await.unwrap()),
        ["file-2", "file-1"]
    );
    assert_eq!(
        ids(s
            .list_files("ada", FileFilter::Container("cntr_1".into()))
            .await
            .unwrap()),
        ["file-3", "file-4"]
    );
    assert!(s
        .list_files("ada", FileFilter::Container("cntr_none".into()))
        .await
        .unwrap()
        .is_empty());

    // Re-putting an id replaces metadata and content.
    let mut renamed = file("ada", "file-1", 100, None);
    renamed.filename = "renamed.txt".into();
    s.put_file(renamed.clone(), Bytes::from_static(b"bye"))
        .await
        .unwrap();
    assert_eq!(
        s.get_file("ada", "file-1").await.unwrap().unwrap(),
        toolbridge_state::FileRecord {
            bytes: 3,
            ..renamed
        }
    );
    assert_eq!(
        s.file_content("ada", "file-1").await.unwrap().unwrap(),
        Bytes::from_static(b"bye")
    );

    assert_eq!(b.content_rows().await.unwrap_or(5), 5);
    assert!(s.delete_file("ada", "file-1").await.unwrap());
    assert!(!s.delete_file("ada", "file-1").await.unwrap());
    assert!(s.get_file("ada", "file-1").await.unwrap().is_none());
    assert!(s.file_content("ada", "file-1").await.unwrap().is_none());
    assert_eq!(
        b.content_rows().await.unwrap_or(4),
        4,
        "content left behind"
    );
}

async fn owner_isolation(b: &Backend) {
    let s = &b.store;
    let r = response("ada", "resp_a");
    s.put_response(&r).await.unwrap();
    let c = s
        .put_conversation(conversation("ada", "conv_a"), None)
        .await
        .unwrap();
    s.put_file(file("ada", "file-a", 1, None), Bytes::from_static(b"ada's"))
        .await
        .unwrap();
    s.put_file(
        file("ada", "file-b", 1, Some("cntr_a")),
        Bytes::from_static(b"x"),
    )
    .await
    .unwrap();

    // Another owner sees nothing and deletes nothing.
    assert!(s.get_response("bob", "resp_a").await.unwrap().is_none());
    assert!(!s.delete_response("bob", "resp_a").await.unwrap());
    assert!(s.get_conversation("bob", "conv_a").await.unwrap().is_none());
    assert!(!s.delete_conversation("bob", "conv_a").await.unwrap());
    assert!(s.get_file("bob", "file-a").await.unwrap().is_none());
    assert!(s.file_content("bob", "file-a").await.unwrap().is_none());
    assert!(!s.delete_file("bob", "file-a").await.unwrap());
    for filter in [
        FileFilter::All,
        FileFilter::Uploads,
        FileFilter::Container("cntr_a".into()),
    ] {
        assert!(s.list_files("bob", filter).await.unwrap().is_empty());
    }

    // Nor can another owner overwrite: every put over ada's ids conflicts.
    let mut theirs = response("bob", "resp_a");
    theirs.body = json!({"stolen": true});
    conflict(s.put_response(&theirs).await);
    conflict(
        s.put_conversation(conversation("bob", "conv_a"), None)
            .await,
    );
    conflict(
        s.put_conversation(conversation("bob", "conv_a"), Some(c.version))
            .await,
    );
    conflict(
        s.put_file(file("bob", "file-a", 2, None), Bytes::from_static(b"bob's"))
            .await,
    );

    // Ada's objects are untouched.
    assert_eq!(s.get_response("ada", "resp_a").await.unwrap().unwrap(), r);
    assert_eq!(
        s.get_conversation("ada", "conv_a").await.unwrap().unwrap(),
        c
    );
    assert_eq!(
        s.get_file("ada", "file-a").await.unwrap().unwrap().owner,
        "ada"
    );
    assert_eq!(
        s.file_content("ada", "file-a").await.unwrap().unwrap(),
        Bytes::from_static(b"ada's")
    );
    assert_eq!(s.list_files("ada", FileFilter::All).await.unwrap().len(), 2);
}

async fn conversation_writers_with_one_version_one_wins(b: &Backend) {
    let s = &b.store;
    let first = s
        .put_conversation(conversation("ada", "conv_race"), None)
        .await
        .unwrap();
    // Two writers read version 1 and write at once.
    let mut one = first.clone();
    one.items = json!(["one"]);
    let mut two = first.clone();
    two.items = json!(["two"]);
    let (a, b2) = futures::join!(
        s.put_conversation(one, Some(first.version)),
        s.put_conversation(two, Some(first.version)),
    );
    let (winner, loser) = match (a, b2) {
        (Ok(w), Err(l)) | (Err(l), Ok(w)) => (w, l),
        (a, b2) => panic!("expected one winner and one conflict, got {a:?} and {b2:?}"),
    };
    assert!(matches!(loser, StoreError::Conflict(_)), "{loser:?}");
    assert_eq!(winner.version, 2);
    let stored = s
        .get_conversation("ada", "conv_race")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored, winner);

    // Two creators of one id: one wins.
    let (a, b2) = futures::join!(
        s.put_conversation(conversation("ada", "conv_new"), None),
        s.put_conversation(conversation("ada", "conv_new"), None),
    );
    assert!(
        a.is_ok() != b2.is_ok(),
        "expected one creation, got {a:?} and {b2:?}"
    );
}

async fn recover_fails_only_running_rows_of_the_instance_or_stale(b: &Backend) {
    let s = &b.store;
    let row = |id: &str, status: &str, instance: &str, updated_at: i64| {
        let mut r = response("ada", id);
        r.status = status.into();
        r.instance = instance.into();
        r.updated_at = updated_at;
        r.body["status"] = json!(status);
        r
    };
    let rows = [
        // (record, recovered?)
        (row("resp_mine", "in_progress", "me", 1_000), true),
        (row("resp_mine_queued", "queued", "me", 1_000), true),
        (row("resp_stale", "in_progress", "other", 100), true),
        (row("resp_stale_queued", "queued", "other", 499), true),
        (row("resp_fresh", "in_progress", "other", 500), false),
        (row("resp_done", "completed", "me", 100), false),
        (row("resp_done_stale", "incomplete", "other", 100), false),
        (row("resp_cancelled", "cancelled", "me", 100), false),
    ];
    for (r, _) in &rows {
        s.put_response(r).await.unwrap();
    }
    let recovered = s.recover("me", 500, "the instance stopped").await.unwrap();
    assert_eq!(recovered, 4);
    for (r, dead) in &rows {
        let got = s.get_response("ada", &r.id).await.unwrap().unwrap();
        if *dead {
            let mut expected = r.clone();
            expected.status = "failed".into();
            expected.body["status"] = json!("failed");
            expected.body["error"] =
                json!({"code": "server_error", "message": "the instance stopped"});
            assert_eq!(got, expected, "{}", r.id);
            // The rest of the body stays as it was, in its order, with `error` added last.
            let keys: Vec<&String> = got.body.as_object().unwrap().keys().collect();
            assert_eq!(
                keys,
                [
                    "id",
                    "object",
                    "status",
                    "output",
                    "model",
                    "created_at",
                    "zeta",
                    "error"
                ]
            );
        } else {
            assert_eq!(&got, r, "{} must not change", r.id);
        }
    }
    assert_eq!(s.recover("me", 500, "again").await.unwrap(), 0);
}

async fn heartbeat_keeps_a_row_out_of_the_stale_rule(b: &Backend) {
    let s = &b.store;
    let row = |id: &str, instance: &str, status: &str| {
        let mut r = response("ada", id);
        r.instance = instance.into();
        r.status = status.into();
        r.updated_at = 100;
        r
    };
    s.put_response(&row("resp_beating", "i2", "in_progress"))
        .await
        .unwrap();
    s.put_response(&row("resp_silent", "i2", "in_progress"))
        .await
        .unwrap();
    s.put_response(&row("resp_elsewhere", "i3", "queued"))
        .await
        .unwrap();
    s.put_response(&row("resp_finished", "i2", "completed"))
        .await
        .unwrap();
    let ids = [
        "resp_beating",
        "resp_elsewhere",
        "resp_finished",
        "resp_unknown",
    ]
    .map(String::from);
    // The rows that say the run is no longer i2's to run (another instance's, one that ended:
    // cancelled elsewhere, or failed by recovery) come back; a row that does not exist does not.
    let mut stopped = s.heartbeat("i2", &ids, 1_000).await.unwrap();
    stopped.sort();
    assert_eq!(stopped, ["resp_elsewhere", "resp_finished"]);
    assert!(s.heartbeat("i2", &[], 2_000).await.unwrap().is_empty());

    let updated = |id: &'static str| async move {
        s.get_response("ada", id).await.unwrap().unwrap().updated_at
    };
    assert_eq!(updated("resp_beating").await, 1_000);
    assert_eq!(updated("resp_silent").await, 100);
    // Another instance's run, and a run that ended, are not refreshed by i2's heartbeat.
    assert_eq!(updated("resp_elsewhere").await, 100);
    assert_eq!(updated("resp_finished").await, 100);

    // Instance i4 recovering with the stale rule at 500 fails the silent rows only.
    assert_eq!(s.recover("i4", 500, "stale").await.unwrap(), 2);
    let status =
        |id: &'static str| async move { s.get_response("ada", id).await.unwrap().unwrap().status };
    assert_eq!(status("resp_beating").await, "in_progress");
    assert_eq!(status("resp_silent").await, "failed");
    assert_eq!(status("resp_elsewhere").await, "failed");
    assert_eq!(status("resp_finished").await, "completed");
}

async fn expire_deletes_expired_rows_and_file_contents(b: &Backend) {
    let s = &b.store;
    let expiring = |id: &str, at: Option<i64>| {
        let mut r = response("ada", id);
        r.expires_at = at;
        r
    };
    for (id, at) in [
        ("resp_old", Some(100)),
        ("resp_now", Some(200)),
        ("resp_later", Some(300)),
        ("resp_kept", None),
    ] {
        s.put_response(&expiring(id, at)).await.unwrap();
    }
    for (id, at) in [
        ("file-old", Some(199)),
        ("file-later", Some(201)),
        ("file-kept", None),
    ] {
        let mut meta = file("ada", id, 1, None);
        meta.expires_at = at;
        s.put_file(meta, Bytes::from_static(b"content"))
            .await
            .unwrap();
    }
    assert_eq!(b.content_rows().await.unwrap_or(3), 3);

    // Strictly before `now`: a record expiring at 200 is still there at 200.
    assert_eq!(s.expire(200).await.unwrap(), 2);
    assert!(s.get_response("ada", "resp_old").await.unwrap().is_none());
    for id in ["resp_now", "resp_later", "resp_kept"] {
        assert!(s.get_response("ada", id).await.unwrap().is_some(), "{id}");
    }
    assert!(s.get_file("ada", "file-old").await.unwrap().is_none());
    assert!(s.file_content("ada", "file-old").await.unwrap().is_none());
    for id in ["file-later", "file-kept"] {
        assert!(s.file_content("ada", id).await.unwrap().is_some(), "{id}");
    }
    assert_eq!(
        b.content_rows().await.unwrap_or(2),
        2,
        "content left behind"
    );

    assert_eq!(s.expire(10_000).await.unwrap(), 3);
    assert!(s.get_response("ada", "resp_kept").await.unwrap().is_some());
    assert!(s.get_file("ada", "file-kept").await.unwrap().is_some());
    assert_eq!(b.content_rows().await.unwrap_or(1), 1);
    assert_eq!(s.expire(10_000).await.unwrap(), 0);
}

async fn file_size_cap(b: &Backend) {
    let s = &b.store;
    let at_cap = Bytes::from(vec![7u8; MAX_FILE as usize]);
    s.put_file(file("ada", "file-cap", 1, None), at_cap.clone())
        .await
        .unwrap();
    assert_eq!(
        s.file_content("ada", "file-cap").await.unwrap().unwrap(),
        at_cap
    );
    let over = Bytes::from(vec![7u8; MAX_FILE as usize + 1]);
    let result = s
        .put_file(file("ada", "file-over", 1, None), over.clone())
        .await;
    assert!(matches!(result, Err(StoreError::TooLarge(_))), "{result:?}");
    assert!(s.get_file("ada", "file-over").await.unwrap().is_none());
    // Replacing a file with content over the cap keeps the old content.
    let result = s.put_file(file("ada", "file-cap", 1, None), over).await;
    assert!(matches!(result, Err(StoreError::TooLarge(_))), "{result:?}");
    assert_eq!(
        s.file_content("ada", "file-cap").await.unwrap().unwrap(),
        at_cap
    );
}

async fn record_json_cap(b: &Backend) {
    let s = &b.store;
    // Each value alone is under the bound; together they are over it.
    let half = json!("x".repeat(MAX_RECORD_JSON_BYTES / 2));
    let mut r = response("ada", "resp_big");
    r.body = half.clone();
    s.put_response(&r).await.unwrap();
    r.context = half.clone();
    let result = s.put_response(&r).await;
    assert!(matches!(result, Err(StoreError::TooLarge(_))), "{result:?}");
    // The earlier version stays.
    let stored = s.get_response("ada", "resp_big").await.unwrap().unwrap();
    assert_eq!(stored.context, response("ada", "x").context);

    let mut c = conversation("ada", "conv_big");
    c.items = half.clone();
    c.metadata = half;
    let result = s.put_conversation(c, None).await;
    assert!(matches!(result, Err(StoreError::TooLarge(_))), "{result:?}");
    assert!(s
        .get_conversation("ada", "conv_big")
        .await
        .unwrap()
        .is_none());
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

async fn approvals_are_claimed_once_all_or_none(b: &Backend) {
    let s = &b.store;
    s.put_response(&response("ada", "resp_1")).await.unwrap();
    let claim = |owner: &'static str, response: &'static str, requests: &[&str]| {
        s.claim_approvals(owner, response, &ids(requests), 1_000)
    };
    assert_eq!(claim("ada", "resp_1", &["mcpr_a"]).await.unwrap(), ids(&[]));
    // Answered before: refused, sent alone or among others…
    assert_eq!(
        claim("ada", "resp_1", &["mcpr_a"]).await.unwrap(),
        ids(&["mcpr_a"])
    );
    assert_eq!(
        claim("ada", "resp_1", &["mcpr_c", "mcpr_a", "mcpr_b"])
            .await
            .unwrap(),
        ids(&["mcpr_a"])
    );
    // …and then the others were not recorded: all or none.
    assert_eq!(
        claim("ada", "resp_1", &["mcpr_b", "mcpr_c", "mcpr_b"])
            .await
            .unwrap(),
        ids(&[])
    );
    assert_eq!(
        claim("ada", "resp_1", &["mcpr_b"]).await.unwrap(),
        ids(&["mcpr_b"])
    );
    // Per response and per owner.
    assert_eq!(claim("ada", "resp_2", &["mcpr_a"]).await.unwrap(), ids(&[]));
    assert_eq!(claim("bob", "resp_1", &["mcpr_a"]).await.unwrap(), ids(&[]));

    // A response's answers go with it: deleted, or expired (resp_2 is not stored).
    assert!(s.delete_response("ada", "resp_1").await.unwrap());
    s.expire(0).await.unwrap();
    assert_eq!(claim("ada", "resp_1", &["mcpr_a"]).await.unwrap(), ids(&[]));
    assert_eq!(claim("ada", "resp_2", &["mcpr_a"]).await.unwrap(), ids(&[]));
    // bob has no response resp_1: the expiry took his answer too.
    assert_eq!(claim("bob", "resp_1", &["mcpr_a"]).await.unwrap(), ids(&[]));
}

async fn two_instances_claiming_one_approval_at_once_one_wins(b: &Backend) {
    let one = &b.store;
    let two = b.another().await;
    one.put_response(&response("ada", "resp_1")).await.unwrap();
    for round in 0..20 {
        let request = ids(&[&format!("mcpr_{round}")]);
        let (first, second) = futures::join!(
            one.claim_approvals("ada", "resp_1", &request, 1_000),
            two.claim_approvals("ada", "resp_1", &request, 1_000),
        );
        let winners = [first.unwrap(), second.unwrap()]
            .iter()
            .filter(|answered_before| answered_before.is_empty())
            .count();
        assert_eq!(winners, 1, "round {round}");
    }
}
