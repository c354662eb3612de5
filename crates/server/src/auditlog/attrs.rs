//! An entry's attributes as the audit log reads them: the logged attribute list decoded
//! through the schema, which attributes a record may carry (those `ldapmodify` can write
//! back) and which go in comments (`NO-USER-MODIFICATION` ones), and the modifications
//! that turn one state of an entry into another.

use larch_model::entry::{StoredAttribute, StoredEntry, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::ldif::{LdifModOp, LdifModification};

/// Decodes a logged attribute list (`PartialAttribute`s with the types' names, as the
/// write-ahead log carries them) into the stored form, sorted by type and options.
pub(crate) fn decode(ber: &[u8], schema: &Schema) -> Result<StoredEntry, String> {
    StoredEntry::from_attributes_ber(ber, schema).map_err(|e| e.to_string())
}

/// True when a client may write the type (it is not `NO-USER-MODIFICATION`): such an
/// attribute goes in the body of a record, any other in a comment. A type the schema does
/// not know (it cannot be stored) counts as writable, so that nothing is hidden.
pub(crate) fn is_writable(schema: &Schema, ty: AttributeTypeId) -> bool {
    schema
        .attribute_type_by_id(ty)
        .is_none_or(|t| !t.no_user_modification)
}

/// The attribute description as LDIF writes it: the type's canonical name, then its
/// options (`cn;lang-fr`).
pub(crate) fn description(schema: &Schema, a: &StoredAttribute<'_>) -> String {
    let name = schema
        .attribute_type_by_id(a.ty)
        .map_or_else(|| format!("{}", a.ty.index()), |t| t.name().to_string());
    format!("{name}{}", a.options)
}

/// The first value of the type (without options), if the entry has one.
pub(crate) fn first_value<'a>(entry: StoredRef<'a>, ty: Option<AttributeTypeId>) -> Option<&'a [u8]> {
    let ty = ty?;
    entry
        .attribute(ty)
        .find(|a| a.options.is_empty())
        .and_then(|a| a.values.iter().next())
}

/// `(description, value)` pairs of the writable attributes, in stored order: the body of
/// an add record.
pub(crate) fn writable_values(schema: &Schema, entry: StoredRef<'_>) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for a in entry.attributes().filter(|a| is_writable(schema, a.ty)) {
        let name = description(schema, &a);
        out.extend(a.values.iter().map(|v| (name.clone(), v.to_vec())));
    }
    out
}

/// True when two attributes hold the same values, in any order.
fn same_values(a: &StoredAttribute<'_>, b: &StoredAttribute<'_>) -> bool {
    if a.values_ber == b.values_ber {
        return true;
    }
    // Different octets: the same values only if there are as many, and more than one (a
    // changed single value, the usual case, needs no sort).
    let count = a.values.iter().count();
    if count < 2 || count != b.values.iter().count() {
        return false;
    }
    let mut x: Vec<&[u8]> = a.values.iter().collect();
    let mut y: Vec<&[u8]> = b.values.iter().collect();
    x.sort_unstable();
    y.sort_unstable();
    x == y
}

