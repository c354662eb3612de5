//! The process's open-files limit (`RLIMIT_NOFILE`): every connection holds one file
//! descriptor, so the limit bounds the connections the server can hold.
//!
//! `larch serve` calls [`raise_to_hard`] once at start: the soft limit (what the process
//! may open) goes up to the hard limit (the ceiling the administrator or the service
//! manager set), as slapd and 389 DS do, so that a server started from a shell with the
//! usual soft limit of 1024 is not capped by it. [`soft`] is read afterwards by
//! [`super::limits::connection_limit`].

use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

/// The current soft and hard limits (`None` stands for no limit).
pub fn limits() -> std::io::Result<(Option<u64>, Option<u64>)> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(std::io::Error::from)?;
    let finite = |v: u64| (v != RLIM_INFINITY).then_some(v);
    Ok((finite(soft), finite(hard)))
}

/// The soft limit now (`None`: no limit, or it cannot be read).
pub fn soft() -> Option<u64> {
    limits().ok().and_then(|(soft, _)| soft)
}

/// What [`raise_to_hard`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raised {
    /// The soft limit before (`None`: no limit).
    pub from: Option<u64>,
    /// The soft limit after.
    pub to: Option<u64>,
}

/// Raises the soft limit to the hard one (nothing to do when they are equal).
pub fn raise_to_hard() -> std::io::Result<Raised> {
    let (soft, hard) = limits()?;
    if soft == hard {
        return Ok(Raised { from: soft, to: soft });
    }
    let value = |v: Option<u64>| v.unwrap_or(RLIM_INFINITY);
    setrlimit(Resource::RLIMIT_NOFILE, value(hard), value(hard)).map_err(std::io::Error::from)?;
    Ok(Raised {
        from: soft,
        to: limits()?.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_at_most_the_hard_one_and_can_be_raised_to_it() {
        let (soft, hard) = limits().unwrap();
        assert!(soft.unwrap_or(u64::MAX) <= hard.unwrap_or(u64::MAX));
        let raised = raise_to_hard().unwrap();
        assert_eq!(raised.from, soft);
        assert_eq!(limits().unwrap().0, hard);
        assert_eq!(raised.to, hard);
    }
}
