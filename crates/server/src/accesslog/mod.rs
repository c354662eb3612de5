//! The access log: the lines of each operation result and connection event, in 389
//! Directory Server's text format (which its `logconv` reads) or its JSON lines.
//!
//! How a line gets to the file:
//! 1. [`AccessLog`] is an observer of the operation pipeline (`crate::outcome`): for each
//!    outcome it makes an [`Event`] borrowing what it prints and formats its lines into
//!    the calling thread's buffer (`buffers`; `format_389`, `format_json`: the request
//!    line with the arguments the level asks for, read by `request` from the request
//!    path's decoding or the PDU, then the RESULT line). No allocation once the buffer
//!    has grown, no lock shared with another request thread;
//! 2. the log's writer thread (`writer`) drains every thread's buffer every
//!    [`writer::DRAIN_INTERVAL`] (sooner when one fills), puts the lines of all threads in
//!    the order their events happened and appends them to the file (`file`: rotation by
//!    size and age, retention, reopen on SIGHUP);
//! 3. when a buffer is full (the disk is slower than the server), events are dropped and
//!    counted, and the writer says so in the log itself; a failed write is counted as lost
//!    lines and reported. A request never waits for the log file.
//!
//! The figures (what the log costs a search, pipelined and with one request in flight per
//! connection) are in `docs/benchmarks.md`; the formats, with sample lines and how to run
//! `logconv`, in `docs/logs.md`.

pub mod buffers;
pub mod event;
pub mod file;
pub mod fixed;
pub mod format_389;
pub mod format_json;
pub mod level;
pub mod number;
pub mod printable;
pub mod request;
mod style;
#[cfg(test)]
mod test_events;
pub mod time;
pub mod writer;

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use larch_proto::LdapMessage;
use larch_store::storage::Storage;

use crate::clock::Mono;
use crate::config::{AccessLogLevel, AccessLogSettings};
use crate::outcome::{ConnectionEvent, Observer, Outcome};
use buffers::Buffers;
use event::Event;
use file::{LogFile, Rotation};
use level::Level;
use style::Style;
use writer::{Shared, Writer};

/// What the access log has done, for monitoring and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessLogStats {
    /// Lines written to the file.
    pub lines_written: u64,
    /// Records dropped because a buffer was full.
    pub records_dropped: u64,
    /// Lines lost because a write to the file failed.
    pub lines_lost: u64,
    /// Writes to the file that failed.
    pub write_errors: u64,
}

/// A running access log (see the module documentation).
#[derive(Debug)]
pub struct AccessLog {
    buffers: Arc<Buffers>,
    shared: Arc<Shared>,
    level: Level,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl From<AccessLogLevel> for Level {
    fn from(l: AccessLogLevel) -> Level {
        match l {
            AccessLogLevel::Results => Level::Results,
            AccessLogLevel::Default => Level::Default,
            AccessLogLevel::Full => Level::Full,
        }
    }
}

impl AccessLog {
    /// Opens the log file at `path` through `storage` and starts the writer thread.
    pub fn start(
        settings: &AccessLogSettings,
        path: PathBuf,
        storage: Arc<dyn Storage>,
    ) -> io::Result<Arc<AccessLog>> {
        let rotation = Rotation {
            max_size: settings.max_size,
            every: settings.rotate_every,
            keep: settings.keep,
        };
        let file = LogFile::open(storage, path, rotation)?;
        let style = Style {
            format: settings.format,
            level: settings.level.into(),
            started: wall(SystemTime::now()) / 1_000_000_000,
        };
        let buffers = Buffers::new(style);
        let shared = Arc::new(Shared::default());
        let writer = Writer {
            buffers: buffers.clone(),
            shared: shared.clone(),
            file,
            style,
        };
        let thread = std::thread::Builder::new()
            .name("larch-access-log".into())
            .spawn(move || writer.run())?;
        Ok(Arc::new(AccessLog {
            buffers,
            shared,
            level: settings.level.into(),
            thread: Mutex::new(Some(thread)),
        }))
    }

    /// Asks the writer to reopen the file by name before its next write (SIGHUP, after
    /// logrotate moved the file).
    pub fn reopen(&self) {
        self.shared.reopen.store(true, Ordering::Release);
        self.buffers.wake();
    }

    /// Writes every line taken so far and stops the writer. Events arriving later are not
    /// taken.
    pub fn close(&self) {
        self.buffers.close();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }

