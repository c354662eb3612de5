"""Attribute uniqueness (docs/groups.md, "Uniqueness"): `uid` unique below the naming
context by default, `mail` where the operator lists it, refused with constraintViolation
(19) on Add, Modify and Modify DN, inside the write transaction.

Both servers also keep `employeeNumber` unique below one subtree only (`ou=numbered`): a
`[[uniqueness.rule]]` of its own in Larch, a third `unique_uri` with that base in slapd.

Against slapd the same tests run with its unique overlay configured alike
(`unique_uri ldap:///?uid?sub`, `ldap:///?mail?sub` and
`ldap:///ou=numbered,<suffix>?employeeNumber?sub`); what slapd 2.5 does differently is
marked: its overlay checks before the write's transaction, so concurrent adds of one value
can all pass.
"""

import shutil
import subprocess
import tempfile
import threading

import ldap3
import pytest

import conftest
from ldaputil import add_ok, assert_result, connect, ldif_entry, search_entries

NUMBERED = f"ou=numbered,{conftest.BASE}"
LARCH_TOML = ('[uniqueness]\nattributes = ["uid", "mail"]\n\n'
              f'[[uniqueness.rule]]\nattributes = ["employeeNumber"]\nsubtrees = ["{NUMBERED}"]\n')
SLAPD_GLOBAL = "moduleload unique"
SLAPD_DB = ("overlay unique\nunique_uri ldap:///?uid?sub\nunique_uri ldap:///?mail?sub\n"
            f"unique_uri ldap:///{NUMBERED}?employeeNumber?sub")
CONSTRAINT_VIOLATION = 19


@pytest.fixture(scope="module")
def unique_server(request):
    yield from conftest.module_server(request, "larch-e2e-unique-", larch_extra_toml=LARCH_TOML,
                                      slapd_extra_global=SLAPD_GLOBAL, slapd_extra_db=SLAPD_DB)


_counter = [0]


@pytest.fixture
def u(unique_server):
    """(admin connection, a fresh ou below the suffix, a name prefix unique to the test)."""
    _counter[0] += 1
    n = _counter[0]
    conn = connect(unique_server, unique_server.admin_dn, unique_server.admin_pw)
    top = f"ou=u{n},{conftest.BASE}"
    add_ok(conn, top, {"objectClass": ["organizationalUnit"], "ou": f"u{n}"})
    yield conn, top, f"t{n}"
    conn.unbind()


def person(uid, **extra):
    attrs = {"objectClass": ["inetOrgPerson"], "cn": uid, "sn": uid, "uid": uid}
    attrs.update(extra)
    return attrs


def refused(conn):
    assert conn.result["result"] == CONSTRAINT_VIOLATION, conn.result
    return conn.result["message"]


def test_add_of_a_taken_uid_is_refused_anywhere_below_the_suffix(u):
    conn, top, p = u
    add_ok(conn, f"uid={p}a,{top}", person(f"{p}a"))
    add_ok(conn, f"ou=other,{top}", {"objectClass": ["organizationalUnit"], "ou": "other"})
    # Another RDN, another subtree, the value spelled in another case (caseIgnoreMatch).
    assert not conn.add(f"cn={p}x,ou=other,{top}", attributes=person(f"{p.upper()}A", cn=f"{p}x"))
    refused(conn)
    # A value no entry holds is fine.
    add_ok(conn, f"cn={p}y,ou=other,{top}", person(f"{p}b", cn=f"{p}y"))


def test_modify_that_adds_a_taken_value_is_refused(u):
    conn, top, p = u
    add_ok(conn, f"uid={p}a,{top}", person(f"{p}a", mail=f"{p}a@example.com"))
    add_ok(conn, f"uid={p}b,{top}", person(f"{p}b"))
    assert not conn.modify(f"uid={p}b,{top}", {"uid": [(ldap3.MODIFY_ADD, [f"{p}a"])]})
    refused(conn)
    assert not conn.modify(f"uid={p}b,{top}", {"mail": [(ldap3.MODIFY_REPLACE, [f"{p}a@example.com"])]})
    refused(conn)
    # The entry's own value again, or a value it keeps, is no clash.
    assert conn.modify(f"uid={p}a,{top}", {"mail": [(ldap3.MODIFY_REPLACE, [f"{p}a@example.com", f"{p}z@example.com"])]}), conn.result
    assert conn.modify(f"uid={p}a,{top}", {"description": [(ldap3.MODIFY_ADD, ["x"])]}), conn.result


