//! LEB128 unsigned varints, as the stored entry form and the store's records use them: 7 bits
//! per octet, least significant group first, the high bit set on every octet but the last.

/// Appends `v`.
pub fn push(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint of at most `max_octets` octets at `*pos`, advancing it; `None` when the
/// input ends first or the varint is longer.
pub fn read(bytes: &[u8], pos: &mut usize, max_octets: usize) -> Option<u64> {
    // One octet first: nearly every type ID and length of a stored entry is below 128,
    // and a stored entry's reader takes three varints per attribute.
    match bytes.get(*pos) {
        Some(&b) if b < 0x80 && max_octets > 0 => {
            *pos += 1;
            return Some(u64::from(b));
        }
        _ => {}
    }
    let mut v = 0u64;
    for i in 0..max_octets.min(10) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_overlong() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            push(&mut out, v);
            let mut pos = 0;
            assert_eq!(read(&out, &mut pos, 10), Some(v));
            assert_eq!(pos, out.len());
        }
        let mut pos = 0;
        assert_eq!(read(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &mut pos, 5), None);
        let mut pos = 0;
        assert_eq!(read(&[0x80], &mut pos, 5), None);
        let mut pos = 0;
        assert_eq!(read(&[0x05], &mut pos, 0), None);
        let mut pos = 1;
        assert_eq!(read(&[0x85, 0x05], &mut pos, 1), Some(5));
        assert_eq!(pos, 2);
        assert_eq!(read(&[0x85, 0x05], &mut pos, 1), None);
    }
}
