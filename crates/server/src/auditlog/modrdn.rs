//! A logged rename as a `changetype: modrdn` record: the log holds the old DN, the new DN
//! and the entry's attributes after the rename, not the request, so `newrdn`,
//! `deleteoldrdn` and `newsuperior` are derived from them, and what a replay of that record
//! would not reproduce exactly is put right by a modify record after it.
//!
//! The derivation, in steps:
//! 1. `newrdn` is the new DN's first RDN; `newsuperior` is the new DN's parent, written only
//!    when it is not the old parent (compared normalized);
//! 2. the old RDN's values that are not also values of the new RDN (compared by the type's
//!    equality rule) are the ones `deleteoldrdn` decides about: when every one of them is
//!    still in the entry, `deleteoldrdn: 0`; otherwise (or when there is none),
//!    `deleteoldrdn: 1`;
//! 3. the entry a replay gets is computed from the entry before the rename as RFC 4511
//!    says a server computes it: each new RDN value is added unless an equal value is
//!    there, and with `deleteoldrdn: 1` the values of step 2 are removed (equal values by
//!    the equality rule; a spelling is never changed). Where that differs, value for value,
//!    from the logged entry (a server that respells an equal value, as Larch and slapd do
//!    on a rename that changes only the case), a `changetype: modify` record replaces the
//!    attributes that differ;
//! 4. when the entry before the rename is not known, that record replaces the attributes
//!    of every RDN type, old and new, with their values after the rename.

use larch_model::dn::{Ava, Dn, NormDn};
use larch_model::entry::{Attribute, Options, StoredEntry, StoredRef};
use larch_model::schema::{AttributeTypeId, Schema};
use larch_store::ldif::{LdifModOp, LdifModification};

use super::attrs;

/// The fields of a modrdn record, and what a replay of it needs put right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rename {
    /// `newrdn`.
    pub new_rdn: String,
    /// `deleteoldrdn`.
    pub delete_old_rdn: bool,
    /// `newsuperior`, when the parent changed.
    pub new_superior: Option<String>,
    /// The modifications of the modify record that follows (none: no such record).
    pub fix: Vec<LdifModification>,
}

/// An AVA with its attribute type and equality key.
struct KeyedAva<'a> {
    ty: AttributeTypeId,
    key: Vec<u8>,
    ava: &'a Ava,
}

fn keyed<'a>(schema: &Schema, rdn: &'a [Ava]) -> Result<Vec<KeyedAva<'a>>, String> {
    rdn.iter()
        .map(|ava| {
            let ty = schema
                .attribute_type(&ava.attr)
                .ok_or_else(|| format!("the schema does not define `{}`", ava.attr))?
                .id;
            Ok(KeyedAva {
                ty,
                key: attrs::equality_key(schema, ty, &ava.value),
                ava,
            })
        })
        .collect()
}

/// True when the entry holds a value of `ty` (without options) equal to `key`.
fn holds(schema: &Schema, entry: StoredRef<'_>, ty: AttributeTypeId, key: &[u8]) -> bool {
    entry
        .attribute(ty)
        .filter(|a| a.options.is_empty())
        .any(|a| a.values.iter().any(|v| attrs::equality_key(schema, ty, v) == key))
}

