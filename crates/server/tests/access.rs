//! Access control on a real directory: requests encoded and decoded with `larch_proto`,
//! searches prepared and run, updates prepared on the "connection" and applied on the
//! store's writer thread, as the server runs them.
//!
//! The default policy and a custom rule set are probed as an anonymous client, an entry
//! acting on itself (alice), another user (bob), a group member (carol) and the admin:
//! search results (entries and attributes, filters on hidden attributes, the base entry),
//! compare, add, delete, modify, modify DN, pre-read and post-read, the bind check, peer
//! addresses, group membership read at each operation, and proxied authorization (allowed,
//! refused, and the operation run as the proxied identity).

mod common;

use common::{fresh_data_dir, test_store, with_add, with_decoded, with_modify, TestControl};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use larch_model::dn::NormDn;
use larch_proto::controls::{
    ControlValue, PostReadRequest, PostReadResponse, PreReadRequest, PreReadResponse, ProxiedAuthz,
};
use larch_proto::frame::{frame, Frame};
use larch_proto::{
    AttributeValueAssertion, CompareRequest, DelRequest, DerefAliases, LdapMessage, ModifyDnRequest,
    ModifyOperation, OwnedFilter, ProtocolOp, ResultCode, SearchRequest, SearchResultEntry, SearchScope,
    SeqOf,
};
use larch_server::acl::ops::check_bind;
use larch_server::acl::proxy::proxied_identity;
use larch_server::auth::password;
use larch_server::client::Client;
use larch_server::config::ServerConfig;
use larch_server::controls::{OpKind, RequestControls, ResponseControl};
use larch_server::directory::Directory;
use larch_server::error::OpError;
use larch_server::identity::Identity;
use larch_server::ops::{
    apply_add, apply_delete, apply_modify, apply_modify_dn, compare, prepare_add, prepare_delete,
    prepare_modify, prepare_modify_dn, WriteContext,
};
use larch_server::response::{CollectSink, ResponseSink};
use larch_server::search::{prepare, PagedSearches, SearchContext};

const BASE: &str = "dc=example,dc=com";
const ADMIN: &str = "cn=admin,dc=example,dc=com";
const PEOPLE: &str = "ou=people,dc=example,dc=com";
const ALICE: &str = "uid=alice,ou=people,dc=example,dc=com";
const BOB: &str = "uid=bob,ou=people,dc=example,dc=com";
const CAROL: &str = "uid=carol,ou=people,dc=example,dc=com";
const EDITORS: &str = "cn=editors,ou=groups,dc=example,dc=com";
const SECRET: &str = "ou=secret,dc=example,dc=com";

/// The custom rule set: passwords as the default policy; `description` of people written
/// by the entry itself and the editors, read by users only; the people subtree written by
/// the editors and read by anyone; `ou=secret` disclosed to users, hidden from anonymous
/// clients; everything else read by anyone. Bob may use proxied authorization.
const CUSTOM: &str = r#"
[access_proxy]
allow = [{ dn = "uid=bob,ou=people,dc=example,dc=com" }]

[[access]]
attrs = ["userPassword"]
by = [
  { who = "self", access = "=wx" },
  { who = "anonymous", access = "auth" },
]

[[access]]
dn = "ou=people,dc=example,dc=com"
attrs = ["description"]
by = [
  { who = "self", access = "write" },
  { group = "cn=editors,ou=groups,dc=example,dc=com", access = "write" },
  { who = "users", access = "read" },
]

[[access]]
dn = "ou=people,dc=example,dc=com"
by = [
  { group = "cn=editors,ou=groups,dc=example,dc=com", access = "write" },
  { who = "*", access = "read" },
]

[[access]]
dn = "ou=secret,dc=example,dc=com"
by = [{ who = "users", access = "disclose" }]

[[access]]
by = [{ who = "*", access = "read" }]
"#;

type Attrs = BTreeMap<String, Vec<String>>;

/// The control `value` encoded, to send.
fn control<'v, T: ControlValue<'v>>(value: &T, critical: bool) -> TestControl {
    let mut buf = Vec::new();
    let has = value.encode_value(&mut buf);
    (T::OID, critical, has.then_some(buf))
}

fn pre_read(attrs: &[&str], critical: bool) -> TestControl {
    let items: Vec<&[u8]> = attrs.iter().map(|a| a.as_bytes()).collect();
    control(
        &PreReadRequest {
            attributes: SeqOf::from_items(&items),
        },
        critical,
    )
}

fn post_read(attrs: &[&str]) -> TestControl {
    let items: Vec<&[u8]> = attrs.iter().map(|a| a.as_bytes()).collect();
    control(
        &PostReadRequest {
            attributes: SeqOf::from_items(&items),
        },
        false,
    )
}

fn proxy(authz_id: &str, critical: bool) -> TestControl {
    control(
        &ProxiedAuthz {
            authz_id: authz_id.as_bytes(),
        },
        critical,
    )
}

