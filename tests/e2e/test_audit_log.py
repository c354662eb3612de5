"""The audit log (`[audit_log]`): every committed change as an LDIF change record that
`ldapmodify` replays. A server with the audit log on receives writes of every kind, from
ldap3 and from ldapmodify, some of them refused; its audit log, replayed with `ldapmodify
-f` into a second, fresh server, gives the same entries (user attributes, compared as
`ldapsearch` prints them). After a restart the log goes on where it stopped."""

import re
import time

import ldap3
import pytest

from ldaputil import add_ok, assert_result, connect, run_tool

BASE = "dc=example,dc=com"
ROOT = f"ou=audit,{BASE}"
SUBTREE_DELETE = ("1.2.840.113556.1.4.805", True, None)
REFUSED = "REFUSED-VALUE"


def audit_path(srv):
    return srv.workdir / "data" / "logs" / "audit"


def ldapmodify(srv, ldif=None, path=None):
    args = ["ldapmodify", "-x", "-H", srv.url, "-D", srv.admin_dn, "-w", srv.admin_pw]
    if path is not None:
        args += ["-f", str(path)]
    return run_tool(args, input_text=ldif)


def dump(srv):
    """`ldapsearch` of every entry below the suffix with its user attributes, but the
    admin's (whose password hash differs between servers): a sorted list of (DN, sorted
    attribute lines), folded lines joined."""
    p = run_tool(["ldapsearch", "-x", "-LLL", "-o", "ldif-wrap=no", "-H", srv.url, "-D", srv.admin_dn,
                  "-w", srv.admin_pw, "-b", BASE, "-s", "sub", "(objectClass=*)", "*"])
    assert p.returncode == 0, p.stderr
    out = []
    for block in p.stdout.strip().split("\n\n"):
        lines = block.replace("\n ", "").splitlines()
        dn, attrs = lines[0], sorted(lines[1:])
        if dn.lower() != f"dn: {srv.admin_dn}".lower():
            out.append((dn.lower(), attrs))
    return sorted(out)


def wait_for_text(path, needle, deadline_s=30.0):
    """The audit log's text once it contains `needle`."""
    deadline = time.monotonic() + deadline_s
    while True:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        if needle in text:
            return text
        assert time.monotonic() < deadline, f"{needle!r} not in the audit log:\n{text}"
        time.sleep(0.05)


def refused(conn, name):
    assert conn.result["result"] != 0, conn.result
    assert_result(conn, name)


def write_everything(srv):
    """Writes of every kind, and a few refused ones, as the admin."""
    c = connect(srv, srv.admin_dn, srv.admin_pw)
    add_ok(c, ROOT, {"objectClass": ["organizationalUnit"], "ou": "audit"})
    for ou in ("people", "staff", "groups"):
        add_ok(c, f"ou={ou},{ROOT}", {"objectClass": ["organizationalUnit"], "ou": ou})
    people = f"ou=people,{ROOT}"
    add_ok(c, f"cn=Alice,{people}", {
        "objectClass": ["inetOrgPerson"], "sn": "Liddell",
        "description": [" starts with a space", "Zo\u00eb", "long " * 40],
        "telephoneNumber": "+1 555 0100", "mail": "alice@example.com",
        "userPassword": "alice-secret", "jpegPhoto": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00binary",
    })
    for cn in ("Bob", "Carol", "Dave"):
        add_ok(c, f"cn={cn},{people}", {"objectClass": ["inetOrgPerson"], "sn": cn.lower(), "description": "d"})
    add_ok(c, f"cn=Eve,ou=staff,{ROOT}", {"objectClass": ["person"], "sn": "eve"})
    for g in ("admins", "devs"):
        add_ok(c, f"cn={g},ou=groups,{ROOT}", {"objectClass": ["groupOfNames"], "member": f"cn=Bob,{people}"})

    # Refused: none of these may be in the audit log.
    c.add(f"cn=Alice,{people}", attributes={"objectClass": ["person"], "sn": "x", "description": REFUSED})
    refused(c, "entryAlreadyExists")
    c.modify(f"cn=Nobody,{people}", {"description": [(ldap3.MODIFY_REPLACE, [REFUSED])]})
    refused(c, "noSuchObject")
    c.modify(f"cn=Bob,{people}", {"description": [(ldap3.MODIFY_REPLACE, [REFUSED])], "sn": [(ldap3.MODIFY_DELETE, [])]})
    refused(c, "objectClassViolation")
    c.delete(people)
    refused(c, "notAllowedOnNonLeaf")

    c.modify(f"cn=Alice,{people}", {
        "description": [(ldap3.MODIFY_REPLACE, ["on leave"])],
        "title": [(ldap3.MODIFY_ADD, ["Engineer"])],
        "telephoneNumber": [(ldap3.MODIFY_DELETE, [])],
        "mail": [(ldap3.MODIFY_ADD, ["a@example.org"])],
    })
    assert_result(c, "success")
    c.modify(f"cn=Alice,{people}", {"mail": [(ldap3.MODIFY_DELETE, ["alice@example.com"])]})
    assert_result(c, "success")
    c.modify(f"cn=Bob,{people}", {"userPassword": [(ldap3.MODIFY_REPLACE, ["bob-new-secret"])]})
    assert_result(c, "success")
    # With ldapmodify too.
    p = ldapmodify(srv, f"dn: cn=Carol,{people}\nchangetype: modify\nadd: description\n"
                        f"description: from ldapmodify\n-\nreplace: sn\nsn: carol2\n-\n")
    assert p.returncode == 0, p.stderr

    # Renames: deleteoldrdn both ways, a new superior, a case change, a subtree move.
    for dn, rdn, delete_old, superior in [
        (f"cn=Alice,{people}", "cn=Alicia", True, None),
        (f"cn=Bob,{people}", "cn=Robert", False, None),
        (f"cn=Carol,{people}", "cn=Carol", True, f"ou=staff,{ROOT}"),
        (f"cn=Dave,{people}", "cn=DAVE", True, None),
        (f"cn=Eve,ou=staff,{ROOT}", "cn=Eve2", False, people),
        (f"ou=staff,{ROOT}", "ou=team", True, None),
    ]:
        c.modify_dn(dn, rdn, delete_old_dn=delete_old, new_superior=superior)
        assert_result(c, "success")
    c.modify(f"cn=Carol,ou=team,{ROOT}", {"description": [(ldap3.MODIFY_REPLACE, ["moved with the team"])]})
    assert_result(c, "success")
    p = ldapmodify(srv, f"dn: ou=team,{ROOT}\nchangetype: modrdn\nnewrdn: ou=crew\ndeleteoldrdn: 0\n"
                        f"newsuperior: ou=people,{ROOT}\n")
    assert p.returncode == 0, p.stderr

    # A modify that changes no value: its record has no modification.
    c.modify(f"cn=DAVE,{people}", {"description": [(ldap3.MODIFY_REPLACE, ["d"])]})
    assert_result(c, "success")

    # Deletes: a leaf, and a subtree with the subtree delete control.
    c.delete(f"cn=Robert,{people}")
    assert_result(c, "success")
    c.delete(f"ou=groups,{ROOT}", controls=[SUBTREE_DELETE])
    assert_result(c, "success")
    add_ok(c, f"ou=last,{ROOT}", {"objectClass": ["organizationalUnit"], "ou": "last"})
    c.unbind()