/// Derives the record of a rename from `old_dn` to `new_dn` (see the module
/// documentation); `before` is the entry before the rename when known, `after` its
/// attributes after.
pub(crate) fn derive(
    schema: &Schema,
    old_dn: &str,
    new_dn: &str,
    before: Option<StoredRef<'_>>,
    after: StoredRef<'_>,
) -> Result<Rename, String> {
    let (old, old_norm) = NormDn::parse(old_dn.as_bytes(), schema).map_err(|e| format!("`{old_dn}`: {e}"))?;
    let (new, new_norm) = NormDn::parse(new_dn.as_bytes(), schema).map_err(|e| format!("`{new_dn}`: {e}"))?;
    let (Some(old_rdn), Some(new_rdn)) = (old.rdns.first(), new.rdns.first()) else {
        return Err("the root DSE cannot be renamed".into());
    };
    let new_superior = (old_norm.parent_str() != new_norm.parent_str()).then(|| {
        Dn {
            rdns: new.rdns[1..].to_vec(),
        }
        .to_string()
    });
    let old_keys = keyed(schema, &old_rdn.avas)?;
    let new_keys = keyed(schema, &new_rdn.avas)?;
    let removable: Vec<&KeyedAva<'_>> = old_keys
        .iter()
        .filter(|o| !new_keys.iter().any(|n| n.ty == o.ty && n.key == o.key))
        .collect();
    let delete_old_rdn =
        removable.is_empty() || !removable.iter().all(|o| holds(schema, after, o.ty, &o.key));
    let fix = match before {
        Some(before) => {
            let replayed = replay(
                schema,
                before,
                &new_keys,
                delete_old_rdn.then_some(&removable[..]),
            );
            attrs::modifications(schema, replayed.as_ref(), after)
        }
        None => rdn_types(&old_keys, &new_keys)
            .into_iter()
            .map(|ty| LdifModification {
                op: LdifModOp::Replace,
                attribute: schema
                    .attribute_type_by_id(ty)
                    .map_or_else(String::new, |t| t.name().to_string()),
                values: after
                    .attribute(ty)
                    .filter(|a| a.options.is_empty())
                    .flat_map(|a| a.values.iter().map(<[u8]>::to_vec))
                    .collect(),
            })
            .collect(),
    };
    Ok(Rename {
        new_rdn: new_rdn.to_string(),
        delete_old_rdn,
        new_superior,
        fix,
    })
}

/// The types of both RDNs, each once, in order.
fn rdn_types(old: &[KeyedAva<'_>], new: &[KeyedAva<'_>]) -> Vec<AttributeTypeId> {
    let mut out: Vec<AttributeTypeId> = Vec::new();
    for k in old.iter().chain(new) {
        if !out.contains(&k.ty) {
            out.push(k.ty);
        }
    }
    out
}

