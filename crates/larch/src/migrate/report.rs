//! The migration report: every item of the slapd configuration and data, each carried
//! over, changed in meaning, or dropped, with the line or entry it came from; printed as
//! text or JSON, and the exit status it implies (0: everything carried over, possibly
//! changed in meaning; 3: something was dropped; errors are 1 and have no report).

use serde_json::json;

use super::model::Origin;

/// Exit status when something was dropped.
pub const EXIT_DROPPED: u8 = 3;

/// What became of an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fate {
    /// Larch does the same.
    Carried,
    /// Larch does something close, said in the note.
    Changed,
    /// Larch does not do it; the note says what that means.
    Dropped,
}

impl Fate {
    /// The word used in the text and JSON forms.
    pub fn word(self) -> &'static str {
        match self {
            Fate::Carried => "carried",
            Fate::Changed => "changed",
            Fate::Dropped => "dropped",
        }
    }
}

/// One item of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What became of it.
    pub fate: Fate,
    /// The directive, clause or data it is about, as written (`index cn eq,sub`).
    pub what: String,
    /// Where it is in Larch, or why it is not.
    pub note: String,
    /// Where it came from (none for what the data as a whole gave).
    pub origin: Option<Origin>,
}

/// Every item, in the order found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The items.
    pub items: Vec<Item>,
}

impl Report {
    /// Adds an item.
    pub fn push(
        &mut self,
        fate: Fate,
        what: impl Into<String>,
        note: impl Into<String>,
        origin: Option<&Origin>,
    ) {
        self.items.push(Item {
            fate,
            what: what.into(),
            note: note.into(),
            origin: origin.cloned(),
        });
    }

    /// Adds every item of `other`.
    pub fn extend(&mut self, other: Report) {
        self.items.extend(other.items);
    }

    /// How many items have `fate`.
    pub fn count(&self, fate: Fate) -> usize {
        self.items.iter().filter(|i| i.fate == fate).count()
    }

    /// 0, or [`EXIT_DROPPED`] when anything was dropped.
    pub fn exit_status(&self) -> u8 {
        if self.count(Fate::Dropped) > 0 {
            EXIT_DROPPED
        } else {
            0
        }
    }

    /// The text form: one section per fate, one item per line with its origin, then a
    /// summary line.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (fate, title) in [
            (Fate::Carried, "Carried over"),
            (Fate::Changed, "Changed in meaning"),
            (Fate::Dropped, "Not carried over (dropped)"),
        ] {
            let items: Vec<&Item> = self.items.iter().filter(|i| i.fate == fate).collect();
            if items.is_empty() {
                continue;
            }
            out.push_str(&format!("{title}:\n"));
            for i in items {
                let origin = i.origin.as_ref().map(|o| format!("{o}: ")).unwrap_or_default();
                out.push_str(&format!("  {origin}{}\n      -> {}\n", i.what, i.note));
            }
        }
        out.push_str(&format!(
            "summary: {} carried over, {} changed in meaning, {} dropped\n",
            self.count(Fate::Carried),
            self.count(Fate::Changed),
            self.count(Fate::Dropped)
        ));
        out
    }

    /// The JSON form: `{"items": [{"fate", "what", "note", "file", "line"}], "summary": {...},
    /// "exit_status"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let items: Vec<serde_json::Value> = self
            .items
            .iter()
            .map(|i| {
                json!({
                    "fate": i.fate.word(),
                    "what": i.what,
                    "note": i.note,
                    "file": i.origin.as_ref().map(|o| o.file.display().to_string()),
                    "line": i.origin.as_ref().map(|o| o.line),
                })
            })
            .collect();
        json!({
            "items": items,
            "summary": {
                "carried": self.count(Fate::Carried),
                "changed": self.count(Fate::Changed),
                "dropped": self.count(Fate::Dropped),
            },
            "exit_status": self.exit_status(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_and_forms() {
        let mut r = Report::default();
        let o = Origin::new("slapd.conf", 7);
        r.push(Fate::Carried, "index cn eq", "[indexes] cn = [\"eq\"]", Some(&o));
        r.push(Fate::Changed, "pidfile /run/slapd.pid", "no PID file", None);
        assert_eq!(r.exit_status(), 0);
        r.push(Fate::Dropped, "overlay memberof", "no memberOf yet", Some(&o));
        assert_eq!(r.exit_status(), EXIT_DROPPED);
        let text = r.to_text();
        assert!(text.contains("slapd.conf:7: overlay memberof"), "{text}");
        assert!(text.ends_with("summary: 1 carried over, 1 changed in meaning, 1 dropped\n"));
        let j = r.to_json();
        assert_eq!(j["items"][2]["fate"], "dropped");
        assert_eq!(j["items"][2]["line"], 7);
        assert_eq!(j["exit_status"], 3);
    }
}