/// Encodes `op` with `controls`, decodes it, and hands the decoded operation and its parsed
/// controls to `f`, as the connection does.
fn with_request<R>(
    op: ProtocolOp<'_>,
    controls: &[TestControl],
    kind: OpKind,
    f: impl FnOnce(ProtocolOp<'_>, &RequestControls<'_>) -> Result<R, OpError>,
) -> Result<R, OpError> {
    with_decoded(op, controls, |decoded| {
        let parsed = RequestControls::parse(decoded.controls, kind)?;
        f(decoded.op, &parsed)
    })
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn attrs_of(e: &SearchResultEntry<'_>) -> Attrs {
    e.attributes
        .iter()
        .map(|a| {
            (
                s(a.description).to_ascii_lowercase(),
                a.values.iter().map(s).collect(),
            )
        })
        .collect()
}

/// A search's answer: entries (lower-case DN -> attributes) and the result.
#[derive(Debug, Default)]
struct Answer {
    entries: BTreeMap<String, Attrs>,
    code: u32,
    matched: String,
    message: String,
}

impl Answer {
    fn dns(&self) -> Vec<&str> {
        self.entries.keys().map(String::as_str).collect()
    }
}

/// Who asks: identity and client address.
#[derive(Clone)]
struct As {
    identity: Identity,
    client: Client,
}

struct Harness {
    dir: Arc<Directory>,
    path: PathBuf,
    paged: Mutex<PagedSearches>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = self.dir.store.close(false);
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn attrs(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    list.iter()
        .map(|(k, vs)| (k.to_string(), vs.iter().map(|v| v.to_string()).collect()))
        .collect()
}

impl Harness {
    /// A directory with `access` (TOML; empty: the default policy) holding people alice,
    /// bob and carol (each with a userPassword), the group editors (carol), ou=secret with
    /// one entry.
    fn new(access: &str) -> Harness {
        let path = fresh_data_dir("access");
        let mut config = ServerConfig::from_toml_str(access).unwrap();
        test_store(&mut config, path.clone());
        let (dir, _) = Directory::open(config).unwrap();
        let h = Harness {
            dir: Arc::new(dir),
            path,
            paged: Mutex::new(PagedSearches::new()),
        };
        let admin = h.admin();
        let ou = |name: &str| attrs(&[("objectClass", &["organizationalUnit"]), ("ou", &[name])]);
        h.add(&admin, PEOPLE, ou("people"), &[]).unwrap();
        for (uid, name) in [("alice", "Alice"), ("bob", "Bob"), ("carol", "Carol")] {
            let pw = format!("{uid}-pw");
            h.add(
                &admin,
                &format!("uid={uid},{PEOPLE}"),
                attrs(&[
                    ("objectClass", &["inetOrgPerson"]),
                    ("uid", &[uid]),
                    ("cn", &[name]),
                    ("sn", &["Liddell"]),
                    ("mail", &[&format!("{uid}@example.com")]),
                    ("description", &[&format!("about {uid}")]),
                    ("userPassword", &[&pw]),
                ]),
                &[],
            )
            .unwrap();
        }
        h.add(&admin, "ou=groups,dc=example,dc=com", ou("groups"), &[])
            .unwrap();
        h.add(
            &admin,
            EDITORS,
            attrs(&[
                ("objectClass", &["groupOfNames"]),
                ("cn", &["editors"]),
                ("member", &[CAROL]),
            ]),
            &[],
        )
        .unwrap();
        h.add(&admin, SECRET, ou("secret"), &[]).unwrap();
        h.add(
            &admin,
            &format!("cn=plans,{SECRET}"),
            attrs(&[("objectClass", &["organizationalRole"]), ("cn", &["plans"])]),
            &[],
        )
        .unwrap();
        h
    }

    fn identity(&self, dn: &str) -> Identity {
        let (_, norm) = NormDn::parse(dn.as_bytes(), &*self.dir.schema).unwrap();
        Identity::Dn {
            dn: dn.to_string(),
            admin: norm == self.dir.admin_dn,
            norm,
        }
    }

    fn admin(&self) -> As {
        As {
            identity: self.identity(ADMIN),
            client: Client::default(),
        }
    }

    fn user(&self, dn: &str) -> As {
        As {
            identity: self.identity(dn),
            client: Client::default(),
        }
    }

    fn anonymous(&self) -> As {
        As {
            identity: Identity::Anonymous,
            client: Client::default(),
        }
    }

    /// Prepares with `prepare` as `who`, applies with `apply` on the writer thread.
    fn write<P: Send + 'static>(
        &self,
        who: &As,
        prepared: impl FnOnce(&WriteContext<'_>) -> Result<P, OpError>,
        apply: fn(
            &mut larch_store::WriteTxn<'_>,
            &WriteContext<'_>,
            P,
        ) -> Result<Vec<ResponseControl>, OpError>,
    ) -> Result<Vec<ResponseControl>, OpError> {
        let ctx = WriteContext {
            dir: &self.dir,
            identity: &who.identity,
            client: &who.client,
        };
        let p = prepared(&ctx)?;
        let dir = Arc::clone(&self.dir);
        let who = who.clone();
        self.dir
            .store
            .write(move |txn| {
                let ctx = WriteContext {
                    dir: &dir,
                    identity: &who.identity,
                    client: &who.client,
                };
                apply(txn, &ctx, p)
            })
            .unwrap()
    }

    fn add(
        &self,
        who: &As,
        dn: &str,
        list: Vec<(String, Vec<String>)>,
        controls: &[TestControl],
    ) -> Result<Vec<ResponseControl>, OpError> {
        self.write(
            who,
            |ctx| {
                with_add(dn, &list, |req| {
                    with_request(
                        ProtocolOp::AddRequest(req),
                        controls,
                        OpKind::Add,
                        |op, c| match op {
                            ProtocolOp::AddRequest(r) => prepare_add(ctx, &r, c),
                            _ => unreachable!(),
                        },
                    )
                })
            },
            apply_add,
        )
    }

    fn delete(&self, who: &As, dn: &str) -> Result<Vec<ResponseControl>, OpError> {
        let req = DelRequest { dn: dn.as_bytes() };
        self.write(
            who,
            |ctx| {
                with_request(
                    ProtocolOp::DelRequest(req),
                    &[],
                    OpKind::Delete,
                    |op, c| match op {
                        ProtocolOp::DelRequest(r) => prepare_delete(ctx, &r, c),
                        _ => unreachable!(),
                    },
                )
            },
            apply_delete,
        )
    }

    fn modify(
        &self,
        who: &As,
        dn: &str,
        changes: &[(ModifyOperation, &str, &[&str])],
        controls: &[TestControl],
    ) -> Result<Vec<ResponseControl>, OpError> {
        self.write(
            who,
            |ctx| {
                with_modify(dn, changes, |req| {
                    with_request(
                        ProtocolOp::ModifyRequest(req),
                        controls,
                        OpKind::Modify,
                        |op, c| match op {
                            ProtocolOp::ModifyRequest(r) => prepare_modify(ctx, &r, c),
                            _ => unreachable!(),
                        },
                    )
                })
            },
            apply_modify,
        )
    }

    fn describe(&self, who: &As, dn: &str, text: &str) -> Result<Vec<ResponseControl>, OpError> {
        self.modify(
            who,
            dn,
            &[(ModifyOperation::Replace, "description", &[text])],
            &[],
        )
    }

    fn rename(
        &self,
        who: &As,
        dn: &str,
        new_rdn: &str,
        superior: Option<&str>,
    ) -> Result<Vec<ResponseControl>, OpError> {
        let req = ModifyDnRequest {
            entry: dn.as_bytes(),
            new_rdn: new_rdn.as_bytes(),
            delete_old_rdn: true,
            new_superior: superior.map(str::as_bytes),
        };
        self.write(
            who,
            |ctx| {
                with_request(
                    ProtocolOp::ModifyDnRequest(req),
                    &[],
                    OpKind::ModifyDn,
                    |op, c| match op {
                        ProtocolOp::ModifyDnRequest(r) => prepare_modify_dn(ctx, &r, c),
                        _ => unreachable!(),
                    },
                )
            },
            apply_modify_dn,
        )
    }

    fn compare(&self, who: &As, dn: &str, attr: &str, value: &str) -> Result<bool, OpError> {
        let req = CompareRequest {
            entry: dn.as_bytes(),
            ava: AttributeValueAssertion {
                description: attr.as_bytes(),
                value: value.as_bytes(),
            },
        };
        let version = self.dir.store.current();
        with_request(
            ProtocolOp::CompareRequest(req),
            &[],
            OpKind::Compare,
            |op, c| match op {
                ProtocolOp::CompareRequest(r) => {
                    compare(&self.dir, &version, &who.identity, &who.client, &r, c)
                }
                _ => unreachable!(),
            },
        )
    }

    fn search(&self, who: &As, base: &str, scope: SearchScope, filter: &str, attrs: &[&str]) -> Answer {
        self.search_with(who, base, scope, filter, attrs, false, 0)
    }

    #[allow(clippy::too_many_arguments)]
    fn search_with(
        &self,
        who: &As,
        base: &str,
        scope: SearchScope,
        filter: &str,
        attrs: &[&str],
        types_only: bool,
        size: u32,
    ) -> Answer {
        let f = OwnedFilter::parse(filter).unwrap();
        let list: Vec<&[u8]> = attrs.iter().map(|a| a.as_bytes()).collect();
        let req = SearchRequest {
            base: base.as_bytes(),
            scope,
            deref_aliases: DerefAliases::Never,
            size_limit: size,
            time_limit: 0,
            types_only,
            filter: f.as_filter(),
            attributes: SeqOf::from_items(&list),
        };
        let version = self.dir.store.current();
        let ctx = SearchContext {
            dir: &self.dir,
            conn: 0,
            version: &version,
            identity: &who.identity,
            client: &who.client,
            last_base: None,
        };
        let mut sink = CollectSink::default();
        match prepare(&ctx, &req, &RequestControls::default(), &self.paged) {
            Err(e) => larch_server::outcome::respond::write(
                sink.buf(),
                1,
                larch_proto::op_tag::SEARCH_RESULT_DONE,
                &e.into(),
            ),
            Ok(p) => p
                .run(&self.dir, 1, &mut sink, &self.paged)
                .write_done(&mut sink.out, 1),
        }
        let mut answer = Answer::default();
        let mut rest = &sink.out[..];
        while !rest.is_empty() {
            let Frame::Complete(n) = frame(rest, usize::MAX).unwrap() else {
                panic!("truncated")
            };
            match LdapMessage::decode(&rest[..n]).unwrap().op {
                ProtocolOp::SearchResultEntry(e) => {
                    answer
                        .entries
                        .insert(s(e.object_name).to_ascii_lowercase(), attrs_of(&e));
                }
                ProtocolOp::SearchResultDone(r) => {
                    answer.code = r.code.0;
                    answer.matched = s(r.matched_dn);
                    answer.message = s(r.diagnostic_message);
                }
                ProtocolOp::SearchResultReference(_) => {}
                other => panic!("unexpected {other:?}"),
            }
            rest = &rest[n..];
        }
        answer
    }

    /// The stored attributes of `dn` (lower-case names).
    fn stored(&self, dn: &str) -> Attrs {
        let a = self.search(
            &self.admin(),
            dn,
            SearchScope::Base,
            "(objectClass=*)",
            &["*", "+"],
        );
        a.entries.into_values().next().unwrap_or_default()
    }
}

fn code(r: Result<Vec<ResponseControl>, OpError>) -> ResultCode {
    match r {
        Ok(_) => ResultCode::SUCCESS,
        Err(e) => e.code,
    }
}

fn refused(r: Result<Vec<ResponseControl>, OpError>, fragments: &[&str]) {
    let e = r.expect_err("an access refusal");
    assert_eq!(e.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS, "{e}");
    for f in fragments {
        assert!(e.message.contains(f), "{:?} lacks {f:?}", e.message);
    }
}

fn person(uid: &str) -> Vec<(String, Vec<String>)> {
    attrs(&[
        ("objectClass", &["inetOrgPerson"]),
        ("uid", &[uid]),
        ("cn", &[uid]),
        ("sn", &["New"]),
    ])
}

// ---------------------------------------------------------------------------------------
// The default policy.

#[test]
fn default_policy_search_hides_passwords_from_everyone_but_the_admin() {
    let h = Harness::new("");
    let people = [ALICE, BOB, CAROL];
    for who in [h.anonymous(), h.user(ALICE), h.user(BOB)] {
        let a = h.search(&who, BASE, SearchScope::Subtree, "(objectClass=*)", &["*"]);
        assert_eq!(a.code, 0, "{}", a.message);
        // Every entry, the admin's included, is visible; no userPassword anywhere.
        assert_eq!(a.entries.len(), 10, "{:?}", a.dns());
        for (dn, attrs) in &a.entries {
            assert!(!attrs.contains_key("userpassword"), "{dn}: {attrs:?}");
        }
        for p in people {
            let attrs = &a.entries[&p.to_ascii_lowercase()];
            let names: Vec<&str> = attrs.keys().map(String::as_str).collect();
            assert_eq!(
                names,
                ["cn", "description", "mail", "objectclass", "sn", "uid"],
                "{p}"
            );
        }
        // Named, and with typesOnly: still not returned.
        let a = h.search_with(
            &who,
            ALICE,
            SearchScope::Base,
            "(objectClass=*)",
            &["userPassword", "cn"],
            true,
            0,
        );
        let attrs = &a.entries[&ALICE.to_ascii_lowercase()];
        assert_eq!(attrs.keys().collect::<Vec<_>>(), ["cn"]);
        assert!(attrs["cn"].is_empty());
        // A filter on it is Undefined: neither it nor its negation matches.
        for f in [
            "(userPassword=*)",
            "(!(userPassword=*))",
            "(userPassword=alice-pw)",
            "(|(userPassword=*)(cn=Alice))",
        ] {
            let a = h.search(&who, PEOPLE, SearchScope::Subtree, f, &["cn"]);
            assert_eq!(a.code, 0);
            let want: Vec<&str> = if f.contains("cn=Alice") {
                vec![ALICE]
            } else {
                vec![]
            };
            assert_eq!(a.dns(), want, "{f}");
        }
    }
    let admin = h.admin();
    let a = h.search(
        &admin,
        PEOPLE,
        SearchScope::Subtree,
        "(userPassword=*)",
        &["userPassword"],
    );
    assert_eq!(a.dns(), [ALICE, BOB, CAROL]);
    assert_hashes(&a.entries[ALICE]["userpassword"], "alice-pw");
    let a = h.search(
        &admin,
        PEOPLE,
        SearchScope::Subtree,
        "(!(userPassword=*))",
        &["1.1"],
    );
    assert_eq!(a.dns(), [PEOPLE]);
}

#[test]
fn default_policy_compare_and_bind() {
    let h = Harness::new("");
    for who in [h.anonymous(), h.user(ALICE), h.user(BOB)] {
        assert_eq!(h.compare(&who, ALICE, "cn", "alice"), Ok(true));
        assert_eq!(h.compare(&who, ALICE, "mail", "x@example.com"), Ok(false));
        let e = h.compare(&who, ALICE, "userPassword", "alice-pw").unwrap_err();
        assert_eq!(e.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS, "{e}");
        assert!(
            e.message.contains("compare") && e.message.contains("userPassword"),
            "{e}"
        );
    }
    // The admin compares against the stored (hashed) value.
    let stored = h.stored(ALICE)["userpassword"][0].clone();
    assert_eq!(h.compare(&h.admin(), ALICE, "userPassword", &stored), Ok(true));
    // Anonymous clients may bind (auth on userPassword).
    let version = h.dir.store.current();
    let alice = h.identity(ALICE);
    check_bind(
        &h.dir.acl,
        &version,
        &alice,
        None,
        &Client::default(),
        h.dir.user_password,
    )
    .unwrap();
}

#[test]
fn default_policy_writes() {
    let h = Harness::new("");
    let (anon, alice, bob, admin) = (h.anonymous(), h.user(ALICE), h.user(BOB), h.admin());
    // Adds.
    refused(
        h.add(&anon, &format!("uid=dave,{PEOPLE}"), person("dave"), &[]),
        &["an anonymous client", "add", "ou=people,dc=example,dc=com"],
    );
    refused(
        h.add(&alice, &format!("uid=dave,{PEOPLE}"), person("dave"), &[]),
        &[ALICE],
    );
    assert_eq!(
        code(h.add(&admin, &format!("uid=dave,{PEOPLE}"), person("dave"), &[])),
        ResultCode::SUCCESS
    );
    // Modify: a user may replace their own password, nothing else.
    refused(
        h.describe(&alice, ALICE, "mine"),
        &["write", "`description`", ALICE],
    );
    refused(h.describe(&anon, ALICE, "x"), &["an anonymous client"]);
    let pw = |who: &As, dn: &str| {
        h.modify(
            who,
            dn,
            &[(ModifyOperation::Replace, "userPassword", &["new-pw"])],
            &[],
        )
    };
    assert_eq!(code(pw(&alice, ALICE)), ResultCode::SUCCESS);
    assert_hashes(&h.stored(ALICE)["userpassword"], "new-pw");
    assert_eq!(h.stored(ALICE)["modifiersname"], [ALICE]);
    refused(pw(&bob, ALICE), &["`userPassword`", ALICE]);
    refused(pw(&anon, ALICE), &["`userPassword`"]);
    // Adding a value needs `a`, deleting one `z`: self has both through `=wx`.
    assert_eq!(
        code(h.modify(
            &alice,
            ALICE,
            &[(ModifyOperation::Add, "userPassword", &["second-pw"])],
            &[]
        )),
        ResultCode::SUCCESS
    );
    assert_eq!(
        code(h.modify(
            &alice,
            ALICE,
            &[(ModifyOperation::Delete, "userPassword", &["second-pw"])],
            &[]
        )),
        ResultCode::SUCCESS
    );
    // Delete and rename.
    refused(
        h.delete(&bob, &format!("uid=dave,{PEOPLE}")),
        &["delete", "children", PEOPLE],
    );
    refused(
        h.delete(&anon, &format!("uid=dave,{PEOPLE}")),
        &["an anonymous client"],
    );
    refused(h.rename(&alice, ALICE, "uid=alicia", None), &["write"]);
    assert_eq!(
        code(h.delete(&admin, &format!("uid=dave,{PEOPLE}"))),
        ResultCode::SUCCESS
    );
    assert_eq!(
        code(h.rename(&admin, BOB, "uid=robert", None)),
        ResultCode::SUCCESS
    );
    // Nothing was changed by the refusals.
    assert_eq!(h.stored(ALICE)["description"], ["about alice"]);
}

#[test]
fn default_policy_read_controls_follow_read_access() {
    let h = Harness::new("");
    let alice = h.user(ALICE);
    let controls = h
        .modify(
            &alice,
            ALICE,
            &[(ModifyOperation::Replace, "userPassword", &["pw2"])],
            &[
                pre_read(&["userPassword", "cn"], true),
                post_read(&["*", "modifiersName"]),
            ],
        )
        .unwrap();
    let pre = controls.iter().find(|c| c.oid == PreReadResponse::OID).unwrap();
    let pre = PreReadResponse::decode_value(pre.value.as_deref()).unwrap();
    assert_eq!(attrs_of(&pre.entry).keys().collect::<Vec<_>>(), ["cn"]);
    let post = controls.iter().find(|c| c.oid == PostReadResponse::OID).unwrap();
    let post = PostReadResponse::decode_value(post.value.as_deref()).unwrap();
    let names = attrs_of(&post.entry);
    assert!(!names.contains_key("userpassword"), "{names:?}");
    assert_eq!(names["modifiersname"], [ALICE]);
    assert_eq!(names["cn"], ["Alice"]);
    // The admin reads it.
    let controls = h
        .modify(
            &h.admin(),
            ALICE,
            &[(ModifyOperation::Replace, "userPassword", &["pw3"])],
            &[pre_read(&["userPassword"], false)],
        )
        .unwrap();
    let pre = PreReadResponse::decode_value(controls[0].value.as_deref()).unwrap();
    assert_hashes(&attrs_of(&pre.entry)["userpassword"], "pw2");
}

// ---------------------------------------------------------------------------------------
// A custom rule set.

#[test]
fn custom_rules_search_as_each_requester() {
    let h = Harness::new(CUSTOM);
    let (anon, alice, bob, carol, admin) = (
        h.anonymous(),
        h.user(ALICE),
        h.user(BOB),
        h.user(CAROL),
        h.admin(),
    );
    // description of people: users only.
    let a = h.search(
        &anon,
        PEOPLE,
        SearchScope::OneLevel,
        "(objectClass=*)",
        &["cn", "description"],
    );
    assert_eq!(a.dns(), [ALICE, BOB, CAROL]);
    assert!(a.entries.values().all(|e| !e.contains_key("description")));
    for who in [&alice, &bob, &carol, &admin] {
        let a = h.search(
            who,
            PEOPLE,
            SearchScope::OneLevel,
            "(objectClass=*)",
            &["cn", "description"],
        );
        assert_eq!(a.entries[ALICE]["description"], ["about alice"]);
    }
    // A filter on it is Undefined for anonymous clients only.
    let a = h.search(
        &anon,
        PEOPLE,
        SearchScope::Subtree,
        "(description=about bob)",
        &["1.1"],
    );
    assert_eq!(a.dns(), Vec::<&str>::new());
    let a = h.search(
        &bob,
        PEOPLE,
        SearchScope::Subtree,
        "(description=about bob)",
        &["1.1"],
    );
    assert_eq!(a.dns(), [BOB]);
    // ou=secret: users get disclose (insufficientAccessRights), anonymous noSuchObject;
    // the subtree's entries are never returned.
    let a = h.search(&anon, SECRET, SearchScope::Subtree, "(objectClass=*)", &[]);
    assert_eq!(a.code, ResultCode::NO_SUCH_OBJECT.0, "{}", a.message);
    assert!(a.matched.is_empty());
    let a = h.search(&bob, SECRET, SearchScope::Base, "(objectClass=*)", &[]);
    assert_eq!(a.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS.0, "{}", a.message);
    let a = h.search(
        &anon,
        &format!("cn=missing,cn=plans,{SECRET}"),
        SearchScope::Base,
        "(objectClass=*)",
        &[],
    );
    assert_eq!(a.code, ResultCode::NO_SUCH_OBJECT.0);
    assert_eq!(a.matched, "", "the matched entry is not disclosed");
    let a = h.search(
        &bob,
        &format!("cn=missing,cn=plans,{SECRET}"),
        SearchScope::Base,
        "(objectClass=*)",
        &[],
    );
    assert_eq!(a.matched.to_ascii_lowercase(), format!("cn=plans,{SECRET}"));
    for who in [&anon, &bob] {
        let a = h.search(who, BASE, SearchScope::Subtree, "(objectClass=*)", &["1.1"]);
        assert_eq!(a.code, 0);
        assert!(!a.entries.keys().any(|d| d.ends_with(SECRET)), "{:?}", a.dns());
        assert_eq!(a.entries.len(), 8);
    }
    let a = h.search(&admin, SECRET, SearchScope::Subtree, "(objectClass=*)", &["1.1"]);
    assert_eq!(a.dns(), [format!("cn=plans,{SECRET}").as_str(), SECRET]);
    // Invisible entries do not count against the size limit.
    let a = h.search_with(
        &bob,
        BASE,
        SearchScope::Subtree,
        "(objectClass=*)",
        &["1.1"],
        false,
        8,
    );
    assert_eq!((a.code, a.entries.len()), (0, 8));
    let a = h.search_with(
        &bob,
        BASE,
        SearchScope::Subtree,
        "(objectClass=*)",
        &["1.1"],
        false,
        7,
    );
    assert_eq!((a.code, a.entries.len()), (ResultCode::SIZE_LIMIT_EXCEEDED.0, 7));
}

#[test]
fn custom_rules_writes_as_each_requester() {
    let h = Harness::new(CUSTOM);
    let (anon, alice, bob, carol, admin) = (
        h.anonymous(),
        h.user(ALICE),
        h.user(BOB),
        h.user(CAROL),
        h.admin(),
    );
    // self writes its own description; another user does not; the editor does.
    assert_eq!(code(h.describe(&alice, ALICE, "by alice")), ResultCode::SUCCESS);
    refused(
        h.describe(&alice, BOB, "by alice"),
        &[ALICE, "`description`", BOB],
    );
    refused(h.describe(&bob, ALICE, "by bob"), &[BOB]);
    refused(h.describe(&anon, ALICE, "x"), &["an anonymous client"]);
    assert_eq!(code(h.describe(&carol, ALICE, "by carol")), ResultCode::SUCCESS);
    assert_eq!(h.stored(ALICE)["description"], ["by carol"]);
    // Self may not write other attributes of its entry.
    refused(
        h.modify(
            &alice,
            ALICE,
            &[(ModifyOperation::Replace, "mail", &["a@x"])],
            &[],
        ),
        &["`mail`"],
    );
    // The editor adds, renames and deletes people; others may not.
    let dave = format!("uid=dave,{PEOPLE}");
    refused(
        h.add(&bob, &dave, person("dave"), &[]),
        &["add", "children", PEOPLE],
    );
    assert_eq!(
        code(h.add(&carol, &dave, person("dave"), &[])),
        ResultCode::SUCCESS
    );
    refused(h.rename(&bob, &dave, "uid=david", None), &["write", "children"]);
    assert_eq!(
        code(h.rename(&carol, &dave, "uid=david", None)),
        ResultCode::SUCCESS
    );
    let david = format!("uid=david,{PEOPLE}");
    assert_eq!(h.stored(&david)["uid"], ["david"]);
    // Moving out of people needs add on the new superior's children (ou=groups: read).
    refused(
        h.rename(&carol, &david, "uid=david", Some("ou=groups,dc=example,dc=com")),
        &["add", "ou=groups"],
    );
    refused(h.delete(&alice, &david), &["delete"]);
    assert_eq!(code(h.delete(&carol, &david)), ResultCode::SUCCESS);
    // Outside people the editor only reads.
    refused(
        h.add(
            &carol,
            "cn=x,ou=groups,dc=example,dc=com",
            attrs(&[("objectClass", &["organizationalRole"])]),
            &[],
        ),
        &["add"],
    );
    // Membership is read at each operation: once carol leaves the group, she may not.
    assert_eq!(
        code(h.modify(
            &admin,
            EDITORS,
            &[(ModifyOperation::Replace, "member", &[BOB])],
            &[]
        )),
        ResultCode::SUCCESS
    );
    refused(h.describe(&carol, ALICE, "again"), &[CAROL]);
    assert_eq!(code(h.describe(&bob, ALICE, "by bob now")), ResultCode::SUCCESS);
    // Compare: description is hidden from anonymous clients (who may know the entry).
    let e = h.compare(&anon, ALICE, "description", "by bob now").unwrap_err();
    assert_eq!(e.code, ResultCode::INSUFFICIENT_ACCESS_RIGHTS);
    assert_eq!(h.compare(&carol, ALICE, "description", "by bob now"), Ok(true));
    // In ou=secret: users know it exists, anonymous clients do not.
    let plans = format!("cn=plans,{SECRET}");
    assert_eq!(
        h.compare(&bob, &plans, "cn", "plans").unwrap_err().code,
        ResultCode::INSUFFICIENT_ACCESS_RIGHTS
    );
    let e = h.compare(&anon, &plans, "cn", "plans").unwrap_err();
    assert_eq!((e.code, e.matched_dn.as_str()), (ResultCode::NO_SUCH_OBJECT, ""));
    assert_eq!(h.compare(&admin, &plans, "cn", "plans"), Ok(true));
}

#[test]
fn custom_rules_pre_read_of_an_unreadable_entry() {
    // Editors may write in ou=secret but not read it.
    let h = Harness::new(
        r#"
[[access]]
dn = "ou=secret,dc=example,dc=com"
by = [{ group = "cn=editors,ou=groups,dc=example,dc=com", access = "=azi" }]

[[access]]
by = [{ who = "*", access = "read" }]
"#,
    );
    let carol = h.user(CAROL);
    let plans = format!("cn=plans,{SECRET}");
    let change = [(ModifyOperation::Replace, "description", &["x"][..])];
    // Non-critical: the control is left out; critical: the operation fails, unchanged.
    let controls = h
        .modify(&carol, &plans, &change, &[pre_read(&["cn"], false)])
        .unwrap();
    assert!(controls.is_empty(), "{controls:?}");
    refused(
        h.modify(
            &carol,
            &plans,
            &[(ModifyOperation::Replace, "description", &["y"])],
            &[pre_read(&["cn"], true)],
        ),
        &["pre-read", &plans],
    );
    assert_eq!(h.stored(&plans)["description"], ["x"]);
}

#[test]
fn peer_addresses_and_the_bind_check() {
    let h = Harness::new(
        r#"
[[access]]
attrs = ["userPassword"]
by = [{ who = "self", access = "=wx" }, { who = "anonymous", peer = "127.0.0.0/8", access = "auth" }]

[[access]]
attrs = ["description"]
by = [{ peer = "10.0.0.0/8", who = "users", access = "write" }, { who = "*", access = "read" }]

[[access]]
by = [{ who = "*", access = "read" }]
"#,
    );
    let from = |ip: &str, dn: &str| As {
        identity: h.identity(dn),
        client: Client::plain(SocketAddr::new(ip.parse().unwrap(), 40000)),
    };
    assert_eq!(
        code(h.describe(&from("10.9.8.7", BOB), ALICE, "inside")),
        ResultCode::SUCCESS
    );
    assert_eq!(
        code(h.describe(&from("::ffff:10.1.1.1", BOB), ALICE, "mapped")),
        ResultCode::SUCCESS
    );
    refused(h.describe(&from("192.168.1.1", BOB), ALICE, "outside"), &[BOB]);
    refused(h.describe(&h.user(BOB), ALICE, "no address"), &[BOB]);
    // Binds: auth only from loopback; the admin is exempt.
    let version = h.dir.store.current();
    // Checked both ways: with the entry the bind found, and looking the DN up.
    let bind = |ip: &str, dn: &str| {
        let client = Client::plain(SocketAddr::new(ip.parse().unwrap(), 40000));
        let identity = h.identity(dn);
        let found = identity.norm_dn().and_then(|n| version.find(n));
        let check = |entry| {
            check_bind(
                &h.dir.acl,
                &version,
                &identity,
                entry,
                &client,
                h.dir.user_password,
            )
        };
        let (looked_up, given) = (check(None), check(found));
        assert_eq!(
            looked_up.as_ref().err().map(|e| e.code),
            given.as_ref().err().map(|e| e.code)
        );
        given
    };
    assert!(bind("127.0.0.1", ALICE).is_ok());
    let e = bind("10.0.0.1", ALICE).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (ResultCode::INVALID_CREDENTIALS, "invalid credentials")
    );
    assert!(bind("10.0.0.1", ADMIN).is_ok());
}

// ---------------------------------------------------------------------------------------
// Proxied authorization.

#[test]
fn proxied_authorization_must_be_critical_and_apply() {
    let req = DelRequest { dn: ALICE.as_bytes() };
    let e = with_request(
        ProtocolOp::DelRequest(req),
        &[proxy("dn:x", false)],
        OpKind::Delete,
        |_, _| Ok(()),
    )
    .unwrap_err();
    assert_eq!(e.code, ResultCode::PROTOCOL_ERROR, "{e}");
    assert!(e.message.contains("critical"), "{e}");
    let parsed = with_request(
        ProtocolOp::DelRequest(req),
        &[proxy("dn:uid=alice", true)],
        OpKind::Delete,
        |_, c| Ok(c.proxied_authz.map(<[u8]>::to_vec)),
    )
    .unwrap();
    assert_eq!(parsed.as_deref(), Some(&b"dn:uid=alice"[..]));
    // Not on Bind: critical there, it is unavailable.
    let e = with_request(
        ProtocolOp::DelRequest(req),
        &[proxy("", true)],
        OpKind::Bind,
        |_, _| Ok(()),
    )
    .unwrap_err();
    assert_eq!(e.code, ResultCode::UNAVAILABLE_CRITICAL_EXTENSION);
    // Extended operations parse it (Password Modify and WhoAmI run as the identity);
    // the others refuse it.
    let e = with_request(
        ProtocolOp::DelRequest(req),
        &[proxy("", true)],
        OpKind::Extended,
        |_, c| c.refuse_proxied("Cancel"),
    )
    .unwrap_err();
    assert_eq!(e.code, ResultCode::UNAVAILABLE_CRITICAL_EXTENSION);
    assert!(e.message.contains("Cancel"), "{e}");
}

#[test]
fn proxied_authorization_allowed_and_refused() {
    let h = Harness::new(CUSTOM);
    let version = h.dir.store.current();
    let resolve = |who: &As, authz: &str| {
        proxied_identity(
            &h.dir.acl,
            &h.dir.admin_dn,
            &version,
            &who.identity,
            &who.client,
            authz.as_bytes(),
        )
    };
    let (alice, bob, admin) = (h.user(ALICE), h.user(BOB), h.admin());
    // Bob holds the right (access_proxy), the admin always does; alice and anonymous not.
    let as_alice = resolve(&bob, &format!("dn:{}", ALICE.to_uppercase())).unwrap();
    assert_eq!(as_alice, h.identity(ALICE));
    assert_eq!(
        resolve(&admin, &format!("dn:{CAROL}")).unwrap(),
        h.identity(CAROL)
    );
    assert_eq!(resolve(&bob, "").unwrap(), Identity::Anonymous);
    for (who, authz, fragment) in [
        (&alice, format!("dn:{BOB}"), "may not use proxied authorization"),
        (&h.anonymous(), format!("dn:{BOB}"), "an anonymous client may not"),
        (&bob, "u:alice".to_string(), "`u:` identities are not mapped"),
        (&bob, format!("dn:uid=nobody,{PEOPLE}"), "no such entry"),
        (&bob, "dn:not a dn".to_string(), "invalid DN"),
        (&bob, "alice".to_string(), "neither `dn:<DN>`"),
    ] {
        let e = resolve(who, &authz).unwrap_err();
        assert_eq!(e.code, ResultCode::AUTHORIZATION_DENIED, "{authz}: {e}");
        assert!(e.message.contains(fragment), "{e}");
    }
    // Proxying as the admin DN makes the admin.
    assert!(resolve(&bob, &format!("dn:{ADMIN}")).unwrap().is_admin());
    // The operation runs as the proxied identity: bob as alice may write alice's
    // description (self) and modifiersName is alice; as anonymous he may not.
    let proxied = As {
        identity: as_alice,
        client: Client::default(),
    };
    assert_eq!(code(h.describe(&proxied, ALICE, "via bob")), ResultCode::SUCCESS);
    assert_eq!(h.stored(ALICE)["modifiersname"], [ALICE]);
    refused(h.describe(&proxied, CAROL, "via bob"), &[ALICE]);
    let anonymous = As {
        identity: resolve(&bob, "").unwrap(),
        client: Client::default(),
    };
    refused(h.describe(&anonymous, BOB, "x"), &["an anonymous client"]);
    let a = h.search(
        &anonymous,
        PEOPLE,
        SearchScope::OneLevel,
        "(description=*)",
        &["description"],
    );
    assert!(a.entries.is_empty());
    // The default policy grants the right to nobody but the admin.
    let d = Harness::new("");
    let version = d.dir.store.current();
    let bob = d.user(BOB);
    let e = proxied_identity(
        &d.dir.acl,
        &d.dir.admin_dn,
        &version,
        &bob.identity,
        &bob.client,
        b"",
    )
    .unwrap_err();
    assert_eq!(e.code, ResultCode::AUTHORIZATION_DENIED);
    assert!(d.dir.acl.may_proxy(&d.identity(ADMIN), &Client::default()));
    assert!(!d.dir.acl.may_proxy(&bob.identity, &bob.client));
}

/// `values` is one userPassword value, a hash (new passwords are stored hashed) that
/// `cleartext` verifies against.
fn assert_hashes(values: &[String], cleartext: &str) {
    assert_eq!(values.len(), 1, "{values:?}");
    assert!(values[0].starts_with('{'), "stored in the clear: {values:?}");
    let settings = larch_server::config::PasswordSettings::default();
    assert!(
        password::verify(cleartext.as_bytes(), values[0].as_bytes(), &settings),
        "{values:?} is not a hash of {cleartext:?}"
    );
}
