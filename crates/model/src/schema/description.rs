//! Schema elements as written (RFC 4512 section 4.1), before resolution, and how they
//! print.
//!
//! A description keeps what its text says: names and references as written (resolution
//! looks them up later), OIDs with `objectidentifier` macros already expanded, and
//! every `X-` extension in order. Printing (`Display`) produces the RFC 4512 form used
//! in `cn=Subschema`; it parses back to an equal description (`parse` module), which
//! the property tests and the `schema_parse` fuzz target check.
//!
//! Printing rules: keywords in RFC 4512 order and upper case; one name or OID bare
//! (`NAME 'cn'`, `MUST cn`), several in parentheses (`NAME ( 'cn' 'commonName' )`,
//! `MUST ( cn $ sn )`); `'` and `\` in quoted strings escaped as `\27` and `\5C`;
//! USAGE only when it is not `userApplications`; the object class kind always.

use std::fmt::{self, Display, Formatter, Write};

/// The eight kinds of schema element of RFC 4512 section 4.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementKind {
    /// `AttributeTypeDescription` (4.1.2).
    AttributeType,
    /// `ObjectClassDescription` (4.1.1).
    ObjectClass,
    /// `SyntaxDescription` (4.1.5).
    LdapSyntax,
    /// `MatchingRuleDescription` (4.1.3).
    MatchingRule,
    /// `MatchingRuleUseDescription` (4.1.4).
    MatchingRuleUse,
    /// `DITContentRuleDescription` (4.1.6).
    DitContentRule,
    /// `DITStructureRuleDescription` (4.1.7.1).
    DitStructureRule,
    /// `NameFormDescription` (4.1.7.2).
    NameForm,
}

impl ElementKind {
    /// Every kind, in the order the subschema lists them.
    pub const ALL: [ElementKind; 8] = [
        ElementKind::LdapSyntax,
        ElementKind::MatchingRule,
        ElementKind::AttributeType,
        ElementKind::ObjectClass,
        ElementKind::MatchingRuleUse,
        ElementKind::DitContentRule,
        ElementKind::NameForm,
        ElementKind::DitStructureRule,
    ];

    /// The OpenLDAP `.schema` directive for this kind (`attributetype`, ...).
    pub fn directive(self) -> &'static str {
        match self {
            ElementKind::AttributeType => "attributetype",
            ElementKind::ObjectClass => "objectclass",
            ElementKind::LdapSyntax => "ldapsyntax",
            ElementKind::MatchingRule => "matchingrule",
            ElementKind::MatchingRuleUse => "matchingruleuse",
            ElementKind::DitContentRule => "ditcontentrule",
            ElementKind::DitStructureRule => "ditstructurerule",
            ElementKind::NameForm => "nameform",
        }
    }

    /// The subschema attribute holding elements of this kind (`attributeTypes`, ...).
    pub fn subschema_attribute(self) -> &'static str {
        match self {
            ElementKind::AttributeType => "attributeTypes",
            ElementKind::ObjectClass => "objectClasses",
            ElementKind::LdapSyntax => "ldapSyntaxes",
            ElementKind::MatchingRule => "matchingRules",
            ElementKind::MatchingRuleUse => "matchingRuleUse",
            ElementKind::DitContentRule => "dITContentRules",
            ElementKind::DitStructureRule => "dITStructureRules",
            ElementKind::NameForm => "nameForms",
        }
    }
}

impl Display for ElementKind {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElementKind::AttributeType => "attribute type",
            ElementKind::ObjectClass => "object class",
            ElementKind::LdapSyntax => "LDAP syntax",
            ElementKind::MatchingRule => "matching rule",
            ElementKind::MatchingRuleUse => "matching rule use",
            ElementKind::DitContentRule => "DIT content rule",
            ElementKind::DitStructureRule => "DIT structure rule",
            ElementKind::NameForm => "name form",
        })
    }
}

/// `USAGE` of an attribute type (RFC 4512 section 4.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AttributeUsage {
    /// `userApplications` (the default): a user attribute.
    #[default]
    UserApplications,
    /// `directoryOperation`: operational, the same on every server holding the entry.
    DirectoryOperation,
    /// `distributedOperation`: operational, shared among servers (DSA-shared).
    DistributedOperation,
    /// `dSAOperation`: operational, specific to one server.
    DsaOperation,
}

