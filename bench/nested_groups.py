#!/usr/bin/env python3
"""The nested-groups tree of docs/benchmarks.md ("Groups"): writes data.ldif, users.txt
(the user numbers, a value file for `larch bench`) and top.txt in the current directory.

100,000 users and 10,000 groupOfNames nested five levels deep (8,000 / 1,600 / 320 / 64 /
16 groups): a level-0 group lists 25 random users; a group above lists its share of the
groups of the level below (5, 5, 5 and 4: each lower group in exactly one) and 5 random
users."""
import random
random.seed(7)
BASE = "dc=example,dc=com"
USERS = 100_000
LEVELS = [8000, 1600, 320, 64, 16]
out = open("data.ldif", "w")
out.write(f"dn: {BASE}\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: example\n\n")
for ou in ("people", "groups"):
    out.write(f"dn: ou={ou},{BASE}\nobjectClass: organizationalUnit\nou: {ou}\n\n")
for i in range(USERS):
    out.write(f"dn: uid=u{i},ou=people,{BASE}\nobjectClass: inetOrgPerson\ncn: user {i}\nsn: {i}\nuid: u{i}\n\n")
user = lambda i: f"uid=u{i},ou=people,{BASE}"
names = []
for level, count in enumerate(LEVELS):
    names.append([f"cn=g{level}-{k},ou=groups,{BASE}" for k in range(count)])
for level, count in enumerate(LEVELS):
    for k in range(count):
        if level == 0:
            members = [user(u) for u in random.sample(range(USERS), 25)]
        else:
            share = LEVELS[level - 1] // count
            members = names[level - 1][k * share:(k + 1) * share] + [user(u) for u in random.sample(range(USERS), 5)]
        out.write(f"dn: {names[level][k]}\nobjectClass: groupOfNames\ncn: g{level}-{k}\n")
        for m in members:
            out.write(f"member: {m}\n")
        out.write("\n")
out.close()
open("users.txt", "w").write("\n".join(str(i) for i in range(USERS)) + "\n")
open("top.txt", "w").write("\n".join(str(k) for k in range(16)) + "\n")
