//! The writer: one record at a time, lines folded at [`FOLD_COLUMN`], base64 where a value
//! is not a SAFE-STRING; comment lines before a record.

use std::io::{self, Write};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::syntax::{is_attribute_description, is_numeric_oid, is_reserved_attribute, is_safe_string};
use super::{LdifChange, LdifControl, LdifRecord, FOLD_COLUMN};

/// A streaming RFC 2849 writer over any [`Write`]. Records are separated by one blank
/// line. A record that the reader would refuse (a bad attribute description or OID, no
/// attributes, a reserved attribute name) is refused with [`io::ErrorKind::InvalidInput`]
/// before anything of it is written.
pub struct LdifWriter<W> {
    out: W,
    records: u64,
    wrote_version: bool,
    /// Comments were written since the last record (the blank line separating records
    /// went before them).
    commented: bool,
    /// The record being built, written in one call.
    buf: Vec<u8>,
}

fn invalid(reason: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, reason)
}

fn check_attribute(name: &str, reserved_ok: bool) -> io::Result<()> {
    if !is_attribute_description(name.as_bytes()) {
        return Err(invalid(format!("{name:?} is not an attribute description")));
    }
    if !reserved_ok && is_reserved_attribute(name) {
        return Err(invalid(format!(
            "{name:?} is an LDIF keyword and cannot be an attribute here"
        )));
    }
    Ok(())
}

impl<W: Write> LdifWriter<W> {
    /// A writer that has written nothing yet.
    pub fn new(out: W) -> Self {
        LdifWriter {
            out,
            records: 0,
            wrote_version: false,
            commented: false,
            buf: Vec::new(),
        }
    }

    /// Writes `version: 1`; only allowed before the first record.
    pub fn write_version(&mut self) -> io::Result<()> {
        if self.records > 0 || self.wrote_version {
            return Err(invalid(
                "version: 1 must be written once, before any record".into(),
            ));
        }
        self.wrote_version = true;
        self.out.write_all(b"version: 1\n")
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Flushes the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Gives back the output (not flushed).
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Writes a comment line, `# name: value`, before the next record (readers skip it):
    /// the value as text when it is a SAFE-STRING, else `# name:: base64`, folded as any
    /// other line (RFC 2849 lets a comment continue on lines that start with a space). The
    /// blank line that separates records goes before the first comment of a record, so
    /// comments stay with the record that follows them. `name` must not hold a line end.
    pub fn write_comment(&mut self, name: &str, value: &[u8]) -> io::Result<()> {
        if name.bytes().any(|b| b == b'\n' || b == b'\r') {
            return Err(invalid(format!("a comment name holds a line end: {name:?}")));
        }
        self.buf.clear();
        if self.records > 0 && !self.commented {
            self.buf.push(b'\n');
        }
        self.line(&format!("# {name}"), value);
        self.out.write_all(&self.buf)?;
        self.commented = true;
        Ok(())
    }

    /// Writes one record, preceded by a blank line unless it is the first (or comments
    /// written since the last record already had it).
    pub fn write_record(&mut self, record: &LdifRecord) -> io::Result<()> {
        self.buf.clear();
        if self.records > 0 && !self.commented {
            self.buf.push(b'\n');
        }
        match record {
            LdifRecord::Content { dn, attributes } => {
                if attributes.is_empty() {
                    return Err(invalid("a content record needs at least one attribute".into()));
                }
                self.line("dn", dn);
                self.attributes(attributes)?;
            }
            LdifRecord::Change { dn, controls, change } => {
                self.line("dn", dn);
                for control in controls {
                    self.control(control)?;
                }
                self.change(change)?;
            }
        }
        self.out.write_all(&self.buf)?;
        self.records += 1;
        self.commented = false;
        Ok(())
    }

    fn attributes(&mut self, attributes: &[(String, Vec<u8>)]) -> io::Result<()> {
        for (name, value) in attributes {
            check_attribute(name, false)?;
            self.line(name, value);
        }
        Ok(())
    }

    fn control(&mut self, control: &LdifControl) -> io::Result<()> {
        if !is_numeric_oid(control.oid.as_bytes()) {
            return Err(invalid(format!(
                "control type {:?} is not a numeric OID",
                control.oid
            )));
        }
        let mut prefix = format!("control: {}", control.oid);
        if control.critical {
            prefix.push_str(" true");
        }
        match &control.value {
            None => self.fold(prefix.as_bytes()),
            Some(value) => self.line(&prefix, value),
        }
        Ok(())
    }

    fn change(&mut self, change: &LdifChange) -> io::Result<()> {
        match change {
            LdifChange::Add { attributes } => {
                if attributes.is_empty() {
                    return Err(invalid("an add record needs at least one attribute".into()));
                }
                self.fold(b"changetype: add");
                self.attributes(attributes)?;
            }
            LdifChange::Delete => self.fold(b"changetype: delete"),
            LdifChange::Modify { modifications } => {
                self.fold(b"changetype: modify");
                for m in modifications {
                    check_attribute(&m.attribute, true)?;
                    self.fold(format!("{}: {}", m.op.keyword(), m.attribute).as_bytes());
                    for value in &m.values {
                        self.line(&m.attribute, value);
                    }
                    self.fold(b"-");
                }
            }
            LdifChange::ModRdn {
                new_rdn,
                delete_old_rdn,
                new_superior,
            } => {
                self.fold(b"changetype: modrdn");
                self.line("newrdn", new_rdn);
                self.fold(if *delete_old_rdn {
                    b"deleteoldrdn: 1"
                } else {
                    b"deleteoldrdn: 0"
                });
                if let Some(sup) = new_superior {
                    self.line("newsuperior", sup);
                }
            }
        }
        Ok(())
    }

    /// `name: value`, `name:: base64` or `name:` (empty value).
    fn line(&mut self, name: &str, value: &[u8]) {
        let mut text = Vec::with_capacity(name.len() + 3 + value.len() * 4 / 3 + 4);
        text.extend_from_slice(name.as_bytes());
        if value.is_empty() {
            text.push(b':');
        } else if is_safe_string(value) {
            text.extend_from_slice(b": ");
            text.extend_from_slice(value);
        } else {
            text.extend_from_slice(b":: ");
            text.extend_from_slice(STANDARD.encode(value).as_bytes());
        }
        self.fold(&text);
    }

    /// Appends a logical line, folded so that no physical line exceeds [`FOLD_COLUMN`].
    /// Everything written is ASCII, so folding never splits a character.
    fn fold(&mut self, text: &[u8]) {
        let (first, mut rest) = text.split_at(text.len().min(FOLD_COLUMN));
        self.buf.extend_from_slice(first);
        self.buf.push(b'\n');
        while !rest.is_empty() {
            let (chunk, tail) = rest.split_at(rest.len().min(FOLD_COLUMN - 1));
            self.buf.push(b' ');
            self.buf.extend_from_slice(chunk);
            self.buf.push(b'\n');
            rest = tail;
        }
    }
}
