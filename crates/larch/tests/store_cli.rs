//! `larch import`, `export`, `verify` and `snapshot` as an operator runs them: the binary on
//! data from `larch gen`, in a temporary directory.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use larch_store::ldif::{LdifReader, LdifRecord};
use serde_json::Value;

fn larch() -> Command {
    Command::new(env!("CARGO_BIN_EXE_larch"))
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("larch-store-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    larch().args(args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(
        out.status.success(),
        "larch {args:?} failed: {}\n{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    out
}

fn run_json(args: &[&str]) -> Value {
    let out = run_ok(args);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every record of an LDIF file: (DN, sorted (lower-case description, value) pairs).
type Records = Vec<(String, Vec<(String, Vec<u8>)>)>;

fn read_ldif(bytes: &[u8]) -> Records {
    LdifReader::new(bytes)
        .map(|r| match r.unwrap() {
            LdifRecord::Content { dn, attributes } => {
                let mut attrs: Vec<(String, Vec<u8>)> = attributes
                    .into_iter()
                    .map(|(d, v)| (d.to_ascii_lowercase(), v))
                    .collect();
                attrs.sort();
                (String::from_utf8(dn).unwrap(), attrs)
            }
            other => panic!("not a content record: {other:?}"),
        })
        .collect()
}

/// The parent DN of a DN without escaped commas (what `larch gen` writes).
fn parent(dn: &str) -> Option<&str> {
    dn.split_once(',').map(|(_, p)| p)
}

/// Checks that every entry's parent, when it is in the file, comes before it.
fn assert_parents_first(records: &Records) {
    let all: HashSet<&str> = records.iter().map(|(dn, _)| dn.as_str()).collect();
    let mut seen = HashSet::new();
    for (dn, _) in records {
        if let Some(p) = parent(dn).filter(|p| all.contains(p)) {
            assert!(seen.contains(p), "`{dn}` comes before its parent `{p}`");
        }
        seen.insert(dn.as_str());
    }
}

fn generate(dir: &Path, n: u64) -> PathBuf {
    let gen = dir.join("gen");
    run_ok(&["gen", "-n", &n.to_string(), "-o", s(&gen)]);
    gen.join("data.ldif")
}

/// Imports exactly as the LDIF says (no operational attributes added), so that export
/// gives the input back.
fn import(data: &Path, ldif: &Path) -> Value {
    run_json(&["import", "--data", s(data), "--json", "--no-operational", s(ldif)])
}

#[test]
fn import_adds_the_operational_attributes_an_entry_lacks() {
    let dir = temp_dir("opattrs");
    let ldif = dir.join("in.ldif");
    std::fs::write(
        &ldif,
        "dn: dc=example,dc=com\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: example\n\n\
         dn: ou=People,dc=example,dc=com\nobjectClass: organizationalUnit\nou: People\n\
         createTimestamp: 20200101000000Z\n",
    )
    .unwrap();
    let data = dir.join("data");
    let r = run_json(&[
        "import",
        "--data",
        s(&data),
        "--json",
        "--creator",
        "cn=loader,dc=example,dc=com",
        s(&ldif),
    ]);
    assert_eq!(r["entries"], 2, "{r}");
    let out = dir.join("out.ldif");
    run_ok(&["export", "--data", s(&data), "-o", s(&out)]);
    let exported: BTreeMap<_, _> = read_ldif(&std::fs::read(&out).unwrap()).into_iter().collect();
    let value = |dn: &str, attr: &str| -> Vec<String> {
        exported[dn]
            .iter()
            .filter(|(a, _)| a == attr)
            .map(|(_, v)| String::from_utf8(v.clone()).unwrap())
            .collect()
    };
    let people = "ou=People,dc=example,dc=com";
    assert_eq!(
        value(people, "createtimestamp"),
        ["20200101000000Z"],
        "a value in the LDIF is kept"
    );
    assert_eq!(value(people, "creatorsname"), ["cn=loader,dc=example,dc=com"]);
    assert_eq!(value(people, "structuralobjectclass"), ["organizationalUnit"]);
    assert_eq!(
        value("dc=example,dc=com", "structuralobjectclass"),
        ["organization"]
    );
    for dn in [people, "dc=example,dc=com"] {
        assert_eq!(value(dn, "entryuuid").len(), 1, "{dn}");
        assert_eq!(value(dn, "entrycsn").len(), 1, "{dn}");
        assert_eq!(value(dn, "modifytimestamp").len(), 1, "{dn}");
    }
    assert_ne!(
        value(people, "entryuuid"),
        value("dc=example,dc=com", "entryuuid")
    );
}

#[test]
fn import_verify_export_give_back_the_input() {
    let dir = temp_dir("round-trip");
    let ldif = generate(&dir, 2000);
    let data = dir.join("data");

    let r = import(&data, &ldif);
    assert_eq!(r["entries"], 2002, "{r}");
    assert!(r["snapshot_bytes"].as_u64().unwrap() > 0, "{r}");
    assert!(Path::new(r["snapshot"].as_str().unwrap()).is_file(), "{r}");

    let v = run_json(&["verify", "--data", s(&data), "--json"]);
    assert_eq!(v["entries"], 2002, "{v}");
    assert_eq!(v["check"]["ok"], true, "{v}");
    assert_eq!(v["replayed"], 0, "{v}");
    assert_eq!(v["wal_cut"], Value::Null, "{v}");
    assert_eq!(v["snapshot"]["path"], r["snapshot"], "{v}");
    let heap = &v["heap"];
    let parts: u64 = ["entries", "dn_index", "children", "attribute_indexes"]
        .iter()
        .map(|k| heap[k]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(parts, heap["total"]["bytes"].as_u64().unwrap(), "{v}");
    assert!(heap["entries"]["per_entry"].as_f64().unwrap() > 100.0, "{v}");
    let text_report = run_ok(&["verify", "--data", s(&data)]);
    let out = text(&text_report.stdout);
    assert!(out.contains("entries          2002"), "{out}");
    assert!(out.contains("check            ok"), "{out}");

    let input = read_ldif(&std::fs::read(&ldif).unwrap());
    assert_eq!(input.len(), 2002);
    let exported_path = dir.join("out.ldif");
    let e = run_ok(&["export", "--data", s(&data), "-o", s(&exported_path)]);
    assert!(
        text(&e.stderr).contains("exported 2002 entries"),
        "{}",
        text(&e.stderr)
    );
    let exported = read_ldif(&std::fs::read(&exported_path).unwrap());
    assert_eq!(exported.len(), input.len());
    assert_parents_first(&exported);
    let dns = |r: &Records| r.iter().map(|(dn, _)| dn.clone()).collect::<Vec<_>>();
    // `larch gen` writes a depth-first order with siblings in file order, which is the
    // order export walks (siblings by ID, IDs given in file order).
    assert_eq!(dns(&exported), dns(&input));
    let by_dn: BTreeMap<_, _> = input.iter().cloned().collect();
    for (dn, attrs) in &exported {
        assert_eq!(Some(attrs), by_dn.get(dn), "attributes of `{dn}` differ");
    }

    // To standard output, from a base.
    let sub = run_ok(&[
        "export",
        "--data",
        s(&data),
        "--base",
        "OU=people,dc=Example,DC=com",
    ]);
    let sub = read_ldif(&sub.stdout);
    assert_eq!(sub.len(), 2001);
    assert_eq!(sub[0].0, "ou=People,dc=example,dc=com");
    assert!(sub
        .iter()
        .all(|(dn, _)| dn.ends_with("ou=People,dc=example,dc=com")));
    assert_parents_first(&sub);

    let missing = run(&[
        "export",
        "--data",
        s(&data),
        "--base",
        "ou=Nobody,dc=example,dc=com",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("no such entry"),
        "{}",
        text(&missing.stderr)
    );

    let snap = run_ok(&["snapshot", "--data", s(&data)]);
    assert!(
        text(&snap.stdout).contains("already covers LSN 0"),
        "{}",
        text(&snap.stdout)
    );

    let again = run(&["import", "--data", s(&data), s(&ldif)]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already holds a directory"),
        "{}",
        text(&again.stderr)
    );
    // The refused import left the directory as it was.
    let v = run_json(&["verify", "--data", s(&data), "--json"]);
    assert_eq!(v["entries"], 2002, "{v}");

    let nowhere = run(&["verify", "--data", s(&dir.join("no-such-dir"))]);
    assert_eq!(nowhere.status.code(), Some(1));
    assert!(text(&nowhere.stderr).contains("not a data directory"));
    std::fs::remove_dir_all(&dir).unwrap();
}

const SMALL: &str = "dn: dc=example,dc=com
objectClass: domain
dc: example

dn: ou=People,dc=example,dc=com
objectClass: organizationalUnit
ou: People

dn: uid=a,ou=People,dc=example,dc=com
objectClass: account
uid: a
";

#[test]
fn import_from_stdin_and_refusals_name_the_line() {
    let dir = temp_dir("stdin");
    let data = dir.join("data");
    let mut child = larch()
        .args(["import", "--data", s(&data), "--json", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(SMALL.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["entries"], 3, "{r}");
    let v = run_json(&["verify", "--data", s(&data), "--json"]);
    assert_eq!(v["entries"], 3, "{v}");

    // The fourth record (line 13) uses an attribute the schema does not define.
    let bad = dir.join("bad.ldif");
    std::fs::write(
        &bad,
        format!(
            "{SMALL}\ndn: uid=b,ou=People,dc=example,dc=com\nobjectClass: account\nuid: b\nnoSuchType: x\n"
        ),
    )
    .unwrap();
    let refused = dir.join("refused");
    let out = run(&["import", "--data", s(&refused), s(&bad)]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("line 13"), "{err}");
    assert!(err.contains("noSuchType"), "{err}");
    assert!(
        std::fs::read_dir(refused.join("snapshots"))
            .unwrap()
            .next()
            .is_none(),
        "a refused import writes no snapshot"
    );

    // A child before its parent, with the suffix pinned.
    let orphan = dir.join("orphan.ldif");
    std::fs::write(
        &orphan,
        "dn: dc=example,dc=com\nobjectClass: domain\ndc: example\n\n\
         dn: uid=c,ou=Gone,dc=example,dc=com\nobjectClass: account\nuid: c\n",
    )
    .unwrap();
    let out = run(&[
        "import",
        "--data",
        s(&dir.join("orphan")),
        "--suffix",
        "dc=example,dc=com",
        s(&orphan),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("line 5") && err.contains("parent"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_snapshot_stops_verify_and_export_with_its_name() {
    let dir = temp_dir("damaged");
    let ldif = generate(&dir, 2000);
    let data = dir.join("data");
    import(&data, &ldif);
    let snaps: Vec<PathBuf> = std::fs::read_dir(data.join("snapshots"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "snap"))
        .collect();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    let snap = &snaps[0];
    let mut bytes = std::fs::read(snap).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(snap, &bytes).unwrap();
    let name = snap.file_name().unwrap().to_str().unwrap();
    for args in [
        vec!["verify", "--data", s(&data)],
        vec!["verify", "--data", s(&data), "--json"],
        vec!["export", "--data", s(&data)],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains(name) && err.contains("damaged"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