    /// What the log has done so far.
    pub fn stats(&self) -> AccessLogStats {
        let s = &self.shared;
        AccessLogStats {
            lines_written: s.lines_written.load(Ordering::Relaxed),
            records_dropped: s.records_dropped.load(Ordering::Relaxed),
            lines_lost: s.lines_lost.load(Ordering::Relaxed),
            write_errors: s.write_errors.load(Ordering::Relaxed),
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.close();
    }
}

/// Nanoseconds since the Unix epoch.
fn wall(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// The request an outcome's lines may print, as its PDU and its decoding. At the results
/// level no request line is written, so the formatter gets neither and reads nothing (and
/// a search's notes name no base or filter, whichever thread ran it); but an Abandon's
/// line is its outcome, read from its (small) PDU, and an undecodable request's is kept.
fn shown_request<'a>(level: Level, o: &Outcome<'a>) -> (&'a [u8], Option<&'a LdapMessage<'a>>) {
    let hidden =
        level == Level::Results && !o.undecodable && o.request_tag != larch_proto::op_tag::ABANDON_REQUEST;
    if hidden {
        (&[], None)
    } else {
        (o.request, o.decoded)
    }
}

impl Observer for AccessLog {
    fn operation(&self, o: &Outcome<'_>) {
        let reply = o.reply;
        let full = self.level == Level::Full;
        // The OIDs of the response controls, at the full level only (it allocates).
        let controls = match reply {
            Some(r) if full && !r.controls.is_empty() => {
                r.controls.iter().map(|c| c.oid).collect::<Vec<_>>().join(" ")
            }
            _ => String::new(),
        };
        let (request, decoded) = shown_request(self.level, o);
        let finished = o.times.finished.as_nanos();
        let waited = o.times.wait_nanos();
        let worked = o.times.work_nanos();
        let op = event::Op {
            conn: o.conn,
            op: o.op,
            msgid: o.msgid,
            received: finished.saturating_sub(waited + worked),
            finished,
            wait_ns: waited,
            work_ns: worked,
            request_tag: o.request_tag,
            request,
            decoded,
            undecodable: o.undecodable,
            response_tag: o.response_tag,
            result: reply.map_or(0, |r| r.code.0),
            matched: reply.map_or("", |r| r.matched_dn.as_str()),
            message: reply.map_or("", |r| r.message.as_str()),
            entries: o.sent.entries,
            references: o.sent.references,
            bytes: o.sent.bytes,
            authz_dn: o.identity.dn(),
            target_op: o.target_op,
            response_controls: &controls,
            notes: o.notes.letters(),
        };
        self.buffers.append(finished, Event::Op(op));
    }

    fn connection(&self, e: &ConnectionEvent<'_>) {
        let time = Mono::now().as_nanos();
        let event = match *e {
            ConnectionEvent::Accepted {
                conn,
                peer,
                local,
                fd,
                ldaps,
            } => Event::Connect(event::Connect {
                conn,
                time,
                peer,
                local,
                fd,
                ldaps,
            }),
            ConnectionEvent::Tls {
                conn,
                version,
                cipher,
                keysize,
            } => Event::Tls(event::Tls {
                conn,
                time,
                version,
                cipher,
                keysize,
            }),
            ConnectionEvent::Refused {
                conn,
                peer,
                local,
                reason,
            } => Event::Refused(event::Refused {
                conn,
                time,
                peer,
                local,
                reason,
            }),
            ConnectionEvent::Closed { conn, op, fd, reason } => Event::Close(event::Close {
                conn,
                time,
                op,
                fd,
                reason,
            }),
        };
        self.buffers.append(time, event);
    }
}

#[cfg(test)]
mod tests {
    use larch_proto::{op_tag, AbandonRequest, DelRequest, ProtocolOp};

    use super::*;
    use crate::accesslog::test_events::pdu;
    use crate::identity::Identity;
    use crate::outcome::{SearchNotes, Sent, Times};

    fn outcome<'a>(request: &'a [u8], decoded: Option<&'a LdapMessage<'a>>) -> Outcome<'a> {
        let now = Mono::now();
        Outcome {
            conn: 1,
            op: 0,
            msgid: 1,
            request_tag: LdapMessage::decode(request).map_or(0, |m| m.op.tag()),
            request,
            decoded,
            undecodable: false,
            response_tag: 0,
            reply: None,
            sent: Sent::default(),
            times: Times {
                received: now,
                started: now,
                finished: now,
            },
            identity: &Identity::Anonymous,
            target_op: -1,
            notes: SearchNotes::default(),
            bind_method: None,
        }
    }

    #[test]
    fn the_results_level_shows_only_an_abandons_request_and_an_undecodable_one() {
        let request = pdu(ProtocolOp::DelRequest(DelRequest { dn: b"cn=a" }), &[]);
        let msg = LdapMessage::decode(&request).unwrap();
        let o = outcome(&request, Some(&msg));
        assert_eq!(shown_request(Level::Results, &o), (&[][..], None));
        for level in [Level::Default, Level::Full] {
            assert_eq!(shown_request(level, &o), (&request[..], Some(&msg)));
        }
        let abandon = pdu(ProtocolOp::AbandonRequest(AbandonRequest { message_id: 1 }), &[]);
        let a = outcome(&abandon, None);
        assert_eq!(a.request_tag, op_tag::ABANDON_REQUEST);
        assert_eq!(shown_request(Level::Results, &a), (&abandon[..], None));
        let mut bad = outcome(&request, None);
        bad.undecodable = true;
        assert_eq!(shown_request(Level::Results, &bad), (&request[..], None));
    }
}
