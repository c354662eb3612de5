//! The update operations and Compare on a real directory (a fresh data directory per test,
//! requests encoded and decoded with `larch_proto`, updates run on the store's writer
//! thread as the server runs them): the entries they leave, every result code and
//! matchedDN the operations document, all-or-nothing behaviour, operational attributes,
//! renames and subtree moves, pre-read/post-read values, the assertion control, and a
//! property test of random update sequences against a `BTreeMap` model of the tree.

mod common;

use common::{fresh_data_dir, test_store, with_add, with_decoded, with_modify, TestControl};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use larch_model::dn::NormDn;
use larch_proto::controls::{
    Assertion, ControlValue, PermissiveModify, PostReadRequest, PostReadResponse, PreReadRequest,
    PreReadResponse, SubtreeDelete,
};
use larch_proto::{
    AttributeValueAssertion, CompareRequest, DelRequest, ModifyDnRequest, ModifyOperation, OwnedFilter,
    ProtocolOp, ResultCode, SearchResultEntry, SeqOf,
};
use larch_server::client::Client;
use larch_server::config::ServerConfig;
use larch_server::controls::{OpKind, RequestControls, ResponseControl};
use larch_server::directory::Directory;
use larch_server::error::OpError;
use larch_server::hooks::{
    AppliedWrite, HookContext, NewState, OperationalAttributes, PendingWrite, WriteHook, WriteHooks,
    WriteKind,
};
use larch_server::identity::Identity;
use larch_server::ops::{
    apply_add, apply_delete, apply_modify, apply_modify_dn, compare, prepare_add, prepare_delete,
    prepare_modify, prepare_modify_dn, PreparedAdd, PreparedDelete, PreparedModify, PreparedModifyDn,
    WriteContext,
};
use larch_store::WriteTxn;
use proptest::prelude::*;

const BASE: &str = "dc=example,dc=com";
const ADMIN: &str = "cn=admin,dc=example,dc=com";

/// Operations here run with no socket behind them.
static CLIENT: Client = Client {
    addr: None,
    tls: false,
};

/// The control `value` encoded, to send.
fn control<'v, T: ControlValue<'v>>(value: &T) -> TestControl {
    let mut buf = Vec::new();
    let has = value.encode_value(&mut buf);
    (T::OID, false, has.then_some(buf))
}

fn assertion(filter: &str) -> TestControl {
    let f = OwnedFilter::parse(filter).unwrap();
    control(&Assertion {
        filter: f.as_filter(),
    })
}

fn pre_read(attrs: &[&str]) -> TestControl {
    let items: Vec<&[u8]> = attrs.iter().map(|a| a.as_bytes()).collect();
    control(&PreReadRequest {
        attributes: SeqOf::from_items(&items),
    })
}

fn post_read(attrs: &[&str]) -> TestControl {
    let items: Vec<&[u8]> = attrs.iter().map(|a| a.as_bytes()).collect();
    control(&PostReadRequest {
        attributes: SeqOf::from_items(&items),
    })
}

fn subtree_delete() -> TestControl {
    control(&SubtreeDelete)
}

fn permissive() -> TestControl {
    control(&PermissiveModify)
}

/// An AddRequest's attributes: (description, values).
type AttrList<'a> = Vec<(&'a str, &'a [&'a str])>;

/// A ModifyRequest's changes: (operation, description, values).
type ChangeList<'a> = Vec<(ModifyOperation, &'a str, &'a [&'a str])>;

/// Attributes of an entry: lower-case description -> values.
type Attrs = BTreeMap<String, Vec<String>>;

/// A read control's entry: DN and attributes.
fn read_entry(e: &SearchResultEntry<'_>) -> (String, Attrs) {
    let mut attrs = Attrs::new();
    for a in e.attributes.iter() {
        attrs.insert(
            String::from_utf8_lossy(a.description).to_ascii_lowercase(),
            a.values
                .iter()
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect(),
        );
    }
    (String::from_utf8_lossy(e.object_name).into_owned(), attrs)
}

fn pre_read_of(controls: &[ResponseControl]) -> (String, Attrs) {
    let c = controls
        .iter()
        .find(|c| c.oid == PreReadResponse::OID)
        .expect("a pre-read control");
    read_entry(&PreReadResponse::decode_value(c.value.as_deref()).unwrap().entry)
}

fn post_read_of(controls: &[ResponseControl]) -> (String, Attrs) {
    let c = controls
        .iter()
        .find(|c| c.oid == PostReadResponse::OID)
        .expect("a post-read control");
    read_entry(&PostReadResponse::decode_value(c.value.as_deref()).unwrap().entry)
}

/// Encodes `op` with `controls` as a message, decodes it, and hands the decoded operation
/// and its parsed controls to `f` (as the connection would).
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
            ProtocolOp::CompareRequest(_) => OpKind::Compare,
            _ => OpKind::Other,
        };
        let parsed = RequestControls::parse(decoded.controls, kind).unwrap();
        f(decoded.op, &parsed)
    })
}

type Apply<P> = fn(&mut WriteTxn<'_>, &WriteContext<'_>, P) -> Result<Vec<ResponseControl>, OpError>;

/// A directory in a fresh data directory, removed when dropped.
struct Harness {
    dir: Arc<Directory>,
    path: PathBuf,
    identity: Identity,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn identity(dn: &str, admin: bool) -> Identity {
    let schema = larch_model::schema::Schema::builtin().unwrap();
    let (_, norm) = NormDn::parse(dn.as_bytes(), &schema).unwrap();
    Identity::Dn {
        dn: dn.to_string(),
        norm,
        admin,
    }
}

impl Harness {
    fn open() -> Harness {
        Harness::with_suffixes(&[])
    }

    fn with_suffixes(extra: &[&str]) -> Harness {
        Harness::with_config(extra, "")
    }

    /// With extra suffixes and access rules (`[[access]]` tables in TOML; empty: the
    /// default policy).
    fn with_config(extra: &[&str], access: &str) -> Harness {
        Harness::with_hooks(extra, access, None)
    }

    /// With extra suffixes, access rules, and the write hook table `hooks` in place of
    /// the standard one.
    fn with_hooks(extra: &[&str], access: &str, hooks: Option<WriteHooks>) -> Harness {
        let path = fresh_data_dir("write-ops");
        let mut config = ServerConfig::from_toml_str(access).unwrap();
        test_store(&mut config, path.clone());
        config.directory.extra_suffixes = extra.iter().map(|s| s.to_string()).collect();
        let (mut dir, _startup) = Directory::open(config).unwrap();
        if let Some(hooks) = hooks {
            dir.hooks = hooks;
        }
        Harness {
            dir: Arc::new(dir),
            path,
            identity: identity(ADMIN, true),
        }
    }

    fn ctx(&self) -> WriteContext<'_> {
        WriteContext {
            dir: &self.dir,
            identity: &self.identity,
            client: &CLIENT,
        }
    }