def test_modify_dn_whose_new_rdn_takes_a_value_is_refused(u):
    conn, top, p = u
    add_ok(conn, f"uid={p}a,{top}", person(f"{p}a"))
    add_ok(conn, f"ou=other,{top}", {"objectClass": ["organizationalUnit"], "ou": "other"})
    b = f"cn={p}b,ou=other,{top}"
    add_ok(conn, b, {"objectClass": ["inetOrgPerson"], "cn": [f"{p}b", "kept"], "sn": "b"})
    # The new RDN uid=<p>a adds the value (deleteoldrdn or not).
    assert not conn.modify_dn(b, f"uid={p}a", delete_old_dn=True)
    refused(conn)
    assert not conn.modify_dn(b, f"uid={p}a", delete_old_dn=False)
    refused(conn)
    # Renaming an entry to a value nobody holds is fine, and its old value is free again.
    assert conn.modify_dn(f"uid={p}a,{top}", f"uid={p}c", delete_old_dn=True), conn.result
    assert conn.modify_dn(b, f"uid={p}a", delete_old_dn=True), conn.result


def test_a_refusal_names_the_other_entry_to_the_admin(u, unique_server):
    conn, top, p = u
    add_ok(conn, f"uid={p}a,{top}", person(f"{p}a"))
    assert not conn.add(f"cn={p}b,{top}", attributes=person(f"{p}a", cn=f"{p}b"))
    message = refused(conn)
    if unique_server.kind == "larch":
        assert f"uid={p}a,{top}".lower() in message.lower(), message


@pytest.mark.not_slapd("slapd 2.5's unique overlay searches before the backend's write transaction: "
                       "concurrent adds of one uid were seen to pass together")
