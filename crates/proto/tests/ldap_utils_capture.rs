//! PDUs sent by the real OpenLDAP command-line clients (Debian `ldap-utils`), decoded by
//! larch-proto and checked field by field against what was given on the command line or in
//! the LDIF.
//!
//! Two tests share one table of scenarios ([`SCENARIOS`]):
//! - `live_*`: start a tiny fake LDAP server on `127.0.0.1:0` (a thread that frames with
//!   [`frame`], decodes every PDU, records its raw bytes and answers with responses
//!   encoded by larch-proto), run the real client against it with a timeout, and check every
//!   captured PDU and the client's exit status. With `LARCH_UPDATE_CAPTURES=1` the captured
//!   PDUs are (re)written to `tests/captures/` (see the README there).
//! - `fixtures_decode_exactly`: decode the committed captures with the same checks, so they
//!   are verified on machines without ldap-utils.
//!
//! When `ldapsearch` is not on `PATH` the live tests skip, unless `LARCH_REQUIRE_LDAP_UTILS=1`
//! is set, in which case they fail.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use larch_proto::controls::{
    oid, Assertion, Control, ControlValue, ManageDsaIt, PagedResults, PostReadRequest, PostReadResponse,
    PreReadRequest, PreReadResponse, SortRequest, SortResponse,
};
use larch_proto::exop::{self, CancelRequest, ExtendedValue, PasswordModifyRequest, PasswordModifyResponse};
use larch_proto::frame::{frame, Frame};
use larch_proto::limits::DEFAULT_MAX_PDU_BYTES;
use larch_proto::{
    Authentication, BindResponse, Change, DerefAliases, ExtendedResponse, FilterNode, LdapMessage,
    LdapResult, ModifyOperation, PartialAttribute, ProtocolOp, ResultCode, SearchRequest, SearchResultEntry,
    SearchScope, SeqOf, Substring,
};

// ---------------------------------------------------------------------------------------------
// The scenarios: command lines, LDIF, and what each PDU the client sends must contain.
// ---------------------------------------------------------------------------------------------

const ADMIN_DN: &str = "cn=admin,dc=example,dc=com";
const ADMIN_PW: &str = "secret";
const ALICE: &str = "uid=alice,ou=People,dc=example,dc=com";
/// The password the fake server "generates" for a Password Modify without a new password.
const GENERATED_PASSWORD: &str = "gen-Pa55-w0rd";
/// The authzId the fake server answers to "Who am I?".
const WHOAMI_ANSWER: &str = "dn:cn=admin,dc=example,dc=com";

/// The paged-search filter of the task description: and, or, not, substrings, present,
/// greaterOrEqual, approx and an extensible match in one filter.
const PAGED_FILTER: &str =
    "(&(objectClass=inetOrgPerson)(|(cn=Al*ce)(!(mail=*)))(uid>=a)(sn~=smith)(cn:caseExactMatch:=X))";
/// Escapes, several `any` parts, lessOrEqual, `:dn` with and without a rule, UTF-8.
const ESCAPES_FILTER: &str = r"(|(cn=a\2a\28b\29)(cn=*x*y*)(createTimestamp<=20240101000000Z)(:dn:2.5.13.5:=Y)(ou:dn:=People)(o=caf\c3\a9))";
/// How larch-proto's `Display` writes [`ESCAPES_FILTER`] back: RFC 4515 escapes for `*()`,
/// valid UTF-8 as is.
const ESCAPES_FILTER_DISPLAY: &str = r"(|(cn=a\2a\28b\29)(cn=*x*y*)(createTimestamp<=20240101000000Z)(:dn:2.5.13.5:=Y)(ou:dn:=People)(o=café))";

const MODIFY_LDIF: &str = "\
dn: uid=alice,ou=People,dc=example,dc=com
changetype: modify
add: mail
mail: alice@example.com
mail: alice2@example.com
-
delete: description
-
delete: telephoneNumber
telephoneNumber: +1 555 0100
-
replace: sn
sn: Liddell
-
replace: seeAlso
-
increment: uidNumber
uidNumber: 5
-

dn: uid=old,ou=People,dc=example,dc=com
changetype: delete
";

const ADD_LDIF: &str = "\
dn: uid=bob,ou=People,dc=example,dc=com
objectClass: top
objectClass: person
objectClass: inetOrgPerson
uid: bob
cn: Bob Builder
sn: Builder
description:: w6kgYWJj
jpegPhoto:: /9j/4AAQSkZJRg==
";

/// The checks one PDU must pass; they panic, naming the field, on any difference.
type Check = fn(&LdapMessage<'_>);

struct Scenario {
    /// Also the prefix of the fixture files.
    name: &'static str,
    program: &'static str,
    /// `{URI}` is replaced by `ldap://127.0.0.1:<port>`.
    args: &'static [&'static str],
    stdin: Option<&'static str>,
    /// Every PDU the client sends, in order.
    pdus: &'static [(&'static str, Check)],
    /// Text the client must print (proves it understood larch-proto's responses).
    stdout_contains: &'static [&'static str],
    /// The exit status the client must end with: 0 except where the tool reports the
    /// operation's result code (see the scenario).
    exit_code: i32,
    /// Text the client must print on stderr.
    stderr_contains: &'static [&'static str],
}

/// Arguments shared by the scenarios that bind as the administrator (`{URI}` is replaced).
macro_rules! admin {
    ($($arg:expr),* $(,)?) => {
        &["-x", "-H", "{URI}", "-D", ADMIN_DN, "-w", ADMIN_PW, $($arg),*]
    };
}

