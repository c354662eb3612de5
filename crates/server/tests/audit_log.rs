//! The audit log on a real directory: every committed change (adds, modifies, renames with
//! and without a new superior and both ways of deleteOldRDN, a subtree move, deletes, a
//! subtree delete) is in the file in commit order, refused writes are not, the records
//! parse as LDIF and, applied to a fresh directory, give the same entries; a log left
//! behind by a snapshot says which changes it skipped; a failed write is counted and noted;
//! a reopen after the file was moved starts a new file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::gated::{Gate, GatedStorage};
use common::{fresh_data_dir, test_store, with_decoded, TestControl};
use larch_model::dn::NormDn;
use larch_model::entry::{Entry, Options};
use larch_model::schema::Schema;
use larch_proto::controls::{ControlValue, SubtreeDelete};
use larch_proto::{
    AddRequest, Change, DelRequest, ModifyDnRequest, ModifyOperation, ModifyRequest, PartialAttribute,
    ProtocolOp, ResultCode, SeqOf,
};
use larch_server::auditlog::{AuditLog, AuditLogStats};
use larch_server::client::Client;
use larch_server::config::{AuditLogSettings, ServerConfig};
use larch_server::controls::{OpKind, RequestControls};
use larch_server::directory::Directory;
use larch_server::error::OpError;
use larch_server::identity::Identity;
use larch_server::ops::{
    apply_add, apply_delete, apply_modify, apply_modify_dn, prepare_add, prepare_delete, prepare_modify,
    prepare_modify_dn, PreparedAdd, PreparedDelete, PreparedModify, PreparedModifyDn, WriteContext,
};
use larch_store::feed::MAX_FEED_BATCHES;
use larch_store::ldif::{LdifChange, LdifModOp, LdifReader, LdifRecord};
use larch_store::storage::{FsStorage, Storage};
use larch_store::wal::SyncPolicy;
use larch_store::{Store, StoreOptions, WriteTxn};

const ADMIN: &str = "cn=admin,dc=example,dc=com";
const PEOPLE: &str = "ou=people,dc=example,dc=com";

/// Operations here run with no socket behind them.
static CLIENT: Client = Client {
    addr: None,
    tls: false,
};

/// One update, as a test or an LDIF record asks for it.
#[derive(Debug, Clone)]
enum Op {
    Add {
        dn: String,
        attrs: Vec<(String, Vec<u8>)>,
    },
    Modify {
        dn: String,
        mods: Vec<(ModifyOperation, String, Vec<Vec<u8>>)>,
    },
    ModRdn {
        dn: String,
        new_rdn: String,
        delete_old_rdn: bool,
        new_superior: Option<String>,
    },
    Delete {
        dn: String,
        subtree: bool,
    },
}

fn add(dn: &str, attrs: &[(&str, &str)]) -> Op {
    Op::Add {
        dn: dn.into(),
        attrs: attrs
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect(),
    }
}

fn modify(dn: &str, mods: &[(ModifyOperation, &str, &[&str])]) -> Op {
    Op::Modify {
        dn: dn.into(),
        mods: mods
            .iter()
            .map(|(op, n, vs)| {
                (
                    *op,
                    n.to_string(),
                    vs.iter().map(|v| v.as_bytes().to_vec()).collect(),
                )
            })
            .collect(),
    }
}

fn modrdn(dn: &str, new_rdn: &str, delete_old_rdn: bool, new_superior: Option<&str>) -> Op {
    Op::ModRdn {
        dn: dn.into(),
        new_rdn: new_rdn.into(),
        delete_old_rdn,
        new_superior: new_superior.map(str::to_string),
    }
}

fn delete(dn: &str, subtree: bool) -> Op {
    Op::Delete {
        dn: dn.into(),
        subtree,
    }
}

/// The update an LDIF change record asks for.
fn op_of(record: &LdifRecord) -> Op {
    let LdifRecord::Change { dn, change, .. } = record else {
        panic!("a content record in the audit log: {record:?}")
    };
    let dn = String::from_utf8(dn.clone()).unwrap();
    match change {
        LdifChange::Add { attributes } => Op::Add {
            dn,
            attrs: attributes.clone(),
        },
        LdifChange::Modify { modifications } => Op::Modify {
            dn,
            mods: modifications
                .iter()
                .map(|m| {
                    let op = match m.op {
                        LdifModOp::Add => ModifyOperation::Add,
                        LdifModOp::Delete => ModifyOperation::Delete,
                        LdifModOp::Replace => ModifyOperation::Replace,
                        LdifModOp::Increment => ModifyOperation::Increment,
                    };
                    (op, m.attribute.clone(), m.values.clone())
                })
                .collect(),
        },
        LdifChange::ModRdn {
            new_rdn,
            delete_old_rdn,
            new_superior,
        } => Op::ModRdn {
            dn,
            new_rdn: String::from_utf8(new_rdn.clone()).unwrap(),
            delete_old_rdn: *delete_old_rdn,
            new_superior: new_superior
                .as_ref()
                .map(|s| String::from_utf8(s.clone()).unwrap()),
        },
        LdifChange::Delete => Op::Delete { dn, subtree: false },
    }
}

