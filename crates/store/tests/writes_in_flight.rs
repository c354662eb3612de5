//! A replicated store's writer with batches in flight (`larch_store::consensus`, step 5),
//! against a replicator this test controls: a job computed on a batch still in flight is
//! answered only after that batch ends, and when that batch is not applied, every job
//! computed on it fails, its refusals too (they were decided on writes that never
//! happened); the writer then starts again from the published version.

mod common;

use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::schema;
use larch_store::consensus::{Leadership, Proposal, ReplicateError, Replicator, WriteBatch};
use larch_store::storage::FaultStorage;
use larch_store::wal::Lsn;
use larch_store::{Store, StoreError, StoreOptions};

type Answer = Sender<Result<Lsn, ReplicateError>>;

/// Each proposal is handed to the test (its LSN, and where to send its end).
struct Controlled(Mutex<Sender<(Lsn, Answer)>>);

struct Gated(Receiver<Result<Lsn, ReplicateError>>);

impl Proposal for Gated {
    fn wait(self: Box<Self>) -> Result<Lsn, ReplicateError> {
        self.0
            .recv()
            .unwrap_or_else(|_| Err(ReplicateError::Unavailable("the test ended".into())))
    }
}

impl Replicator for Controlled {
    fn ready(&self) -> Result<Leadership, ReplicateError> {
        Ok(Leadership { term: 1, node: 1 })
    }

    fn propose(&self, batch: WriteBatch) -> Result<Box<dyn Proposal>, ReplicateError> {
        let (tx, rx) = channel();
        self.0.lock().unwrap().send((batch.expected_lsn, tx)).unwrap();
        Ok(Box::new(Gated(rx)))
    }
}

fn open() -> Store {
    let mut o = StoreOptions::new(PathBuf::from("/data"), schema());
    o.storage = Arc::new(FaultStorage::new(3));
    o.threads = 1;
    o.snapshot_interval = None;
    o.snapshot_after_records = None;
    o.replicated = true;
    Store::open(o).unwrap().0
}

type Done = Receiver<Result<Result<(), StoreError>, StoreError>>;

/// Submits the add of `dn` (a naming context when `suffix`); its result arrives on the
/// receiver.
fn add(store: &Store, dn: &str, suffix: bool) -> Done {
    let e = common::entry(dn);
    let (tx, rx) = channel();
    store.submit(
        move |txn| txn.add(&e.dn, &e.norm_dn, &e.to_stored(), suffix).map(drop),
        move |r| tx.send(r).unwrap(),
    );
    rx
}

const WAIT: Duration = Duration::from_secs(10);

#[test]
fn jobs_computed_on_a_batch_that_is_not_applied_fail_whole() {
    let store = open();
    let (tx, proposals) = channel();
    assert!(store.set_replicator(Arc::new(Controlled(Mutex::new(tx)))));

    let a = add(&store, "dc=example,dc=com", true);
    let (lsn_a, answer_a) = proposals.recv_timeout(WAIT).unwrap();
    assert_eq!(lsn_a, 1);
    // Computed on A's copy: B finds the suffix already there (a refusal, nothing to
    // propose), C adds below it (proposed ahead, to land right after A).
    let b = add(&store, "dc=example,dc=com", true);
    let c = add(&store, "cn=c,dc=example,dc=com", false);
    let (lsn_c, _answer_c) = proposals.recv_timeout(WAIT).unwrap();
    assert_eq!(lsn_c, 2);
    assert_eq!(store.stats().proposed_ahead, 1);
    // B's refusal holds only if A is applied: not answered while A is in flight.
    assert!(matches!(
        b.recv_timeout(Duration::from_millis(200)),
        Err(RecvTimeoutError::Timeout)
    ));

    answer_a
        .send(Err(ReplicateError::Unavailable("the test says no".into())))
        .unwrap();
    let a = a.recv_timeout(WAIT).unwrap();
    assert!(
        matches!(a, Err(StoreError::Replication(ReplicateError::Unavailable(_)))),
        "{a:?}"
    );
    for (name, r) in [
        ("B", b.recv_timeout(WAIT).unwrap()),
        ("C", c.recv_timeout(WAIT).unwrap()),
    ] {
        assert!(
            matches!(r, Err(StoreError::Replication(ReplicateError::Superseded))),
            "{name}: {r:?}"
        );
    }

    // The writer starts again from the published version (still empty): the suffix is
    // computed to land at LSN 1 again.
    let d = add(&store, "dc=example,dc=com", true);
    let (lsn_d, answer_d) = proposals.recv_timeout(WAIT).unwrap();
    assert_eq!(lsn_d, 1);
    answer_d
        .send(Err(ReplicateError::Unavailable("the test ends".into())))
        .unwrap();
    assert!(d.recv_timeout(WAIT).unwrap().is_err());
}