    fn run<P: Send + 'static>(
        &self,
        prepared: Result<P, OpError>,
        apply: Apply<P>,
    ) -> Result<Vec<ResponseControl>, OpError> {
        let p = prepared?;
        let dir = Arc::clone(&self.dir);
        let identity = self.identity.clone();
        self.dir
            .store
            .write(move |txn| {
                apply(
                    txn,
                    &WriteContext {
                        dir: &dir,
                        identity: &identity,
                        client: &CLIENT,
                    },
                    p,
                )
            })
            .unwrap()
    }

    fn add(
        &self,
        dn: &str,
        attrs: &[(&str, &[&str])],
        controls: &[TestControl],
    ) -> Result<Vec<ResponseControl>, OpError> {
        let prepared = with_add(dn, attrs, |req| {
            with_request(ProtocolOp::AddRequest(req), controls, |op, c| match op {
                ProtocolOp::AddRequest(r) => prepare_add(&self.ctx(), &r, c),
                _ => unreachable!(),
            })
        });
        self.run::<PreparedAdd>(prepared, apply_add)
    }

    fn delete(&self, dn: &str, controls: &[TestControl]) -> Result<Vec<ResponseControl>, OpError> {
        let req = DelRequest { dn: dn.as_bytes() };
        let prepared = with_request(ProtocolOp::DelRequest(req), controls, |op, c| match op {
            ProtocolOp::DelRequest(r) => prepare_delete(&self.ctx(), &r, c),
            _ => unreachable!(),
        });
        self.run::<PreparedDelete>(prepared, apply_delete)
    }

    fn modify(
        &self,
        dn: &str,
        changes: &[(ModifyOperation, &str, &[&str])],
        controls: &[TestControl],
    ) -> Result<Vec<ResponseControl>, OpError> {
        let prepared = with_modify(dn, changes, |req| {
            with_request(ProtocolOp::ModifyRequest(req), controls, |op, c| match op {
                ProtocolOp::ModifyRequest(r) => prepare_modify(&self.ctx(), &r, c),
                _ => unreachable!(),
            })
        });
        self.run::<PreparedModify>(prepared, apply_modify)
    }

    fn modrdn(
        &self,
        dn: &str,
        new_rdn: &str,
        delete_old_rdn: bool,
        new_superior: Option<&str>,
        controls: &[TestControl],
    ) -> Result<Vec<ResponseControl>, OpError> {
        let req = ModifyDnRequest {
            entry: dn.as_bytes(),
            new_rdn: new_rdn.as_bytes(),
            delete_old_rdn,
            new_superior: new_superior.map(str::as_bytes),
        };
        let prepared = with_request(ProtocolOp::ModifyDnRequest(req), controls, |op, c| match op {
            ProtocolOp::ModifyDnRequest(r) => prepare_modify_dn(&self.ctx(), &r, c),
            _ => unreachable!(),
        });
        self.run::<PreparedModifyDn>(prepared, apply_modify_dn)
    }

    fn compare(&self, dn: &str, attr: &str, value: &str, controls: &[TestControl]) -> Result<bool, OpError> {
        let req = CompareRequest {
            entry: dn.as_bytes(),
            ava: AttributeValueAssertion {
                description: attr.as_bytes(),
                value: value.as_bytes(),
            },
        };
        let version = self.dir.store.current();
        with_request(ProtocolOp::CompareRequest(req), controls, |op, c| match op {
            ProtocolOp::CompareRequest(r) => compare(&self.dir, &version, &self.identity, &CLIENT, &r, c),
            _ => unreachable!(),
        })
    }

    /// The entry's attributes as stored (lower-case names with options), or `None`.
    fn get(&self, dn: &str) -> Option<Attrs> {
        let version = self.dir.store.current();
        let (_, norm) = NormDn::parse(dn.as_bytes(), &*self.dir.schema).unwrap();
        let id = version.find(&norm)?;
        let view = version.entry(id)?;
        let mut out = Attrs::new();
        for a in view.attrs().attributes() {
            let name = self
                .dir
                .schema
                .attribute_type_by_id(a.ty)
                .unwrap()
                .name()
                .to_ascii_lowercase();
            out.insert(
                format!("{name}{}", a.options_str()),
                a.values
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .collect(),
            );
        }
        Some(out)
    }

    /// The stored DN of the entry named `dn`.
    fn stored_dn(&self, dn: &str) -> Option<String> {
        let version = self.dir.store.current();
        let (_, norm) = NormDn::parse(dn.as_bytes(), &*self.dir.schema).unwrap();
        version.find(&norm).map(|id| version.dn(id))
    }

    fn count(&self) -> usize {
        self.dir.store.current().len()
    }

    fn people(&self) {
        self.add(
            "ou=people,dc=example,dc=com",
            &[("objectClass", &["organizationalUnit"]), ("ou", &["people"])],
            &[],
        )
        .unwrap();
    }

    fn person(&self, cn: &str, parent: &str) {
        self.add(
            &format!("cn={cn},{parent}"),
            &[
                ("objectClass", &["person"]),
                ("cn", &[cn]),
                ("sn", &["Liddell"]),
                ("description", &["old"]),
            ],
            &[],
        )
        .unwrap();
    }
}

fn one(attrs: &Attrs, name: &str) -> String {
    let v = &attrs[name];
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    v[0].clone()
}

fn set(values: &[&str]) -> BTreeSet<String> {
    values.iter().map(|s| s.to_string()).collect()
}

fn values_of(attrs: &Attrs, name: &str) -> BTreeSet<String> {
    attrs
        .get(name)
        .map(|v| v.iter().cloned().collect())
        .unwrap_or_default()
}

#[track_caller]
fn code<T: std::fmt::Debug>(r: Result<T, OpError>) -> ResultCode {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => {
            assert!(!e.message.is_empty(), "{e:?} has no diagnostic message");
            e.code
        }
    }
}

#[track_caller]
fn error<T: std::fmt::Debug>(r: Result<T, OpError>) -> OpError {
    r.expect_err("expected an error")
}

const PEOPLE: &str = "ou=people,dc=example,dc=com";
const ALICE: &str = "cn=Alice,ou=people,dc=example,dc=com";

#[test]
fn prepared_operations_own_their_data() {
    fn owned<T: Send + 'static>() {}
    owned::<PreparedAdd>();
    owned::<PreparedDelete>();
    owned::<PreparedModify>();
    owned::<PreparedModifyDn>();
}

#[test]
fn add_stores_the_entry_with_operational_attributes() {
    let h = Harness::open();
    h.people();
    let controls = h
        .add(
            ALICE,
            &[
                ("objectClass", &["person"]),
                ("sn", &["Liddell"]),
                ("description", &["old"]),
            ],
            &[post_read(&["cn", "entryUUID", "entryDN"])],
        )
        .unwrap();
    let e = h.get(ALICE).unwrap();
    // The RDN value was missing: it is added, as slapd adds it.
    assert_eq!(values_of(&e, "cn"), set(&["Alice"]));
    assert_eq!(one(&e, "creatorsname"), ADMIN);
    assert_eq!(one(&e, "modifiersname"), ADMIN);
    assert_eq!(one(&e, "createtimestamp"), one(&e, "modifytimestamp"));
    assert_eq!(one(&e, "structuralobjectclass"), "person");
    assert_eq!(one(&e, "entryuuid").len(), 36);
    assert!(
        one(&e, "entrycsn").ends_with("#000000#000#000000"),
        "{}",
        one(&e, "entrycsn")
    );
    // Post-read: the stored entry, with the computed entryDN.
    let (dn, attrs) = post_read_of(&controls);
    assert_eq!(dn, ALICE);
    assert_eq!(values_of(&attrs, "cn"), set(&["Alice"]));
    assert_eq!(values_of(&attrs, "entryuuid"), set(&[&one(&e, "entryuuid")]));
    assert_eq!(values_of(&attrs, "entrydn"), set(&[ALICE]));
    assert_eq!(attrs.len(), 3, "{attrs:?}");

    // A present RDN value among others is kept; a missing one is added next to them.
    h.add(
        "cn=Bob,ou=people,dc=example,dc=com",
        &[("objectClass", &["person"]), ("cn", &["Robert"]), ("sn", &["B"])],
        &[],
    )
    .unwrap();
    let bob = h.get("cn=bob,ou=people,dc=example,dc=com").unwrap();
    assert_eq!(values_of(&bob, "cn"), set(&["Robert", "Bob"]));
    h.add(
        "cn=carol,ou=people,dc=example,dc=com",
        &[("objectClass", &["person"]), ("cn", &["CAROL"]), ("sn", &["C"])],
        &[],
    )
    .unwrap();
    let carol = h.get("cn=carol,ou=people,dc=example,dc=com").unwrap();
    assert_eq!(values_of(&carol, "cn"), set(&["CAROL"]));
}

