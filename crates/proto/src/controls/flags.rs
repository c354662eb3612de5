//! Controls that carry no value: their presence is the whole message.

use super::{absent, oid, ControlValue};
use crate::error::Result;

macro_rules! flag_control {
    ($(#[$doc:meta])* $name:ident, $oid:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name;

        impl<'a> ControlValue<'a> for $name {
            const OID: &'static str = $oid;
            fn decode_value(value: Option<&'a [u8]>) -> Result<Self> {
                absent(value, stringify!($name))?;
                Ok($name)
            }
            fn encode_value(&self, _out: &mut Vec<u8>) -> bool {
                false
            }
        }
    };
}

flag_control!(
    /// ManageDsaIT (RFC 3296): treat referral objects as ordinary entries.
    ManageDsaIt,
    oid::MANAGE_DSA_IT
);
flag_control!(
    /// Permissive Modify: adding a present value or deleting an absent one is not an error.
    PermissiveModify,
    oid::PERMISSIVE_MODIFY
);
flag_control!(
    /// Subtree Delete: delete the entry and everything below it.
    SubtreeDelete,
    oid::SUBTREE_DELETE
);
