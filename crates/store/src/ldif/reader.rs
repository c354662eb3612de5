//! The streaming reader: physical lines -> logical (unfolded) lines of one record -> a
//! record. Only one record's lines are held at a time.

use std::fs::File;
use std::io::{self, BufRead, Read};

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine;

use super::syntax::{is_attribute_description, is_numeric_oid, is_reserved_attribute};
use super::{
    LdifChange, LdifControl, LdifError, LdifErrorKind, LdifLimits, LdifModOp, LdifModification, LdifRecord,
};

/// Base64 as LDIF writers produce it: the standard alphabet, padding optional, stray low
/// bits ignored.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// How much of an offending line an error message quotes, in characters.
const QUOTE_CHARS: usize = 40;

/// A logical line: the physical line it started on and its unfolded text.
struct Line {
    no: u64,
    text: Vec<u8>,
}

/// How the value part of a line is written.
enum Spec<'a> {
    /// `attr: value`
    Text(&'a [u8]),
    /// `attr:: base64`
    Base64(&'a [u8]),
    /// `attr:< URL`
    Url(&'a [u8]),
}

/// A streaming RFC 2849 reader over any [`BufRead`]; see the [module docs](super) for what
/// it accepts. Use [`read_record`](Self::read_record) or iterate. After the first error it
/// returns no more records.
pub struct LdifReader<R> {
    input: R,
    limits: LdifLimits,
    allow_file_urls: bool,
    /// Physical lines read so far.
    line_no: u64,
    /// No record read yet: a `version:` line is allowed.
    at_start: bool,
    version: Option<u32>,
    failed: bool,
    /// The physical line being read (reused).
    phys: Vec<u8>,
    /// The first line of the record read last.
    record_line: u64,
}

fn syntax(record_line: u64, line: u64, reason: impl Into<String>) -> LdifError {
    LdifError {
        record_line,
        line,
        kind: LdifErrorKind::Syntax(reason.into()),
    }
}

/// Up to [`QUOTE_CHARS`] characters of `bytes`, for messages.
fn quote(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text.chars().take(QUOTE_CHARS).collect();
    if text.chars().nth(QUOTE_CHARS).is_some() {
        out.push_str("...");
    }
    format!("{out:?}")
}

fn trim_leading_spaces(v: &[u8]) -> &[u8] {
    let n = v.iter().take_while(|&&b| b == b' ').count();
    &v[n..]
}

fn trim_trailing_spaces(v: &[u8]) -> &[u8] {
    let n = v.iter().rev().take_while(|&&b| b == b' ').count();
    &v[..v.len() - n]
}

/// Whether `line` is `keyword:...` (keyword case-insensitive).
fn is_keyword(line: &Line, keyword: &str) -> bool {
    let k = keyword.as_bytes();
    line.text.len() > k.len() && line.text[k.len()] == b':' && line.text[..k.len()].eq_ignore_ascii_case(k)
}

fn is_dash(line: &Line) -> bool {
    trim_trailing_spaces(&line.text) == b"-"
}

/// Splits `attr: value` into the attribute description and the value part.
fn split_line(record_line: u64, line: &Line) -> Result<(&str, Spec<'_>), LdifError> {
    let text = &line.text;
    let Some(colon) = text.iter().position(|&b| b == b':') else {
        return Err(syntax(
            record_line,
            line.no,
            format!(
                "expected \"attribute: value\" but the line has no colon: {}",
                quote(text)
            ),
        ));
    };
    let name = &text[..colon];
    let name = match std::str::from_utf8(name) {
        Ok(name) if is_attribute_description(name.as_bytes()) => name,
        _ => {
            return Err(syntax(
                record_line,
                line.no,
                format!(
                    "{} is not an attribute description (a name or numeric OID, then ;options)",
                    quote(name)
                ),
            ))
        }
    };
    Ok((name, parse_spec(record_line, line.no, &text[colon + 1..])?))
}

/// The part after the colon: `: base64`, `< URL` or ` text`.
fn parse_spec(record_line: u64, line: u64, rest: &[u8]) -> Result<Spec<'_>, LdifError> {
    match rest.first() {
        Some(b':') => Ok(Spec::Base64(trim_trailing_spaces(trim_leading_spaces(
            &rest[1..],
        )))),
        Some(b'<') => Ok(Spec::Url(trim_trailing_spaces(trim_leading_spaces(&rest[1..])))),
        _ => {
            let value = trim_leading_spaces(rest);
            if let Some(&first @ (b':' | b'<')) = value.first() {
                return Err(syntax(
                    record_line,
                    line,
                    format!(
                        "a value starting with {:?} must be written in base64 (\"attr:: ...\")",
                        first as char
                    ),
                ));
            }
            if value.contains(&0) {
                return Err(syntax(
                    record_line,
                    line,
                    "a text value contains a NUL octet; use base64",
                ));
            }
            if value.contains(&b'\r') {
                return Err(syntax(
                    record_line,
                    line,
                    "a text value contains a carriage return; use base64",
                ));
            }
            Ok(Spec::Text(value))
        }
    }
}

/// Decodes `%XX` escapes of a URL path.
fn percent_decode(path: &str) -> Option<Vec<u8>> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

impl<R: BufRead> LdifReader<R> {
    /// A reader with the default [`LdifLimits`] that refuses `attr:< URL` values.
    pub fn new(input: R) -> Self {
        LdifReader {
            input,
            limits: LdifLimits::default(),
            allow_file_urls: false,
            line_no: 0,
            at_start: true,
            version: None,
            failed: false,
            phys: Vec::new(),
            record_line: 0,
        }
    }

    /// Replaces the limits.
    pub fn with_limits(mut self, limits: LdifLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Whether `attr:< file:///path` values are read from disk (default: refused). Only
    /// `file://` URLs naming local files are ever read, each at most
    /// [`LdifLimits::max_url_file_bytes`] long.
    pub fn allow_file_urls(mut self, allow: bool) -> Self {
        self.allow_file_urls = allow;
        self
    }

    /// The `version:` of the input, once the first record has been read (`None` if the
    /// input had no version line).
    pub fn version(&self) -> Option<u32> {
        self.version
    }

    /// The first line (1-based) of the record [`read_record`](Self::read_record) returned
    /// last.
    pub fn record_line(&self) -> u64 {
        self.record_line
    }

    /// Physical lines read so far.
    pub fn lines_read(&self) -> u64 {
        self.line_no
    }

    /// Gives back the input.
    pub fn into_inner(self) -> R {
        self.input
    }

    /// The next record, `Ok(None)` at the end of the input (and after an error).
    pub fn read_record(&mut self) -> Result<Option<LdifRecord>, LdifError> {
        if self.failed {
            return Ok(None);
        }
        let result = self.read_record_inner();
        if result.is_err() {
            self.failed = true;
        }
        result
    }

    fn read_record_inner(&mut self) -> Result<Option<LdifRecord>, LdifError> {
        loop {
            let Some((lines, bytes)) = self.read_record_lines()? else {
                return Ok(None);
            };
            let mut start = 0;
            if std::mem::replace(&mut self.at_start, false) && is_keyword(&lines[0], "version") {
                let line = &lines[0];
                let (_, spec) = split_line(line.no, line)?;
                match spec {
                    Spec::Text(v) if trim_trailing_spaces(v) == b"1" => self.version = Some(1),
                    _ => return Err(syntax(line.no, line.no, "only \"version: 1\" is supported")),
                }
                start = 1;
                if lines.len() == 1 {
                    continue;
                }
            }
            let budget = self.limits.max_record_bytes.saturating_sub(bytes);
            return self.parse_record(&lines[start..], budget).map(Some);
        }
    }

    /// Reads one physical line into `self.phys`, without its line end. `Ok(false)` at the
    /// end of the input.
    fn read_physical(&mut self, record_line: u64) -> Result<bool, LdifError> {
        self.phys.clear();
        let limit = self.limits.max_line_bytes;
        let mut any = false;
        loop {
            let available = match self.input.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(LdifError {
                        record_line,
                        line: self.line_no + 1,
                        kind: LdifErrorKind::Io(e),
                    })
                }
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let (take, end) = match available.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (available.len(), false),
            };
            // One more than the limit: a CR before the LF is not part of the line.
            if self.phys.len() + take > limit.saturating_add(1) {
                return Err(LdifError {
                    record_line,
                    line: self.line_no + 1,
                    kind: LdifErrorKind::LineTooLong { limit },
                });
            }
            self.phys.extend_from_slice(&available[..take]);
            self.input.consume(if end { take + 1 } else { take });
            if end {
                break;
            }
        }
        if !any {
            return Ok(false);
        }
        self.line_no += 1;
        if self.phys.last() == Some(&b'\r') {
            self.phys.pop();
        }
        if self.phys.len() > limit {
            return Err(LdifError {
                record_line,
                line: self.line_no,
                kind: LdifErrorKind::LineTooLong { limit },
            });
        }
        Ok(true)
    }

    /// The unfolded lines of the next record (comments dropped) and their total size;
    /// `None` at the end of the input.
    fn read_record_lines(&mut self) -> Result<Option<(Vec<Line>, usize)>, LdifError> {
        let mut lines: Vec<Line> = Vec::new();
        let mut bytes = 0usize;
        let mut in_comment = false;
        let mut record_line = 0;
        let max_record = self.limits.max_record_bytes;
        while self.read_physical(record_line)? {
            let no = self.line_no;
            let phys = &self.phys;
            match phys.first() {
                None if lines.is_empty() => in_comment = false,
                None => break,
                Some(b' ') if in_comment => {}
                Some(b' ') => {
                    let Some(last) = lines.last_mut() else {
                        return Err(syntax(
                            if record_line == 0 { no } else { record_line },
                            no,
                            "a continuation line (starting with a space) has no line before it to continue",
                        ));
                    };
                    bytes += phys.len() - 1;
                    if bytes > max_record {
                        let kind = LdifErrorKind::RecordTooLarge { limit: max_record };
                        return Err(LdifError {
                            record_line,
                            line: no,
                            kind,
                        });
                    }
                    last.text.extend_from_slice(&phys[1..]);
                }
                Some(b'#') => in_comment = true,
                Some(_) => {
                    in_comment = false;
                    if lines.is_empty() {
                        record_line = no;
                    }
                    if lines.len() >= self.limits.max_values_per_record {
                        let kind = LdifErrorKind::TooManyValues {
                            limit: self.limits.max_values_per_record,
                        };
                        return Err(LdifError {
                            record_line,
                            line: no,
                            kind,
                        });
                    }
                    bytes += phys.len();
                    if bytes > max_record {
                        let kind = LdifErrorKind::RecordTooLarge { limit: max_record };
                        return Err(LdifError {
                            record_line,
                            line: no,
                            kind,
                        });
                    }
                    lines.push(Line {
                        no,
                        text: phys.clone(),
                    });
                }
            }
        }
        self.record_line = record_line;
        Ok(if lines.is_empty() {
            None
        } else {
            Some((lines, bytes))
        })
    }

    /// The value a spec stands for; `budget` is what remains of the record size limit.
    fn value(
        &self,
        record_line: u64,
        line: u64,
        spec: Spec<'_>,
        budget: &mut usize,
    ) -> Result<Vec<u8>, LdifError> {
        match spec {
            Spec::Text(v) => Ok(v.to_vec()),
            Spec::Base64(v) => BASE64.decode(v).map_err(|e| {
                syntax(
                    record_line,
                    line,
                    format!("invalid base64 value {}: {e}", quote(v)),
                )
            }),
            Spec::Url(url) => {
                let url = String::from_utf8_lossy(url).into_owned();
                if !self.allow_file_urls {
                    return Err(LdifError {
                        record_line,
                        line,
                        kind: LdifErrorKind::UrlRefused(url),
                    });
                }
                let contents = self.read_url(&url, *budget).map_err(|kind| LdifError {
                    record_line,
                    line,
                    kind,
                })?;
                *budget -= contents.len();
                Ok(contents)
            }
        }
    }

    /// Reads a `file://` URL's file, refusing more than the limits allow.
    fn read_url(&self, url: &str, budget: usize) -> Result<Vec<u8>, LdifErrorKind> {
        let bad = |reason: String| LdifErrorKind::Syntax(reason);
        let scheme_ok = url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("file://"));
        if !scheme_ok {
            return Err(bad(format!("only file:// URLs are read, not {url:?}")));
        }
        let rest = &url[7..];
        let path = if rest.starts_with('/') {
            rest
        } else if rest
            .get(..10)
            .is_some_and(|s| s.eq_ignore_ascii_case("localhost/"))
        {
            &rest[9..]
        } else {
            return Err(bad(format!(
                "URL {url:?} names another host; only local files (file:///path) are read"
            )));
        };
        let path = percent_decode(path)
            .and_then(|p| String::from_utf8(p).ok())
            .ok_or_else(|| bad(format!("URL {url:?} has a bad %-escape or is not UTF-8")))?;
        let limit = self.limits.max_url_file_bytes.min(budget as u64);
        let file = File::open(&path).map_err(LdifErrorKind::Io)?;
        let mut contents = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut contents)
            .map_err(LdifErrorKind::Io)?;
        if contents.len() as u64 > limit {
            return Err(bad(format!(
                "file {path:?} is larger than the {limit}-octet limit"
            )));
        }
        Ok(contents)
    }

    fn parse_record(&self, lines: &[Line], mut budget: usize) -> Result<LdifRecord, LdifError> {
        let first = &lines[0];
        let rl = first.no;
        let last_no = lines.last().map_or(rl, |l| l.no);
        let (name, spec) = split_line(rl, first)?;
        if !name.eq_ignore_ascii_case("dn") {
            let hint = if name.eq_ignore_ascii_case("version") {
                " (version: may only open the file)"
            } else {
                ""
            };
            return Err(syntax(
                rl,
                rl,
                format!("a record must start with \"dn:\", not \"{name}:\"{hint}"),
            ));
        }
        let dn = self.value(rl, rl, spec, &mut budget)?;
        let mut i = 1;
        let mut controls = Vec::new();
        while i < lines.len() && is_keyword(&lines[i], "control") {
            controls.push(self.parse_control(rl, &lines[i], &mut budget)?);
            i += 1;
        }
        if i < lines.len() && is_keyword(&lines[i], "changetype") {
            let line = &lines[i];
            let (_, spec) = split_line(rl, line)?;
            let Spec::Text(kind) = spec else {
                return Err(syntax(rl, line.no, "the changetype must be written as text"));
            };
            let kind = String::from_utf8_lossy(trim_trailing_spaces(kind)).to_ascii_lowercase();
            i += 1;
            let rest = &lines[i..];
            let change = match kind.as_str() {
                "add" => {
                    let attributes = self.attributes(rl, rest, &mut budget)?;
                    if attributes.is_empty() {
                        return Err(syntax(rl, line.no, "a changetype: add record has no attributes"));
                    }
                    LdifChange::Add { attributes }
                }
                "delete" => {
                    if let Some(extra) = rest.first() {
                        return Err(syntax(rl, extra.no, "nothing may follow \"changetype: delete\""));
                    }
                    LdifChange::Delete
                }
                "modify" => LdifChange::Modify {
                    modifications: self.modifications(rl, rest, &mut budget)?,
                },
                "modrdn" | "moddn" => self.modrdn(rl, &kind, rest, last_no, &mut budget)?,
                _ => {
                    return Err(syntax(
                        rl,
                        line.no,
                        format!(
                            "unknown changetype {}; expected add, delete, modify, modrdn or moddn",
                            quote(kind.as_bytes())
                        ),
                    ))
                }
            };
            Ok(LdifRecord::Change { dn, controls, change })
        } else if !controls.is_empty() {
            let no = lines.get(i).map_or(last_no, |l| l.no);
            Err(syntax(
                rl,
                no,
                "control: lines must be followed by a changetype: line",
            ))
        } else {
            let attributes = self.attributes(rl, &lines[1..], &mut budget)?;
            if attributes.is_empty() {
                return Err(syntax(
                    rl,
                    rl,
                    "the record has a dn: but no attributes (a content record needs at least one)",
                ));
            }
            Ok(LdifRecord::Content { dn, attributes })
        }
    }

    fn attributes(
        &self,
        rl: u64,
        lines: &[Line],
        budget: &mut usize,
    ) -> Result<Vec<(String, Vec<u8>)>, LdifError> {
        let mut attributes = Vec::with_capacity(lines.len());
        for line in lines {
            let (name, spec) = split_line(rl, line)?;
            if is_reserved_attribute(name) {
                return Err(syntax(
                    rl,
                    line.no,
                    format!("\"{name}:\" cannot appear here: dn, control and changetype are LDIF keywords"),
                ));
            }
            attributes.push((name.to_owned(), self.value(rl, line.no, spec, budget)?));
        }
        Ok(attributes)
    }

    fn parse_control(&self, rl: u64, line: &Line, budget: &mut usize) -> Result<LdifControl, LdifError> {
        let rest = &line.text["control:".len()..];
        if matches!(rest.first(), Some(b':' | b'<')) {
            return Err(syntax(
                rl,
                line.no,
                "a control: line cannot be base64 or a URL as a whole; write \"control: OID [true|false] [:: base64]\"",
            ));
        }
        let rest = trim_leading_spaces(rest);
        let oid_len = rest
            .iter()
            .take_while(|&&b| b.is_ascii_digit() || b == b'.')
            .count();
        let (oid, mut rest) = rest.split_at(oid_len);
        if !is_numeric_oid(oid) {
            return Err(syntax(
                rl,
                line.no,
                format!(
                    "a control: line must start with a numeric OID, found {}",
                    quote(rest)
                ),
            ));
        }
        let mut critical = false;
        let after = trim_leading_spaces(rest);
        if after.len() < rest.len() {
            let word = |w: &str| {
                after.len() >= w.len()
                    && after[..w.len()].eq_ignore_ascii_case(w.as_bytes())
                    && matches!(after.get(w.len()), None | Some(b' ' | b':'))
            };
            if word("true") {
                critical = true;
                rest = &after[4..];
            } else if word("false") {
                rest = &after[5..];
            } else {
                rest = after;
            }
        }
        let rest = trim_leading_spaces(rest);
        let value = match rest.split_first() {
            None => None,
            Some((b':', spec)) => Some(self.value(rl, line.no, parse_spec(rl, line.no, spec)?, budget)?),
            Some(_) => {
                return Err(syntax(
                    rl,
                    line.no,
                    format!(
                        "unexpected {} after the control OID; expected true, false or \": value\"",
                        quote(rest)
                    ),
                ))
            }
        };
        // Validated above as digits and dots.
        let oid = String::from_utf8_lossy(oid).into_owned();
        Ok(LdifControl { oid, critical, value })
    }

    fn modifications(
        &self,
        rl: u64,
        lines: &[Line],
        budget: &mut usize,
    ) -> Result<Vec<LdifModification>, LdifError> {
        let mut modifications = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let line = &lines[i];
            let (keyword, spec) = split_line(rl, line)?;
            let op = match keyword.to_ascii_lowercase().as_str() {
                "add" => LdifModOp::Add,
                "delete" => LdifModOp::Delete,
                "replace" => LdifModOp::Replace,
                "increment" => LdifModOp::Increment,
                _ => {
                    return Err(syntax(
                        rl,
                        line.no,
                        format!(
                            "expected add:, delete:, replace: or increment: to start a modification, \
                             found \"{keyword}:\""
                        ),
                    ))
                }
            };
            let op_name = op.keyword();
            let attribute = match spec {
                Spec::Text(v) if is_attribute_description(trim_trailing_spaces(v)) => {
                    String::from_utf8_lossy(trim_trailing_spaces(v)).into_owned()
                }
                _ => {
                    return Err(syntax(
                        rl,
                        line.no,
                        format!("\"{op_name}:\" must be followed by an attribute description"),
                    ))
                }
            };
            i += 1;
            let mut values = Vec::new();
            while i < lines.len() {
                let line = &lines[i];
                i += 1;
                if is_dash(line) {
                    break;
                }
                let (name, spec) = split_line(rl, line)?;
                if !name.eq_ignore_ascii_case(&attribute) {
                    return Err(syntax(
                        rl,
                        line.no,
                        format!(
                            "expected a value of {attribute} or \"-\" ending the \"{op_name}: {attribute}\" \
                             section, found \"{name}:\""
                        ),
                    ));
                }
                values.push(self.value(rl, line.no, spec, budget)?);
            }
            modifications.push(LdifModification {
                op,
                attribute,
                values,
            });
        }
        Ok(modifications)
    }

    fn modrdn(
        &self,
        rl: u64,
        kind: &str,
        lines: &[Line],
        last_no: u64,
        budget: &mut usize,
    ) -> Result<LdifChange, LdifError> {
        let at = |i: usize| lines.get(i).map_or(last_no, |l| l.no);
        let Some(line) = lines.first().filter(|l| is_keyword(l, "newrdn")) else {
            return Err(syntax(
                rl,
                at(0),
                format!("changetype: {kind} needs a newrdn: line next"),
            ));
        };
        let (_, spec) = split_line(rl, line)?;
        let new_rdn = self.value(rl, line.no, spec, budget)?;
        let Some(line) = lines.get(1).filter(|l| is_keyword(l, "deleteoldrdn")) else {
            return Err(syntax(
                rl,
                at(1),
                format!("changetype: {kind} needs a deleteoldrdn: line after newrdn:"),
            ));
        };
        let delete_old_rdn = match split_line(rl, line)?.1 {
            Spec::Text(v) if trim_trailing_spaces(v) == b"0" => false,
            Spec::Text(v) if trim_trailing_spaces(v) == b"1" => true,
            _ => return Err(syntax(rl, line.no, "deleteoldrdn: must be 0 or 1")),
        };
        let mut new_superior = None;
        let mut next = 2;
        if let Some(line) = lines.get(2).filter(|l| is_keyword(l, "newsuperior")) {
            let (_, spec) = split_line(rl, line)?;
            new_superior = Some(self.value(rl, line.no, spec, budget)?);
            next = 3;
        }
        if let Some(extra) = lines.get(next) {
            return Err(syntax(
                rl,
                extra.no,
                format!("nothing may follow the newrdn, deleteoldrdn and newsuperior of a {kind} record"),
            ));
        }
        Ok(LdifChange::ModRdn {
            new_rdn,
            delete_old_rdn,
            new_superior,
        })
    }
}

impl<R: BufRead> Iterator for LdifReader<R> {
    type Item = Result<LdifRecord, LdifError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.read_record().transpose()
    }
}