enum Prepared {
    Add(PreparedAdd),
    Modify(PreparedModify),
    ModifyDn(PreparedModifyDn),
    Delete(PreparedDelete),
}

fn apply(p: Prepared, txn: &mut WriteTxn<'_>, ctx: &WriteContext<'_>) -> Result<(), OpError> {
    match p {
        Prepared::Add(p) => apply_add(txn, ctx, p).map(drop),
        Prepared::Modify(p) => apply_modify(txn, ctx, p).map(drop),
        Prepared::ModifyDn(p) => apply_modify_dn(txn, ctx, p).map(drop),
        Prepared::Delete(p) => apply_delete(txn, ctx, p).map(drop),
    }
}

/// Encodes `op` with `controls`, decodes it and hands the operation and its controls to
/// `f`, as the connection would.
fn with_request<R>(
    op: ProtocolOp<'_>,
    controls: &[TestControl],
    f: impl FnOnce(ProtocolOp<'_>, &RequestControls<'_>) -> R,
) -> R {
    with_decoded(op, controls, |decoded| {
        let kind = match decoded.op {
            ProtocolOp::AddRequest(_) => OpKind::Add,
            ProtocolOp::DelRequest(_) => OpKind::Delete,
            ProtocolOp::ModifyRequest(_) => OpKind::Modify,
            ProtocolOp::ModifyDnRequest(_) => OpKind::ModifyDn,
            _ => OpKind::Other,
        };
        let parsed = RequestControls::parse(decoded.controls, kind).unwrap();
        f(decoded.op, &parsed)
    })
}

fn subtree_delete() -> TestControl {
    let mut buf = Vec::new();
    let has = SubtreeDelete.encode_value(&mut buf);
    (SubtreeDelete::OID, false, has.then_some(buf))
}

/// Entries by normalized DN: writable attribute descriptions (lower case) and their values.
type Entries = BTreeMap<String, BTreeMap<String, BTreeSet<Vec<u8>>>>;

/// A directory in a fresh data directory, removed when dropped.
struct Harness {
    dir: Arc<Directory>,
    path: PathBuf,
    identity: Identity,
}

