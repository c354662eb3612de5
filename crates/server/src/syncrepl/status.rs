//! What operators see of a consumer: its provider, its state, the newest CSN applied, the
//! changes applied, the last error and when. Written by the consumer task, read by
//! monitoring (`crate::report`: `/metrics`, `cn=Replication,cn=Monitor`).
//!
//! Every state change is also a line in the error log ([`ConsumerStatus::set_state`]):
//! connecting, refreshing, persisting, waiting to retry (with the error and the wait),
//! idle between refreshOnly polls, stopped.
//!
//! # Lag
//! The replica's lag ([`StatusView::lag`]) is the time since it was last known to hold
//! everything its provider had sent: zero while persisting with every change received
//! applied; else the time since the last moment that was so (the end of a refresh or of
//! a refreshOnly poll, the arrival of the first change not yet applied, the end of a
//! session); before any such moment since the server started, the age of the newest CSN
//! stored (the replica's data is at least that old, as far as it knows). What the provider
//! has not yet sent, the replica cannot see: the provider counts it, per persistent
//! search, in changes and seconds (`crate::syncprov`). The delay of the newest change
//! applied while persisting (when it became durable here, less its CSN's time) shows how
//! long changes take to arrive; it assumes the two servers' clocks agree.
//!
//! Invariant: the counter only grows; the state, CSN and error are read together under one
//! short lock, so a reader never sees the state of one moment with the error of another.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use tracing::{info, warn};

/// Longest error text kept (a provider's diagnostic message is its own choice of length).
pub const MAX_ERROR_TEXT: usize = 1024;

/// Where a consumer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerState {
    /// Opening the connection, TLS, Bind.
    Connecting,
    /// Receiving a refresh (the provider's content or the changes since the cookie).
    Refreshing,
    /// refreshAndPersist after the refresh: changes as they happen.
    Persisting,
    /// refreshOnly between two polls.
    Idle,
    /// After a failure, waiting before the next attempt.
    WaitingToRetry,
    /// Given up (the retry schedule ran out) or the server is stopping.
    Stopped,
}

impl ConsumerState {
    /// Every state, in the order `/metrics` lists them.
    pub const ALL: [ConsumerState; 6] = [
        ConsumerState::Connecting,
        ConsumerState::Refreshing,
        ConsumerState::Persisting,
        ConsumerState::Idle,
        ConsumerState::WaitingToRetry,
        ConsumerState::Stopped,
    ];

    /// The name monitoring shows.
    pub fn name(self) -> &'static str {
        match self {
            ConsumerState::Connecting => "connecting",
            ConsumerState::Refreshing => "refreshing",
            ConsumerState::Persisting => "persisting",
            ConsumerState::Idle => "idle",
            ConsumerState::WaitingToRetry => "waiting_to_retry",
            ConsumerState::Stopped => "stopped",
        }
    }
}

impl fmt::Display for ConsumerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone)]
struct Shared {
    state: ConsumerState,
    since: SystemTime,
    last_csn: Option<String>,
    last_error: Option<(SystemTime, String)>,
    in_step: bool,
    behind_since: Option<SystemTime>,
    last_delay: Option<Duration>,
}

/// One consumer's status.
#[derive(Debug)]
pub struct ConsumerStatus {
    rid: u16,
    provider: String,
    base: String,
    changes: AtomicU64,
    shared: Mutex<Shared>,
}

/// A consistent copy of a status, for monitoring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusView {
    /// `rid`.
    pub rid: u16,
    /// The provider URL.
    pub provider: String,
    /// The replicated base.
    pub base: String,
    /// The state now.
    pub state: ConsumerState,
    /// Since when.
    pub since: SystemTime,
    /// The newest CSN of the cookie last stored (with the changes it covers).
    pub last_csn: Option<String>,
    /// Entries added, changed, renamed or deleted since the server started.
    pub changes_applied: u64,
    /// The last failure and when it happened.
    pub last_error: Option<(SystemTime, String)>,
    /// Every change received is applied, in persist.
    pub in_step: bool,
    /// When the replica was last known to hold everything its provider had sent, if it
    /// has been since the server started and is no longer.
    pub behind_since: Option<SystemTime>,
    /// The delay of the newest change applied while persisting.
    pub last_delay: Option<Duration>,
}

impl StatusView {
    /// The lag at `now` (see the module documentation); `None` when nothing is known (no
    /// CSN stored and never in step).
    pub fn lag(&self, now: SystemTime) -> Option<Duration> {
        if self.in_step {
            return Some(Duration::ZERO);
        }
        let since = self
            .behind_since
            .or_else(|| self.last_csn.as_deref().and_then(csn_time))?;
        Some(now.duration_since(since).unwrap_or(Duration::ZERO))
    }
}

/// The time a CSN names (its first 22 characters, `YYYYmmddHHMMSS.ffffffZ`).
pub fn csn_time(csn: &str) -> Option<SystemTime> {
    let micros = crate::ppolicy::time::parse(csn.as_bytes().get(..22)?)?;
    let micros = u64::try_from(micros).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_micros(micros))
}