#[rustfmt::skip]
const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "ldapsearch-paged",
        program: "ldapsearch",
        args: admin!["-b", "ou=People,dc=example,dc=com", "-s", "sub", "-z", "10", "-l", "5",
                     "-E", "pr=5/noprompt", PAGED_FILTER, "cn", "mail"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("search", check_paged_search), ("unbind", check_unbind)],
        // The client parsed larch-proto's entry and paged-results response control.
        stdout_contains: &["dn: uid=alice,ou=People,dc=example,dc=com", "cn: Alice Liddell",
                           "pagedresults: estimate=1 cookie="],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapsearch-escapes",
        program: "ldapsearch",
        // Anonymous: no -D / -w.
        args: &["-x", "-H", "{URI}", "-b", "dc=example,dc=com", "-s", "one", "-a", "always", "-A",
                ESCAPES_FILTER, "1.1"],
        stdin: None,
        pdus: &[("bind", check_anonymous_bind), ("search", check_escapes_search), ("unbind", check_unbind)],
        stdout_contains: &["dn: uid=alice,ou=People,dc=example,dc=com"],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapsearch-children",
        program: "ldapsearch",
        args: admin!["-b", "dc=example,dc=com", "-s", "children", "-a", "find", "-z", "none", "-l", "max",
                     "(!(!(objectClass=*)))", "*", "+"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("search", check_children_search), ("unbind", check_unbind)],
        stdout_contains: &["dn: uid=alice,ou=People,dc=example,dc=com"],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapsearch-controls",
        program: "ldapsearch",
        // `pr` and `sss` are search extensions (-E); -e only takes the general ones.
        args: admin!["-b", "dc=example,dc=com", "-s", "base", "-e", "!manageDSAit", "-e", "assert=(cn=x)",
                     "-e", "relax", "-e", "!noop", "-E", "sss=cn", "-E", "!pr=10", "(objectClass=*)"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("search", check_controls_search), ("unbind", check_unbind)],
        // The client parsed larch-proto's paged-results and sort response controls.
        stdout_contains: &["dn: uid=alice,ou=People,dc=example,dc=com", "pagedresults: estimate=1 cookie=",
                           "sortResult: (0) Success"],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapsearch-readentry",
        program: "ldapsearch",
        // Pre-/post-read are general controls, so ldapsearch sends them too (they only mean
        // something on updates; the server ignores them on a search).
        args: admin!["-b", ALICE, "-s", "base", "-e", "preread=cn", "-e", "!postread=cn,mail",
                     "(objectClass=*)", "cn"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("search", check_readentry_search), ("unbind", check_unbind)],
        stdout_contains: &["dn: uid=alice,ou=People,dc=example,dc=com"],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapmodify",
        program: "ldapmodify",
        args: admin!["-e", "preread=cn", "-e", "postread=cn,sn"],
        stdin: Some(MODIFY_LDIF),
        pdus: &[("bind", check_admin_bind), ("modify", check_modify), ("delete", check_modify_ldif_delete),
                ("unbind", check_unbind)],
        // The client printed the entries of larch-proto's pre-read and post-read responses.
        stdout_contains: &[
            "modifying entry \"uid=alice,ou=People,dc=example,dc=com\"",
            "deleting entry \"uid=old,ou=People,dc=example,dc=com\"",
            "# ==> preread\ndn: uid=alice,ou=People,dc=example,dc=com\ncn: Alice Liddell\n# <== preread",
            "# ==> postread\ndn: uid=alice,ou=People,dc=example,dc=com\ncn: Alice Liddell\n# <== postread",
        ],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapadd",
        program: "ldapadd",
        args: admin![],
        stdin: Some(ADD_LDIF),
        pdus: &[("bind", check_admin_bind), ("add", check_add), ("unbind", check_unbind)],
        stdout_contains: &["adding new entry \"uid=bob,ou=People,dc=example,dc=com\""],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapdelete",
        program: "ldapdelete",
        args: admin!["uid=carol,ou=People,dc=example,dc=com", r"cn=R\C3\A9my\2C Jr.,ou=People,dc=example,dc=com"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("delete-1", check_delete_carol), ("delete-2", check_delete_remy),
                ("unbind", check_unbind)],
        stdout_contains: &[],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapmodrdn",
        program: "ldapmodrdn",
        args: admin!["-r", "-s", "ou=Staff,dc=example,dc=com", ALICE, "uid=alice2"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("modrdn", check_modrdn), ("unbind", check_unbind)],
        stdout_contains: &[],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapcompare",
        program: "ldapcompare",
        args: admin![ALICE, "title:Chief Engineer"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("compare", check_compare), ("unbind", check_unbind)],
        stdout_contains: &["TRUE"],
        // ldapcompare(1): "The result code of the compare is provided as the exit code"; the
        // fake server answers compareTrue (6), so 6 is ldapcompare's normal, successful exit.
        exit_code: 6,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapcompare-base64",
        program: "ldapcompare",
        args: admin![ALICE, "jpegPhoto::/9j/4AAQ"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("compare", check_compare_base64), ("unbind", check_unbind)],
        stdout_contains: &["TRUE"],
        exit_code: 6, // compareTrue, as above
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapwhoami",
        program: "ldapwhoami",
        args: admin![],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("whoami", check_whoami), ("unbind", check_unbind)],
        // The client printed the authzId of larch-proto's response.
        stdout_contains: &[WHOAMI_ANSWER],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldappasswd",
        program: "ldappasswd",
        // -a / -s give the old and new password on the command line (-A / -S prompt for them
        // on a terminal, which a test does not have; the PDU is the same).
        args: admin!["-a", "old-Pw", "-s", "new-Pw", ALICE],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("passwd", check_passwd_full), ("unbind", check_unbind)],
        stdout_contains: &[],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldappasswd-generate",
        program: "ldappasswd",
        args: admin![],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("passwd", check_passwd_empty), ("unbind", check_unbind)],
        // The client decoded the genPasswd of larch-proto's PasswdModifyResponseValue.
        stdout_contains: &["New password: gen-Pa55-w0rd"], // GENERATED_PASSWORD
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapexop-whoami",
        program: "ldapexop",
        args: admin!["whoami"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("whoami", check_whoami), ("unbind", check_unbind)],
        stdout_contains: &[WHOAMI_ANSWER],
        exit_code: 0,
        stderr_contains: &[],
    },
    Scenario {
        name: "ldapexop-cancel",
        program: "ldapexop",
        args: admin!["cancel", "4711"],
        stdin: None,
        pdus: &[("bind", check_admin_bind), ("cancel", check_cancel), ("unbind", check_unbind)],
        stdout_contains: &[],
        // The fake server answers noSuchOperation (119), what RFC 3909 prescribes for an
        // unknown cancelID; ldapexop 2.5 reports it and exits with 1. It cannot exit 0 after a
        // cancel: on `success` it reaches `assert(0)` in ldapexop.c.
        exit_code: 1,
        stderr_contains: &["No Operation to Cancel (119)"],
    },
    Scenario {
        name: "ldapexop-custom",
        program: "ldapexop",
        args: &["-x", "-H", "{URI}", "1.3.6.1.4.1.32473.1:hello, world"],
        stdin: None,
        pdus: &[("bind", check_anonymous_bind), ("extended", check_custom_exop), ("unbind", check_unbind)],
        stdout_contains: &["# extended operation response"],
        exit_code: 0,
        stderr_contains: &[],
    },
];