impl Drop for Harness {
    fn drop(&mut self) {
        if let Some(log) = &self.dir.audit_log {
            log.close();
        }
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

impl Harness {
    fn open(audit: bool) -> Harness {
        let path = fresh_data_dir("audit-log");
        let mut config = ServerConfig::from_toml_str(&format!("[audit_log]\nenabled = {audit}\n")).unwrap();
        test_store(&mut config, path.clone());
        let (dir, _) = Directory::open(config).unwrap();
        assert_eq!(dir.audit_log.is_some(), audit);
        let schema = Schema::builtin().unwrap();
        let (_, norm) = NormDn::parse(ADMIN.as_bytes(), &schema).unwrap();
        Harness {
            dir: Arc::new(dir),
            path,
            identity: Identity::Dn {
                dn: ADMIN.into(),
                norm,
                admin: true,
            },
        }
    }

    fn audit(&self) -> &AuditLog {
        self.dir.audit_log.as_deref().unwrap()
    }

    fn ctx(&self) -> WriteContext<'_> {
        WriteContext {
            dir: &self.dir,
            identity: &self.identity,
            client: &CLIENT,
        }
    }

    fn prepare(&self, op: &Op) -> Result<Prepared, OpError> {
        match op {
            Op::Add { dn, attrs } => {
                let mut names: Vec<&str> = Vec::new();
                let mut values: Vec<Vec<&[u8]>> = Vec::new();
                for (n, v) in attrs {
                    match names.iter().position(|x| x == n) {
                        Some(i) => values[i].push(v),
                        None => {
                            names.push(n);
                            values.push(vec![v]);
                        }
                    }
                }
                let list: Vec<PartialAttribute<'_>> = names
                    .iter()
                    .zip(&values)
                    .map(|(n, vs)| PartialAttribute {
                        description: n.as_bytes(),
                        values: SeqOf::from_items(vs),
                    })
                    .collect();
                let req = AddRequest {
                    entry: dn.as_bytes(),
                    attributes: SeqOf::from_items(&list),
                };
                with_request(ProtocolOp::AddRequest(req), &[], |op, c| match op {
                    ProtocolOp::AddRequest(r) => prepare_add(&self.ctx(), &r, c).map(Prepared::Add),
                    _ => unreachable!(),
                })
            }
            Op::Modify { dn, mods } => {
                let values: Vec<Vec<&[u8]>> = mods
                    .iter()
                    .map(|(_, _, vs)| vs.iter().map(Vec::as_slice).collect())
                    .collect();
                let list: Vec<Change<'_>> = mods
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
                let req = ModifyRequest {
                    object: dn.as_bytes(),
                    changes: SeqOf::from_items(&list),
                };
                with_request(ProtocolOp::ModifyRequest(req), &[], |op, c| match op {
                    ProtocolOp::ModifyRequest(r) => prepare_modify(&self.ctx(), &r, c).map(Prepared::Modify),
                    _ => unreachable!(),
                })
            }
            Op::ModRdn {
                dn,
                new_rdn,
                delete_old_rdn,
                new_superior,
            } => {
                let req = ModifyDnRequest {
                    entry: dn.as_bytes(),
                    new_rdn: new_rdn.as_bytes(),
                    delete_old_rdn: *delete_old_rdn,
                    new_superior: new_superior.as_deref().map(str::as_bytes),
                };
                with_request(ProtocolOp::ModifyDnRequest(req), &[], |op, c| match op {
                    ProtocolOp::ModifyDnRequest(r) => {
                        prepare_modify_dn(&self.ctx(), &r, c).map(Prepared::ModifyDn)
                    }
                    _ => unreachable!(),
                })
            }
            Op::Delete { dn, subtree } => {
                let controls = if *subtree { vec![subtree_delete()] } else { vec![] };
                let req = DelRequest { dn: dn.as_bytes() };
                with_request(ProtocolOp::DelRequest(req), &controls, |op, c| match op {
                    ProtocolOp::DelRequest(r) => prepare_delete(&self.ctx(), &r, c).map(Prepared::Delete),
                    _ => unreachable!(),
                })
            }
        }
    }

    /// Runs `ops` in one job of the store's writer (so in one batch of the change feed),
    /// in order, stopping at the first refusal.
    fn batch(&self, ops: &[Op]) -> Result<(), OpError> {
        let prepared = ops
            .iter()
            .map(|op| self.prepare(op))
            .collect::<Result<Vec<_>, _>>()?;
        let dir = Arc::clone(&self.dir);
        let identity = self.identity.clone();
        self.dir
            .store
            .write(move |txn| {
                let ctx = WriteContext {
                    dir: &dir,
                    identity: &identity,
                    client: &CLIENT,
                };
                prepared.into_iter().try_for_each(|p| apply(p, txn, &ctx))
            })
            .unwrap()
    }

    fn one(&self, op: Op) -> Result<(), OpError> {
        self.batch(&[op])
    }

    fn ok(&self, op: Op) {
        let shown = format!("{op:?}");
        self.one(op).unwrap_or_else(|e| panic!("{shown}: {e:?}"));
    }

    fn refused(&self, op: Op, code: ResultCode) {
        let shown = format!("{op:?}");
        match self.one(op) {
            Err(e) => assert_eq!(e.code, code, "{shown}: {e:?}"),
            Ok(()) => panic!("{shown} was accepted"),
        }
    }

    /// Every entry but the admin's (whose generated password differs from one directory to
    /// another): writable attributes only.
    fn entries(&self) -> Entries {
        let version = self.dir.store.current();
        let schema = &self.dir.schema;
        let mut out = Entries::new();
        for e in version.entries() {
            let norm = version.norm_dn(e.id).as_str().to_string();
            if norm == "cn=admin,dc=example,dc=com" {
                continue;
            }
            let mut attrs: BTreeMap<String, BTreeSet<Vec<u8>>> = BTreeMap::new();
            for a in e.attrs().attributes() {
                let t = schema.attribute_type_by_id(a.ty).unwrap();
                if t.no_user_modification {
                    continue;
                }
                attrs
                    .entry(format!("{}{}", t.name().to_ascii_lowercase(), a.options))
                    .or_default()
                    .extend(a.values.iter().map(<[u8]>::to_vec));
            }
            out.insert(norm, attrs);
        }
        out
    }
}

/// The log's text after `close`.
fn closed_text(log: &AuditLog) -> String {
    log.close();
    String::from_utf8(std::fs::read(log.path()).unwrap()).unwrap()
}

/// The LSNs of the `# lsn:` comments, in file order, a repeated one (a rename's second
/// record) once.
fn lsns(text: &str) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("# lsn: ") {
            let n: u64 = n.parse().unwrap();
            if out.last() != Some(&n) {
                out.push(n);
            }
        }
    }
    out
}