impl ConsumerStatus {
    /// A consumer about to connect.
    pub fn new(rid: u16, provider: &str, base: &str) -> ConsumerStatus {
        ConsumerStatus {
            rid,
            provider: provider.to_string(),
            base: base.to_string(),
            changes: AtomicU64::new(0),
            shared: Mutex::new(Shared {
                state: ConsumerState::Connecting,
                since: SystemTime::now(),
                last_csn: None,
                last_error: None,
                in_step: false,
                behind_since: None,
                last_delay: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves to `state`, saying so in the error log when it changed.
    pub fn set_state(&self, state: ConsumerState) {
        let mut s = self.lock();
        if s.state == state {
            return;
        }
        s.state = state;
        s.since = SystemTime::now();
        drop(s);
        info!(rid = self.rid, provider = %self.provider, base = %self.base, state = %state, "replication: state");
    }

    /// Records a failure and the wait before the next attempt (`None`: no further attempt).
    pub fn failed(&self, error: &str, retry_in: Option<Duration>) {
        let text: String = error.chars().take(MAX_ERROR_TEXT).collect();
        let state = if retry_in.is_some() {
            ConsumerState::WaitingToRetry
        } else {
            ConsumerState::Stopped
        };
        self.left_step();
        {
            let mut s = self.lock();
            s.last_error = Some((SystemTime::now(), text.clone()));
            s.state = state;
            s.since = SystemTime::now();
        }
        match retry_in {
            Some(wait) => warn!(
                rid = self.rid,
                provider = %self.provider,
                error = %text,
                retry_in_seconds = wait.as_secs_f64(),
                "replication: failed; waiting to retry"
            ),
            None => warn!(
                rid = self.rid,
                provider = %self.provider,
                error = %text,
                "replication: failed and the retry schedule has run out; the consumer stopped (restart the server \
                 to try again)"
            ),
        }
    }

    /// Records the newest CSN stored and the number of entries changed with it.
    pub fn applied(&self, changes: u64, newest_csn: Option<&str>) {
        self.changes.fetch_add(changes, Ordering::Relaxed);
        if let Some(c) = newest_csn {
            self.lock().last_csn = Some(c.to_string());
        }
    }

    /// The replica holds everything its provider has sent (a refresh ended, or every
    /// change received while persisting is applied).
    pub fn caught_up(&self) {
        let mut s = self.lock();
        s.in_step = true;
        s.behind_since = None;
    }

    /// The replica may no longer hold everything (a change arrived, a poll or a session
    /// ended): its lag counts from now, unless it was already behind.
    pub fn left_step(&self) {
        let mut s = self.lock();
        if s.in_step {
            s.in_step = false;
            s.behind_since = Some(SystemTime::now());
        }
    }

    /// A persisting batch whose newest CSN is `csn` became durable now.
    pub fn delay_of(&self, csn: &str) {
        if let Some(t) = csn_time(csn) {
            self.lock().last_delay = Some(SystemTime::now().duration_since(t).unwrap_or(Duration::ZERO));
        }
    }

    /// The CSN read from the store at start.
    pub fn set_csn(&self, csn: Option<&str>) {
        self.lock().last_csn = csn.map(str::to_string);
    }

    /// The state now.
    pub fn state(&self) -> ConsumerState {
        self.lock().state
    }

    /// A consistent copy.
    pub fn view(&self) -> StatusView {
        let s = self.lock().clone();
        StatusView {
            rid: self.rid,
            provider: self.provider.clone(),
            base: self.base.clone(),
            state: s.state,
            since: s.since,
            last_csn: s.last_csn,
            changes_applied: self.changes.load(Ordering::Relaxed),
            last_error: s.last_error,
            in_step: s.in_step,
            behind_since: s.behind_since,
            last_delay: s.last_delay,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_follows_the_consumer() {
        let s = ConsumerStatus::new(3, "ldap://p:389", "dc=example,dc=com");
        assert_eq!(s.view().state, ConsumerState::Connecting);
        s.set_state(ConsumerState::Refreshing);
        s.applied(5, Some("20261127021024.123456Z#000000#000#000000"));
        s.applied(2, None);
        let v = s.view();
        assert_eq!((v.state, v.changes_applied), (ConsumerState::Refreshing, 7));
        assert_eq!(
            v.last_csn.as_deref(),
            Some("20261127021024.123456Z#000000#000#000000")
        );
        s.failed(&"x".repeat(5000), Some(Duration::from_secs(5)));
        let v = s.view();
        assert_eq!(v.state, ConsumerState::WaitingToRetry);
        assert_eq!(v.last_error.unwrap().1.len(), MAX_ERROR_TEXT);
        s.failed("gone", None);
        assert_eq!(s.state(), ConsumerState::Stopped);
    }

    #[test]
    fn the_lag_counts_from_the_last_moment_in_step() {
        let s = ConsumerStatus::new(1, "ldap://p", "dc=x");
        let now = SystemTime::now();
        // Nothing stored, never in step: unknown.
        assert_eq!(s.view().lag(now), None);
        // A CSN stored: at least its age.
        s.set_csn(Some("20261127021024.000000Z#000000#000#000000"));
        let t = csn_time("20261127021024.000000Z#000000#000#000000").unwrap();
        assert_eq!(
            s.view().lag(t + Duration::from_secs(90)),
            Some(Duration::from_secs(90))
        );
        // In step: none.
        s.caught_up();
        assert_eq!(
            s.view().lag(now + Duration::from_secs(3600)),
            Some(Duration::ZERO)
        );
        // A change arrives: the lag runs from then, and a second one does not reset it.
        s.left_step();
        let since = s.view().behind_since.unwrap();
        s.left_step();
        assert_eq!(s.view().behind_since, Some(since));
        assert_eq!(
            s.view().lag(since + Duration::from_secs(2)),
            Some(Duration::from_secs(2))
        );
        // A failure keeps the moment the replica fell behind.
        s.failed("connection lost", Some(Duration::from_secs(1)));
        assert_eq!(s.view().behind_since, Some(since));
        s.caught_up();
        assert_eq!(s.view().behind_since, None);
    }

    #[test]
    fn csn_times() {
        let t = csn_time("19700101000001.500000Z#000000#000#000000").unwrap();
        assert_eq!(t, SystemTime::UNIX_EPOCH + Duration::from_millis(1500));
        assert_eq!(csn_time("garbage"), None);
    }
}
