"""OpenLDAP's command-line clients (Debian's ldap-utils) against the server: each tool's
exit status is the LDAP result code (ldapcompare: 6 TRUE, 5 FALSE), and its output is what
the operation did."""

import pytest

from ldaputil import add_ok, assert_result, run_tool, search_entries, values


def admin_args(server):
    return ["-x", "-H", server.url, "-D", server.admin_dn, "-w", server.admin_pw]


def anon_args(server):
    return ["-x", "-H", server.url]


def ldif_dns(text):
    """The DNs of an LDIF output (unfolded), lowercased."""
    unfolded = text.replace("\n ", "")
    return [line[4:].strip().lower() for line in unfolded.splitlines() if line.startswith("dn: ")]


@pytest.fixture
def people(admin, subtree):
    for i, name in enumerate(["delta", "alpha", "charlie", "bravo"]):
        add_ok(admin, f"uid={name},{subtree}", {
            "objectClass": ["inetOrgPerson", "posixAccount"], "uid": name, "cn": name.title(), "sn": name,
            "uidNumber": str(500 - i * 10), "gidNumber": "1", "homeDirectory": f"/home/{name}"})
    return subtree


def test_ldapsearch(server, people):
    p = run_tool(["ldapsearch", *anon_args(server), "-LLL", "-b", people, "(uid=alpha)", "cn", "uidNumber"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n\n")[0].splitlines() == [f"dn: uid=alpha,{people}", "cn: Alpha", "uidNumber: 490"]


def test_ldapsearch_scopes_and_absolute_filters(server, people):
    p = run_tool(["ldapsearch", *anon_args(server), "-LLL", "-b", people, "-s", "one", "(&)", "1.1"])
    assert p.returncode == 0, p.stderr
    assert sorted(ldif_dns(p.stdout)) == sorted(f"uid={n},{people}" for n in ["alpha", "bravo", "charlie", "delta"])
    p = run_tool(["ldapsearch", *anon_args(server), "-LLL", "-b", people, "(|)", "1.1"])
    assert p.returncode == 0, p.stderr
    assert ldif_dns(p.stdout) == []
    p = run_tool(["ldapsearch", *anon_args(server), "-LLL", "-b", people, "-s", "base", "1.1"])
    assert ldif_dns(p.stdout) == [people]


def test_ldapsearch_missing_base(server, people):
    p = run_tool(["ldapsearch", *anon_args(server), "-b", f"ou=nope,{people}", "(objectClass=*)"])
    assert p.returncode == 32
    assert f"matcheddn: {people}" in p.stdout.replace("\n ", "").lower()


def test_ldapsearch_size_limit(server, people):
    p = run_tool(["ldapsearch", *anon_args(server), "-LLL", "-z", "2", "-b", people, "(objectClass=person)", "1.1"])
    assert p.returncode == 4
    assert len(ldif_dns(p.stdout)) == 2


def test_ldapsearch_sorted_and_paged(server, people):
    p = run_tool(["ldapsearch", *admin_args(server), "-LLL", "-b", people, "-E", "!sss=uidNumber",
                  "(objectClass=posixAccount)", "uidNumber"])
    assert p.returncode == 0, p.stderr
    nums = [int(line.split()[1]) for line in p.stdout.splitlines() if line.startswith("uidNumber:")]
    assert nums == [470, 480, 490, 500]
    p = run_tool(["ldapsearch", *admin_args(server), "-LLL", "-b", people, "-E", "pr=2/noprompt",
                  "(objectClass=posixAccount)", "1.1"])
    assert p.returncode == 0, p.stderr
    assert len(ldif_dns(p.stdout)) == 4
    assert p.stdout.count("# pagedresults: cookie=") == 2


def test_ldapsearch_wrong_password(server, people):
    p = run_tool(["ldapsearch", "-x", "-H", server.url, "-D", server.admin_dn, "-w", "wrong", "-b", people, "1.1"])
    assert p.returncode == 49


def test_ldapadd(server, admin, subtree, tmp_path):
    ldif = (f"dn: cn=added,{subtree}\nobjectClass: person\nsn: Added\ndescription: from ldapadd\n\n"
            f"dn: cn=second,{subtree}\nobjectClass: person\nsn: Second\n")
    path = tmp_path / "add.ldif"
    path.write_text(ldif)
    p = run_tool(["ldapadd", *admin_args(server), "-f", str(path)])
    assert p.returncode == 0, p.stderr
    res, entries = search_entries(admin, subtree, "(objectClass=person)", attrs=["sn", "description"])
    got = {e["dn"].lower(): (values(e, "sn"), values(e, "description")) for e in entries}
    assert got == {f"cn=added,{subtree}": (["Added"], ["from ldapadd"]), f"cn=second,{subtree}": (["Second"], [])}
    p = run_tool(["ldapadd", *admin_args(server), "-f", str(path)])
    assert p.returncode == 68
    p = run_tool(["ldapadd", *admin_args(server)], input_text=f"dn: cn=bad,{subtree}\nobjectClass: person\n")
    assert p.returncode == 65


def test_ldapmodify(server, admin, people):
    dn = f"uid=alpha,{people}"
    change = (f"dn: {dn}\nchangetype: modify\nadd: description\ndescription: one\ndescription: two\n-\n"
              f"replace: cn\ncn: Alpha Prime\n-\nincrement: uidNumber\nuidNumber: 5\n-\n")
    p = run_tool(["ldapmodify", *admin_args(server)], input_text=change)
    assert p.returncode == 0, p.stderr
    res, entries = search_entries(admin, dn, attrs=["description", "cn", "uidNumber"])
    e = entries[0]
    assert sorted(values(e, "description")) == ["one", "two"]
    assert values(e, "cn") == ["Alpha Prime"]
    assert values(e, "uidNumber") == ["495"]
    p = run_tool(["ldapmodify", *admin_args(server)],
                 input_text=f"dn: {dn}\nchangetype: modify\ndelete: description\ndescription: three\n-\n")
    assert p.returncode == 16
    p = run_tool(["ldapmodify", *admin_args(server), "-e", "!assert=(sn=nobody)"],
                 input_text=f"dn: {dn}\nchangetype: modify\nreplace: description\ndescription: never\n-\n")
    assert p.returncode == 122


def test_ldapmodify_pre_and_post_read(server, people):
    dn = f"uid=bravo,{people}"
    p = run_tool(["ldapmodify", *admin_args(server), "-e", "preread=cn", "-e", "postread=cn"],
                 input_text=f"dn: {dn}\nchangetype: modify\nreplace: cn\ncn: Bravo Two\n-\n")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    pre = out[out.index("# ==> preread"):out.index("# <== preread")]
    post = out[out.index("# ==> postread"):out.index("# <== postread")]
    assert "cn: Bravo\n" in pre and "cn: Bravo Two\n" in post


def test_ldapdelete(server, admin, people):
    p = run_tool(["ldapdelete", *admin_args(server), f"uid=delta,{people}"])
    assert p.returncode == 0, p.stderr
    admin.search(f"uid=delta,{people}", "(objectClass=*)")
    assert_result(admin, "noSuchObject")
    p = run_tool(["ldapdelete", *admin_args(server), f"uid=delta,{people}"])
    assert p.returncode == 32
    p = run_tool(["ldapdelete", *admin_args(server), people])
    assert p.returncode == 66
    # -r: the client deletes the subtree leaf by leaf.
    p = run_tool(["ldapdelete", *admin_args(server), "-r", people])
    assert p.returncode == 0, p.stderr
    admin.search(people, "(objectClass=*)")
    assert_result(admin, "noSuchObject")


def test_ldapmodrdn(server, admin, people):
    p = run_tool(["ldapmodrdn", *admin_args(server), "-r", f"uid=charlie,{people}", "uid=chuck"])
    assert p.returncode == 0, p.stderr
    res, entries = search_entries(admin, f"uid=chuck,{people}", attrs=["uid"])
    assert values(entries[0], "uid") == ["chuck"]
    p = run_tool(["ldapmodrdn", *admin_args(server), f"uid=chuck,{people}", "uid=bravo"])
    assert p.returncode == 68
    p = run_tool(["ldapmodrdn", *admin_args(server), "-s", f"ou=nowhere,{people}", f"uid=chuck,{people}",
                  "uid=chuck"])
    assert p.returncode == 32
    add_ok(admin, f"ou=sub,{people}", {"objectClass": ["organizationalUnit"], "ou": "sub"})
    p = run_tool(["ldapmodrdn", *admin_args(server), "-s", f"ou=sub,{people}", f"uid=chuck,{people}", "uid=chuck"])
    assert p.returncode == 0, p.stderr
    res, entries = search_entries(admin, f"ou=sub,{people}", "(uid=chuck)", attrs=["1.1"])
    assert [e["dn"].lower() for e in entries] == [f"uid=chuck,ou=sub,{people}"]


def test_ldapcompare(server, people):
    dn = f"uid=alpha,{people}"
    p = run_tool(["ldapcompare", *anon_args(server), dn, "sn:ALPHA"])
    assert p.returncode == 6 and p.stdout.strip() == "TRUE"
    p = run_tool(["ldapcompare", *anon_args(server), dn, "sn:beta"])
    assert p.returncode == 5 and p.stdout.strip() == "FALSE"
    p = run_tool(["ldapcompare", *anon_args(server), dn, "mail:x@example.com"])
    assert p.returncode == 16
    p = run_tool(["ldapcompare", *anon_args(server), f"uid=ghost,{people}", "sn:x"])
    assert p.returncode == 32


def test_ldapwhoami(server, admin, subtree):
    p = run_tool(["ldapwhoami", *admin_args(server)])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().lower() == f"dn:{server.admin_dn}"
    p = run_tool(["ldapwhoami", *anon_args(server)])
    assert p.returncode == 0 and p.stdout.strip() == "anonymous"
    dn = f"uid=cli,{subtree}"
    add_ok(admin, dn, {"objectClass": ["inetOrgPerson"], "uid": "cli", "cn": "Cli", "sn": "Cli",
                       "userPassword": "cli-pw"})
    p = run_tool(["ldapwhoami", "-x", "-H", server.url, "-D", dn, "-w", "cli-pw"])
    assert p.returncode == 0 and p.stdout.strip().lower() == f"dn:{dn}"
    p = run_tool(["ldapwhoami", "-x", "-H", server.url, "-D", dn, "-w", "nope"])
    assert p.returncode == 49


def test_ldapexop(server):
    p = run_tool(["ldapexop", *admin_args(server), "whoami"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().lower() == f"dn:{server.admin_dn}"
    p = run_tool(["ldapexop", *anon_args(server), "whoami"])
    assert p.returncode == 0 and p.stdout.strip() == "anonymous"
    # ldapexop exits 1 on any failure; the result code is in what it prints.
    p = run_tool(["ldapexop", *anon_args(server), "1.3.6.1.4.1.99999.7"])
    assert p.returncode != 0
    assert "(2)" in p.stderr  # protocolError, as ldap_err2string renders it