@pytest.mark.larch_only("the audit log is Larch's ([audit_log])")
def test_the_audit_log_replays_into_a_fresh_server(make_extra_server):
    src = make_extra_server(larch_extra_toml="\n[audit_log]\nenabled = true\n")
    write_everything(src)
    path = audit_path(src)
    text = wait_for_text(path, f"dn: ou=last,{ROOT}\nchangetype: add\n")
    expected = dump(src)

    assert text.startswith("# audit log started: ")
    assert REFUSED not in text
    for kind in ("add", "modify", "modrdn", "delete"):
        assert f"\nchangetype: {kind}\n" in text, kind
    assert "\nnewsuperior: " in text and "\ndeleteoldrdn: 0\n" in text and "\ndeleteoldrdn: 1\n" in text
    # Operational attributes a client cannot write are comments, not record lines.
    assert "\n# entryUUID: " in text and "\nentryUUID:" not in text and "\ncreateTimestamp:" not in text
    lsns = [int(n) for n in re.findall(r"^# lsn: (\d+)$", text, re.M)]
    assert lsns == sorted(lsns) and sorted(set(lsns)) == list(range(lsns[0], lsns[-1] + 1)), lsns

    dst = make_extra_server()
    p = ldapmodify(dst, path=path)
    assert p.returncode == 0, f"ldapmodify -f {path} failed ({p.returncode}): {p.stderr}\n{text}"
    assert dump(dst) == expected


@pytest.mark.larch_only("the audit log is Larch's ([audit_log])")
def test_the_audit_log_goes_on_after_a_restart(make_extra_server):
    srv = make_extra_server(larch_extra_toml="\n[audit_log]\nenabled = true\n")
    c = connect(srv, srv.admin_dn, srv.admin_pw)
    add_ok(c, f"ou=before,{BASE}", {"objectClass": ["organizationalUnit"], "ou": "before"})
    c.unbind()
    srv.restart()
    c = connect(srv, srv.admin_dn, srv.admin_pw)
    add_ok(c, f"ou=after,{BASE}", {"objectClass": ["organizationalUnit"], "ou": "after"})
    c.unbind()
    text = wait_for_text(audit_path(srv), f"dn: ou=after,{BASE}\n")
    starts = re.findall(r"^# audit log started: \S+, with the changes after lsn (\d+)$", text, re.M)
    lsns = [int(n) for n in re.findall(r"^# lsn: (\d+)$", text, re.M)]
    assert len(starts) == 2 and len(lsns) == 2, text
    # The second start follows the last change written before it: nothing lost, nothing twice.
    assert int(starts[1]) == lsns[0] and lsns[1] == lsns[0] + 1, text
