//! The snapshot format of upstream `AllocationBitmap.Snapshot`: `big.Int.Bytes()`, i.e. the bit
//! set read as one unsigned integer (bit i = slot i), big-endian, without leading zero bytes.

/// Encodes little-endian 64-bit words as minimal big-endian bytes.
pub fn encode(words: impl DoubleEndedIterator<Item = u64>) -> Vec<u8> {
    let mut out = Vec::new();
    for word in words.rev() {
        out.extend_from_slice(&word.to_be_bytes());
    }
    let first = out.iter().position(|&b| b != 0).unwrap_or(out.len());
    out.drain(..first);
    out
}

/// The data without leading zero bytes, which carry no bits.
pub fn significant(data: &[u8]) -> &[u8] {
    let first = data.iter().position(|&b| b != 0).unwrap_or(data.len());
    &data[first..]
}

/// Indices of the set bits of a big-endian integer, ascending.
pub fn ones(data: &[u8]) -> impl Iterator<Item = usize> + '_ {
    data.iter().rev().enumerate().flat_map(move |(k, &byte)| {
        (0..8)
            .filter(move |b| byte & (1 << b) != 0)
            .map(move |b| k * 8 + b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_big_int_bytes() {
        // slot 3 alone -> [0x08]; slots 0 and 9 -> [0x02, 0x01] (upstream examples)
        assert_eq!(encode([1u64 << 3].into_iter()), vec![0x08]);
        assert_eq!(encode([1u64 | 1 << 9].into_iter()), vec![0x02, 0x01]);
        assert_eq!(encode([0u64, 0].into_iter()), Vec::<u8>::new());
        assert_eq!(
            encode([0u64, 1].into_iter()),
            vec![1, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn decodes_ones() {
        assert_eq!(ones(&[0x02, 0x01]).collect::<Vec<_>>(), vec![0, 9]);
        assert_eq!(significant(&[0, 0, 5]), &[5]);
    }
}