/// What changed between two states of an entry, attribute by attribute (type and
/// options), in stored order.
pub(crate) enum Difference<'a> {
    /// Present after with other values than before (or absent before).
    Set(StoredAttribute<'a>),
    /// Present before, absent after.
    Gone(StoredAttribute<'a>),
}

/// The stored order of two attributes: by type, then options. Nearly every attribute has
/// no options, so they are compared as strings only when one has some (a string
/// comparison is a call to `memcmp`, which showed in profiles of the audit log's thread).
fn order(x: &StoredAttribute<'_>, y: &StoredAttribute<'_>) -> std::cmp::Ordering {
    x.ty.cmp(&y.ty).then_with(|| {
        if x.options.is_empty() && y.options.is_empty() {
            std::cmp::Ordering::Equal
        } else {
            x.options.cmp(y.options)
        }
    })
}

/// Every attribute whose values differ between `before` and `after` (both are sorted by
/// type and options, so this is one merge of the two lists).
pub(crate) fn differences<'a>(before: StoredRef<'a>, after: StoredRef<'a>) -> Vec<Difference<'a>> {
    differences_seeing(before, after, |_| {})
}

/// [`differences`], showing `see` every attribute of `after` in stored order as the merge
/// passes it: what else a record needs of `after` is then found in the same walk.
///
/// Two states of an entry share most of their octets: a modify changes a few attributes,
/// and those between and around them are the same octets, shifted by what the changes
/// added or removed. So at each step, from where each walk stands (both at the start of an
/// attribute), the octets the two states share from there are passed in one comparison:
/// the attributes of `after` that end within them read the same in `before` (reading an
/// attribute looks at its own octets only), so they are neither read twice nor compared.
/// Only the attributes where the octets differ are merged one by one.
pub(crate) fn differences_seeing<'a>(
    before: StoredRef<'a>,
    after: StoredRef<'a>,
    mut see: impl FnMut(&StoredAttribute<'a>),
) -> Vec<Difference<'a>> {
    let (b_octets, a_octets) = (before.as_bytes(), after.as_bytes());
    let mut out = Vec::with_capacity(4);
    let mut b = before.attributes();
    let mut a = after.attributes();
    loop {
        let shared = common_prefix(&b_octets[b.offset()..], &a_octets[a.offset()..]);
        if shared > 0 {
            let from = a.offset();
            loop {
                let mut next = a.clone();
                match next.next() {
                    Some(y) if next.offset() - from <= shared => {
                        see(&y);
                        a = next;
                    }
                    _ => break,
                }
            }
            b = before.attributes_from(b.offset() + (a.offset() - from));
        }
        let (mut b_next, mut a_next) = (b.clone(), a.clone());
        match (b_next.next(), a_next.next()) {
            (None, None) => break,
            (Some(x), y) if y.as_ref().is_none_or(|y| order(&x, y).is_lt()) => {
                out.push(Difference::Gone(x));
                b = b_next;
            }
            (Some(x), Some(y)) if order(&x, &y).is_eq() => {
                see(&y);
                if !same_values(&x, &y) {
                    out.push(Difference::Set(y));
                }
                (b, a) = (b_next, a_next);
            }
            (_, Some(y)) => {
                see(&y);
                out.push(Difference::Set(y));
                a = a_next;
            }
            // Unreachable: `(Some, None)` is taken by the first arm.
            (Some(_), None) => break,
        }
    }
    out
}

