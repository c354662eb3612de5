//! The layering of `larch-server`: the ordered list of top-level modules at the top of
//! `src/lib.rs` ("Layers, from the bottom up") says which module may use which. This test
//! reads every `src/**/*.rs` file, finds every path into another top-level module
//! (`use crate::x::...`, `use crate::{x, y::z}`, `crate::x::f()` in code, and a
//! `super::` chain that climbs to the crate root), and fails, naming the file and line,
//! when a module uses a module listed after it, or when two modules use each other.
//!
//! Comments (doc links included) and string and character literals are skipped: a doc
//! comment may point anywhere, since it makes no dependency.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One path from a top-level module into another.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Use {
    /// The module the path is written in.
    from: String,
    /// The module it names.
    to: String,
    /// The file, relative to `src/`, and the 1-based line.
    file: String,
    line: usize,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The modules `lib.rs` declares (`mod x;`, `pub mod x;`).
fn declared_modules(lib: &str) -> BTreeSet<String> {
    lib.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("pub mod ").or_else(|| l.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.trim().to_string())
        })
        .collect()
}

/// The layer list of `lib.rs`, bottom first: the names in backquotes before the `:` of each
/// numbered item after the line that opens with "Layers, from the bottom up".
fn layer_order(lib: &str) -> Vec<String> {
    let mut order = Vec::new();
    let mut in_list = false;
    for line in lib.lines() {
        let Some(text) = line.trim_start().strip_prefix("//!") else {
            if in_list {
                break;
            }
            continue;
        };
        let text = text.trim();
        if text.starts_with("Layers, from the bottom up") {
            in_list = true;
            continue;
        }
        if !in_list {
            continue;
        }
        if text.is_empty() && !order.is_empty() {
            break;
        }
        let Some((number, item)) = text.split_once(". ") else {
            continue;
        };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let names = item.split_once(':').map_or(item, |(names, _)| names);
        order.extend(names.split('`').skip(1).step_by(2).map(str::to_string));
    }
    order
}

/// `source` with comments, string literals and character literals blanked out (newlines
/// kept, so lines still count).
fn code_only(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut String, part: &[u8]| {
        for &c in part {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, 0);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest, i > 0 && is_ident(b[i - 1])) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let len = (j + 1).min(rest.len());
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'\'' {
            // A character literal ('a', '\n', '\u{1F600}'), or a lifetime ('a), left as is.
            let len = if rest.get(1) == Some(&b'\\') {
                // The escaped character, then anything up to the closing quote.
                rest.get(3..)
                    .and_then(|r| r.iter().position(|&c| c == b'\''))
                    .map(|p| p + 4)
            } else {
                let c = source[i + 1..].chars().next().map_or(1, char::len_utf8);
                (rest.get(1 + c) == Some(&b'\'')).then_some(c + 2)
            };
            let len = len.unwrap_or(1);
            blank(&mut out, &rest[..len]);
            i += len;
        } else {
            let c = source[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&source[i..i + c]);
            i += c;
        }
    }
    out
}

/// The length of a raw string literal (`r"..."`, `r#"..."#`, `br"..."`) at the start of
/// `rest`, unless the `r` ends an identifier.
fn raw_string_len(rest: &[u8], after_ident: bool) -> Option<usize> {
    if after_ident {
        return None;
    }
    let start = if rest.starts_with(b"br") {
        2
    } else if rest.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = rest[start..].iter().take_while(|&&c| c == b'#').count();
    if rest.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = start + hashes + 1;
    let end = rest[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(body + end + close.len())
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier at the start of `s` (after spaces).
fn ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s.bytes().position(|c| !is_ident(c)).unwrap_or(s.len());
    &s[..end]
}

/// The first segment of each item of a `{...}` group that starts `s` (after `{`), at the
/// group's own depth.
fn group_heads(s: &str) -> Vec<&str> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut item_start = Some(0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                item_start = Some(i + 1);
                continue;
            }
            _ => {}
        }
        if let Some(start) = item_start.take() {
            heads.push(ident(&s[start..]));
        }
    }
    heads
        .into_iter()
        .filter(|h| !h.is_empty() && *h != "self")
        .collect()
}

/// The top-level modules that the code of one file names, with the line of each path:
/// `module_path` is where the file sits (`["search", "run"]` for `src/search/run.rs`).
fn paths_in(code: &str, module_path: &[String]) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let line_of = |pos: usize| code[..pos].bytes().filter(|&c| c == b'\n').count() + 1;
    // Inline modules (`mod tests { ... }`): the brace depth each opened at.
    let mut inline_mods: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || !is_ident(b[i - 1]) && b[i - 1] != b'$';
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline_mods.last() == Some(&depth) {
                    inline_mods.pop();
                }
            }
            _ => {}
        }
        let rest = &code[i..];
        if at_word && rest.starts_with("mod ") {
            let name = ident(&rest[4..]);
            let after = rest[4..].trim_start()[name.len()..].trim_start();
            if !name.is_empty() && after.starts_with('{') {
                inline_mods.push(depth);
            }
        } else if at_word && rest.starts_with("crate") && rest[5..].trim_start().starts_with("::") {
            let after = rest[5..].trim_start()[2..].trim_start();
            let heads = if let Some(group) = after.strip_prefix('{') {
                group_heads(group)
            } else {
                vec![ident(after)]
            };
            found.extend(heads.into_iter().map(|h| (h.to_string(), line_of(i))));
        } else if at_word && rest.starts_with("super") && rest[5..].trim_start().starts_with("::") {
            // A chain of `super::`: climbing as many levels as the code is deep reaches the
            // crate root, and the next segment is a top-level module.
            let mut levels = 0;
            let mut tail = rest;
            while tail.starts_with("super") && tail[5..].trim_start().starts_with("::") {
                levels += 1;
                tail = tail[5..].trim_start()[2..].trim_start();
            }
            if levels == module_path.len() + inline_mods.len() {
                found.push((ident(tail).to_string(), line_of(i)));
            }
            i += rest.len() - tail.len();
            continue;
        }
        i += 1;
    }
    found
}