#[test]
fn add_refusals_have_their_result_codes() {
    let h = Harness::open();
    h.people();
    let before = h.count();
    let person = |_cn: &str| -> Vec<(&'static str, &'static [&'static str])> {
        vec![("objectClass", &["person"]), ("sn", &["S"])]
    };
    // invalidDNSyntax.
    assert_eq!(
        code(h.add("cn=a,,dc=example,dc=com", &person("a"), &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(h.add("nosuchtype=a,dc=example,dc=com", &person("a"), &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    // The root DSE and the subschema subentry already exist.
    assert_eq!(
        code(h.add("", &person("a"), &[])),
        ResultCode::ENTRY_ALREADY_EXISTS
    );
    assert_eq!(
        code(h.add("cn=Subschema", &person("a"), &[])),
        ResultCode::ENTRY_ALREADY_EXISTS
    );
    // No attributes.
    assert_eq!(
        code(h.add("cn=a,dc=example,dc=com", &[], &[])),
        ResultCode::PROTOCOL_ERROR
    );
    // Unknown attribute type.
    assert_eq!(
        code(h.add(
            "cn=a,dc=example,dc=com",
            &[("objectClass", &["person"]), ("sn", &["S"]), ("bogus", &["x"])],
            &[]
        )),
        ResultCode::UNDEFINED_ATTRIBUTE_TYPE
    );
    // Outside the naming contexts: no global superior knowledge.
    assert_eq!(
        code(h.add("cn=a,dc=other", &person("a"), &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.add(
            "dc=com",
            &[("objectClass", &["dcObject", "organization"]), ("o", &["x"])],
            &[]
        )),
        ResultCode::UNWILLING_TO_PERFORM
    );
    // Server-maintained attributes, even from the administrator.
    assert!(h.identity.is_admin());
    for name in [
        "createTimestamp",
        "entryUUID",
        "entryCSN",
        "creatorsName",
        "structuralObjectClass",
    ] {
        let value = match name {
            "createTimestamp" => "20240101000000Z",
            "entryUUID" => "597ae2f6-16a6-1027-98f4-d28b5365dc14",
            "entryCSN" => "20240101000000.000000Z#000000#000#000000",
            "creatorsName" => ADMIN,
            _ => "person",
        };
        let e = error(h.add(
            "cn=a,dc=example,dc=com",
            &[("objectClass", &["person"]), ("sn", &["S"]), (name, &[value])],
            &[],
        ));
        assert_eq!(e.code, ResultCode::CONSTRAINT_VIOLATION, "{name}: {e}");
        assert!(e.message.contains(name), "{e}");
    }
    // Schema: no objectClass, missing MUST, attribute not allowed, bad syntax, duplicate
    // value, second value of a single-valued type.
    let cases: Vec<(AttrList<'_>, ResultCode)> = vec![
        (vec![("sn", &["S"])], ResultCode::OBJECT_CLASS_VIOLATION),
        (
            vec![("objectClass", &["person"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            vec![("objectClass", &["person"]), ("sn", &["S"]), ("mail", &["a@b"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            vec![("objectClass", &["nosuchclass"]), ("sn", &["S"])],
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
        ),
        (
            vec![
                ("objectClass", &["person"]),
                ("sn", &["S"]),
                ("seeAlso", &["not a DN"]),
            ],
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
        ),
        (
            vec![("objectClass", &["person"]), ("sn", &["S", "s"])],
            ResultCode::ATTRIBUTE_OR_VALUE_EXISTS,
        ),
        (
            vec![
                ("objectClass", &["inetOrgPerson"]),
                ("sn", &["S"]),
                ("displayName", &["x", "y"]),
            ],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
    ];
    for (attrs, want) in cases {
        assert_eq!(
            code(h.add("cn=a,dc=example,dc=com", &attrs, &[])),
            want,
            "{attrs:?}"
        );
    }
    // Naming: an operational naming attribute; a single-valued naming attribute holding
    // another value.
    assert_eq!(
        code(h.add(
            "entryUUID=597ae2f6-16a6-1027-98f4-d28b5365dc14,dc=example,dc=com",
            &[
                ("objectClass", &["extensibleObject", "organizationalRole"]),
                ("cn", &["x"])
            ],
            &[]
        )),
        ResultCode::NAMING_VIOLATION
    );
    assert_eq!(
        code(h.add(
            "c=FR,dc=example,dc=com",
            &[("objectClass", &["country"]), ("c", &["DE"])],
            &[]
        )),
        ResultCode::NAMING_VIOLATION
    );
    // A value in BER form (`#` hex): slapd refuses it as a naming value.
    assert_eq!(
        code(h.add(
            "cn=#0403414243,dc=example,dc=com",
            &[("objectClass", &["organizationalRole"])],
            &[]
        )),
        ResultCode::NAMING_VIOLATION
    );
    // Missing parent: noSuchObject with the deepest existing ancestor.
    let e = error(h.add("cn=a,ou=missing,dc=example,dc=com", &person("a"), &[]));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, BASE)
    );
    let e = error(h.add(
        "cn=a,ou=deeper,ou=missing,ou=people,dc=example,dc=com",
        &person("a"),
        &[],
    ));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    // Already there.
    let e = error(h.add(
        "OU=People,DC=Example,DC=Com",
        &[("objectClass", &["organizationalUnit"])],
        &[],
    ));
    assert_eq!(e.code, ResultCode::ENTRY_ALREADY_EXISTS);
    assert!(e.message.contains("OU=People"), "{e}");
    assert_eq!(h.count(), before, "no refused add left an entry");
    // The country entry is fine with its own value.
    h.add(
        "c=FR,dc=example,dc=com",
        &[("objectClass", &["country"]), ("c", &["FR"])],
        &[],
    )
    .unwrap();
}

#[test]
fn add_assertion_is_evaluated_on_the_new_entry() {
    let h = Harness::open();
    h.people();
    let attrs: &[(&str, &[&str])] = &[("objectClass", &["person"]), ("sn", &["Liddell"])];
    let e = error(h.add(ALICE, attrs, &[assertion("(sn=Smith)")]));
    assert_eq!(e.code, ResultCode::ASSERTION_FAILED);
    assert!(h.get(ALICE).is_none());
    // Operational and computed attributes are visible to the filter.
    h.add(
        ALICE,
        attrs,
        &[assertion(
            "(&(cn=alice)(hasSubordinates=FALSE)(creatorsName=cn=admin,dc=example,dc=com))",
        )],
    )
    .unwrap();
    assert!(h.get(ALICE).is_some());
}

#[test]
fn naming_contexts_are_added_without_a_parent_and_deleted_as_leaves() {
    let h = Harness::with_suffixes(&["o=other"]);
    assert!(h.get("o=other").is_some(), "created on first start");
    // A leaf naming context can be deleted, and added back without a parent entry.
    h.delete("o=other", &[]).unwrap();
    assert!(h.get("o=other").is_none());
    let e = error(h.add("cn=x,o=other", &[("objectClass", &["organizationalRole"])], &[]));
    assert_eq!((e.code, e.matched_dn.as_str()), (ResultCode::NO_SUCH_OBJECT, ""));
    h.add("o=other", &[("objectClass", &["organization"])], &[])
        .unwrap();
    h.add("cn=x,o=other", &[("objectClass", &["organizationalRole"])], &[])
        .unwrap();
    assert_eq!(h.stored_dn("CN=X,O=OTHER").unwrap(), "cn=x,o=other");
    // Not a leaf now.
    assert_eq!(
        code(h.delete("o=other", &[])),
        ResultCode::NOT_ALLOWED_ON_NON_LEAF
    );
}

#[test]
fn delete_removes_leaves_and_refuses_the_rest() {
    let h = Harness::open();
    h.people();
    h.person("Alice", PEOPLE);
    h.person("Bob", PEOPLE);
    let controls = h
        .delete(
            "CN=ALICE,ou=people,dc=example,dc=com",
            &[pre_read(&["cn", "description"])],
        )
        .unwrap();
    assert!(h.get(ALICE).is_none());
    let (dn, attrs) = pre_read_of(&controls);
    assert_eq!(dn, ALICE);
    assert_eq!(values_of(&attrs, "cn"), set(&["Alice"]));
    assert_eq!(values_of(&attrs, "description"), set(&["old"]));
    assert_eq!(attrs.len(), 2);
    // Missing, with matchedDN.
    let e = error(h.delete(ALICE, &[]));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    let e = error(h.delete("cn=x,ou=gone,dc=example,dc=com", &[]));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, BASE)
    );
    // Not a leaf.
    let e = error(h.delete(PEOPLE, &[]));
    assert_eq!(e.code, ResultCode::NOT_ALLOWED_ON_NON_LEAF);
    assert!(e.message.contains(PEOPLE), "{e}");
    // Root DSE, subschema subentry, outside the naming contexts.
    assert_eq!(code(h.delete("", &[])), ResultCode::UNWILLING_TO_PERFORM);
    assert_eq!(
        code(h.delete("cn=subschema", &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(code(h.delete("dc=com", &[])), ResultCode::UNWILLING_TO_PERFORM);
    assert_eq!(code(h.delete("cn=a,,b", &[])), ResultCode::INVALID_DN_SYNTAX);
    // Assertion.
    let bob = "cn=Bob,ou=people,dc=example,dc=com";
    assert_eq!(
        code(h.delete(bob, &[assertion("(description=new)")])),
        ResultCode::ASSERTION_FAILED
    );
    assert!(h.get(bob).is_some());
    h.delete(bob, &[assertion("(&(description=OLD)(hasSubordinates=FALSE))")])
        .unwrap();
    assert!(h.get(bob).is_none());
}

#[test]
fn subtree_delete_removes_everything_or_nothing() {
    let h = Harness::open();
    h.people();
    for cn in ["a", "b"] {
        h.person(cn, PEOPLE);
        let parent = format!("cn={cn},{PEOPLE}");
        h.add(
            &format!("cn=role,{parent}"),
            &[("objectClass", &["organizationalRole"])],
            &[],
        )
        .unwrap();
        h.add(
            &format!("cn=deep,cn=role,{parent}"),
            &[("objectClass", &["organizationalRole"])],
            &[],
        )
        .unwrap();
    }
    let before = h.count();
    // A failing assertion deletes nothing.
    assert_eq!(
        code(h.delete(PEOPLE, &[subtree_delete(), assertion("(ou=nobody)")])),
        ResultCode::ASSERTION_FAILED
    );
    assert_eq!(h.count(), before);
    let controls = h
        .delete(PEOPLE, &[subtree_delete(), pre_read(&["ou", "numSubordinates"])])
        .unwrap();
    assert_eq!(h.count(), before - 7);
    for dn in [
        PEOPLE,
        "cn=a,ou=people,dc=example,dc=com",
        "cn=deep,cn=role,cn=b,ou=people,dc=example,dc=com",
    ] {
        assert!(h.get(dn).is_none(), "{dn}");
    }
    let (dn, attrs) = pre_read_of(&controls);
    assert_eq!(dn, PEOPLE);
    assert_eq!(values_of(&attrs, "numsubordinates"), set(&["2"]));
    assert!(h.get(BASE).is_some() && h.get(ADMIN).is_some());
    // On a leaf the control changes nothing.
    h.add(
        "cn=leaf,dc=example,dc=com",
        &[("objectClass", &["organizationalRole"])],
        &[],
    )
    .unwrap();
    h.delete("cn=leaf,dc=example,dc=com", &[subtree_delete()])
        .unwrap();
    assert_eq!(h.count(), before - 7);
    // The store checks its own invariants.
    h.dir.store.current().check().unwrap();
}

#[test]
fn modify_applies_all_changes_and_updates_operational_attributes() {
    // The editor may write (a rule), so modifiersName shows an identity other than the admin.
    let mut h = Harness::with_config(
        &[],
        "[[access]]\nby = [{ dn = \"cn=Editor,dc=example,dc=com\", access = \"write\" }]\n",
    );
    h.people();
    h.person("Alice", PEOPLE);
    let before = h.get(ALICE).unwrap();
    h.identity = identity("cn=Editor,dc=example,dc=com", false);
    let controls = h
        .modify(
            "cn=alice, ou=People,dc=example,dc=com",
            &[
                (ModifyOperation::Replace, "description", &["new", "newer"]),
                (ModifyOperation::Add, "telephoneNumber", &["+1 555 0100"]),
                (ModifyOperation::Delete, "description", &["newer"]),
            ],
            &[
                pre_read(&["description"]),
                post_read(&["description", "telephoneNumber", "modifiersName"]),
            ],
        )
        .unwrap();
    let after = h.get(ALICE).unwrap();
    assert_eq!(values_of(&after, "description"), set(&["new"]));
    assert_eq!(values_of(&after, "telephonenumber"), set(&["+1 555 0100"]));
    for kept in [
        "createtimestamp",
        "creatorsname",
        "entryuuid",
        "structuralobjectclass",
        "cn",
        "sn",
    ] {
        assert_eq!(after[kept], before[kept], "{kept}");
    }
    assert_eq!(one(&after, "modifiersname"), "cn=Editor,dc=example,dc=com");
    assert!(one(&after, "entrycsn") > one(&before, "entrycsn"));
    assert!(one(&after, "modifytimestamp") >= one(&before, "modifytimestamp"));
    let (dn, pre) = pre_read_of(&controls);
    assert_eq!(
        (dn.as_str(), values_of(&pre, "description")),
        (ALICE, set(&["old"]))
    );
    let (dn, post) = post_read_of(&controls);
    assert_eq!(dn, ALICE);
    assert_eq!(values_of(&post, "description"), set(&["new"]));
    assert_eq!(values_of(&post, "telephonenumber"), set(&["+1 555 0100"]));
    assert_eq!(
        values_of(&post, "modifiersname"),
        set(&["cn=Editor,dc=example,dc=com"])
    );
}

#[test]
fn an_empty_modify_needs_write_on_the_entry() {
    // A Modify with no change still stamps modifiersName, modifyTimestamp and entryCSN: a
    // reader or an anonymous client (the default policy: nobody but the admin writes) is
    // refused, and nothing is written; one with `write` on the entry may.
    let mut h = Harness::with_config(
        &[],
        "[[access]]\nby = [{ dn = \"cn=Editor,dc=example,dc=com\", access = \"write\" }, { who = \"*\", access = \"read\" }]\n",
    );
    h.people();
    h.person("Alice", PEOPLE);
    let before = h.get(ALICE).unwrap();
    let lsn = h.dir.store.current().lsn();
    for who in [
        identity("cn=Reader,dc=example,dc=com", false),
        Identity::Anonymous,
    ] {
        h.identity = who;
        let refused = error(h.modify(ALICE, &[], &[]));
        assert_eq!(refused.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
        assert!(refused.message.contains("no change"), "{}", refused.message);
        assert_eq!(h.get(ALICE).unwrap(), before);
        assert_eq!(h.dir.store.current().lsn(), lsn, "a refused modify was logged");
    }
    h.identity = identity("cn=Editor,dc=example,dc=com", false);
    h.modify(ALICE, &[], &[]).unwrap();
    let after = h.get(ALICE).unwrap();
    assert_eq!(one(&after, "modifiersname"), "cn=Editor,dc=example,dc=com");
    assert!(one(&after, "entrycsn") > one(&before, "entrycsn"));
}

#[test]
fn modify_is_all_or_nothing_with_the_models_result_codes() {
    let h = Harness::open();
    h.people();
    h.person("Alice", PEOPLE);
    h.add(
        "cn=Ingrid,ou=people,dc=example,dc=com",
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("sn", &["I"]),
            ("displayName", &["Ingrid"]),
        ],
        &[],
    )
    .unwrap();
    let ingrid = "cn=Ingrid,ou=people,dc=example,dc=com";
    let before = h.get(ALICE).unwrap();
    use ModifyOperation::*;
    let cases: Vec<(&str, ChangeList<'_>, ResultCode)> = vec![
        (
            ALICE,
            vec![
                (Replace, "description", &["changed"]),
                (Delete, "telephoneNumber", &[]),
            ],
            ResultCode::NO_SUCH_ATTRIBUTE,
        ),
        (
            ALICE,
            vec![
                (Replace, "description", &["changed"]),
                (Delete, "description", &["absent"]),
            ],
            ResultCode::NO_SUCH_ATTRIBUTE,
        ),
        (
            ALICE,
            vec![(Replace, "description", &["changed"]), (Add, "bogus", &["x"])],
            ResultCode::UNDEFINED_ATTRIBUTE_TYPE,
        ),
        (
            ALICE,
            vec![
                (Replace, "description", &["changed"]),
                (Replace, "createTimestamp", &["20240101000000Z"]),
            ],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
        (
            ingrid,
            vec![(Add, "displayName", &["Other"])],
            ResultCode::CONSTRAINT_VIOLATION,
        ),
        (
            ALICE,
            vec![
                (Replace, "description", &["changed"]),
                (Add, "description", &["CHANGED"]),
            ],
            ResultCode::ATTRIBUTE_OR_VALUE_EXISTS,
        ),
        (
            ALICE,
            vec![
                (Replace, "description", &["changed"]),
                (Add, "seeAlso", &["not a DN"]),
            ],
            ResultCode::INVALID_ATTRIBUTE_SYNTAX,
        ),
        (
            ALICE,
            vec![(Replace, "description", &["changed"]), (Delete, "sn", &[])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            ALICE,
            vec![(Add, "mail", &["a@example.com"])],
            ResultCode::OBJECT_CLASS_VIOLATION,
        ),
        (
            ALICE,
            vec![(Replace, "description", &["changed"]), (Delete, "cn", &["alice"])],
            ResultCode::NOT_ALLOWED_ON_RDN,
        ),
        (
            ALICE,
            vec![(Replace, "cn", &["Alicia"])],
            ResultCode::NOT_ALLOWED_ON_RDN,
        ),
        (
            ALICE,
            vec![(Add, "objectClass", &["organizationalPerson"])],
            ResultCode::OBJECT_CLASS_MODS_PROHIBITED,
        ),
        (ALICE, vec![(Add, "description", &[])], ResultCode::PROTOCOL_ERROR),
        (
            ALICE,
            vec![(Increment, "description", &["1", "2"])],
            ResultCode::PROTOCOL_ERROR,
        ),
    ];
    for (dn, changes, want) in cases {
        let e = error(h.modify(dn, &changes, &[]));
        assert_eq!(e.code, want, "{changes:?}: {e}");
    }
    assert_eq!(
        h.get(ALICE).unwrap(),
        before,
        "no refused modify changed the entry"
    );
    // Missing entry, root DSE, subschema, outside.
    let e = error(h.modify(
        "cn=nobody,ou=people,dc=example,dc=com",
        &[(Replace, "description", &["x"])],
        &[],
    ));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    for dn in ["", "cn=Subschema", "o=elsewhere"] {
        assert_eq!(
            code(h.modify(dn, &[(Replace, "description", &["x"])], &[])),
            ResultCode::UNWILLING_TO_PERFORM,
            "{dn}"
        );
    }
    // Assertion: refused leaves the entry; accepted applies.
    assert_eq!(
        code(h.modify(
            ALICE,
            &[(Replace, "description", &["x"])],
            &[assertion("(description=nope)")]
        )),
        ResultCode::ASSERTION_FAILED
    );
    assert_eq!(h.get(ALICE).unwrap(), before);
    h.modify(
        ALICE,
        &[(Replace, "description", &["x"])],
        &[assertion("(description=old)")],
    )
    .unwrap();
    assert_eq!(values_of(&h.get(ALICE).unwrap(), "description"), set(&["x"]));
    // Permissive Modify: adding a present value and deleting an absent one succeed.
    h.modify(
        ALICE,
        &[
            (Add, "description", &["x", "y"]),
            (Delete, "description", &["zzz"]),
        ],
        &[permissive()],
    )
    .unwrap();
    assert_eq!(values_of(&h.get(ALICE).unwrap(), "description"), set(&["x", "y"]));
    // An empty change list updates the operational attributes only.
    let before = h.get(ALICE).unwrap();
    h.modify(ALICE, &[], &[]).unwrap();
    let after = h.get(ALICE).unwrap();
    assert!(one(&after, "entrycsn") > one(&before, "entrycsn"));
    assert_eq!(
        values_of(&after, "description"),
        values_of(&before, "description")
    );
}

#[test]
fn rename_with_and_without_delete_old_rdn() {
    let h = Harness::open();
    h.people();
    h.person("Alice", PEOPLE);
    let before = h.get(ALICE).unwrap();
    let alicia = "cn=Alicia,ou=people,dc=example,dc=com";
    let controls = h
        .modrdn(
            ALICE,
            "cn=Alicia",
            true,
            None,
            &[pre_read(&["cn"]), post_read(&["cn", "entryDN"])],
        )
        .unwrap();
    assert!(h.get(ALICE).is_none());
    let e = h.get(alicia).unwrap();
    assert_eq!(values_of(&e, "cn"), set(&["Alicia"]));
    assert_eq!(e["createtimestamp"], before["createtimestamp"]);
    assert_eq!(e["entryuuid"], before["entryuuid"]);
    assert!(one(&e, "entrycsn") > one(&before, "entrycsn"));
    assert_eq!(h.stored_dn(alicia).unwrap(), alicia);
    let (dn, pre) = pre_read_of(&controls);
    assert_eq!((dn.as_str(), values_of(&pre, "cn")), (ALICE, set(&["Alice"])));
    let (dn, post) = post_read_of(&controls);
    assert_eq!((dn.as_str(), values_of(&post, "cn")), (alicia, set(&["Alicia"])));
    assert_eq!(values_of(&post, "entrydn"), set(&[alicia]));

    // Without deleteOldRDN the old value stays.
    h.modrdn(alicia, "cn=Al", false, None, &[]).unwrap();
    let al = "cn=Al,ou=people,dc=example,dc=com";
    assert_eq!(values_of(&h.get(al).unwrap(), "cn"), set(&["Alicia", "Al"]));
    // A new RDN value already present is not added twice; with deleteOldRDN it takes the
    // new RDN's spelling (as slapd), and the old value (not in the new RDN) goes.
    h.modrdn(al, "cn=alicia", true, None, &[]).unwrap();
    assert_eq!(values_of(&h.get(alicia).unwrap(), "cn"), set(&["alicia"]));
    // A case-only rename of the same entry is allowed and respells the value.
    h.modrdn(alicia, "CN=ALICIA", true, None, &[]).unwrap();
    assert_eq!(
        h.stored_dn(alicia).unwrap(),
        "CN=ALICIA,ou=people,dc=example,dc=com"
    );
    assert_eq!(values_of(&h.get(alicia).unwrap(), "cn"), set(&["ALICIA"]));
    h.modrdn(alicia, "cn=Alicia", true, None, &[]).unwrap();
    // A new RDN of another type: the old type's value goes only with deleteOldRDN, and a
    // MUST attribute losing its last value is an objectClassViolation.
    h.modrdn(alicia, "sn=Liddell", false, None, &[]).unwrap();
    let sn = "sn=Liddell,ou=people,dc=example,dc=com";
    assert_eq!(values_of(&h.get(sn).unwrap(), "cn"), set(&["Alicia"]));
    let before = h.get(sn).unwrap();
    assert_eq!(
        code(h.modrdn(sn, "cn=Alicia", true, None, &[])),
        ResultCode::OBJECT_CLASS_VIOLATION
    );
    assert_eq!(h.get(sn).unwrap(), before);
    // A new RDN type the classes do not allow.
    assert_eq!(
        code(h.modrdn(sn, "uid=alice", false, None, &[])),
        ResultCode::OBJECT_CLASS_VIOLATION
    );
    // A multi-valued RDN adds each value.
    h.modrdn(sn, "cn=A+sn=L", false, None, &[]).unwrap();
    let multi = h.get("cn=a+sn=l,ou=people,dc=example,dc=com").unwrap();
    assert_eq!(values_of(&multi, "cn"), set(&["Alicia", "A"]));
    assert_eq!(values_of(&multi, "sn"), set(&["Liddell", "L"]));
    h.dir.store.current().check().unwrap();
}

#[test]
fn rename_refusals_have_their_result_codes() {
    let h = Harness::with_suffixes(&["o=other", "o=third"]);
    h.people();
    h.person("Alice", PEOPLE);
    h.person("Bob", PEOPLE);
    let bob = "cn=Bob,ou=people,dc=example,dc=com";
    let before = h.get(ALICE).unwrap();
    // Target exists.
    let e = error(h.modrdn(ALICE, "cn=bob", true, None, &[]));
    assert_eq!(e.code, ResultCode::ENTRY_ALREADY_EXISTS);
    // Missing entry; missing newSuperior (matchedDN: its deepest existing ancestor).
    let e = error(h.modrdn("cn=Zed,ou=people,dc=example,dc=com", "cn=Zed2", true, None, &[]));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    let e = error(h.modrdn(
        ALICE,
        "cn=Alice",
        true,
        Some("ou=x,ou=gone,ou=people,dc=example,dc=com"),
        &[],
    ));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    assert!(e.message.contains("ou=x,ou=gone"), "{e}");
    // Below or above itself.
    assert_eq!(
        code(h.modrdn(PEOPLE, "ou=people", false, Some(ALICE), &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn(PEOPLE, "ou=sub", false, Some(PEOPLE), &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn(ALICE, "ou=people", false, Some(BASE), &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    // Bad DNs.
    assert_eq!(
        code(h.modrdn(ALICE, "cn=a,cn=b", false, None, &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(h.modrdn(ALICE, "=x", false, None, &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(h.modrdn(ALICE, "", false, None, &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(h.modrdn(ALICE, "cn=x", false, Some("dc=,"), &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    assert_eq!(
        code(h.modrdn("cn=,,", "cn=x", false, None, &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    // Operational naming attribute.
    assert_eq!(
        code(h.modrdn(ALICE, "entryCSN=x", false, None, &[])),
        ResultCode::NAMING_VIOLATION
    );
    assert_eq!(
        code(h.modrdn(ALICE, "createTimestamp=20240101000000Z", false, None, &[])),
        ResultCode::NAMING_VIOLATION
    );
    // Root DSE, subschema, outside, naming contexts.
    assert_eq!(
        code(h.modrdn("", "cn=x", false, None, &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn("cn=Subschema", "cn=x", false, None, &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn("cn=x,o=elsewhere", "cn=y", false, None, &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn(BASE, "dc=sample", true, None, &[])),
        ResultCode::UNWILLING_TO_PERFORM
    );
    assert_eq!(
        code(h.modrdn(ALICE, "cn=Alice", true, Some("o=elsewhere"), &[])),
        ResultCode::AFFECTS_MULTIPLE_DSAS
    );
    // Assertion.
    assert_eq!(
        code(h.modrdn(ALICE, "cn=Alicia", true, None, &[assertion("(sn=Smith)")])),
        ResultCode::ASSERTION_FAILED
    );
    assert_eq!(h.get(ALICE).unwrap(), before);
    assert!(h.get(bob).is_some());
    // A naming context renamed to another configured suffix.
    h.delete("o=third", &[]).unwrap();
    h.add("cn=x,o=other", &[("objectClass", &["organizationalRole"])], &[])
        .unwrap();
    h.modrdn("o=other", "o=third", true, None, &[]).unwrap();
    assert!(h.get("o=other").is_none());
    let third = h.get("o=third").unwrap();
    assert_eq!(values_of(&third, "o"), set(&["third"]));
    assert_eq!(h.stored_dn("cn=x,o=third").unwrap(), "cn=x,o=third");
    // Moving an entry between naming contexts of this server.
    h.modrdn("cn=x,o=third", "cn=x", false, Some(PEOPLE), &[])
        .unwrap();
    assert!(h.get("cn=x,ou=people,dc=example,dc=com").is_some());
    h.dir.store.current().check().unwrap();
}

#[test]
fn a_moved_subtree_follows_its_root() {
    let h = Harness::open();
    h.people();
    h.person("Alice", PEOPLE);
    h.add(
        &format!("cn=role,{ALICE}"),
        &[("objectClass", &["organizationalRole"])],
        &[],
    )
    .unwrap();
    h.add(
        "ou=moved,dc=example,dc=com",
        &[("objectClass", &["organizationalUnit"])],
        &[],
    )
    .unwrap();
    let controls = h
        .modrdn(
            PEOPLE,
            "ou=staff",
            true,
            Some("ou=moved,dc=example,dc=com"),
            &[post_read(&["ou"])],
        )
        .unwrap();
    let staff = "ou=staff,ou=moved,dc=example,dc=com";
    let (dn, post) = post_read_of(&controls);
    assert_eq!((dn.as_str(), values_of(&post, "ou")), (staff, set(&["staff"])));
    for old in [PEOPLE, ALICE, "cn=role,cn=Alice,ou=people,dc=example,dc=com"] {
        assert!(h.get(old).is_none(), "{old}");
    }
    assert_eq!(
        h.stored_dn(&format!("cn=alice,{staff}")).unwrap(),
        format!("cn=Alice,{staff}")
    );
    assert_eq!(
        h.stored_dn(&format!("cn=role,cn=alice,{staff}")).unwrap(),
        format!("cn=role,cn=Alice,{staff}")
    );
    assert!(h
        .compare(
            &format!("cn=role,cn=Alice,{staff}"),
            "entryDN",
            &format!("CN=ROLE,cn=alice,{staff}"),
            &[]
        )
        .unwrap());
    h.dir.store.current().check().unwrap();
}

#[test]
fn compare_answers_true_false_and_errors() {
    let h = Harness::open();
    h.people();
    h.person("Alice", PEOPLE);
    h.add(
        "cn=Ingrid,ou=people,dc=example,dc=com",
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("sn", &["I"]),
            ("cn;lang-fr", &["Ingride"]),
        ],
        &[],
    )
    .unwrap();
    let ingrid = "cn=Ingrid,ou=people,dc=example,dc=com";
    assert!(h.compare(ALICE, "cn", "ALICE", &[]).unwrap());
    assert!(!h.compare(ALICE, "cn", "Bob", &[]).unwrap());
    assert!(h.compare(ALICE, "description", "old", &[]).unwrap());
    // Subtypes: `name` looks at cn and sn.
    assert!(h.compare(ALICE, "name", "liddell", &[]).unwrap());
    assert!(!h.compare(ALICE, "name", "nobody", &[]).unwrap());
    // Options: cn;lang-fr holds only its own values; cn holds both.
    assert!(h.compare(ingrid, "cn;lang-fr", "ingride", &[]).unwrap());
    assert!(!h.compare(ingrid, "cn;lang-fr", "ingrid", &[]).unwrap());
    assert!(h.compare(ingrid, "cn", "ingride", &[]).unwrap());
    assert_eq!(
        code(h.compare(ALICE, "cn;lang-fr", "x", &[])),
        ResultCode::NO_SUCH_ATTRIBUTE
    );
    // Object classes by name or OID, superclasses matching their subclasses (slapd's
    // objectSubClassMatch); operational and computed attributes.
    assert_eq!(values_of(&h.get(ALICE).unwrap(), "objectclass"), set(&["person"]));
    assert!(h.compare(ALICE, "objectClass", "PERSON", &[]).unwrap());
    assert!(h.compare(ALICE, "objectClass", "2.5.6.6", &[]).unwrap());
    assert!(h.compare(ALICE, "objectClass", "top", &[]).unwrap());
    assert!(!h
        .compare(ALICE, "objectClass", "organizationalPerson", &[])
        .unwrap());
    assert!(!h
        .compare(ALICE, "objectClass", "organizationalUnit", &[])
        .unwrap());
    assert!(!h.compare(ALICE, "objectClass", "noSuchClass", &[]).unwrap());
    assert!(h
        .compare(ingrid, "objectClass", "organizationalPerson", &[])
        .unwrap());
    assert!(h.compare(ALICE, "structuralObjectClass", "person", &[]).unwrap());
    assert!(h.compare(ingrid, "structuralObjectClass", "person", &[]).unwrap());
    assert!(h
        .compare(ALICE, "creatorsName", "CN=Admin, DC=Example, DC=Com", &[])
        .unwrap());
    assert!(h.compare(PEOPLE, "hasSubordinates", "TRUE", &[]).unwrap());
    assert!(!h.compare(ALICE, "hasSubordinates", "TRUE", &[]).unwrap());
    assert!(h.compare(PEOPLE, "numSubordinates", "2", &[]).unwrap());
    assert!(h
        .compare(ALICE, "entryDN", "cn=alice,ou=people,dc=example,dc=com", &[])
        .unwrap());
    assert!(h
        .compare(ALICE, "subschemaSubentry", "cn=subschema", &[])
        .unwrap());
    // Errors.
    assert_eq!(
        code(h.compare(ALICE, "telephoneNumber", "1", &[])),
        ResultCode::NO_SUCH_ATTRIBUTE
    );
    assert_eq!(
        code(h.compare(ALICE, "bogus", "1", &[])),
        ResultCode::UNDEFINED_ATTRIBUTE_TYPE
    );
    assert_eq!(
        code(h.compare(ALICE, "c n", "1", &[])),
        ResultCode::UNDEFINED_ATTRIBUTE_TYPE
    );
    assert!(h
        .dir
        .schema
        .attribute_type("jpegPhoto")
        .unwrap()
        .equality
        .is_none());
    assert_eq!(
        code(h.compare(ALICE, "jpegPhoto", "x", &[])),
        ResultCode::INAPPROPRIATE_MATCHING
    );
    assert_eq!(
        code(h.compare(PEOPLE, "numSubordinates", "two", &[])),
        ResultCode::INVALID_ATTRIBUTE_SYNTAX
    );
    assert_eq!(
        code(h.compare("cn=a,,b", "cn", "x", &[])),
        ResultCode::INVALID_DN_SYNTAX
    );
    let e = error(h.compare("cn=Zed,ou=people,dc=example,dc=com", "cn", "Zed", &[]));
    assert_eq!(
        (e.code, e.matched_dn.as_str()),
        (ResultCode::NO_SUCH_OBJECT, PEOPLE)
    );
    let e = error(h.compare("cn=Zed,o=elsewhere", "cn", "Zed", &[]));
    assert_eq!((e.code, e.matched_dn.as_str()), (ResultCode::NO_SUCH_OBJECT, ""));
    // Assertion control.
    assert_eq!(
        code(h.compare(ALICE, "cn", "Alice", &[assertion("(sn=Smith)")])),
        ResultCode::ASSERTION_FAILED
    );
    assert!(h
        .compare(ALICE, "cn", "Alice", &[assertion("(sn=liddell)")])
        .unwrap());
}

// ----- the property test: random update sequences against a model -----

/// The model's entry: its cn and description values (lower-case text, so that the
/// model's comparisons are the equality rule's).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct ModelEntry {
    cn: BTreeSet<String>,
    description: BTreeSet<String>,
}

/// The model: normalized DN (lower case, no spaces) -> entry. The base always exists.
type Model = BTreeMap<String, ModelEntry>;

const NAMES: [&str; 2] = ["a", "b"];
const CN_VALUES: [&str; 3] = ["a", "b", "x"];
const DESCRIPTIONS: [&str; 3] = ["d0", "d1", "d2"];

/// Every DN of 1 to 3 `cn=` RDNs below the base, shallow ones first: 2 + 4 + 8.
fn all_dns() -> Vec<String> {
    let mut out = Vec::new();
    let mut level: Vec<String> = vec![BASE.to_string()];
    for _ in 0..3 {
        let mut next = Vec::new();
        for parent in &level {
            for n in NAMES {
                next.push(format!("cn={n},{parent}"));
            }
        }
        out.extend(next.iter().cloned());
        level = next;
    }
    out
}

fn parent_of(dn: &str) -> &str {
    dn.split_once(',').map_or("", |(_, p)| p)
}

fn rdn_value(dn: &str) -> &str {
    dn.split_once(',')
        .map_or(dn, |(r, _)| r)
        .trim_start_matches("cn=")
}

fn exists(model: &Model, dn: &str) -> bool {
    dn == BASE || model.contains_key(dn)
}

fn below(dn: &str, ancestor: &str) -> bool {
    dn.len() > ancestor.len()
        && dn.ends_with(ancestor)
        && dn.as_bytes()[dn.len() - ancestor.len() - 1] == b','
}

/// The deepest existing strict ancestor of `dn` (the base at worst).
fn matched(model: &Model, dn: &str) -> String {
    let mut cur = parent_of(dn);
    while !exists(model, cur) {
        cur = parent_of(cur);
    }
    cur.to_string()
}

#[derive(Debug, Clone)]
enum Op {
    Add {
        dn: usize,
        with_cn: bool,
        descriptions: Vec<usize>,
    },
    Delete {
        dn: usize,
        subtree: bool,
    },
    Modify {
        dn: usize,
        changes: Vec<(u8, bool, Vec<usize>)>,
    },
    Rename {
        dn: usize,
        value: usize,
        delete_old: bool,
        superior: Option<Option<usize>>,
    },
}

fn subset(n: usize) -> impl Strategy<Value = Vec<usize>> {
    proptest::collection::btree_set(0..n, 0..=n).prop_map(|s| s.into_iter().collect())
}

/// A DN index, each depth equally likely (so that parents exist often enough for the
/// operations below them to get past the lookup).
fn dn_index() -> impl Strategy<Value = usize> {
    prop_oneof![0..2usize, 2..6usize, 6..14usize]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (dn_index(), any::<bool>(), subset(DESCRIPTIONS.len()))
            .prop_map(|(dn, with_cn, descriptions)| Op::Add { dn, with_cn, descriptions }),
        1 => (dn_index(), any::<bool>()).prop_map(|(dn, subtree)| Op::Delete { dn, subtree }),
        2 => (dn_index(), proptest::collection::vec((0u8..3, any::<bool>(), subset(3)), 0..3))
            .prop_map(|(dn, changes)| Op::Modify { dn, changes }),
        2 => (dn_index(), 0..NAMES.len(), any::<bool>(), proptest::option::of(proptest::option::of(dn_index())))
            .prop_map(|(dn, value, delete_old, superior)| Op::Rename { dn, value, delete_old, superior }),
    ]
}

/// Applies `op` to the model; returns the expected result code and matchedDN.
fn model_apply(model: &mut Model, op: &Op, dns: &[String]) -> (ResultCode, String) {
    let ok = (ResultCode::SUCCESS, String::new());
    match op {
        Op::Add { dn, descriptions, .. } => {
            let dn = &dns[*dn];
            if exists(model, dn) {
                return (ResultCode::ENTRY_ALREADY_EXISTS, String::new());
            }
            if !exists(model, parent_of(dn)) {
                return (ResultCode::NO_SUCH_OBJECT, matched(model, dn));
            }
            let entry = ModelEntry {
                cn: [rdn_value(dn).to_string()].into(),
                description: descriptions
                    .iter()
                    .map(|&i| DESCRIPTIONS[i].to_string())
                    .collect(),
            };
            model.insert(dn.clone(), entry);
            ok
        }
        Op::Delete { dn, subtree } => {
            let dn = &dns[*dn];
            if !exists(model, dn) {
                return (ResultCode::NO_SUCH_OBJECT, matched(model, dn));
            }
            let victims: Vec<String> = model.keys().filter(|k| below(k, dn)).cloned().collect();
            if !victims.is_empty() && !subtree {
                return (ResultCode::NOT_ALLOWED_ON_NON_LEAF, String::new());
            }
            for v in victims {
                model.remove(&v);
            }
            model.remove(dn);
            ok
        }
        Op::Modify { dn, changes } => {
            let dn = &dns[*dn];
            // Checked when the request is prepared, before the lookup.
            if changes
                .iter()
                .any(|(kind, _, values)| *kind == 0 && values.is_empty())
            {
                return (ResultCode::PROTOCOL_ERROR, String::new());
            }
            let Some(current) = model.get(dn) else {
                return (ResultCode::NO_SUCH_OBJECT, matched(model, dn));
            };
            let mut e = current.clone();
            for (kind, on_cn, values) in changes {
                let (attr, domain): (&mut BTreeSet<String>, &[&str]) = if *on_cn {
                    (&mut e.cn, &CN_VALUES[..3])
                } else {
                    (&mut e.description, &DESCRIPTIONS[..])
                };
                let values: Vec<String> = values.iter().map(|&i| domain[i].to_string()).collect();
                match kind {
                    0 => {
                        if values.iter().any(|v| attr.contains(v)) {
                            return (ResultCode::ATTRIBUTE_OR_VALUE_EXISTS, String::new());
                        }
                        attr.extend(values);
                    }
                    1 => {
                        if attr.is_empty() {
                            return (ResultCode::NO_SUCH_ATTRIBUTE, String::new());
                        }
                        if values.is_empty() {
                            attr.clear();
                        } else {
                            for v in values {
                                if !attr.remove(&v) {
                                    return (ResultCode::NO_SUCH_ATTRIBUTE, String::new());
                                }
                            }
                        }
                    }
                    _ => *attr = values.into_iter().collect(),
                }
            }
            if !e.cn.contains(rdn_value(dn)) {
                return (ResultCode::NOT_ALLOWED_ON_RDN, String::new());
            }
            model.insert(dn.clone(), e);
            ok
        }
        Op::Rename {
            dn,
            value,
            delete_old,
            superior,
        } => {
            let old = &dns[*dn];
            let parent = match superior {
                None => parent_of(old).to_string(),
                Some(None) => BASE.to_string(),
                Some(Some(i)) => dns[*i].clone(),
            };
            let new = format!("cn={},{parent}", NAMES[*value]);
            if below(&new, old) || below(old, &new) {
                return (ResultCode::UNWILLING_TO_PERFORM, String::new());
            }
            if !model.contains_key(old) {
                return (ResultCode::NO_SUCH_OBJECT, matched(model, old));
            }
            if !exists(model, &parent) {
                return (ResultCode::NO_SUCH_OBJECT, matched(model, &new));
            }
            if &new != old && exists(model, &new) {
                return (ResultCode::ENTRY_ALREADY_EXISTS, String::new());
            }
            let mut e = model.remove(old).unwrap();
            let new_value = NAMES[*value].to_string();
            let old_value = rdn_value(old).to_string();
            e.cn.insert(new_value.clone());
            if *delete_old && old_value != new_value {
                e.cn.remove(&old_value);
            }
            let moved: Vec<String> = model.keys().filter(|k| below(k, old)).cloned().collect();
            for k in moved {
                let entry = model.remove(&k).unwrap();
                let prefix = &k[..k.len() - old.len()];
                model.insert(format!("{prefix}{new}"), entry);
            }
            model.insert(new, e);
            ok
        }
    }
}

/// Runs `op` on the directory; returns the result code and matchedDN.
fn directory_apply(h: &Harness, op: &Op, dns: &[String]) -> (ResultCode, String) {
    let result = match op {
        Op::Add {
            dn,
            with_cn,
            descriptions,
        } => {
            let cn = [rdn_value(&dns[*dn])];
            let descriptions: Vec<&str> = descriptions.iter().map(|&i| DESCRIPTIONS[i]).collect();
            let mut attrs: Vec<(&str, &[&str])> = vec![("objectClass", &["organizationalRole"])];
            if *with_cn {
                attrs.push(("cn", &cn));
            }
            if !descriptions.is_empty() {
                attrs.push(("description", &descriptions));
            }
            h.add(&dns[*dn], &attrs, &[])
        }
        Op::Delete { dn, subtree } => {
            let controls = if *subtree {
                vec![subtree_delete()]
            } else {
                Vec::new()
            };
            h.delete(&dns[*dn], &controls)
        }
        Op::Modify { dn, changes } => {
            let values: Vec<Vec<&str>> = changes
                .iter()
                .map(|(_, on_cn, vs)| {
                    vs.iter()
                        .map(|&i| if *on_cn { CN_VALUES[i] } else { DESCRIPTIONS[i] })
                        .collect()
                })
                .collect();
            let list: Vec<(ModifyOperation, &str, &[&str])> = changes
                .iter()
                .zip(&values)
                .map(|((kind, on_cn, _), vs)| {
                    let operation = match kind {
                        0 => ModifyOperation::Add,
                        1 => ModifyOperation::Delete,
                        _ => ModifyOperation::Replace,
                    };
                    (
                        operation,
                        if *on_cn { "cn" } else { "description" },
                        vs.as_slice(),
                    )
                })
                .collect();
            h.modify(&dns[*dn], &list, &[])
        }
        Op::Rename {
            dn,
            value,
            delete_old,
            superior,
        } => {
            let superior = match superior {
                None => None,
                Some(None) => Some(BASE),
                Some(Some(i)) => Some(dns[*i].as_str()),
            };
            h.modrdn(
                &dns[*dn],
                &format!("cn={}", NAMES[*value]),
                *delete_old,
                superior,
                &[],
            )
        }
    };
    match result {
        Ok(_) => (ResultCode::SUCCESS, String::new()),
        Err(e) => (e.code, e.matched_dn),
    }
}

/// The directory's entries below the base, but the admin, as the model holds them.
fn directory_contents(h: &Harness) -> Model {
    let version = h.dir.store.current();
    let schema = &h.dir.schema;
    let cn = schema.attribute_type("cn").unwrap().id;
    let description = schema.attribute_type("description").unwrap().id;
    let mut out = Model::new();
    for view in version.entries() {
        let norm = version.norm_dn(view.id).as_str().to_string();
        if norm == BASE || norm == ADMIN {
            continue;
        }
        let values = |ty| -> BTreeSet<String> {
            view.attrs()
                .attribute(ty)
                .flat_map(|a| a.values.iter())
                .map(|v| String::from_utf8_lossy(v).into_owned())
                .collect()
        };
        out.insert(
            norm,
            ModelEntry {
                cn: values(cn),
                description: values(description),
            },
        );
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_updates_follow_the_model(ops in proptest::collection::vec(op_strategy(), 1..60)) {
        let dns = all_dns();
        prop_assert_eq!(dns.len(), 14);
        let h = Harness::open();
        let mut model = Model::new();
        for (i, op) in ops.iter().enumerate() {
            let want = model_apply(&mut model, op, &dns);
            let got = directory_apply(&h, op, &dns);
            prop_assert_eq!(&got, &want, "operation #{}: {:?}", i, op);
            prop_assert_eq!(directory_contents(&h), model.clone(), "after operation #{}: {:?}", i, op);
        }
        h.dir.store.current().check().map_err(TestCaseError::fail)?;
    }
}

/// A test hook: refuses (constraintViolation) any write whose new entry has the
/// description `forbidden`, and any delete of an entry whose cn is `Keep`.
#[derive(Debug)]
struct Refuser;

impl WriteHook for Refuser {
    fn name(&self) -> &'static str {
        "refuser"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &larch_store::Version,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let schema = ctx.schema;
        let desc = schema.attribute_type("description").unwrap().id;
        let cn = schema.attribute_type("cn").unwrap().id;
        let refuse = || {
            Err(OpError::new(
                ResultCode::CONSTRAINT_VIOLATION,
                "refused by the test hook",
            ))
        };
        if let Some(entry) = write.state.entry() {
            if entry
                .attributes_of(desc)
                .any(|a| a.values.iter().any(|v| v == b"forbidden"))
            {
                return refuse();
            }
        }
        if let NewState::Delete { victims } = &write.state {
            for (id, _) in victims {
                let e = version.entry(*id).unwrap();
                if e.attrs()
                    .attribute(cn)
                    .any(|a| a.values.iter().any(|v| v == b"Keep"))
                {
                    return refuse();
                }
            }
        }
        Ok(())
    }
}

/// A test hook that changes a second entry: after every Modify of an entry below
/// ou=people, it writes the modified entry's DN into the description of `cn=journal,dc=example,dc=com`,
/// and refuses (noSuchObject) when that entry does not exist, after a change of its own
/// (so that a rollback has two changes to undo).
#[derive(Debug)]
struct Journal;

impl WriteHook for Journal {
    fn name(&self) -> &'static str {
        "journal"
    }

    fn changes_other_entries(&self) -> bool {
        true
    }

    fn after_change(
        &self,
        write: &AppliedWrite<'_>,
        txn: &mut WriteTxn<'_>,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        if write.kind != WriteKind::Modify {
            return Ok(());
        }
        let schema = ctx.schema;
        let desc = schema.attribute_type("description").unwrap().id;
        let (_, journal) = NormDn::parse(b"cn=journal,dc=example,dc=com", schema).unwrap();
        let dn = txn.version().dn(write.id);
        // A change of its own first: the modified entry's seeAlso, then the journal.
        let see_also = schema.attribute_type("seeAlso").unwrap().id;
        let mut target = match write.state {
            NewState::Modify { entry, .. } => entry.clone(),
            _ => unreachable!(),
        };
        target.set_values(
            see_also,
            &larch_model::entry::Options::none(),
            vec![b"cn=journal,dc=example,dc=com".to_vec()],
        );
        txn.modify(write.id, &target.to_stored())?;
        let Some(jid) = txn.version().find(&journal) else {
            return Err(OpError::no_such_object("cn=journal,dc=example,dc=com", ""));
        };
        let view = txn.version().entry(jid).unwrap();
        let mut entry = larch_model::entry::Entry::from_stored(
            larch_model::dn::Dn::parse(b"cn=journal,dc=example,dc=com").unwrap(),
            journal,
            view.attrs(),
        );
        entry.set_values(desc, &larch_model::entry::Options::none(), vec![dn.into_bytes()]);
        txn.modify(jid, &entry.to_stored())?;
        Ok(())
    }
}

fn hooks_harness(extra: Vec<Arc<dyn WriteHook>>) -> Harness {
    let mut list: Vec<Arc<dyn WriteHook>> = vec![Arc::new(OperationalAttributes)];
    list.extend(extra);
    Harness::with_hooks(&[], "", Some(WriteHooks::new(list)))
}

#[test]
fn the_standard_hook_table_starts_with_the_operational_attributes() {
    assert_eq!(WriteHooks::standard().names(), ["operational attributes"]);
}

#[test]
fn a_refusing_hook_leaves_nothing_and_its_result_reaches_the_client() {
    let h = hooks_harness(vec![Arc::new(Refuser)]);
    h.people();
    h.person("Alice", PEOPLE);
    h.person("Keep", PEOPLE);
    let before = h.get(ALICE).unwrap();
    let e = error(h.modify(
        ALICE,
        &[(ModifyOperation::Replace, "description", &["forbidden"])],
        &[],
    ));
    assert_eq!(
        (e.code, e.message.as_str()),
        (ResultCode::CONSTRAINT_VIOLATION, "refused by the test hook")
    );
    assert_eq!(
        h.get(ALICE).unwrap(),
        before,
        "the refused modify changed the entry"
    );
    let e = error(h.add(
        "cn=Bob,ou=people,dc=example,dc=com",
        &[
            ("objectClass", &["person"]),
            ("cn", &["Bob"]),
            ("sn", &["B"]),
            ("description", &["forbidden"]),
        ],
        &[],
    ));
    assert_eq!(e.code, ResultCode::CONSTRAINT_VIOLATION);
    assert!(h.get("cn=Bob,ou=people,dc=example,dc=com").is_none());
    // A subtree delete meeting a refused victim removes nothing.
    let count = h.count();
    assert_eq!(
        code(h.delete(PEOPLE, &[subtree_delete()])),
        ResultCode::CONSTRAINT_VIOLATION
    );
    assert_eq!(h.count(), count);
    assert!(h.get(ALICE).is_some() && h.get(PEOPLE).is_some());
    // Writes the hook does not refuse go through, with their operational attributes.
    h.modify(
        ALICE,
        &[(ModifyOperation::Replace, "description", &["fine"])],
        &[],
    )
    .unwrap();
    let after = h.get(ALICE).unwrap();
    assert_eq!(one(&after, "description"), "fine");
    assert_ne!(one(&after, "entrycsn"), one(&before, "entrycsn"));
}

#[test]
fn a_hook_that_changes_a_second_entry_commits_both_or_neither() {
    let h = hooks_harness(vec![Arc::new(Journal)]);
    h.people();
    h.person("Alice", PEOPLE);
    let before = h.get(ALICE).unwrap();
    // No journal entry yet: the hook refuses after two changes of its own; the whole
    // modify is undone, the target included.
    let e = error(h.modify(ALICE, &[(ModifyOperation::Replace, "description", &["new"])], &[]));
    assert_eq!(e.code, ResultCode::NO_SUCH_OBJECT);
    assert_eq!(h.get(ALICE).unwrap(), before, "a rolled-back modify left a trace");
    h.add(
        "cn=journal,dc=example,dc=com",
        &[("objectClass", &["person"]), ("cn", &["journal"]), ("sn", &["j"])],
        &[],
    )
    .unwrap();
    h.modify(ALICE, &[(ModifyOperation::Replace, "description", &["new"])], &[])
        .unwrap();
    let alice = h.get(ALICE).unwrap();
    assert_eq!(one(&alice, "description"), "new");
    assert_eq!(one(&alice, "seealso"), "cn=journal,dc=example,dc=com");
    let journal = h.get("cn=journal,dc=example,dc=com").unwrap();
    assert_eq!(
        one(&journal, "description"),
        "cn=Alice,ou=people,dc=example,dc=com"
    );
    // What was logged replays to the same state: the refused modify left no record.
    let path = h.path.clone();
    let live = (
        h.get(ALICE).unwrap(),
        h.get("cn=journal,dc=example,dc=com").unwrap(),
    );
    h.dir.store.close(false).unwrap();
    let mut config = ServerConfig::default();
    test_store(&mut config, path);
    let (dir, _) = Directory::open(config).unwrap();
    let reopened = Harness {
        dir: Arc::new(dir),
        path: h.path.clone(),
        identity: identity(ADMIN, true),
    };
    assert_eq!(
        (
            reopened.get(ALICE).unwrap(),
            reopened.get("cn=journal,dc=example,dc=com").unwrap()
        ),
        live
    );
    // `reopened` is dropped first (it removes the data directory), then `h`.
}

/// `uid` unique in the whole tree (the default rule), `mail` only below ou=people (a
/// `[[uniqueness.rule]]`).
const UNIQUE_RULES: &str = "[uniqueness]\nattributes = [\"uid\"]\n\n[[uniqueness.rule]]\nattributes = [\"mail\"]\nsubtrees = [\"ou=people,dc=example,dc=com\"]\n";

/// Adds `uid=<uid>,<parent>` with `mail`.
fn add_account(h: &Harness, uid: &str, parent: &str, mail: &str) -> Result<Vec<ResponseControl>, OpError> {
    h.add(
        &format!("uid={uid},{parent}"),
        &[
            ("objectClass", &["inetOrgPerson"]),
            ("uid", &[uid]),
            ("cn", &[uid]),
            ("sn", &[uid]),
            ("mail", &[mail]),
        ],
        &[],
    )
}

fn add_ou(h: &Harness, ou: &str) {
    h.add(
        &format!("ou={ou},{BASE}"),
        &[("objectClass", &["organizationalUnit"]), ("ou", &[ou])],
        &[],
    )
    .unwrap();
}

#[test]
fn each_uniqueness_rule_keeps_its_own_attributes_within_its_own_subtrees() {
    let h = Harness::with_config(&[], UNIQUE_RULES);
    assert!(h.dir.hooks.names().contains(&"uniqueness"));
    add_ou(&h, "people");
    add_ou(&h, "apps");
    let people = "ou=people,dc=example,dc=com";
    let apps = "ou=apps,dc=example,dc=com";
    add_account(&h, "alice", people, "a@example.com").unwrap();
    // uid: unique in the whole tree.
    let e = error(add_account(&h, "ALICE", apps, "other@example.com"));
    assert_eq!(e.code, ResultCode::CONSTRAINT_VIOLATION, "{e}");
    assert!(e.message.contains("uid"), "{e}");
    // mail: unique below ou=people only; outside it, anyone may hold it, any number of times.
    let e = error(add_account(&h, "bob", people, "A@example.com"));
    assert_eq!(e.code, ResultCode::CONSTRAINT_VIOLATION, "{e}");
    assert!(e.message.contains("mail") && e.message.contains(people), "{e}");
    add_account(&h, "app1", apps, "a@example.com").unwrap();
    add_account(&h, "app2", apps, "a@example.com").unwrap();
    // A Modify and a Modify DN into ou=people meet the mail rule too.
    add_account(&h, "carol", people, "c@example.com").unwrap();
    let carol = format!("uid=carol,{people}");
    assert_eq!(
        code(h.modify(&carol, &[(ModifyOperation::Add, "mail", &["a@example.com"])], &[])),
        ResultCode::CONSTRAINT_VIOLATION
    );
    assert_eq!(
        code(h.modrdn(&format!("uid=app2,{apps}"), "uid=app2", true, Some(people), &[])),
        ResultCode::CONSTRAINT_VIOLATION
    );
    h.modrdn(&format!("uid=app2,{apps}"), "uid=app3", true, None, &[])
        .unwrap();
}

#[test]
fn the_duplicate_report_follows_each_rule() {
    use larch_server::uniqueness::duplicates::duplicates;
    // Loaded without the uniqueness hook, as an import is.
    let h = Harness::with_hooks(&[], UNIQUE_RULES, Some(WriteHooks::standard()));
    add_ou(&h, "people");
    add_ou(&h, "apps");
    let people = "ou=people,dc=example,dc=com";
    let apps = "ou=apps,dc=example,dc=com";
    add_account(&h, "alice", people, "a@example.com").unwrap();
    add_account(&h, "bob", people, "a@example.com").unwrap();
    add_account(&h, "app1", apps, "x@example.com").unwrap();
    add_account(&h, "app2", apps, "x@example.com").unwrap();
    add_account(&h, "alice", apps, "y@example.com").unwrap();
    let config = ServerConfig::from_toml_str(UNIQUE_RULES).unwrap();
    let rules = config.uniqueness.rules(&h.dir.schema).unwrap();
    let found = duplicates(&h.dir.store.current(), &rules);
    let said: Vec<(String, String, String)> = found
        .iter()
        .map(|d| (d.attribute.clone(), d.value.clone(), d.again.clone()))
        .collect();
    assert_eq!(
        said,
        [
            (
                "uid".to_string(),
                "alice".to_string(),
                format!("uid=alice,{apps}")
            ),
            (
                "mail".to_string(),
                "a@example.com".to_string(),
                format!("uid=bob,{people}")
            ),
        ],
        "{found:#?}"
    );
}