/// How many octets `x` and `y` share from the start, eight compared at a time.
fn common_prefix(x: &[u8], y: &[u8]) -> usize {
    let n = x.len().min(y.len());
    let mut i = 0;
    while i + 8 <= n {
        let diff = word(&x[i..i + 8]) ^ word(&y[i..i + 8]);
        if diff != 0 {
            // Little-endian: the first differing octet is the lowest nonzero one.
            return i + (diff.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    i + x[i..n].iter().zip(&y[i..n]).take_while(|(p, q)| p == q).count()
}

/// Eight octets as a little-endian word.
fn word(octets: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(octets);
    u64::from_le_bytes(w)
}

/// The modifications that turn `before` into `after` for the writable attributes:
/// `replace:` of each attribute whose values differ (or that is new), `delete:` of each
/// that disappeared, in stored order.
pub(crate) fn modifications(
    schema: &Schema,
    before: StoredRef<'_>,
    after: StoredRef<'_>,
) -> Vec<LdifModification> {
    modifications_of(schema, &differences(before, after))
}

/// [`modifications`] from the differences already found.
pub(crate) fn modifications_of(schema: &Schema, differences: &[Difference<'_>]) -> Vec<LdifModification> {
    differences
        .iter()
        .filter_map(|d| match d {
            Difference::Set(a) if is_writable(schema, a.ty) => Some(LdifModification {
                op: LdifModOp::Replace,
                attribute: description(schema, a),
                values: a.values.iter().map(<[u8]>::to_vec).collect(),
            }),
            Difference::Gone(a) if is_writable(schema, a.ty) => Some(LdifModification {
                op: LdifModOp::Delete,
                attribute: description(schema, a),
                values: Vec::new(),
            }),
            _ => None,
        })
        .collect()
}

/// `replace:` of every writable attribute of `after`: what reproduces an entry whose
/// previous state is unknown (an attribute type the change removed stays).
pub(crate) fn replace_all(schema: &Schema, after: StoredRef<'_>) -> Vec<LdifModification> {
    after
        .attributes()
        .filter(|a| is_writable(schema, a.ty))
        .map(|a| LdifModification {
            op: LdifModOp::Replace,
            attribute: description(schema, &a),
            values: a.values.iter().map(<[u8]>::to_vec).collect(),
        })
        .collect()
}

/// The equality key of a value of `ty` (the value itself when the type has no equality
/// rule or the value does not normalize).
pub(crate) fn equality_key(schema: &Schema, ty: AttributeTypeId, value: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(value.len());
    if let Some(rule) = schema.attribute_type_by_id(ty).and_then(|t| t.equality) {
        if rule.normalize(value, &mut key).is_ok() {
            return key;
        }
        key.clear();
    }
    key.extend_from_slice(value);
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use larch_model::entry::Attribute;
    use proptest::prelude::*;

    /// The merge without the shared runs: every attribute of both states read and compared.
    fn plain_differences<'a>(
        before: StoredRef<'a>,
        after: StoredRef<'a>,
        see: &mut impl FnMut(&StoredAttribute<'a>),
    ) -> Vec<Difference<'a>> {
        let mut out = Vec::new();
        let mut b = before.attributes().peekable();
        let mut a = after.attributes().peekable();
        loop {
            let o = match (b.peek(), a.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(x), Some(y)) => order(x, y),
            };
            match o {
                std::cmp::Ordering::Less => out.extend(b.next().map(Difference::Gone)),
                std::cmp::Ordering::Greater => {
                    let y = a.next().unwrap();
                    see(&y);
                    out.push(Difference::Set(y));
                }
                std::cmp::Ordering::Equal => {
                    let (x, y) = (b.next().unwrap(), a.next().unwrap());
                    see(&y);
                    if !same_values(&x, &y) {
                        out.push(Difference::Set(y));
                    }
                }
            }
        }
        out
    }

    /// What a walk found, comparable: the differences, then the attributes it was shown.
    fn walk(before: &[u8], after: &[u8], plain: bool) -> (Vec<String>, Vec<String>) {
        let show = |a: &StoredAttribute<'_>| format!("{}{} {:?}", a.ty.index(), a.options, a.values_ber);
        let mut seen = Vec::new();
        let mut see = |a: &StoredAttribute<'_>| seen.push(show(a));
        let (b, a) = (StoredRef::new(before), StoredRef::new(after));
        let found = if plain {
            plain_differences(b, a, &mut see)
        } else {
            differences_seeing(b, a, &mut see)
        };
        let found = found
            .iter()
            .map(|d| match d {
                Difference::Set(a) => format!("set {}", show(a)),
                Difference::Gone(a) => format!("gone {}", show(a)),
            })
            .collect();
        (found, seen)
    }

    /// An entry from (type, options, values) triples, as the store would build it.
    /// Types are the builtin schema's, by index (its IDs past 127 take two octets).
    fn built(attrs: &[(u32, bool, Vec<Vec<u8>>)]) -> StoredEntry {
        let schema = Schema::builtin().unwrap();
        let ids: Vec<AttributeTypeId> = schema.attribute_types().map(|t| t.id).collect();
        let list: Vec<Attribute> = attrs
            .iter()
            .map(|(ty, lang, values)| Attribute {
                ty: ids[*ty as usize % ids.len()],
                options: if *lang {
                    larch_model::entry::split_description(b"x;lang-fr").unwrap().1
                } else {
                    larch_model::entry::Options::none()
                },
                values: values.clone(),
            })
            .collect();
        StoredEntry::build(&list)
    }

    fn attrs_strategy() -> impl Strategy<Value = Vec<(u32, bool, Vec<Vec<u8>>)>> {
        let value = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..4),
            proptest::collection::vec(any::<u8>(), 120..140),
        ];
        let ty = prop_oneof![0u32..6, 126u32..130, Just(300u32)];
        proptest::collection::vec((ty, any::<bool>(), proptest::collection::vec(value, 1..4)), 0..12)
    }

    proptest! {
        #[test]
        fn passing_the_shared_runs_finds_what_the_plain_merge_finds(
            before in attrs_strategy(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), attrs_strategy()), 0..3),
        ) {
            // `after` is `before` with a few attributes replaced or added, or a value's
            // last octet changed: states that share runs of octets, as a modify's do.
            let mut after = before.clone();
            for (at, with) in edits {
                match (with.into_iter().next(), after.is_empty()) {
                    (Some(first), true) => after.push(first),
                    (Some(first), false) => {
                        let i = at.index(after.len());
                        after[i] = first;
                    }
                    (None, false) => {
                        let i = at.index(after.len());
                        if let Some(last) = after[i].2.last_mut() {
                            match last.last_mut() {
                                Some(o) => *o = o.wrapping_add(1),
                                None => last.push(0),
                            }
                        }
                    }
                    (None, true) => {}
                }
            }
            let (b, a) = (built(&before), built(&after));
            prop_assert_eq!(walk(b.as_bytes(), a.as_bytes(), false), walk(b.as_bytes(), a.as_bytes(), true));
            prop_assert_eq!(walk(a.as_bytes(), b.as_bytes(), false), walk(a.as_bytes(), b.as_bytes(), true));
        }

        #[test]
        fn damaged_octets_give_what_the_plain_merge_gives(
            attrs in attrs_strategy(),
            cut in any::<prop::sample::Index>(),
            flip in any::<prop::sample::Index>(),
            octet in any::<u8>(),
        ) {
            let good = built(&attrs).as_bytes().to_vec();
            let mut bad = good.clone();
            if !bad.is_empty() {
                let i = flip.index(bad.len());
                bad[i] = octet;
                bad.truncate(cut.index(bad.len() + 1));
            }
            prop_assert_eq!(walk(&good, &bad, false), walk(&good, &bad, true));
            prop_assert_eq!(walk(&bad, &good, false), walk(&bad, &good, true));
        }
    }

    #[test]
    fn shared_octets_are_counted_to_the_first_difference() {
        let x: Vec<u8> = (0..40).collect();
        for i in 0..40 {
            let mut y = x.clone();
            y[i] ^= 0x80;
            assert_eq!(common_prefix(&x, &y), i);
        }
        assert_eq!(common_prefix(&x, &x[..17]), 17);
        assert_eq!(common_prefix(&x, &x), 40);
        assert_eq!(common_prefix(b"", &x), 0);
    }

    fn entry(schema: &Schema, attrs: &[(&str, &[&str])]) -> StoredEntry {
        let list: Vec<Attribute> = attrs
            .iter()
            .map(|(name, values)| {
                let (ty, options) = larch_model::entry::resolve_description(name.as_bytes(), schema).unwrap();
                Attribute {
                    ty,
                    options,
                    values: values.iter().map(|v| v.as_bytes().to_vec()).collect(),
                }
            })
            .collect();
        StoredEntry::build(&list)
    }

    fn shown(mods: &[LdifModification]) -> Vec<String> {
        mods.iter()
            .map(|m| {
                let values: Vec<String> = m
                    .values
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into())
                    .collect();
                format!("{} {} {values:?}", m.op.keyword(), m.attribute)
            })
            .collect()
    }

    #[test]
    fn modifications_replace_what_differs_and_delete_what_went() {
        let schema = Schema::builtin().unwrap();
        let before = entry(
            &schema,
            &[
                ("objectClass", &["person"]),
                ("cn", &["a", "b"]),
                ("sn", &["s"]),
                ("description", &["d"]),
                ("description;lang-fr", &["f"]),
                ("modifyTimestamp", &["20250101000000Z"]),
            ],
        );
        let after = entry(
            &schema,
            &[
                ("objectClass", &["person"]),
                ("cn", &["b", "a"]),
                ("sn", &["t"]),
                ("description;lang-fr", &["f"]),
                ("telephoneNumber", &["1"]),
                ("modifyTimestamp", &["20250102000000Z"]),
            ],
        );
        let mods = modifications(&schema, before.as_ref(), after.as_ref());
        let mut got = shown(&mods);
        got.sort();
        assert_eq!(
            got,
            [
                "delete description []",
                "replace sn [\"t\"]",
                "replace telephoneNumber [\"1\"]"
            ]
        );
        assert!(modifications(&schema, after.as_ref(), after.as_ref()).is_empty());
        let all = shown(&replace_all(&schema, after.as_ref()));
        assert_eq!(all.len(), 5, "{all:?}");
        assert!(!all.iter().any(|m| m.contains("modifyTimestamp")));
        let cn = schema.attribute_type("cn").unwrap().id;
        assert_eq!(first_value(after.as_ref(), Some(cn)), Some(&b"b"[..]));
        assert_eq!(equality_key(&schema, cn, b"  Alice  SMITH"), b"alice smith");
    }
}