def test_concurrent_adds_of_one_uid_let_exactly_one_through(u, unique_server):
    conn, top, p = u
    tries = 8
    results = [None] * tries
    start = threading.Barrier(tries)

    def add(i):
        c = connect(unique_server, unique_server.admin_dn, unique_server.admin_pw)
        try:
            start.wait()
            c.add(f"cn={p}-{i},{top}", attributes=person(f"{p}same", cn=f"{p}-{i}"))
            results[i] = c.result["result"]
        finally:
            c.unbind()

    threads = [threading.Thread(target=add, args=(i,)) for i in range(tries)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [0] + [CONSTRAINT_VIOLATION] * (tries - 1), results
    res, entries = search_entries(conn, top, f"(uid={p}same)", attrs=["uid"])
    assert_result(res, "success")
    assert len(entries) == 1


def test_a_rule_with_its_own_subtree_sits_beside_the_tree_wide_rules(u):
    conn, top, p = u
    add_ok(conn, NUMBERED, {"objectClass": ["organizationalUnit"], "ou": "numbered"})
    add_ok(conn, f"uid={p}a,{NUMBERED}", person(f"{p}a", employeeNumber=f"{p}-1"))
    # employeeNumber: unique below ou=numbered ...
    assert not conn.add(f"uid={p}b,{NUMBERED}", attributes=person(f"{p}b", employeeNumber=f"{p}-1"))
    refused(conn)
    # ... and nowhere else: outside it two entries may share the number with the one inside.
    add_ok(conn, f"uid={p}c,{top}", person(f"{p}c", employeeNumber=f"{p}-1"))
    add_ok(conn, f"uid={p}d,{top}", person(f"{p}d", employeeNumber=f"{p}-1"))
    # uid stays unique in the whole tree, in and out of the rule's subtree.
    assert not conn.add(f"cn={p}x,{top}", attributes=person(f"{p}a", cn=f"{p}x"))
    refused(conn)
    assert not conn.add(f"cn={p}y,{NUMBERED}", attributes=person(f"{p}c", cn=f"{p}y"))
    refused(conn)
    # A Modify inside the subtree that takes the number is refused too.
    add_ok(conn, f"uid={p}e,{NUMBERED}", person(f"{p}e"))
    assert not conn.modify(f"uid={p}e,{NUMBERED}", {"employeeNumber": [(ldap3.MODIFY_ADD, [f"{p}-1"])]})
    refused(conn)


def test_ldapadd_reports_constraint_violation(u, unique_server):
    conn, top, p = u
    ldif = ldif_entry(f"uid={p}a,{top}", person(f"{p}a")) + "\n" + ldif_entry(f"cn={p}b,{top}", person(f"{p}a", cn=f"{p}b"))
    proc = subprocess.run(
        ["ldapadd", "-x", "-H", unique_server.url, "-D", unique_server.admin_dn, "-w", unique_server.admin_pw, "-c"],
        input=ldif, capture_output=True, text=True, timeout=60)
    assert proc.returncode == CONSTRAINT_VIOLATION, (proc.stdout, proc.stderr)
    assert "Constraint violation (19)" in proc.stderr, proc.stderr


@pytest.mark.larch_only("a refusal names the other entry only to a requester who may read it: Larch's access rules")
def test_a_refusal_does_not_name_an_entry_the_requester_cannot_read(make_extra_server):
    people = f"ou=people,{conftest.BASE}"
    hidden = f"ou=hidden,{conftest.BASE}"
    toml = f"""
[[access]]
dn = "{hidden}"
by = [{{ who = "admin", access = "manage" }}, {{ who = "*", access = "none" }}]
[[access]]
attrs = ["userPassword"]
by = [{{ who = "self", access = "write" }}, {{ who = "anonymous", access = "auth" }}]
[[access]]
by = [{{ who = "users", access = "write" }}, {{ who = "*", access = "read" }}]
"""
    srv = make_extra_server(larch_extra_toml=toml)
    admin = connect(srv, srv.admin_dn, srv.admin_pw)
    for ou in (people, hidden):
        add_ok(admin, ou, {"objectClass": ["organizationalUnit"], "ou": ou.split(",")[0][3:]})
    add_ok(admin, f"uid=writer,{people}", person("writer", userPassword="secret"))
    add_ok(admin, f"uid=visible,{people}", person("visible"))
    add_ok(admin, f"uid=secretagent,{hidden}", person("secretagent"))
    writer = connect(srv, f"uid=writer,{people}", "secret")
    assert not writer.add(f"cn=a,{people}", attributes=person("secretagent", cn="a"))
    message = refused(writer)
    assert "hidden" not in message.lower() and "another entry" in message, message
    assert not writer.add(f"cn=b,{people}", attributes=person("visible", cn="b"))
    message = refused(writer)
    assert f"uid=visible,{people}".lower() in message.lower(), message


@pytest.mark.larch_only("[uniqueness] subtrees and larch import's duplicate report")
def test_subtrees_scope_the_check(make_extra_server):
    toml = f'[uniqueness]\nattributes = ["mail"]\nsubtrees = ["ou=staff,{conftest.BASE}", "ou=roles,{conftest.BASE}"]\n'
    srv = make_extra_server(larch_extra_toml=toml)
    conn = connect(srv, srv.admin_dn, srv.admin_pw)
    for ou in ("staff", "roles", "misc"):
        add_ok(conn, f"ou={ou},{conftest.BASE}", {"objectClass": ["organizationalUnit"], "ou": ou})
    add_ok(conn, f"uid=a,ou=staff,{conftest.BASE}", person("a", mail="x@example.com"))
    # Each subtree on its own; outside every subtree nothing is checked; uid is no longer listed.
    add_ok(conn, f"cn=role,ou=roles,{conftest.BASE}", person("a", cn="role", mail="x@example.com"))
    add_ok(conn, f"cn=m,ou=misc,{conftest.BASE}", person("a", cn="m", mail="x@example.com"))
    assert not conn.add(f"uid=b,ou=staff,{conftest.BASE}", attributes=person("b", mail="X@example.com"))
    refused(conn)
    # Moving an entry into a subtree brings its values in: refused when one is taken there.
    assert not conn.modify_dn(f"cn=m,ou=misc,{conftest.BASE}", "cn=m", new_superior=f"ou=staff,{conftest.BASE}")
    refused(conn)


@pytest.mark.larch_only("larch import's duplicate report")
def test_import_reports_duplicates_and_refuses_them_when_strict(request):
    larch = request.config.getoption("--larch-bin")
    tmp = tempfile.mkdtemp(prefix="larch-e2e-unique-import-")
    try:
        ldif = "\n".join([
            ldif_entry(conftest.BASE, {"objectClass": ["dcObject", "organization"], "dc": "example", "o": "example"}),
            ldif_entry(f"ou=a,{conftest.BASE}", {"objectClass": ["organizationalUnit"], "ou": "a"}),
            ldif_entry(f"uid=dup,ou=a,{conftest.BASE}", person("dup")),
            ldif_entry(f"cn=other,{conftest.BASE}", person("DUP", cn="other")),
            ldif_entry(f"uid=single,{conftest.BASE}", person("single")),
        ])
        path = f"{tmp}/in.ldif"
        with open(path, "w") as f:
            f.write(ldif)
        p = subprocess.run([larch, "import", "--data", f"{tmp}/data", path], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        lines = [l for l in p.stderr.splitlines() if l.startswith("duplicate uid")]
        assert lines == [f"duplicate uid `DUP` below `{conftest.BASE}`: `uid=dup,ou=a,{conftest.BASE}` holds it, "
                         f"and so does `cn=other,{conftest.BASE}`"], p.stderr
        assert "1 duplicate values" in p.stdout, p.stdout
        p = subprocess.run([larch, "import", "--unique-strict", "--data", f"{tmp}/strict", path],
                           capture_output=True, text=True)
        assert p.returncode != 0 and "--unique-strict" in p.stderr, (p.stdout, p.stderr)
        # Nothing was left: the same directory imports again.
        p = subprocess.run([larch, "import", "--data", f"{tmp}/strict", path], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
