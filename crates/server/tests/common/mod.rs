//! Helpers shared by the server's integration tests: a directory configuration for a fresh
//! data directory, and request builders. Protocol requests borrow their octets, so each
//! builder lends the request it builds to a closure. Each test file uses some of them.
#![allow(dead_code)]

pub mod gated;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use larch_proto::controls::Control;
use larch_proto::{
    AddRequest, Change, LdapMessage, ModifyOperation, ModifyRequest, PartialAttribute, ProtocolOp, SeqOf,
};
use larch_server::config::ServerConfig;
use larch_store::wal::SyncPolicy;

/// A control as a test writes it: OID, criticality, value.
pub type TestControl = (&'static str, bool, Option<Vec<u8>>);

/// A data directory of its own for a test of `name` (under the system's temp directory,
/// emptied; the caller removes it when done).
pub fn fresh_data_dir(name: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "larch-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&path);
    path
}

/// Sets `config` up for a test in `data_dir`: no sync to disk, no snapshots, and an admin
/// password environment variable nobody sets (so the environment cannot change the test).
pub fn test_store(config: &mut ServerConfig, data_dir: PathBuf) {
    config.server.data_dir = data_dir;
    config.store.sync = SyncPolicy::None;
    config.store.snapshot_interval = None;
    config.store.snapshot_after_records = None;
    config.directory.admin_password_env = "LARCH_TEST_ADMIN_PASSWORD_UNSET".to_string();
}

/// Encodes `op` with `controls` as message 7, decodes it, and hands the decoded message to
/// `f`, as the connection would see it.
pub fn with_decoded<R>(
    op: ProtocolOp<'_>,
    controls: &[TestControl],
    f: impl FnOnce(LdapMessage<'_>) -> R,
) -> R {
    let raw: Vec<Control<'_>> = controls
        .iter()
        .map(|(oid, critical, value)| Control {
            oid: oid.as_bytes(),
            critical: *critical,
            value: value.as_deref(),
        })
        .collect();
    let msg = LdapMessage {
        message_id: 7,
        op,
        controls: (!raw.is_empty()).then(|| SeqOf::from_items(&raw)),
    };
    let mut buf = Vec::new();
    msg.encode(&mut buf);
    f(LdapMessage::decode(&buf).unwrap())
}

/// An AddRequest for `dn` with `attrs` (type, values), handed to `f`.
pub fn with_add<R, N, L, V>(dn: &str, attrs: &[(N, L)], f: impl FnOnce(AddRequest<'_>) -> R) -> R
where
    N: AsRef<str>,
    L: AsRef<[V]>,
    V: AsRef<str>,
{
    let values: Vec<Vec<&[u8]>> = attrs
        .iter()
        .map(|(_, vs)| vs.as_ref().iter().map(|v| v.as_ref().as_bytes()).collect())
        .collect();
    let list: Vec<PartialAttribute<'_>> = attrs
        .iter()
        .zip(&values)
        .map(|((name, _), vs)| PartialAttribute {
            description: name.as_ref().as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    f(AddRequest {
        entry: dn.as_bytes(),
        attributes: SeqOf::from_items(&list),
    })
}

/// A ModifyRequest for `dn` with `changes` (operation, type, values), handed to `f`.
pub fn with_modify<R>(
    dn: &str,
    changes: &[(ModifyOperation, &str, &[&str])],
    f: impl FnOnce(ModifyRequest<'_>) -> R,
) -> R {
    let values: Vec<Vec<&[u8]>> = changes
        .iter()
        .map(|(_, _, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let list: Vec<Change<'_>> = changes
        .iter()
        .zip(&values)
        .map(|((operation, name, _), vs)| Change {
            operation: *operation,
            modification: PartialAttribute {
                description: name.as_bytes(),
                values: SeqOf::from_items(vs),
            },
        })
        .collect();
    f(ModifyRequest {
        object: dn.as_bytes(),
        changes: SeqOf::from_items(&list),
    })
}