impl AttributeUsage {
    /// The keyword as RFC 4512 spells it.
    pub fn keyword(self) -> &'static str {
        match self {
            AttributeUsage::UserApplications => "userApplications",
            AttributeUsage::DirectoryOperation => "directoryOperation",
            AttributeUsage::DistributedOperation => "distributedOperation",
            AttributeUsage::DsaOperation => "dSAOperation",
        }
    }

    /// Parses a USAGE keyword, ignoring case.
    pub fn from_keyword(word: &str) -> Option<AttributeUsage> {
        [
            AttributeUsage::UserApplications,
            AttributeUsage::DirectoryOperation,
            AttributeUsage::DistributedOperation,
            AttributeUsage::DsaOperation,
        ]
        .into_iter()
        .find(|u| u.keyword().eq_ignore_ascii_case(word))
    }

    /// Whether this usage makes an attribute operational (anything but
    /// `userApplications`).
    pub fn is_operational(self) -> bool {
        self != AttributeUsage::UserApplications
    }
}

/// Kind of an object class (RFC 4512 section 2.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ObjectClassKind {
    /// `ABSTRACT`: only a superclass of other classes (`top`).
    Abstract,
    /// `STRUCTURAL` (the default): an entry has exactly one structural chain.
    #[default]
    Structural,
    /// `AUXILIARY`: added to entries of any structural class.
    Auxiliary,
}

impl ObjectClassKind {
    /// The keyword as RFC 4512 spells it.
    pub fn keyword(self) -> &'static str {
        match self {
            ObjectClassKind::Abstract => "ABSTRACT",
            ObjectClassKind::Structural => "STRUCTURAL",
            ObjectClassKind::Auxiliary => "AUXILIARY",
        }
    }

    /// Lower-case name for messages.
    pub fn adjective(self) -> &'static str {
        match self {
            ObjectClassKind::Abstract => "abstract",
            ObjectClassKind::Structural => "structural",
            ObjectClassKind::Auxiliary => "auxiliary",
        }
    }
}

/// One `X-` extension: its name as written and its values (RFC 4512 `extensions`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Extension {
    /// `X-ORIGIN`, `X-ORDERED`, ... in upper case (keywords are case-insensitive).
    pub name: String,
    /// The quoted strings, unescaped.
    pub values: Vec<String>,
}

