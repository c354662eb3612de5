//! Latency buckets: powers of two of a microsecond, so the bucket of a duration is a
//! leading-zeros count, not a search.
//!
//! Bucket `i` (0 to [`LATENCY_BUCKETS`] - 2) holds operations of at most 2^i µs (1 µs,
//! 2 µs, 4 µs ... 2^22 µs = 4.2 s); the last holds the longer ones (Prometheus' `+Inf`).
//! Durations are rounded up to the microsecond.

/// How many buckets a histogram has, the unbounded last one included.
pub const LATENCY_BUCKETS: usize = 24;

/// The bucket of an operation that took `nanos`.
#[inline]
pub fn bucket(nanos: u64) -> usize {
    // Rounded up; saturating instead of `div_ceil`, which costs a second multiplication.
    let micros = nanos.saturating_add(999) / 1000;
    // The smallest i with 2^i >= micros (0 for 0 and 1 µs), without a branch.
    let i = (u64::BITS - micros.saturating_sub(1).leading_zeros()) as usize;
    i.min(LATENCY_BUCKETS - 1)
}

/// The upper bound of bucket `i` in microseconds; `None` for the last (unbounded) one.
pub fn upper_bound_micros(i: usize) -> Option<u64> {
    (i < LATENCY_BUCKETS - 1).then(|| 1u64 << i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_duration_falls_in_the_first_bucket_that_holds_it() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1_000), 0);
        assert_eq!(bucket(1_001), 1);
        assert_eq!(bucket(2_000), 1);
        assert_eq!(bucket(2_001), 2);
        assert_eq!(bucket(4_000), 2);
        assert_eq!(bucket(1_000_000), 10); // 1 ms <= 1024 µs
        assert_eq!(bucket(u64::MAX), LATENCY_BUCKETS - 1);
        for nanos in [1u64, 999, 1_500, 3_000, 77_777, 5_000_000, 4_194_304_000] {
            let b = bucket(nanos);
            // Rounded up; saturating instead of `div_ceil`, which costs a second multiplication.
            let micros = nanos.saturating_add(999) / 1000;
            assert!(upper_bound_micros(b).is_none_or(|u| micros <= u), "{nanos}");
            assert!(
                b == 0 || upper_bound_micros(b - 1).is_some_and(|u| micros > u),
                "{nanos}"
            );
        }
        assert_eq!(upper_bound_micros(LATENCY_BUCKETS - 2), Some(1 << 22));
        assert_eq!(upper_bound_micros(LATENCY_BUCKETS - 1), None);
    }
}
