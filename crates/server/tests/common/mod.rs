//! Request builders shared by the server's integration tests. Protocol requests borrow
//! their octets, so each builder lends the request it builds to a closure.

use larch_proto::{AddRequest, Change, ModifyOperation, ModifyRequest, PartialAttribute, SeqOf};

/// An AddRequest for `dn` with `attrs` (type, values), handed to `f`.
pub fn with_add<R, N, L, V>(dn: &str, attrs: &[(N, L)], f: impl FnOnce(AddRequest<'_>) -> R) -> R
where
    N: AsRef<str>,
    L: AsRef<[V]>,
    V: AsRef<str>,
{
    let values: Vec<Vec<&[u8]>> = attrs
        .iter()
        .map(|(_, vs)| vs.as_ref().iter().map(|v| v.as_ref().as_bytes()).collect())
        .collect();
    let list: Vec<PartialAttribute<'_>> = attrs
        .iter()
        .zip(&values)
        .map(|((name, _), vs)| PartialAttribute {
            description: name.as_ref().as_bytes(),
            values: SeqOf::from_items(vs),
        })
        .collect();
    f(AddRequest {
        entry: dn.as_bytes(),
        attributes: SeqOf::from_items(&list),
    })
}

/// A ModifyRequest for `dn` with `changes` (operation, type, values), handed to `f`.
pub fn with_modify<R>(
    dn: &str,
    changes: &[(ModifyOperation, &str, &[&str])],
    f: impl FnOnce(ModifyRequest<'_>) -> R,
) -> R {
    let values: Vec<Vec<&[u8]>> = changes
        .iter()
        .map(|(_, _, vs)| vs.iter().map(|v| v.as_bytes()).collect())
        .collect();
    let list: Vec<Change<'_>> = changes
        .iter()
        .zip(&values)
        .map(|((operation, name, _), vs)| Change {
            operation: *operation,
            modification: PartialAttribute {
                description: name.as_bytes(),
                values: SeqOf::from_items(vs),
            },
        })
        .collect();
    f(ModifyRequest {
        object: dn.as_bytes(),
        changes: SeqOf::from_items(&list),
    })
}