// ---------------------------------------------------------------------------------------------
// Checks, one per PDU kind. They panic with a message naming the field on any difference.
// ---------------------------------------------------------------------------------------------

fn txt(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn texts(s: SeqOf<'_, &[u8]>) -> Vec<String> {
    s.iter().map(txt).collect()
}

fn no_controls(m: &LdapMessage<'_>) {
    assert!(m.controls.is_none(), "unexpected controls: {:?}", m.controls);
}

/// The OIDs of the message's controls, sorted (clients do not promise an order).
fn control_oids(m: &LdapMessage<'_>) -> Vec<String> {
    let mut oids: Vec<String> = m.controls().iter().map(|c| txt(c.oid)).collect();
    oids.sort();
    oids
}

fn control<'a>(m: &LdapMessage<'a>, oid: &str) -> Control<'a> {
    let mut found = m.controls().iter().filter(|c| c.oid == oid.as_bytes());
    let c = found
        .next()
        .unwrap_or_else(|| panic!("no control {oid} in {:?}", control_oids(m)));
    assert!(found.next().is_none(), "control {oid} sent twice");
    c
}

fn check_bind(m: &LdapMessage<'_>, name: &str, password: &str) {
    let ProtocolOp::BindRequest(b) = m.op else {
        panic!("expected a BindRequest, got {}", m.op.name())
    };
    assert_eq!(m.message_id, 1, "the bind is the first operation");
    assert_eq!(b.version, 3);
    assert_eq!(txt(b.name), name);
    assert_eq!(b.authentication, Authentication::Simple(password.as_bytes()));
    no_controls(m);
}

fn check_admin_bind(m: &LdapMessage<'_>) {
    check_bind(m, ADMIN_DN, ADMIN_PW);
}

fn check_anonymous_bind(m: &LdapMessage<'_>) {
    check_bind(m, "", "");
}

fn check_unbind(m: &LdapMessage<'_>) {
    assert_eq!(m.op, ProtocolOp::UnbindRequest);
    assert!(m.message_id > 1);
    no_controls(m);
}

fn search<'a>(m: &LdapMessage<'a>) -> SearchRequest<'a> {
    match m.op {
        ProtocolOp::SearchRequest(s) => s,
        other => panic!("expected a SearchRequest, got {}", other.name()),
    }
}

fn check_paged_search(m: &LdapMessage<'_>) {
    let s = search(m);
    assert_eq!(m.message_id, 2);
    assert_eq!(txt(s.base), "ou=People,dc=example,dc=com");
    assert_eq!(s.scope, SearchScope::Subtree);
    assert_eq!(s.deref_aliases, DerefAliases::Never);
    assert_eq!(s.size_limit, 10);
    assert_eq!(s.time_limit, 5);
    assert!(!s.types_only);
    assert_eq!(s.filter.to_string(), PAGED_FILTER);
    assert_eq!(texts(s.attributes), ["cn", "mail"]);

    // The filter's structure, node by node, not only its text.
    let FilterNode::And(parts) = s.filter.node() else {
        panic!("top node is not `and`")
    };
    let parts: Vec<_> = parts.iter().map(|f| f.node()).collect();
    assert_eq!(parts.len(), 5);
    let FilterNode::Equality(oc) = parts[0] else {
        panic!("{:?}", parts[0])
    };
    assert_eq!(
        (txt(oc.description), txt(oc.value)),
        ("objectClass".into(), "inetOrgPerson".into())
    );
    let FilterNode::Or(or) = parts[1] else {
        panic!("{:?}", parts[1])
    };
    let or: Vec<_> = or.iter().map(|f| f.node()).collect();
    let FilterNode::Substrings(sub) = or[0] else {
        panic!("{:?}", or[0])
    };
    assert_eq!(txt(sub.description), "cn");
    assert_eq!(
        sub.substrings.iter().collect::<Vec<_>>(),
        [Substring::Initial(b"Al"), Substring::Final(b"ce")]
    );
    let FilterNode::Not(not) = or[1] else {
        panic!("{:?}", or[1])
    };
    assert_eq!(not.node(), FilterNode::Present(b"mail"));
    let FilterNode::GreaterOrEqual(ge) = parts[2] else {
        panic!("{:?}", parts[2])
    };
    assert_eq!((ge.description, ge.value), (&b"uid"[..], &b"a"[..]));
    let FilterNode::Approx(ap) = parts[3] else {
        panic!("{:?}", parts[3])
    };
    assert_eq!((ap.description, ap.value), (&b"sn"[..], &b"smith"[..]));
    let FilterNode::Extensible(ext) = parts[4] else {
        panic!("{:?}", parts[4])
    };
    assert_eq!(ext.rule, Some(&b"caseExactMatch"[..]));
    assert_eq!(ext.description, Some(&b"cn"[..]));
    assert_eq!(ext.value, b"X");
    assert!(!ext.dn_attributes);

    assert_eq!(control_oids(m), [oid::PAGED_RESULTS]);
    let paged = control(m, oid::PAGED_RESULTS);
    assert!(!paged.critical, "pr=5 without `!` is not critical");
    assert_eq!(
        PagedResults::from_control(&paged).unwrap(),
        PagedResults { size: 5, cookie: b"" }
    );
}

