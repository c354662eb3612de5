//! Seeded, hand-written pseudo-random numbers: SplitMix64 for streams and a Feistel
//! permutation for "every index exactly once, in a random-looking order".
//!
//! Why not `rand`: the generator must give the same data for the same seed on every
//! platform and every release, forever, so the algorithm is pinned here (SplitMix64, from
//! Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014).

/// SplitMix64's output function: a bijective 64-bit mixer. Also used to derive per-entry
/// streams, so that entry `i` does not depend on entries before it.
#[inline]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A SplitMix64 stream.
///
/// ```
/// use larch_bench::rng::Rng;
/// let mut a = Rng::new(42);
/// let mut b = Rng::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert!(a.below(10) < 10);
/// ```
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A stream from a seed.
    pub const fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// The stream of item `index` under `seed`: independent of every other index, so
    /// items can be generated in any order (or in parallel) and still be identical.
    pub const fn for_index(seed: u64, index: u64) -> Self {
        Rng {
            state: mix64(seed ^ mix64(index.wrapping_add(GOLDEN_GAMMA))),
        }
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform integer in `0..n` (Lemire's multiply-shift; the bias is below 2^-40 for
    /// every `n` this crate uses). `n` must not be 0.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform index into a slice of length `n` (`n > 0`).
    #[inline]
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// One element of a non-empty slice.
    #[inline]
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.index(items.len())]
    }

    /// A uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fills `out` with random bytes.
    pub fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// A seeded bijection of `0..n` onto itself: a 4-round Feistel network over the smallest
/// even-bit power of two that holds `n`, with cycle walking for values past `n` (at most
/// 4x the domain, so a handful of rounds on average).
///
/// ```
/// use larch_bench::rng::Permutation;
/// let p = Permutation::new(1000, 7);
/// let mut seen: Vec<u64> = (0..1000).map(|i| p.apply(i)).collect();
/// seen.sort();
/// assert_eq!(seen, (0..1000).collect::<Vec<_>>());
/// ```
#[derive(Debug, Clone)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    /// A permutation of `0..n` chosen by `seed`.
    pub fn new(n: u64, seed: u64) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut r = Rng::new(seed ^ 0x5045_524d_5554_4531);
        let keys = [r.next_u64(), r.next_u64(), r.next_u64(), r.next_u64()];
        Permutation { n, half_bits, keys }
    }

    /// The size of the domain.
    pub fn len(&self) -> u64 {
        self.n
    }

    /// True when the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The image of `x` (`x < n`).
    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        debug_assert!(x < self.n);
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    #[inline]
    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for key in self.keys {
            let f = mix64(right ^ key) & mask;
            (left, right) = (right, left ^ f);
        }
        (left << self.half_bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::for_index(1, 5).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        assert_ne!(Rng::for_index(1, 5).next_u64(), Rng::for_index(1, 6).next_u64());
        assert_ne!(Rng::for_index(1, 5).next_u64(), Rng::for_index(2, 5).next_u64());
    }

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(3);
        let mut hits = [0u32; 7];
        for _ in 0..7000 {
            hits[r.below(7) as usize] += 1;
        }
        assert!(hits.iter().all(|&h| (800..1200).contains(&h)), "{hits:?}");
        let u = r.unit();
        assert!((0.0..1.0).contains(&u));
    }

    #[test]
    fn permutation_is_a_bijection_for_awkward_sizes() {
        for n in [1u64, 2, 3, 5, 64, 100, 1023, 1025, 4097] {
            let p = Permutation::new(n, n * 31);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let y = p.apply(i);
                assert!(!seen[y as usize], "n={n}: {y} twice");
                seen[y as usize] = true;
            }
        }
        // Not the identity.
        let p = Permutation::new(1000, 1);
        assert!((0..1000).filter(|&i| p.apply(i) == i).count() < 20);
    }
}