fn records(text: &str) -> Vec<LdifRecord> {
    LdifReader::new(text.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn record_dn(r: &LdifRecord) -> String {
    match r {
        LdifRecord::Change { dn, .. } | LdifRecord::Content { dn, .. } => {
            String::from_utf8_lossy(dn).into_owned()
        }
    }
}

fn kind(r: &LdifRecord) -> &'static str {
    match r {
        LdifRecord::Change { change, .. } => match change {
            LdifChange::Add { .. } => "add",
            LdifChange::Modify { .. } => "modify",
            LdifChange::ModRdn { .. } => "modrdn",
            LdifChange::Delete => "delete",
        },
        LdifRecord::Content { .. } => "content",
    }
}

/// The modifications of a modify record, as `op attribute values`.
fn shown_mods(r: &LdifRecord) -> BTreeSet<String> {
    let LdifRecord::Change {
        change: LdifChange::Modify { modifications },
        ..
    } = r
    else {
        panic!("not a modify: {r:?}")
    };
    modifications
        .iter()
        .map(|m| {
            let values: Vec<String> = m
                .values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect();
            format!("{} {} {}", m.op.keyword(), m.attribute, values.join("|"))
                .trim_end()
                .to_string()
        })
        .collect()
}

/// Waits until the log has handled every committed change and had time to look at the
/// store again (so its base version is the current one).
fn settle(h: &Harness) {
    let target = h.dir.store.current().lsn();
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.audit().last_lsn() < target {
        assert!(
            Instant::now() < deadline,
            "the audit log did not reach LSN {target}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn every_committed_change_is_logged_in_order_and_replays_to_the_same_directory() {
    use ModifyOperation::{Add as ModAdd, Delete as ModDelete, Replace};
    let h = Harness::open(true);
    let start = h.dir.store.current().lsn();
    let long = "long ".repeat(40);
    for ou in ["people", "staff", "groups"] {
        h.ok(add(
            &format!("ou={ou},dc=example,dc=com"),
            &[("objectClass", "organizationalUnit"), ("ou", ou)],
        ));
    }
    let person = |cn: &str, parent: &str, extra: &[(&str, &str)]| {
        let mut attrs = vec![("objectClass", "inetOrgPerson"), ("cn", cn), ("sn", "Liddell")];
        attrs.extend_from_slice(extra);
        add(&format!("cn={cn},{parent}"), &attrs)
    };
    h.ok(person(
        "Alice",
        PEOPLE,
        &[
            ("description", " starts with a space"),
            ("description", "Zo\u{eb}"),
            ("description", &long),
            ("telephoneNumber", "+1 555 0100"),
            ("userPassword", "secret"),
            ("mail", "alice@example.com"),
        ],
    ));
    for cn in ["Bob", "Carol", "Dave"] {
        h.ok(person(cn, PEOPLE, &[("description", "d")]));
    }
    h.ok(person("Eve", "ou=staff,dc=example,dc=com", &[]));
    for g in ["admins", "devs"] {
        h.ok(add(
            &format!("cn={g},ou=groups,dc=example,dc=com"),
            &[
                ("objectClass", "groupOfNames"),
                ("cn", g),
                ("member", "cn=Bob,ou=people,dc=example,dc=com"),
            ],
        ));
    }

    // Refused writes leave nothing in the log.
    h.refused(
        person("Alice", PEOPLE, &[("description", "REFUSED-1")]),
        ResultCode::ENTRY_ALREADY_EXISTS,
    );
    h.refused(
        modify(
            "cn=Nobody,ou=people,dc=example,dc=com",
            &[(Replace, "description", &["REFUSED-2"])],
        ),
        ResultCode::NO_SUCH_OBJECT,
    );
    h.refused(
        modify(
            "cn=Bob,ou=people,dc=example,dc=com",
            &[(Replace, "description", &["REFUSED-3"]), (Replace, "sn", &[])],
        ),
        ResultCode::OBJECT_CLASS_VIOLATION,
    );
    h.refused(
        person(
            "Zed",
            "ou=nowhere,dc=example,dc=com",
            &[("description", "REFUSED-4")],
        ),
        ResultCode::NO_SUCH_OBJECT,
    );
    h.refused(delete(PEOPLE, false), ResultCode::NOT_ALLOWED_ON_NON_LEAF);

    let alice = "cn=Alice,ou=people,dc=example,dc=com";
    h.ok(modify(
        alice,
        &[
            (Replace, "description", &["on leave"]),
            (ModAdd, "title", &["Engineer"]),
            (ModDelete, "telephoneNumber", &[]),
        ],
    ));
    h.ok(modify(
        "cn=Bob,ou=people,dc=example,dc=com",
        &[(Replace, "userPassword", &["new secret"])],
    ));
    h.ok(modrdn(alice, "cn=Alicia", true, None));
    h.ok(modrdn(
        "cn=Bob,ou=people,dc=example,dc=com",
        "cn=Robert",
        false,
        None,
    ));
    h.ok(modrdn(
        "cn=Carol,ou=people,dc=example,dc=com",
        "cn=Carol",
        true,
        Some("ou=staff,dc=example,dc=com"),
    ));
    h.ok(modrdn(
        "cn=Dave,ou=people,dc=example,dc=com",
        "cn=DAVE",
        true,
        None,
    ));
    h.ok(modrdn(
        "cn=Eve,ou=staff,dc=example,dc=com",
        "cn=Eve2",
        false,
        Some(PEOPLE),
    ));

    // A subtree moved and an entry below it changed in one batch, the entry known only
    // from the log's base version: its previous state is found through the move.
    settle(&h);
    h.batch(&[
        modrdn("ou=staff,dc=example,dc=com", "ou=team", true, None),
        modify(
            "cn=Carol,ou=team,dc=example,dc=com",
            &[(Replace, "description", &["moved with the team"])],
        ),
    ])
    .unwrap();
    // The same, the entry tracked since the base (changed after it).
    h.batch(&[
        modrdn("ou=team,dc=example,dc=com", "ou=crew", false, None),
        modify(
            "cn=Carol,ou=crew,dc=example,dc=com",
            &[(ModAdd, "title", &["Lead"])],
        ),
    ])
    .unwrap();

    // A modify that changes no value is committed all the same.
    h.ok(modify(
        "cn=DAVE,ou=people,dc=example,dc=com",
        &[(Replace, "description", &["d"])],
    ));
    h.ok(delete("cn=Robert,ou=people,dc=example,dc=com", false));
    h.ok(delete("ou=groups,dc=example,dc=com", true));
    let end = h.dir.store.current().lsn();
    let expected = h.entries();

    let log = h.audit();
    let text = closed_text(log);
    assert_eq!(
        log.stats(),
        AuditLogStats {
            records_written: end - start,
            ..AuditLogStats::default()
        }
    );
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("# audit log started: ")
            && first.ends_with(&format!(", with the changes after lsn {start}")),
        "{first}"
    );
    assert_eq!(lsns(&text), (start + 1..=end).collect::<Vec<_>>(), "{text}");
    assert!(!text.contains("REFUSED"), "{text}");
    assert!(!text.contains("# note: previous state unknown"), "{text}");
    // Maintained attributes are only in comments.
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(' '))
    {
        for name in [
            "entryUUID",
            "entryCSN",
            "createTimestamp",
            "creatorsName",
            "modifyTimestamp",
            "modifiersName",
            "structuralObjectClass",
        ] {
            assert!(!line.starts_with(&format!("{name}:")), "{line}");
        }
    }
    // Every record's header.
    for block in text.split("\n\n").filter(|b| b.contains("\ndn")) {
        assert!(block.starts_with("# lsn: "), "{block}");
        // A delete carries the stamp the operational attributes hook logs with it.
        if !block.contains("# note: completes the rename") {
            assert!(
                block.contains("\n# csn: ") && block.contains("\n# time: "),
                "{block}"
            );
            assert!(
                block.contains(&format!("\n# modifiersName: {ADMIN}\n")),
                "{block}"
            );
            if block.contains("changetype: delete") {
                assert!(block.contains("\n# entryUUID: "), "{block}");
            }
        }
    }

    let recs = records(&text);
    let shown: Vec<String> = recs
        .iter()
        .map(|r| format!("{} {}", kind(r), record_dn(r)))
        .collect();
    assert_eq!(
        shown,
        [
            "add ou=people,dc=example,dc=com",
            "add ou=staff,dc=example,dc=com",
            "add ou=groups,dc=example,dc=com",
            "add cn=Alice,ou=people,dc=example,dc=com",
            "add cn=Bob,ou=people,dc=example,dc=com",
            "add cn=Carol,ou=people,dc=example,dc=com",
            "add cn=Dave,ou=people,dc=example,dc=com",
            "add cn=Eve,ou=staff,dc=example,dc=com",
            "add cn=admins,ou=groups,dc=example,dc=com",
            // memberOf: the group on the entry it lists (the record holds comments only).
            "modify cn=Bob,ou=people,dc=example,dc=com",
            "add cn=devs,ou=groups,dc=example,dc=com",
            "modify cn=Bob,ou=people,dc=example,dc=com",
            "modify cn=Alice,ou=people,dc=example,dc=com",
            "modify cn=Bob,ou=people,dc=example,dc=com",
            "modrdn cn=Alice,ou=people,dc=example,dc=com",
            "modrdn cn=Bob,ou=people,dc=example,dc=com",
            // Referential integrity: Bob's new name in the groups that list him.
            "modify cn=admins,ou=groups,dc=example,dc=com",
            "modify cn=devs,ou=groups,dc=example,dc=com",
            "modrdn cn=Carol,ou=people,dc=example,dc=com",
            "modrdn cn=Dave,ou=people,dc=example,dc=com",
            "modify cn=DAVE,ou=people,dc=example,dc=com",
            "modrdn cn=Eve,ou=staff,dc=example,dc=com",
            "modrdn ou=staff,dc=example,dc=com",
            "modify cn=Carol,ou=team,dc=example,dc=com",
            "modrdn ou=team,dc=example,dc=com",
            "modify cn=Carol,ou=crew,dc=example,dc=com",
            "modify cn=DAVE,ou=people,dc=example,dc=com",
            "delete cn=Robert,ou=people,dc=example,dc=com",
            // Referential integrity: Robert out of his groups.
            "modify cn=admins,ou=groups,dc=example,dc=com",
            "modify cn=devs,ou=groups,dc=example,dc=com",
            "delete cn=devs,ou=groups,dc=example,dc=com",
            "delete cn=admins,ou=groups,dc=example,dc=com",
            "delete ou=groups,dc=example,dc=com",
        ]
    );
    // Modifies are the difference from the entry's previous state.
    assert_eq!(
        shown_mods(&recs[12]),
        BTreeSet::from([
            "replace description on leave".to_string(),
            "replace title Engineer".to_string(),
            "delete telephoneNumber".to_string(),
        ])
    );
    let bob = shown_mods(&recs[13]);
    assert_eq!(bob.len(), 1);
    assert!(
        bob.iter().next().unwrap().starts_with("replace userPassword {"),
        "{bob:?}"
    );
    assert_eq!(
        shown_mods(&recs[23]),
        BTreeSet::from(["replace description moved with the team".to_string()])
    );
    assert_eq!(
        shown_mods(&recs[25]),
        BTreeSet::from(["replace title Lead".to_string()])
    );
    // Renames: deleteoldrdn as the entry shows it, newsuperior when the parent changed.
    let rename = |r: &LdifRecord| match r {
        LdifRecord::Change {
            change:
                LdifChange::ModRdn {
                    new_rdn,
                    delete_old_rdn,
                    new_superior,
                },
            ..
        } => format!(
            "{} {} {}",
            String::from_utf8_lossy(new_rdn),
            u8::from(*delete_old_rdn),
            new_superior
                .as_ref()
                .map_or("-".into(), |s| String::from_utf8_lossy(s).into_owned())
        ),
        other => panic!("not a modrdn: {other:?}"),
    };
    assert_eq!(rename(&recs[14]), "cn=Alicia 1 -");
    assert_eq!(rename(&recs[15]), "cn=Robert 0 -");
    assert_eq!(rename(&recs[18]), "cn=Carol 1 ou=staff,dc=example,dc=com");
    assert_eq!(rename(&recs[19]), "cn=DAVE 1 -");
    assert_eq!(
        shown_mods(&recs[20]),
        BTreeSet::from(["replace cn DAVE".to_string()])
    );
    assert_eq!(rename(&recs[21]), "cn=Eve2 0 ou=people,dc=example,dc=com");
    assert_eq!(rename(&recs[22]), "ou=team 1 -");
    assert_eq!(rename(&recs[24]), "ou=crew 0 -");
    // Values that are not safe LDIF text are in base64, long lines folded.
    assert!(
        text.contains("\ndescription:: IHN0YXJ0cyB3aXRoIGEgc3BhY2U=\n"),
        "{text}"
    );
    assert!(text.contains("\ndescription:: Wm/Dqw==\n"), "{text}");
    assert!(text.lines().all(|l| l.len() <= 76), "{text}");

    // Applied to a fresh directory, the records give the same entries.
    let fresh = Harness::open(false);
    for r in &recs {
        fresh.ok(op_of(r));
    }
    assert_eq!(fresh.entries(), expected);
}

// ---------------------------------------------------------------- on a store, file faults

fn schema() -> Arc<Schema> {
    static S: OnceLock<Arc<Schema>> = OnceLock::new();
    Arc::clone(S.get_or_init(|| Arc::new(Schema::builtin().unwrap())))
}

/// A store of its own (no sync, no periodic snapshot, log segments of `segment` octets)
/// with the suffix entry, and its directory.
fn plain_store(name: &str, segment: u64) -> (Store, PathBuf) {
    let dir = fresh_data_dir(name);
    let mut o = StoreOptions::new(&dir, schema());
    o.sync = SyncPolicy::None;
    o.snapshot_interval = None;
    o.snapshot_after_records = None;
    o.segment_size_limit = segment;
    let (store, _) = Store::open(o).unwrap();
    let suffix = entry(
        "dc=example,dc=com",
        &[
            ("objectClass", "dcObject"),
            ("objectClass", "organization"),
            ("dc", "example"),
            ("o", "Example"),
        ],
    );
    put(&store, suffix);
    (store, dir)
}

fn entry(dn: &str, values: &[(&str, &str)]) -> Entry {
    let s = schema();
    let (dn, norm) = NormDn::parse(dn.as_bytes(), &*s).unwrap();
    let mut e = Entry::new(dn, norm);
    for (ty, v) in values {
        e.push_value(
            s.attribute_type(ty).unwrap().id,
            &Options::none(),
            v.as_bytes().to_vec(),
        );
    }
    e
}

fn person(i: usize, description: &str) -> Entry {
    let cn = format!("p{i}");
    entry(
        &format!("cn={cn},dc=example,dc=com"),
        &[
            ("objectClass", "person"),
            ("cn", &cn),
            ("sn", "Tester"),
            ("description", description),
        ],
    )
}

/// Adds `e` (the suffix as a naming context), or replaces the entry's attributes.
fn put(store: &Store, e: Entry) {
    store
        .write(move |t| {
            let stored = e.to_stored();
            match t.version().find(&e.norm_dn) {
                Some(id) => t.modify(id, &stored),
                None => {
                    let naming_context = e.norm_dn.as_str() == "dc=example,dc=com";
                    t.add(&e.dn, &e.norm_dn, &stored, naming_context).map(drop)
                }
            }
        })
        .unwrap()
        .unwrap();
}

fn start(store: &Store, path: &Path, storage: Arc<dyn Storage>) -> Arc<AuditLog> {
    let settings = AuditLogSettings {
        enabled: true,
        ..AuditLogSettings::default()
    };
    AuditLog::start(&settings, path.to_path_buf(), storage, store, schema()).unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "waited too long for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_log_left_behind_by_a_snapshot_notes_the_changes_it_skipped() {
    let (store, dir) = plain_store("audit-behind", 2048);
    let gate = Arc::new(Gate::default());
    gate.hold();
    let first = store.current().lsn();
    let log = start(
        &store,
        &dir.join("audit"),
        Arc::new(GatedStorage(Arc::clone(&gate))),
    );
    // The log's thread waits at its first write while the store goes on: its queue fills
    // up, and two snapshots remove the log segments it would read to catch up.
    wait_for("the first write", || gate.waiting.load(Ordering::SeqCst));
    for i in 0..400 {
        put(&store, person(i, "x"));
    }
    store.snapshot().unwrap().unwrap();
    for i in 0..50 {
        put(&store, person(i, "y"));
    }
    store.snapshot().unwrap().unwrap();
    let skipped_up_to = store.current().lsn();
    gate.release();
    wait_for("the log to go on", || log.last_lsn() == skipped_up_to);
    for i in 0..3 {
        put(&store, person(i, "after"));
    }
    let end = store.current().lsn();
    let text = closed_text(&log);

    let stats = log.stats();
    assert!(stats.changes_skipped > 0, "{stats:?}");
    assert_eq!(
        stats.records_written + stats.changes_skipped,
        end - first,
        "{stats:?}"
    );
    assert_eq!((stats.records_lost, stats.write_errors), (0, 0));
    // What the queue held was written; then the note; then the changes after the restart.
    let written = lsns(&text);
    let a = first + written.iter().take_while(|&&n| n <= skipped_up_to).count() as u64 + 1;
    let skipped = skipped_up_to - a + 1;
    assert_eq!(stats.changes_skipped, skipped);
    let note = format!(
        "\n# skipped: lsn {a} to {skipped_up_to} ({skipped} changes): the log no longer holds LSN {a}"
    );
    assert!(text.contains(&note), "{note}\n{text}");
    let expected: Vec<u64> = (first + 1..a).chain(skipped_up_to + 1..=end).collect();
    assert_eq!(written, expected);
    assert!(
        text.ends_with("changetype: modify\nreplace: description\ndescription: after\n-\n\n"),
        "{text}"
    );
    records(&text);
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn changes_read_back_from_the_log_after_live_ones_are_exact_differences() {
    let (store, dir) = plain_store("audit-catch-up", 64 << 20);
    let gate = Arc::new(Gate::default());
    gate.hold();
    let first = store.current().lsn();
    let log = start(
        &store,
        &dir.join("audit"),
        Arc::new(GatedStorage(Arc::clone(&gate))),
    );
    // The log's thread waits at its first write: the first MAX_FEED_BATCHES batches (one
    // write each) reach it with the entries' states, the rest only from the log, so the
    // modifies at the end need previous states it did not follow when it wrote the adds.
    wait_for("the first write", || gate.waiting.load(Ordering::SeqCst));
    let adds = MAX_FEED_BATCHES + 20;
    for i in 0..adds {
        put(&store, person(i, "x"));
    }
    for i in 0..10 {
        put(&store, person(i, "y"));
    }
    let end = store.current().lsn();
    gate.release();
    wait_for("the log to catch up", || log.last_lsn() == end);
    // And live again, on an entry changed in both parts.
    put(&store, person(0, "z"));
    let end = store.current().lsn();
    let text = closed_text(&log);
    let stats = log.stats();
    assert_eq!(
        (stats.records_written, stats.changes_skipped),
        (end - first, 0),
        "{stats:?}"
    );
    assert_eq!(lsns(&text), (first + 1..=end).collect::<Vec<_>>());
    assert!(!text.contains("previous state unknown"), "{text}");
    let records = records(&text);
    let modifies: Vec<&LdifRecord> = records.iter().filter(|r| kind(r) == "modify").collect();
    assert_eq!(modifies.len(), 11);
    for (i, r) in modifies.iter().enumerate() {
        let (dn, value) = if i < 10 {
            (format!("cn=p{i},dc=example,dc=com"), "y")
        } else {
            ("cn=p0,dc=example,dc=com".to_string(), "z")
        };
        assert_eq!(record_dn(r), dn);
        assert_eq!(
            shown_mods(r),
            BTreeSet::from([format!("replace description {value}")]),
            "{text}"
        );
    }
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_write_is_counted_and_noted_in_the_file() {
    let (store, dir) = plain_store("audit-fail", 64 << 20);
    let gate = Arc::new(Gate::default());
    let log = start(
        &store,
        &dir.join("audit"),
        Arc::new(GatedStorage(Arc::clone(&gate))),
    );
    put(&store, person(1, "one"));
    wait_for("the first change", || log.last_lsn() == store.current().lsn());
    wait_for("its write", || gate.writes.load(Ordering::SeqCst) == 2);
    gate.fail_next.store(true, Ordering::SeqCst);
    put(&store, person(2, "two"));
    let lost = store.current().lsn();
    wait_for("the failed write", || log.stats().write_errors == 1);
    put(&store, person(3, "three"));
    let text = closed_text(&log);
    assert_eq!(
        log.stats(),
        AuditLogStats {
            records_written: 2,
            records_lost: 1,
            write_errors: 1,
            changes_skipped: 0,
        }
    );
    // (Unfolded: the note is longer than a line.)
    assert!(
        text.replace("\n ", "").contains(&format!(
            "\n# lost: lsn {lost} to {lost} (1 change): a write to the audit log failed: no space left on device (test)\n\n# lsn: {}\n",
            lost + 1
        )),
        "{text}"
    );
    assert!(!text.contains("description: two"), "{text}");
    assert_eq!(lsns(&text), [lost - 1, lost + 1]);
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reopen_after_the_file_was_moved_writes_a_new_file() {
    let (store, dir) = plain_store("audit-reopen", 64 << 20);
    let path = dir.join("logs/audit");
    let log = start(&store, &path, Arc::new(FsStorage));
    put(&store, person(1, "before"));
    wait_for("the first change", || log.last_lsn() == store.current().lsn());
    let moved = dir.join("logs/audit.1");
    std::fs::rename(&path, &moved).unwrap();
    log.reopen();
    put(&store, person(2, "after"));
    let text = closed_text(&log);
    let old = std::fs::read_to_string(&moved).unwrap();
    assert!(
        old.contains("description: before") && !old.contains("description: after"),
        "{old}"
    );
    assert!(
        text.starts_with("# lsn: ") && text.contains("description: after"),
        "{text}"
    );
    // Closing twice, or dropping after a close, does nothing more.
    log.close();
    store.close(false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