fn check_escapes_search(m: &LdapMessage<'_>) {
    let s = search(m);
    assert_eq!(txt(s.base), "dc=example,dc=com");
    assert_eq!(s.scope, SearchScope::OneLevel);
    assert_eq!(s.deref_aliases, DerefAliases::Always);
    assert_eq!((s.size_limit, s.time_limit), (0, 0));
    assert!(s.types_only, "-A asks for types only");
    assert_eq!(s.filter.to_string(), ESCAPES_FILTER_DISPLAY);
    assert_eq!(texts(s.attributes), ["1.1"]);
    let FilterNode::Or(parts) = s.filter.node() else {
        panic!("top node is not `or`")
    };
    let parts: Vec<_> = parts.iter().map(|f| f.node()).collect();
    // The escapes arrive as the raw octets they stand for.
    let FilterNode::Equality(a) = parts[0] else {
        panic!("{:?}", parts[0])
    };
    assert_eq!(a.value, b"a*(b)");
    let FilterNode::Substrings(sub) = parts[1] else {
        panic!("{:?}", parts[1])
    };
    assert_eq!(
        sub.substrings.iter().collect::<Vec<_>>(),
        [Substring::Any(b"x"), Substring::Any(b"y")]
    );
    let FilterNode::LessOrEqual(le) = parts[2] else {
        panic!("{:?}", parts[2])
    };
    assert_eq!(le.value, b"20240101000000Z");
    let FilterNode::Extensible(e) = parts[3] else {
        panic!("{:?}", parts[3])
    };
    assert_eq!(
        (e.rule, e.description, e.value, e.dn_attributes),
        (Some(&b"2.5.13.5"[..]), None, &b"Y"[..], true)
    );
    let FilterNode::Extensible(e) = parts[4] else {
        panic!("{:?}", parts[4])
    };
    assert_eq!(
        (e.rule, e.description, e.value, e.dn_attributes),
        (None, Some(&b"ou"[..]), &b"People"[..], true)
    );
    let FilterNode::Equality(o) = parts[5] else {
        panic!("{:?}", parts[5])
    };
    assert_eq!(o.value, "café".as_bytes());
    no_controls(m);
}

fn check_children_search(m: &LdapMessage<'_>) {
    let s = search(m);
    assert_eq!(txt(s.base), "dc=example,dc=com");
    assert_eq!(s.scope, SearchScope::Subordinate);
    assert_eq!(s.deref_aliases, DerefAliases::FindingBaseObject);
    // `-z none` is 0 ("no client limit") on the wire, `-l max` is maxInt.
    assert_eq!((s.size_limit, s.time_limit), (0, i32::MAX as u32));
    assert!(!s.types_only);
    assert_eq!(s.filter.to_string(), "(!(!(objectClass=*)))");
    assert_eq!(texts(s.attributes), ["*", "+"]);
    no_controls(m);
}

/// OID of the Relax Rules control as OpenLDAP sends it (draft-zeilenga-ldap-relax).
const RELAX_OID: &str = "1.3.6.1.4.1.4203.666.5.12";
/// OID of the No-Op control as OpenLDAP sends it (draft-zeilenga-ldap-noop).
const NOOP_OID: &str = "1.3.6.1.4.1.4203.666.5.2";

fn check_controls_search(m: &LdapMessage<'_>) {
    let s = search(m);
    assert_eq!(txt(s.base), "dc=example,dc=com");
    assert_eq!(s.scope, SearchScope::Base);
    assert_eq!(s.filter.to_string(), "(objectClass=*)");
    assert!(s.attributes.is_empty());

    let mut expected = vec![
        oid::MANAGE_DSA_IT,
        oid::ASSERTION,
        RELAX_OID,
        NOOP_OID,
        oid::SORT_REQUEST,
        oid::PAGED_RESULTS,
    ];
    expected.sort_unstable();
    assert_eq!(control_oids(m), expected);

    let c = control(m, oid::MANAGE_DSA_IT);
    assert!(c.critical, "!manageDSAit is critical");
    ManageDsaIt::from_control(&c).unwrap();

    let c = control(m, oid::ASSERTION);
    assert!(!c.critical);
    assert_eq!(Assertion::from_control(&c).unwrap().filter.to_string(), "(cn=x)");

    let c = control(m, RELAX_OID);
    assert!(!c.critical);
    assert_eq!(c.value, None);

    let c = control(m, NOOP_OID);
    assert!(c.critical, "!noop is critical");
    assert_eq!(c.value, None);

    let c = control(m, oid::SORT_REQUEST);
    assert!(!c.critical);
    let keys: Vec<_> = SortRequest::from_control(&c).unwrap().keys.iter().collect();
    assert_eq!(keys.len(), 1);
    assert_eq!(
        (keys[0].attribute, keys[0].ordering_rule, keys[0].reverse),
        (&b"cn"[..], None, false)
    );

    let c = control(m, oid::PAGED_RESULTS);
    assert!(c.critical, "!pr=10 is critical");
    assert_eq!(
        PagedResults::from_control(&c).unwrap(),
        PagedResults {
            size: 10,
            cookie: b""
        }
    );
}

