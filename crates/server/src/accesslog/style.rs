//! What the access log's lines look like: the format, the level, and (for a JSON line's
//! `key`) the second the log started. The request threads format with it into their
//! buffers; the writer uses it for the lines it writes itself (records dropped).

use super::event::Event;
use super::level::Level;
use super::time::TimeCache;
use super::{format_389, format_json};
use crate::config::AccessLogFormat;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    pub format: AccessLogFormat,
    pub level: Level,
    /// The Unix second the log started (the first half of a JSON line's `key`).
    pub started: u64,
}

impl Style {
    /// Appends the lines of `event` (its times on the wall clock); says how many.
    pub(crate) fn write(&self, out: &mut Vec<u8>, event: &Event<'_>, clock: &mut TimeCache) -> u64 {
        match self.format {
            AccessLogFormat::Text389 => format_389::write(out, event, self.level, clock),
            AccessLogFormat::Json => format_json::write(out, event, self.level, clock, self.started),
        }
    }
}
