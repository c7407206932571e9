/// SplitMix64: a small, fast, seedable generator. The strategy only needs "some uniform start
/// position", and an injectable seed makes allocation sequences reproducible in tests.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// Seeded from the clock and the address of a stack value, like upstream's
    /// `rand.NewSource(time.Now().UnixNano())`.
    pub fn from_entropy() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let marker = 0u8;
        let addr = &marker as *const u8 as u64;
        Self::new(nanos ^ addr.rotate_left(32))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform value in `[0, n)` (Lemire's multiply-shift with rejection). `n` must be > 0.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        let mut m = (self.next_u64() as u128) * (n as u128);
        // The rejection threshold costs a 64-bit division, and it is below `n`: only a low half
        // under `n` can be rejected, so it is computed only then (Lemire's "nearly
        // divisionless" form). Same values as testing every draw against it.
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix64;

    /// `below` with the threshold computed on every draw, as it was first written.
    fn below_reference(rng: &mut SplitMix64, n: u64) -> u64 {
        loop {
            let m = (rng.next_u64() as u128) * (n as u128);
            if (m as u64) >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    #[test]
    fn below_draws_what_the_reference_draws() {
        let mut sizes = SplitMix64::new(7);
        // Bounds near powers of two and near 2^64 reject most often.
        let mut bounds: Vec<u64> = (1..=64)
            .flat_map(|b| [1u64 << (b - 1), (1u64 << (b - 1)) + 1])
            .collect();
        bounds.extend([u64::MAX, u64::MAX - 1, (1 << 63) + 1, 3, 5, 65_536, 1 << 32]);
        bounds.extend((0..2000).map(|_| sizes.next_u64() >> (sizes.next_u64() % 64)));
        for (seed, &n) in bounds.iter().enumerate() {
            let n = n.max(1);
            let (mut a, mut b) = (SplitMix64::new(seed as u64), SplitMix64::new(seed as u64));
            for _ in 0..64 {
                assert_eq!(a.below(n), below_reference(&mut b, n), "n = {n}");
            }
            assert_eq!(a.next_u64(), b.next_u64(), "same number of draws, n = {n}");
        }
    }
}
