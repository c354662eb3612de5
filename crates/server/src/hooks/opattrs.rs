//! The first hook: the operational attributes the server maintains on every write, in
//! OpenLDAP's formats (`crate::opattrs` computes them).
//!
//! - Add: createTimestamp, modifyTimestamp, creatorsName, modifiersName, entryUUID,
//!   entryCSN, structuralObjectClass;
//! - Modify, Modify DN, Password Modify: modifyTimestamp, modifiersName, entryCSN;
//! - Delete: no entry remains; each removed entry's delete is logged with its entryUUID
//!   and the delete's entryCSN, modifiersName and modifyTimestamp.
//!
//! The identity recorded is the one the operation runs as (after proxied authorization);
//! anonymous is recorded as the empty DN, as OpenLDAP does.

use larch_store::Version;

use super::{HookContext, NewState, PendingWrite, WriteHook};
use crate::error::OpError;
use crate::opattrs::{on_add, on_delete, on_modify};

/// The operational attributes hook.
#[derive(Debug, Clone, Copy, Default)]
pub struct OperationalAttributes;

impl WriteHook for OperationalAttributes {
    fn name(&self) -> &'static str {
        "operational attributes"
    }

    fn before_change(
        &self,
        write: &mut PendingWrite,
        version: &Version,
        ctx: &HookContext<'_>,
    ) -> Result<(), OpError> {
        let who = ctx.identity.dn();
        let stamp = &write.stamp;
        match &mut write.state {
            NewState::Add { entry, checked, .. } => on_add(entry, checked, who, stamp, ctx.schema, false)?,
            NewState::Modify { entry, .. } | NewState::Rename { entry, .. } => {
                on_modify(entry, who, stamp, ctx.schema)?
            }
            NewState::Delete { victims } => {
                for (id, attrs) in victims.iter_mut() {
                    if let Some(e) = version.entry(*id) {
                        *attrs = on_delete(e.attrs(), who, stamp, ctx.optypes);
                    }
                }
            }
        }
        Ok(())
    }
}