fn check_readentry_search(m: &LdapMessage<'_>) {
    let s = search(m);
    assert_eq!(txt(s.base), ALICE);
    assert_eq!(s.scope, SearchScope::Base);
    assert_eq!(s.filter.to_string(), "(objectClass=*)");
    assert_eq!(texts(s.attributes), ["cn"]);
    assert_eq!(control_oids(m), [oid::PRE_READ, oid::POST_READ]);
    let pre = control(m, oid::PRE_READ);
    assert!(!pre.critical);
    assert_eq!(
        texts(PreReadRequest::from_control(&pre).unwrap().attributes),
        ["cn"]
    );
    let post = control(m, oid::POST_READ);
    assert!(post.critical, "!postread is critical");
    assert_eq!(
        texts(PostReadRequest::from_control(&post).unwrap().attributes),
        ["cn", "mail"]
    );
}

fn changes<'a>(m: &LdapMessage<'a>) -> (String, Vec<Change<'a>>) {
    let ProtocolOp::ModifyRequest(r) = m.op else {
        panic!("expected a ModifyRequest, got {}", m.op.name())
    };
    (txt(r.object), r.changes.iter().collect())
}

fn check_modify(m: &LdapMessage<'_>) {
    let (object, changes) = changes(m);
    assert_eq!(object, ALICE);
    let got: Vec<(ModifyOperation, String, Vec<String>)> = changes
        .iter()
        .map(|c| {
            (
                c.operation,
                txt(c.modification.description),
                texts(c.modification.values),
            )
        })
        .collect();
    let want: Vec<(ModifyOperation, String, Vec<String>)> = [
        (
            ModifyOperation::Add,
            "mail",
            &["alice@example.com", "alice2@example.com"][..],
        ),
        (ModifyOperation::Delete, "description", &[]),
        (ModifyOperation::Delete, "telephoneNumber", &["+1 555 0100"]),
        (ModifyOperation::Replace, "sn", &["Liddell"]),
        (ModifyOperation::Replace, "seeAlso", &[]),
        (ModifyOperation::Increment, "uidNumber", &["5"]),
    ]
    .iter()
    .map(|(op, a, v)| (*op, a.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(got, want);
    check_read_entry_controls(m);
}

fn check_read_entry_controls(m: &LdapMessage<'_>) {
    assert_eq!(control_oids(m), [oid::PRE_READ, oid::POST_READ]);
    let pre = control(m, oid::PRE_READ);
    assert!(!pre.critical);
    assert_eq!(
        texts(PreReadRequest::from_control(&pre).unwrap().attributes),
        ["cn"]
    );
    let post = control(m, oid::POST_READ);
    assert!(!post.critical);
    assert_eq!(
        texts(PostReadRequest::from_control(&post).unwrap().attributes),
        ["cn", "sn"]
    );
}

fn check_modify_ldif_delete(m: &LdapMessage<'_>) {
    let ProtocolOp::DelRequest(d) = m.op else {
        panic!("expected a DelRequest, got {}", m.op.name())
    };
    assert_eq!(txt(d.dn), "uid=old,ou=People,dc=example,dc=com");
    // ldapmodify sends the -e controls with every operation.
    check_read_entry_controls(m);
}

fn check_add(m: &LdapMessage<'_>) {
    let ProtocolOp::AddRequest(a) = m.op else {
        panic!("expected an AddRequest, got {}", m.op.name())
    };
    assert_eq!(txt(a.entry), "uid=bob,ou=People,dc=example,dc=com");
    let got: Vec<(String, Vec<Vec<u8>>)> = a
        .attributes
        .iter()
        .map(|p: PartialAttribute<'_>| (txt(p.description), p.values.iter().map(<[u8]>::to_vec).collect()))
        .collect();
    let want: Vec<(String, Vec<Vec<u8>>)> = vec![
        (
            "objectClass".into(),
            vec![b"top".to_vec(), b"person".to_vec(), b"inetOrgPerson".to_vec()],
        ),
        ("uid".into(), vec![b"bob".to_vec()]),
        ("cn".into(), vec![b"Bob Builder".to_vec()]),
        ("sn".into(), vec![b"Builder".to_vec()]),
        // base64 in the LDIF, raw octets on the wire
        ("description".into(), vec!["é abc".as_bytes().to_vec()]),
        (
            "jpegPhoto".into(),
            vec![vec![0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, b'J', b'F', b'I', b'F']],
        ),
    ];
    assert_eq!(got, want);
    no_controls(m);
}

fn check_delete(m: &LdapMessage<'_>, dn: &[u8]) {
    let ProtocolOp::DelRequest(d) = m.op else {
        panic!("expected a DelRequest, got {}", m.op.name())
    };
    assert_eq!(txt(d.dn), txt(dn));
    no_controls(m);
}

fn check_delete_carol(m: &LdapMessage<'_>) {
    assert_eq!(m.message_id, 2);
    check_delete(m, b"uid=carol,ou=People,dc=example,dc=com");
}

fn check_delete_remy(m: &LdapMessage<'_>) {
    assert_eq!(m.message_id, 3);
    // The DN string is sent as given: the client does not unescape or normalise it.
    check_delete(m, br"cn=R\C3\A9my\2C Jr.,ou=People,dc=example,dc=com");
}

fn check_modrdn(m: &LdapMessage<'_>) {
    let ProtocolOp::ModifyDnRequest(r) = m.op else {
        panic!("expected a ModifyDNRequest, got {}", m.op.name())
    };
    assert_eq!(txt(r.entry), ALICE);
    assert_eq!(txt(r.new_rdn), "uid=alice2");
    assert!(r.delete_old_rdn, "-r removes the old RDN");
    assert_eq!(
        r.new_superior.map(txt).as_deref(),
        Some("ou=Staff,dc=example,dc=com")
    );
    no_controls(m);
}

fn check_compare(m: &LdapMessage<'_>) {
    let ProtocolOp::CompareRequest(c) = m.op else {
        panic!("expected a CompareRequest, got {}", m.op.name())
    };
    assert_eq!(txt(c.entry), ALICE);
    assert_eq!(
        (txt(c.ava.description), txt(c.ava.value)),
        ("title".into(), "Chief Engineer".into())
    );
    no_controls(m);
}

fn check_compare_base64(m: &LdapMessage<'_>) {
    let ProtocolOp::CompareRequest(c) = m.op else {
        panic!("expected a CompareRequest, got {}", m.op.name())
    };
    assert_eq!(txt(c.entry), ALICE);
    assert_eq!(txt(c.ava.description), "jpegPhoto");
    assert_eq!(c.ava.value, [0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]);
    no_controls(m);
}

fn extended<'a>(m: &LdapMessage<'a>) -> larch_proto::ExtendedRequest<'a> {
    match m.op {
        ProtocolOp::ExtendedRequest(e) => e,
        other => panic!("expected an ExtendedRequest, got {}", other.name()),
    }
}

fn check_whoami(m: &LdapMessage<'_>) {
    let e = extended(m);
    assert_eq!(txt(e.name), exop::WHO_AM_I);
    assert_eq!(e.value, None, "RFC 4532: the request has no value");
    no_controls(m);
}

fn check_passwd_full(m: &LdapMessage<'_>) {
    let e = extended(m);
    assert_eq!(txt(e.name), exop::PASSWORD_MODIFY);
    assert_eq!(
        PasswordModifyRequest::decode_value(e.value).unwrap(),
        PasswordModifyRequest {
            user_identity: Some(ALICE.as_bytes()),
            old_password: Some(b"old-Pw"),
            new_password: Some(b"new-Pw"),
        }
    );
    no_controls(m);
}

fn check_passwd_empty(m: &LdapMessage<'_>) {
    let e = extended(m);
    assert_eq!(txt(e.name), exop::PASSWORD_MODIFY);
    assert_eq!(
        PasswordModifyRequest::decode_value(e.value).unwrap(),
        PasswordModifyRequest::default()
    );
    no_controls(m);
}

fn check_cancel(m: &LdapMessage<'_>) {
    let e = extended(m);
    assert_eq!(txt(e.name), exop::CANCEL);
    assert_eq!(
        CancelRequest::decode_value(e.value).unwrap(),
        CancelRequest { cancel_id: 4711 }
    );
    no_controls(m);
}

fn check_custom_exop(m: &LdapMessage<'_>) {
    let e = extended(m);
    assert_eq!(txt(e.name), "1.3.6.1.4.1.32473.1");
    assert_eq!(e.value, Some(&b"hello, world"[..]));
    no_controls(m);
}

// ---------------------------------------------------------------------------------------------
// The fake server.
// ---------------------------------------------------------------------------------------------

/// What the server saw: the raw PDUs in order, or why it gave up.
type Captured = Result<Vec<Vec<u8>>, String>;

const IO_TIMEOUT: Duration = Duration::from_secs(20);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

fn spawn_server(listener: TcpListener) -> thread::JoinHandle<Captured> {
    thread::spawn(move || {
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + IO_TIMEOUT;
        let stream = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err("no client connected".into());
                    }
                    thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(format!("accept: {e}")),
            }
        };
        serve(stream)
    })
}