/// Step 3: the entry a server following RFC 4511 makes of `before` for this modrdn.
fn replay(
    schema: &Schema,
    before: StoredRef<'_>,
    new_keys: &[KeyedAva<'_>],
    removed: Option<&[&KeyedAva<'_>]>,
) -> StoredEntry {
    let mut list: Vec<Attribute> = before
        .attributes()
        .map(|a| Attribute {
            ty: a.ty,
            options: a.options(),
            values: a.values.iter().map(<[u8]>::to_vec).collect(),
        })
        .collect();
    let plain = |list: &mut Vec<Attribute>, ty: AttributeTypeId| -> usize {
        match list
            .iter()
            .position(|a| a.ty == ty && a.options == Options::none())
        {
            Some(i) => i,
            None => {
                list.push(Attribute {
                    ty,
                    options: Options::none(),
                    values: Vec::new(),
                });
                list.len() - 1
            }
        }
    };
    for n in new_keys {
        let i = plain(&mut list, n.ty);
        let values = &mut list[i].values;
        if !values
            .iter()
            .any(|v| attrs::equality_key(schema, n.ty, v) == n.key)
        {
            values.push(n.ava.value.clone());
        }
    }
    for o in removed.unwrap_or_default() {
        let i = plain(&mut list, o.ty);
        list[i]
            .values
            .retain(|v| attrs::equality_key(schema, o.ty, v) != o.key);
    }
    list.retain(|a| !a.values.is_empty());
    StoredEntry::build(&list)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(schema: &Schema, attrs: &[(&str, &[&str])]) -> StoredEntry {
        let attrs: Vec<(&str, Vec<Vec<u8>>)> = attrs
            .iter()
            .map(|(name, values)| (*name, values.iter().map(|v| v.as_bytes().to_vec()).collect()))
            .collect();
        crate::auditlog::record::tests::entry(schema, &attrs)
    }

    fn fix(r: &Rename) -> Vec<String> {
        r.fix
            .iter()
            .map(|m| {
                let values: Vec<String> = m
                    .values
                    .iter()
                    .map(|v| String::from_utf8_lossy(v).into())
                    .collect();
                format!("{} {} {}", m.op.keyword(), m.attribute, values.join(","))
            })
            .collect()
    }

    #[test]
    fn delete_old_rdn_follows_from_the_values_left() {
        let s = Schema::builtin().unwrap();
        let before = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["a"]), ("sn", &["x"])],
        );
        // cn=a -> cn=b, the old value removed.
        let after = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["b"]), ("sn", &["x"])],
        );
        let r = derive(
            &s,
            "cn=a,dc=example",
            "cn=b,dc=example",
            Some(before.as_ref()),
            after.as_ref(),
        )
        .unwrap();
        assert_eq!(
            (r.new_rdn.as_str(), r.delete_old_rdn, r.new_superior.as_deref()),
            ("cn=b", true, None)
        );
        assert!(r.fix.is_empty(), "{:?}", fix(&r));
        // cn=a -> cn=b keeping the old value.
        let after = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["a", "b"]), ("sn", &["x"])],
        );
        let r = derive(
            &s,
            "cn=a,dc=example",
            "cn=b,dc=example",
            Some(before.as_ref()),
            after.as_ref(),
        )
        .unwrap();
        assert!(!r.delete_old_rdn);
        assert!(r.fix.is_empty(), "{:?}", fix(&r));
        // A move with the same RDN: nothing to delete, written as 1.
        let r = derive(
            &s,
            "cn=a,ou=x,dc=example",
            "CN=A,ou=y,dc=example",
            Some(before.as_ref()),
            before.as_ref(),
        )
        .unwrap();
        assert_eq!(
            (r.new_rdn.as_str(), r.delete_old_rdn, r.new_superior.as_deref()),
            ("CN=A", true, Some("ou=y,dc=example"))
        );
        assert!(r.fix.is_empty(), "{:?}", fix(&r));
        // The same parent written otherwise is not a move.
        let r = derive(
            &s,
            "cn=a,dc=example",
            "cn=b,DC=Example",
            Some(before.as_ref()),
            after.as_ref(),
        )
        .unwrap();
        assert_eq!(r.new_superior, None);
    }

    #[test]
    fn what_a_replay_would_not_reproduce_is_replaced() {
        let s = Schema::builtin().unwrap();
        let before = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["a"]), ("sn", &["x"])],
        );
        // A rename that only changes the case, the server respelling the value.
        let after = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["A"]), ("sn", &["x"])],
        );
        let r = derive(
            &s,
            "cn=a,dc=example",
            "cn=A,dc=example",
            Some(before.as_ref()),
            after.as_ref(),
        )
        .unwrap();
        assert!(r.delete_old_rdn);
        assert_eq!(fix(&r), ["replace cn A"]);
        // The same without the before state: every RDN type replaced.
        let r = derive(
            &s,
            "cn=a,dc=example",
            "sn=x+cn=b,dc=example",
            None,
            after.as_ref(),
        )
        .unwrap();
        assert_eq!(fix(&r), ["replace cn A", "replace sn x"]);
        // A new RDN type, the old one's value deleted.
        let after = entry(
            &s,
            &[("objectClass", &["person"]), ("cn", &["a"]), ("sn", &["x"])],
        );
        let before = entry(
            &s,
            &[
                ("objectClass", &["person"]),
                ("cn", &["a"]),
                ("sn", &["x"]),
                ("description", &["d"]),
            ],
        );
        let r = derive(
            &s,
            "description=d,dc=example",
            "cn=a,dc=example",
            Some(before.as_ref()),
            after.as_ref(),
        )
        .unwrap();
        assert!(r.delete_old_rdn);
        assert!(r.fix.is_empty(), "{:?}", fix(&r));
    }
}