/// Where a file of `src/` sits in the module tree (`a/mod.rs` is `a`, `a/b.rs` is `a::b`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every path from one top-level module into another, in `src/`.
fn uses(src: &Path, modules: &BTreeSet<String>) -> Vec<Use> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut out = Vec::new();
    for path in files {
        let relative = path.strip_prefix(src).expect("below src");
        let module = module_path(relative);
        if module == ["lib"] {
            continue;
        }
        let source =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        for (to, line) in paths_in(&code_only(&source), &module) {
            if modules.contains(&to) && to != module[0] {
                out.push(Use {
                    from: module[0].clone(),
                    to,
                    file: relative.display().to_string(),
                    line,
                });
            }
        }
    }
    out
}

/// What is wrong with `uses` under `order` (bottom first), one message per line.
fn violations(order: &[String], uses: &[Use]) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut out = Vec::new();
    let mut first: BTreeMap<(&str, &str), &Use> = BTreeMap::new();
    for u in uses {
        first.entry((u.from.as_str(), u.to.as_str())).or_insert(u);
        if rank[u.to.as_str()] > rank[u.from.as_str()] {
            out.push(format!(
                "src/{}:{}: `{}` uses `{}`, which the layers of src/lib.rs put above it",
                u.file, u.line, u.from, u.to
            ));
        }
    }
    for (&(from, to), u) in &first {
        if from < to {
            if let Some(back) = first.get(&(to, from)) {
                out.push(format!(
                    "`{from}` and `{to}` use each other: src/{}:{} and src/{}:{}",
                    u.file, u.line, back.file, back.line
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_uses_only_the_modules_below_it() {
    let src = src_dir();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let modules = declared_modules(&lib);
    let order = layer_order(&lib);
    assert!(!order.is_empty(), "src/lib.rs has no list of layers");

    let listed: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(
        listed.len(),
        order.len(),
        "a module is listed twice in the layers: {order:?}"
    );
    let unlisted: Vec<&String> = modules.difference(&listed).collect();
    let undeclared: Vec<&String> = listed.difference(&modules).collect();
    assert!(
        unlisted.is_empty() && undeclared.is_empty(),
        "the layers of src/lib.rs do not match its modules: not listed {unlisted:?}, not declared {undeclared:?}"
    );

    let uses = uses(&src, &modules);
    assert!(
        uses.iter().any(|u| u.from == "session" && u.to == "directory"),
        "the scan found none of the paths it should (session uses directory)"
    );
    let wrong = violations(&order, &uses);
    assert!(wrong.is_empty(), "the layering is broken:\n{}", wrong.join("\n"));
}

#[test]
fn the_scan_reads_every_form_of_path_and_skips_comments_and_strings() {
    let source = r##"
//! A doc link to [`crate::net`] and a comment naming crate::session.
use crate::error::OpError;
use crate::{
    controls::{OpKind, RequestControls},
    self,
    identity,
};
/* a block /* nested */ comment: crate::ops */
fn f() {
    let s = "crate::search and // not a comment";
    let r = r#"crate::dse"#;
    let c = ('"', '\'', b'\\');
    let l: &'static str = "";
    crate::outcome::respond::write(crate :: response::x());
}
mod tests {
    use super::super::super::acl;
    use super::*;
}
"##;
    let found = paths_in(&code_only(source), &["search".into(), "run".into()]);
    assert_eq!(
        found,
        [
            ("error".to_string(), 3),
            ("controls".to_string(), 4),
            ("identity".to_string(), 4),
            ("outcome".to_string(), 15),
            ("response".to_string(), 15),
            ("acl".to_string(), 18),
        ]
    );
    // Two levels up from search/run.rs is the crate root; one is `search`.
    let found = paths_in(
        "use super::super::dse; use super::deref;",
        &["search".into(), "run".into()],
    );
    assert_eq!(found, [("dse".to_string(), 1)]);
}

#[test]
fn an_upward_use_and_a_cycle_are_reported_with_file_and_line() {
    let order: Vec<String> = ["error", "lookup", "search"].map(String::from).into();
    let u = |from: &str, to: &str, file: &str, line| Use {
        from: from.into(),
        to: to.into(),
        file: file.into(),
        line,
    };
    assert!(violations(&order, &[u("search", "lookup", "search/run.rs", 3)]).is_empty());
    let wrong = violations(
        &order,
        &[
            u("lookup", "search", "lookup/referral.rs", 7),
            u("search", "lookup", "search/run.rs", 3),
        ],
    );
    assert_eq!(
        wrong,
        [
            "src/lookup/referral.rs:7: `lookup` uses `search`, which the layers of src/lib.rs put above it",
            "`lookup` and `search` use each other: src/lookup/referral.rs:7 and src/search/run.rs:3",
        ]
    );
}
