//! `larch schema check FILE...`: OpenLDAP `.schema` files or LDIF schema
//! (`cn=schema,cn=config` children with `olcAttributeTypes`, `olcObjectClasses`,
//! `olcObjectIdentifier`) checked with the server's own loader, on top of the shipped
//! schemas as the server loads them (`schema.builtin`, `schema.files` in this order).
//!
//! Every file gets its own verdict: the files are added one at a time, in the order given
//! (a file may use what an earlier one defines, as in `schema.files`); a file that fails is
//! left out and the next ones are tried without it, so one error per bad file is reported
//! (the loader stops at a file's first error), with its file and line. A file that needs
//! an element of a refused file is refused too, its error naming the missing element.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use larch_model::schema::{BuiltinSchemas, Schema};

/// `larch schema`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(subcommand)]
    pub command: SchemaCommand,
}

/// The `larch schema` subcommands.
#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Check schema files (.schema or .ldif) as the server would load them.
    Check(SchemaCheckArgs),
}

/// `larch schema check`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    larch schema check /etc/larch/schema/local.schema\n  \
    larch schema check --builtin rfc2307bis ppolicy.ldif local.schema\n\n\
    A file whose name ends in .ldif is read as LDIF (olcAttributeTypes, olcObjectClasses,\n\
    olcObjectIdentifier), any other as an OpenLDAP .schema file. On success `FILE: ok` per\n\
    file; otherwise each error as `FILE:LINE:COLUMN: what is wrong` on standard error, then\n\
    `larch schema check: N of M files refused`. Exit status 0 or 1.")]
pub struct SchemaCheckArgs {
    /// The shipped schemas loaded first, as `schema.builtin`: standard, rfc2307bis or
    /// system.
    #[arg(long, default_value = "standard", value_parser = parse_builtin)]
    pub builtin: BuiltinSchemas,
    /// The schema files, in the order the server would load them.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

fn parse_builtin(s: &str) -> Result<BuiltinSchemas, String> {
    Ok(match s {
        "standard" => BuiltinSchemas::Standard,
        "rfc2307bis" => BuiltinSchemas::Rfc2307bis,
        "system" => BuiltinSchemas::SystemOnly,
        _ => return Err(format!("`{s}`: expected standard, rfc2307bis or system")),
    })
}

/// `larch schema ...`.
pub fn schema(a: SchemaArgs) -> Result<(), String> {
    match a.command {
        SchemaCommand::Check(c) => check(c),
    }
}

/// `larch schema check`.
fn check(a: SchemaCheckArgs) -> Result<(), String> {
    Schema::load_with(a.builtin, &[]).map_err(|e| format!("the shipped schemas do not load: {e}"))?;
    let mut accepted: Vec<PathBuf> = Vec::with_capacity(a.files.len());
    let mut refused = 0;
    for file in &a.files {
        accepted.push(file.clone());
        match Schema::load_with(a.builtin, &accepted) {
            Ok(_) => println!("{}: ok", file.display()),
            Err(e) => {
                eprintln!("{e}");
                accepted.pop();
                refused += 1;
            }
        }
    }
    if refused > 0 {
        return Err(format!("{refused} of {} files refused", a.files.len()));
    }
    Ok(())
}