fn serve(mut stream: TcpStream) -> Captured {
    stream.set_nonblocking(false).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut captured = Vec::new();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let mut out = Vec::new();
    loop {
        loop {
            let n = match frame(&buf, DEFAULT_MAX_PDU_BYTES) {
                Ok(Frame::Complete(n)) => n,
                Ok(Frame::Incomplete { .. }) => break,
                Err(e) => return Err(format!("framing failed: {e}")),
            };
            let pdu: Vec<u8> = buf.drain(..n).collect();
            let msg = LdapMessage::decode(&pdu).map_err(|e| format!("decode failed: {e} ({pdu:02x?})"))?;
            out.clear();
            let done = respond(&msg, &mut out);
            captured.push(pdu.clone());
            if done {
                return Ok(captured);
            }
            stream.write_all(&out).map_err(|e| format!("write: {e}"))?;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(captured),
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

fn has_control(m: &LdapMessage<'_>, oid: &str) -> bool {
    m.controls().iter().any(|c| c.oid == oid.as_bytes())
}

/// Appends the responses to `m` to `out`; returns true on Unbind.
fn respond(m: &LdapMessage<'_>, out: &mut Vec<u8>) -> bool {
    let id = m.message_id;
    let ok = LdapResult::success();
    let reply = |op: ProtocolOp<'_>, out: &mut Vec<u8>| LdapMessage::new(id, op).encode(out);
    match m.op {
        ProtocolOp::UnbindRequest => return true,
        ProtocolOp::AbandonRequest(_) => {}
        ProtocolOp::BindRequest(_) => reply(
            ProtocolOp::BindResponse(BindResponse {
                result: ok,
                server_sasl_creds: None,
            }),
            out,
        ),
        ProtocolOp::SearchRequest(_) => {
            let cn: [&[u8]; 1] = [b"Alice Liddell"];
            let mail: [&[u8]; 1] = [b"alice@example.com"];
            let attrs = [
                PartialAttribute {
                    description: b"cn",
                    values: SeqOf::from_items(&cn),
                },
                PartialAttribute {
                    description: b"mail",
                    values: SeqOf::from_items(&mail),
                },
            ];
            let entry = SearchResultEntry {
                object_name: ALICE.as_bytes(),
                attributes: SeqOf::from_items(&attrs),
            };
            reply(ProtocolOp::SearchResultEntry(entry), out);
            let (mut paged_buf, mut sort_buf) = (Vec::new(), Vec::new());
            let mut controls = Vec::new();
            if has_control(m, oid::PAGED_RESULTS) {
                // Estimated total 1, empty cookie: the search is over.
                controls.push(Control::typed(
                    &PagedResults { size: 1, cookie: b"" },
                    false,
                    &mut paged_buf,
                ));
            }
            if has_control(m, oid::SORT_REQUEST) {
                let sorted = SortResponse {
                    result: ResultCode::SUCCESS,
                    attribute: None,
                };
                controls.push(Control::typed(&sorted, false, &mut sort_buf));
            }
            let mut done = LdapMessage::new(id, ProtocolOp::SearchResultDone(ok));
            if !controls.is_empty() {
                done.controls = Some(SeqOf::from_items(&controls));
            }
            done.encode(out);
        }
        ProtocolOp::ModifyRequest(_) | ProtocolOp::DelRequest(_) => {
            // Answer pre-read / post-read requests with the entry (RFC 4527).
            let cn: [&[u8]; 1] = [b"Alice Liddell"];
            let attrs = [PartialAttribute {
                description: b"cn",
                values: SeqOf::from_items(&cn),
            }];
            let entry = SearchResultEntry {
                object_name: ALICE.as_bytes(),
                attributes: SeqOf::from_items(&attrs),
            };
            let (mut pre_buf, mut post_buf) = (Vec::new(), Vec::new());
            let mut controls = Vec::new();
            if has_control(m, oid::PRE_READ) {
                controls.push(Control::typed(&PreReadResponse { entry }, false, &mut pre_buf));
            }
            if has_control(m, oid::POST_READ) {
                controls.push(Control::typed(&PostReadResponse { entry }, false, &mut post_buf));
            }
            let op = match m.op {
                ProtocolOp::ModifyRequest(_) => ProtocolOp::ModifyResponse(ok),
                _ => ProtocolOp::DelResponse(ok),
            };
            let mut msg = LdapMessage::new(id, op);
            if !controls.is_empty() {
                msg.controls = Some(SeqOf::from_items(&controls));
            }
            msg.encode(out);
        }
        ProtocolOp::AddRequest(_) => reply(ProtocolOp::AddResponse(ok), out),
        ProtocolOp::ModifyDnRequest(_) => reply(ProtocolOp::ModifyDnResponse(ok), out),
        ProtocolOp::CompareRequest(_) => reply(
            ProtocolOp::CompareResponse(LdapResult::new(ResultCode::COMPARE_TRUE, b"", b"")),
            out,
        ),
        ProtocolOp::ExtendedRequest(e) if e.name == exop::CANCEL.as_bytes() => {
            let result = LdapResult::new(ResultCode::NO_SUCH_OPERATION, b"", b"");
            reply(
                ProtocolOp::ExtendedResponse(ExtendedResponse {
                    result,
                    name: None,
                    value: None,
                }),
                out,
            );
        }
        ProtocolOp::ExtendedRequest(e) => {
            let mut value_buf = Vec::new();
            let (name, value) = if e.name == exop::WHO_AM_I.as_bytes() {
                (None, Some(WHOAMI_ANSWER.as_bytes()))
            } else if e.name == exop::PASSWORD_MODIFY.as_bytes() {
                let asked = PasswordModifyRequest::decode_value(e.value).unwrap_or_default();
                let generated = match asked.new_password {
                    Some(_) => None,
                    None => Some(GENERATED_PASSWORD.as_bytes()),
                };
                let has = PasswordModifyResponse {
                    generated_password: generated,
                }
                .encode_value(&mut value_buf);
                (None, has.then_some(&value_buf[..]))
            } else {
                (None, None)
            };
            let resp = ExtendedResponse {
                result: ok,
                name,
                value,
            };
            reply(ProtocolOp::ExtendedResponse(resp), out);
        }
        _ => reply(
            ProtocolOp::ExtendedResponse(ExtendedResponse {
                result: LdapResult::new(ResultCode::PROTOCOL_ERROR, b"", b"not a request"),
                name: None,
                value: None,
            }),
            out,
        ),
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Running a client.
// ---------------------------------------------------------------------------------------------

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// True when the live tests should run; false (after saying so) when they should skip.
fn ldap_utils_available() -> bool {
    if find_on_path("ldapsearch").is_some() {
        return true;
    }
    if std::env::var("LARCH_REQUIRE_LDAP_UTILS").as_deref() == Ok("1") {
        panic!(
            "LARCH_REQUIRE_LDAP_UTILS=1 but `ldapsearch` is not on PATH: install the Debian \
             package ldap-utils (apt-get install -y ldap-utils)"
        );
    }
    eprintln!(
        "skipped: ldap-utils (ldapsearch) is not on PATH; set LARCH_REQUIRE_LDAP_UTILS=1 to require it"
    );
    false
}

struct ClientRun {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn read_all_in_thread(mut r: impl Read + Send + 'static) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        let _ = tx.send(v);
    });
    rx
}

fn run_client(program: &str, args: &[String], stdin: Option<&str>) -> ClientRun {
    let mut child = Command::new(program)
        .args(args)
        // Ignore ldap.conf / .ldaprc so the environment cannot change what is sent.
        .env("LDAPNOINIT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("write stdin");
    }
    drop(input);
    let out = read_all_in_thread(child.stdout.take().expect("stdout"));
    let err = read_all_in_thread(child.stderr.take().expect("stderr"));
    let deadline = Instant::now() + CLIENT_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            // Only this child, by its handle.
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not finish within {CLIENT_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let collect = |rx: mpsc::Receiver<Vec<u8>>| txt(&rx.recv_timeout(IO_TIMEOUT).unwrap_or_default());
    ClientRun {
        status,
        stdout: collect(out),
        stderr: collect(err),
    }
}

fn captures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/captures")
}

fn fixture_name(s: &Scenario, index: usize, what: &str) -> String {
    format!("{}-{}-{}.bin", s.name, index + 1, what)
}

fn run_live(name: &str) {
    if !ldap_utils_available() {
        return;
    }
    let s = SCENARIOS.iter().find(|s| s.name == name).expect("scenario");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let uri = format!("ldap://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let server = spawn_server(listener);
    let args: Vec<String> = s.args.iter().map(|a| a.replace("{URI}", &uri)).collect();
    let run = run_client(s.program, &args, s.stdin);
    let captured = server.join().expect("server thread panicked");
    let context = format!(
        "{} {:?}\nexit: {}\nstdout:\n{}\nstderr:\n{}",
        s.program, args, run.status, run.stdout, run.stderr
    );
    let pdus = captured.unwrap_or_else(|e| panic!("fake server: {e}\n{context}"));
    assert_eq!(
        run.status.code(),
        Some(s.exit_code),
        "unexpected exit status\n{context}"
    );
    for text in s.stdout_contains {
        assert!(run.stdout.contains(text), "stdout lacks {text:?}\n{context}");
    }
    for text in s.stderr_contains {
        assert!(run.stderr.contains(text), "stderr lacks {text:?}\n{context}");
    }
    assert_eq!(
        pdus.len(),
        s.pdus.len(),
        "expected PDUs {:?}, got {:?}\n{context}",
        s.pdus.iter().map(|p| p.0).collect::<Vec<_>>(),
        pdus.iter()
            .map(|p| LdapMessage::decode(p).map(|m| m.op.name()))
            .collect::<Vec<_>>()
    );
    let update = std::env::var("LARCH_UPDATE_CAPTURES").as_deref() == Ok("1");
    for (i, (pdu, (what, check))) in pdus.iter().zip(s.pdus).enumerate() {
        let msg = LdapMessage::decode(pdu).expect("decoded by the server already");
        check(&msg);
        check_round_trip(pdu, &msg);
        let path = captures_dir().join(fixture_name(s, i, what));
        if update {
            std::fs::write(&path, pdu).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        } else if std::fs::read(&path).ok().as_deref() != Some(&pdu[..]) {
            // Another ldap-utils version may encode differently; the checks above are what
            // counts. Say so, so that the fixtures can be refreshed deliberately.
            eprintln!("note: {} differs from this run's capture", path.display());
        }
    }
}

/// Re-encoding a decoded message gives bytes that decode to the same message.
fn check_round_trip(pdu: &[u8], msg: &LdapMessage<'_>) {
    let mut again = Vec::new();
    msg.encode(&mut again);
    assert_eq!(
        LdapMessage::decode(&again).as_ref(),
        Ok(msg),
        "round trip of {pdu:02x?}"
    );
}

#[test]
fn live_ldapsearch_paged() {
    run_live("ldapsearch-paged");
}

#[test]
fn live_ldapsearch_escapes() {
    run_live("ldapsearch-escapes");
}

#[test]
fn live_ldapsearch_children() {
    run_live("ldapsearch-children");
}

#[test]
fn live_ldapsearch_controls() {
    run_live("ldapsearch-controls");
}

#[test]
fn live_ldapsearch_readentry() {
    run_live("ldapsearch-readentry");
}

#[test]
fn live_ldapmodify() {
    run_live("ldapmodify");
}

#[test]
fn live_ldapadd() {
    run_live("ldapadd");
}

#[test]
fn live_ldapdelete() {
    run_live("ldapdelete");
}

#[test]
fn live_ldapmodrdn() {
    run_live("ldapmodrdn");
}

#[test]
fn live_ldapcompare() {
    run_live("ldapcompare");
}

#[test]
fn live_ldapcompare_base64() {
    run_live("ldapcompare-base64");
}

#[test]
fn live_ldapwhoami() {
    run_live("ldapwhoami");
}

#[test]
fn live_ldappasswd() {
    run_live("ldappasswd");
}

#[test]
fn live_ldappasswd_generate() {
    run_live("ldappasswd-generate");
}

#[test]
fn live_ldapexop_whoami() {
    run_live("ldapexop-whoami");
}

#[test]
fn live_ldapexop_cancel() {
    run_live("ldapexop-cancel");
}

#[test]
fn live_ldapexop_custom() {
    run_live("ldapexop-custom");
}

/// Every scenario has a live test above (so none is silently left out).
#[test]
fn every_scenario_has_a_live_test() {
    let src = include_str!("ldap_utils_capture.rs");
    for s in SCENARIOS {
        let call = format!("run_live(\"{}\");", s.name);
        assert!(src.contains(&call), "no live test calls {call}");
    }
}

// ---------------------------------------------------------------------------------------------
// The committed captures, checked without ldap-utils.
// ---------------------------------------------------------------------------------------------

#[test]
fn fixtures_decode_exactly() {
    let dir = captures_dir();
    let mut expected = Vec::new();
    for s in SCENARIOS {
        for (i, (what, check)) in s.pdus.iter().enumerate() {
            let name = fixture_name(s, i, what);
            let path = dir.join(&name);
            let pdu =
                std::fs::read(&path).unwrap_or_else(|e| panic!("missing fixture {}: {e}", path.display()));
            assert_eq!(
                frame(&pdu, DEFAULT_MAX_PDU_BYTES),
                Ok(Frame::Complete(pdu.len())),
                "{name}: one PDU"
            );
            let msg = LdapMessage::decode(&pdu).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(msg.op.is_request(), "{name}");
            check(&msg);
            check_round_trip(&pdu, &msg);
            expected.push(name);
        }
    }
    // No stray fixture that no scenario checks, and the README names every file.
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("captures/README.md");
    let mut present: Vec<String> = std::fs::read_dir(&dir)
        .expect("captures dir")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bin"))
        .collect();
    present.sort();
    expected.sort();
    assert_eq!(present, expected, "fixtures on disk vs. scenarios");
    for name in &expected {
        assert!(
            readme.contains(name.as_str()),
            "README.md does not mention {name}"
        );
    }
}
