//! The uniqueness report of `larch import`: an LDIF loads without the write hooks, so the
//! values the uniqueness hook would have refused (two entries of one scope of a rule sharing
//! a `uid`, by default) are found afterwards and reported, one line each; `--unique-strict` makes
//! them a refusal.

use std::path::Path;
use std::sync::Arc;

use larch_model::schema::Schema;
use larch_server::config::UniquenessSettings;
use larch_server::uniqueness::duplicates::{duplicates, Duplicate};

use crate::store_cmd::{open_with, with_store};

/// The duplicates of the imported directory `dir` under `settings`.
pub(crate) fn find_duplicates(
    dir: &Path,
    threads: usize,
    schema: Arc<Schema>,
    settings: &UniquenessSettings,
) -> Result<Vec<Duplicate>, String> {
    let rules = settings.rules(&schema).map_err(|e| e.to_string())?;
    if rules.is_empty() {
        return Ok(Vec::new());
    }
    let (store, _) = open_with(dir, threads, schema)?;
    with_store(&store, |s| Ok(duplicates(&s.current(), &rules)))
}

/// The report line of `d`.
pub(crate) fn line(d: &Duplicate) -> String {
    format!(
        "duplicate {} `{}` below `{}`: `{}` holds it, and so does `{}`",
        d.attribute, d.value, d.scope, d.first, d.again
    )
}

/// Refuses the import into `dir` (when strict and `found` is not empty): removes what the
/// import and the check wrote in its `snapshots` and `wal` folders (which the import
/// required empty), so that the directory holds no data and can be imported into again.
pub(crate) fn refuse(found: &[Duplicate], dir: &Path) -> Result<(), String> {
    for folder in ["snapshots", "wal"] {
        let folder = dir.join(folder);
        let listed =
            std::fs::read_dir(&folder).map_err(|e| format!("cannot list {}: {e}", folder.display()))?;
        for file in listed.flatten() {
            std::fs::remove_file(file.path())
                .map_err(|e| format!("cannot remove {}: {e}", file.path().display()))?;
        }
    }
    Err(format!(
        "{} duplicate values (--unique-strict): nothing imported; the lines above name them",
        found.len()
    ))
}