/// `AttributeTypeDescription` (RFC 4512 section 4.1.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttributeTypeDescription {
    /// Numeric OID (macros expanded).
    pub oid: String,
    /// `NAME`s in order; the first is the primary name.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `SUP`: the supertype's name or OID, as written.
    pub sup: Option<String>,
    /// `EQUALITY` rule, as written.
    pub equality: Option<String>,
    /// `ORDERING` rule, as written.
    pub ordering: Option<String>,
    /// `SUBSTR` rule, as written.
    pub substr: Option<String>,
    /// `SYNTAX` numeric OID (macros expanded), without the bound.
    pub syntax: Option<String>,
    /// The `{len}` bound of `SYNTAX`, if any (advisory; RFC 4512 calls it a suggested
    /// minimum upper bound).
    pub syntax_len: Option<u32>,
    /// `SINGLE-VALUE`.
    pub single_value: bool,
    /// `COLLECTIVE`.
    pub collective: bool,
    /// `NO-USER-MODIFICATION`.
    pub no_user_modification: bool,
    /// `USAGE` (`userApplications` when absent).
    pub usage: AttributeUsage,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `ObjectClassDescription` (RFC 4512 section 4.1.1).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectClassDescription {
    /// Numeric OID (macros expanded).
    pub oid: String,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `SUP`: superclass names or OIDs, as written.
    pub sup: Vec<String>,
    /// `ABSTRACT`, `STRUCTURAL` (also when absent) or `AUXILIARY`.
    pub kind: ObjectClassKind,
    /// `MUST` attribute types, as written.
    pub must: Vec<String>,
    /// `MAY` attribute types, as written.
    pub may: Vec<String>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `SyntaxDescription` (RFC 4512 section 4.1.5).
///
/// Larch implements syntaxes in code; a schema file can describe one more syntax only by
/// mapping it onto an implemented one with OpenLDAP's `X-SUBST 'oid'` extension.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LdapSyntaxDescription {
    /// Numeric OID (macros expanded).
    pub oid: String,
    /// `NAME`s: not in RFC 4512's grammar, but OpenLDAP accepts and prints them (its
    /// `pmi.schema` uses them), so they are kept.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `MatchingRuleDescription` (RFC 4512 section 4.1.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchingRuleDescription {
    /// Numeric OID (macros expanded).
    pub oid: String,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `SYNTAX` of the assertion value (numeric OID, macros expanded).
    pub syntax: String,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `MatchingRuleUseDescription` (RFC 4512 section 4.1.4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MatchingRuleUseDescription {
    /// The matching rule's numeric OID.
    pub oid: String,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `APPLIES`: attribute types, as written.
    pub applies: Vec<String>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `DITContentRuleDescription` (RFC 4512 section 4.1.6). Parsed and kept, not enforced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DitContentRuleDescription {
    /// The structural object class's numeric OID.
    pub oid: String,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `AUX`: allowed auxiliary classes, as written.
    pub aux: Vec<String>,
    /// `MUST`, as written.
    pub must: Vec<String>,
    /// `MAY`, as written.
    pub may: Vec<String>,
    /// `NOT`: precluded attribute types, as written.
    pub not: Vec<String>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `DITStructureRuleDescription` (RFC 4512 section 4.1.7.1). Parsed and kept, not
/// enforced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DitStructureRuleDescription {
    /// The rule ID (an integer, not an OID).
    pub rule_id: u32,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `FORM`: the name form, as written.
    pub form: String,
    /// `SUP`: superior rule IDs.
    pub sup: Vec<u32>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// `NameFormDescription` (RFC 4512 section 4.1.7.2). Parsed and kept, not enforced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NameFormDescription {
    /// Numeric OID (macros expanded).
    pub oid: String,
    /// `NAME`s in order.
    pub names: Vec<String>,
    /// `DESC`, unescaped.
    pub desc: Option<String>,
    /// `OBSOLETE`.
    pub obsolete: bool,
    /// `OC`: the structural object class, as written.
    pub oc: String,
    /// `MUST`: naming attribute types, as written.
    pub must: Vec<String>,
    /// `MAY`, as written.
    pub may: Vec<String>,
    /// `X-` extensions in order.
    pub extensions: Vec<Extension>,
}

/// Any schema element description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Element {
    /// An attribute type.
    AttributeType(AttributeTypeDescription),
    /// An object class.
    ObjectClass(ObjectClassDescription),
    /// An LDAP syntax.
    LdapSyntax(LdapSyntaxDescription),
    /// A matching rule.
    MatchingRule(MatchingRuleDescription),
    /// A matching rule use.
    MatchingRuleUse(MatchingRuleUseDescription),
    /// A DIT content rule.
    DitContentRule(DitContentRuleDescription),
    /// A DIT structure rule.
    DitStructureRule(DitStructureRuleDescription),
    /// A name form.
    NameForm(NameFormDescription),
}

impl Element {
    /// The kind of this element.
    pub fn kind(&self) -> ElementKind {
        match self {
            Element::AttributeType(_) => ElementKind::AttributeType,
            Element::ObjectClass(_) => ElementKind::ObjectClass,
            Element::LdapSyntax(_) => ElementKind::LdapSyntax,
            Element::MatchingRule(_) => ElementKind::MatchingRule,
            Element::MatchingRuleUse(_) => ElementKind::MatchingRuleUse,
            Element::DitContentRule(_) => ElementKind::DitContentRule,
            Element::DitStructureRule(_) => ElementKind::DitStructureRule,
            Element::NameForm(_) => ElementKind::NameForm,
        }
    }

    /// The element's names (usually none for syntaxes).
    pub fn names(&self) -> &[String] {
        match self {
            Element::AttributeType(e) => &e.names,
            Element::ObjectClass(e) => &e.names,
            Element::LdapSyntax(e) => &e.names,
            Element::MatchingRule(e) => &e.names,
            Element::MatchingRuleUse(e) => &e.names,
            Element::DitContentRule(e) => &e.names,
            Element::DitStructureRule(e) => &e.names,
            Element::NameForm(e) => &e.names,
        }
    }

    /// The element's identifier: its numeric OID, or the rule ID of a DIT structure rule.
    pub fn identifier(&self) -> String {
        match self {
            Element::AttributeType(e) => e.oid.clone(),
            Element::ObjectClass(e) => e.oid.clone(),
            Element::LdapSyntax(e) => e.oid.clone(),
            Element::MatchingRule(e) => e.oid.clone(),
            Element::MatchingRuleUse(e) => e.oid.clone(),
            Element::DitContentRule(e) => e.oid.clone(),
            Element::DitStructureRule(e) => e.rule_id.to_string(),
            Element::NameForm(e) => e.oid.clone(),
        }
    }

    /// The first name, or the identifier when there is no name: how messages refer to
    /// the element.
    pub fn label(&self) -> String {
        match self.names().first() {
            Some(name) => name.clone(),
            None => self.identifier(),
        }
    }
}

impl Display for Element {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        match self {
            Element::AttributeType(e) => e.fmt(f),
            Element::ObjectClass(e) => e.fmt(f),
            Element::LdapSyntax(e) => e.fmt(f),
            Element::MatchingRule(e) => e.fmt(f),
            Element::MatchingRuleUse(e) => e.fmt(f),
            Element::DitContentRule(e) => e.fmt(f),
            Element::DitStructureRule(e) => e.fmt(f),
            Element::NameForm(e) => e.fmt(f),
        }
    }
}

/// Writes `s` as an RFC 4512 `qdstring` body: `'` as `\27`, `\` as `\5C`.
fn write_quoted(f: &mut Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('\'')?;
    for c in s.chars() {
        match c {
            '\'' => f.write_str("\\27")?,
            '\\' => f.write_str("\\5C")?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('\'')
}

/// ` NAME 'a'` or ` NAME ( 'a' 'b' )`; nothing when there is no name.
fn write_names(f: &mut Formatter<'_>, names: &[String]) -> fmt::Result {
    match names {
        [] => Ok(()),
        [one] => {
            f.write_str(" NAME ")?;
            write_quoted(f, one)
        }
        many => {
            f.write_str(" NAME (")?;
            for name in many {
                f.write_char(' ')?;
                write_quoted(f, name)?;
            }
            f.write_str(" )")
        }
    }
}

fn write_desc(f: &mut Formatter<'_>, desc: &Option<String>) -> fmt::Result {
    if let Some(desc) = desc {
        f.write_str(" DESC ")?;
        write_quoted(f, desc)?;
    }
    Ok(())
}

fn write_flag(f: &mut Formatter<'_>, set: bool, keyword: &str) -> fmt::Result {
    if set {
        f.write_char(' ')?;
        f.write_str(keyword)?;
    }
    Ok(())
}

fn write_oid(f: &mut Formatter<'_>, keyword: &str, oid: &Option<String>) -> fmt::Result {
    if let Some(oid) = oid {
        write!(f, " {keyword} {oid}")?;
    }
    Ok(())
}

/// ` KW a` or ` KW ( a $ b )`; nothing for an empty list.
fn write_oids(f: &mut Formatter<'_>, keyword: &str, oids: &[String]) -> fmt::Result {
    match oids {
        [] => Ok(()),
        [one] => write!(f, " {keyword} {one}"),
        many => {
            write!(f, " {keyword} (")?;
            for (i, oid) in many.iter().enumerate() {
                if i > 0 {
                    f.write_str(" $")?;
                }
                write!(f, " {oid}")?;
            }
            f.write_str(" )")
        }
    }
}

fn write_extensions(f: &mut Formatter<'_>, extensions: &[Extension]) -> fmt::Result {
    for ext in extensions {
        write!(f, " {}", ext.name)?;
        match ext.values.as_slice() {
            [one] => {
                f.write_char(' ')?;
                write_quoted(f, one)?;
            }
            values => {
                f.write_str(" (")?;
                for value in values {
                    f.write_char(' ')?;
                    write_quoted(f, value)?;
                }
                f.write_str(" )")?;
            }
        }
    }
    Ok(())
}

impl Display for AttributeTypeDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write_oid(f, "SUP", &self.sup)?;
        write_oid(f, "EQUALITY", &self.equality)?;
        write_oid(f, "ORDERING", &self.ordering)?;
        write_oid(f, "SUBSTR", &self.substr)?;
        if let Some(syntax) = &self.syntax {
            write!(f, " SYNTAX {syntax}")?;
            if let Some(len) = self.syntax_len {
                write!(f, "{{{len}}}")?;
            }
        }
        write_flag(f, self.single_value, "SINGLE-VALUE")?;
        write_flag(f, self.collective, "COLLECTIVE")?;
        write_flag(f, self.no_user_modification, "NO-USER-MODIFICATION")?;
        if self.usage != AttributeUsage::UserApplications {
            write!(f, " USAGE {}", self.usage.keyword())?;
        }
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for ObjectClassDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write_oids(f, "SUP", &self.sup)?;
        write!(f, " {}", self.kind.keyword())?;
        write_oids(f, "MUST", &self.must)?;
        write_oids(f, "MAY", &self.may)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for LdapSyntaxDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for MatchingRuleDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write!(f, " SYNTAX {}", self.syntax)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for MatchingRuleUseDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write_oids(f, "APPLIES", &self.applies)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for DitContentRuleDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write_oids(f, "AUX", &self.aux)?;
        write_oids(f, "MUST", &self.must)?;
        write_oids(f, "MAY", &self.may)?;
        write_oids(f, "NOT", &self.not)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for DitStructureRuleDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.rule_id)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write!(f, " FORM {}", self.form)?;
        match self.sup.as_slice() {
            [] => {}
            [one] => write!(f, " SUP {one}")?,
            many => {
                f.write_str(" SUP (")?;
                for id in many {
                    write!(f, " {id}")?;
                }
                f.write_str(" )")?;
            }
        }
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}

impl Display for NameFormDescription {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write!(f, "( {}", self.oid)?;
        write_names(f, &self.names)?;
        write_desc(f, &self.desc)?;
        write_flag(f, self.obsolete, "OBSOLETE")?;
        write!(f, " OC {}", self.oc)?;
        write_oids(f, "MUST", &self.must)?;
        write_oids(f, "MAY", &self.may)?;
        write_extensions(f, &self.extensions)?;
        f.write_str(" )")
    }
}
