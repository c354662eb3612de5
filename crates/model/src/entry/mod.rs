//! Entries: the owned form a write builds ([`Entry`]), the compact form the store keeps
//! ([`StoredEntry`]: one compact octet string per entry, values kept as BER TLVs),
//! schema checking and modifications.

pub mod check;
mod description;
pub mod modify;

mod stored;
mod stored_builder;

pub use description::{split_description, Options};
pub use stored::{StoredAttribute, StoredAttributes, StoredEntry, StoredFormatError, StoredRef};
pub use stored_builder::StoredBuilder;

use larch_proto::AddRequest;

use crate::dn::{Dn, NormDn};
use crate::error::ModelError;
use crate::schema::{AttributeTypeId, Schema};

/// One attribute of an [`Entry`]: type, options, values (in the order they were given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attribute {
    /// The attribute type.
    pub ty: AttributeTypeId,
    /// Its options (`;binary`, `;lang-fr`), normalized.
    pub options: Options,
    /// The values.
    pub values: Vec<Vec<u8>>,
}

/// An entry being built or changed: its DN and attributes. Not the stored form; see
/// [`StoredEntry`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The DN as the client wrote it (returned in search results).
    pub dn: Dn,
    /// The normalized DN (the store's key).
    pub norm_dn: NormDn,
    /// The attributes, one per (type, options).
    pub attrs: Vec<Attribute>,
}

impl Entry {
    /// An entry with no attributes.
    pub fn new(dn: Dn, norm_dn: NormDn) -> Self {
        Entry {
            dn,
            norm_dn,
            attrs: Vec::new(),
        }
    }

    /// Builds the entry of an AddRequest: the DN parsed and normalized, every attribute
    /// description resolved (`undefinedAttributeType` for an unknown one). An attribute
    /// listed twice has its values merged. No schema rule is checked here; see
    /// [`check::check_entry`].
    pub fn from_add_request(req: &AddRequest<'_>, schema: &Schema) -> Result<Entry, ModelError> {
        let (dn, norm_dn) = NormDn::parse(req.entry, schema)?;
        let mut entry = Entry::new(dn, norm_dn);
        for a in req.attributes.iter() {
            let (ty, options) = resolve_description(a.description, schema)?;
            for v in a.values.iter() {
                entry.push_value(ty, &options, v.to_vec());
            }
        }
        Ok(entry)
    }

    /// The attribute with exactly this type and these options.
    pub fn attribute(&self, ty: AttributeTypeId, options: &Options) -> Option<&Attribute> {
        self.attrs.iter().find(|a| a.ty == ty && &a.options == options)
    }

    /// Every attribute of this type, whatever its options.
    pub fn attributes_of(&self, ty: AttributeTypeId) -> impl Iterator<Item = &Attribute> {
        self.attrs.iter().filter(move |a| a.ty == ty)
    }

    /// Appends a value, creating the attribute if needed (no duplicate check).
    pub fn push_value(&mut self, ty: AttributeTypeId, options: &Options, value: Vec<u8>) {
        // Values of one attribute usually come together (LDIF, AddRequest): try the last
        // attribute before searching them all.
        if let Some(last) = self.attrs.last_mut() {
            if last.ty == ty && &last.options == options {
                last.values.push(value);
                return;
            }
        }
        match self
            .attrs
            .iter_mut()
            .rev()
            .find(|a| a.ty == ty && &a.options == options)
        {
            Some(a) => a.values.push(value),
            None => self.attrs.push(Attribute {
                ty,
                options: options.clone(),
                values: vec![value],
            }),
        }
    }

    /// Replaces all values of (type, options); no values removes the attribute.
    pub fn set_values(&mut self, ty: AttributeTypeId, options: &Options, values: Vec<Vec<u8>>) {
        self.attrs.retain(|a| !(a.ty == ty && &a.options == options));
        if !values.is_empty() {
            self.attrs.push(Attribute {
                ty,
                options: options.clone(),
                values,
            });
        }
    }

    /// The compact stored form.
    pub fn to_stored(&self) -> StoredEntry {
        StoredEntry::build(&self.attrs)
    }

    /// Rebuilds the owned form of a stored entry (for a modification).
    pub fn from_stored(dn: Dn, norm_dn: NormDn, stored: StoredRef<'_>) -> Entry {
        let attrs = stored
            .attributes()
            .map(|a| Attribute {
                ty: a.ty,
                options: a.options(),
                values: a.values.iter().map(<[u8]>::to_vec).collect(),
            })
            .collect();
        Entry { dn, norm_dn, attrs }
    }
}

/// Resolves an attribute description against the schema.
pub fn resolve_description(text: &[u8], schema: &Schema) -> Result<(AttributeTypeId, Options), ModelError> {
    let (ty, options) = split_description(text).ok_or_else(|| {
        ModelError::UndefinedAttributeType(format!(
            "`{}` is not an attribute description",
            String::from_utf8_lossy(text)
        ))
    })?;
    let id = schema
        .attribute_type(ty)
        .map(|t| t.id)
        .ok_or_else(|| ModelError::UndefinedAttributeType(format!("attribute type `{ty}` is not defined")))?;
    Ok((id, options))
}
