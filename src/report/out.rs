//! The buffer the report is encoded into: one allocation sized for the answer, and small writes
//! (serde_json writes every `{`, `:`, `,` and quote on its own, about 25,000 writes of one to
//! sixteen bytes for 64 arrays) copied by fixed-size moves instead of a `memcpy` call each,
//! which musl makes with `rep movs` whatever the length.

use std::io;

/// Bytes the answer takes per array, about (1,300 for a raid5 of eight members).
const PER_ARRAY: usize = 2048;

/// A byte buffer whose length is kept zero-filled ahead of what was written (`at`), so that a
/// write of up to 16 bytes is two fixed-size copies without a check per byte.
pub(super) struct Out {
    buf: Vec<u8>,
    at: usize,
}

impl Out {
    /// A buffer with room for the answer of `arrays` arrays.
    pub(super) fn for_arrays(arrays: usize) -> Out {
        Out {
            buf: vec![0; 1024 + arrays * PER_ARRAY],
            at: 0,
        }
    }

    /// What was written.
    pub(super) fn into_bytes(mut self) -> Vec<u8> {
        self.buf.truncate(self.at);
        self.buf
    }

    /// Appends `b`.
    fn put(&mut self, b: &[u8]) {
        let n = b.len();
        let end = self.at + n;
        if end + 16 > self.buf.len() {
            self.buf.resize((end + 16).max(self.buf.len() * 2), 0);
        }
        let to = &mut self.buf[self.at..];
        // Two overlapping moves of a fixed size cover any length between it and twice it (an
        // array assigned, not `copy_from_slice`, which at opt-level "z" is a `memcpy` call).
        match n {
            0 => {}
            1 => to[0] = b[0],
            2..=3 => {
                set::<2>(to, 0, b);
                set::<2>(to, n - 2, &b[n - 2..]);
            }
            4..=7 => {
                set::<4>(to, 0, b);
                set::<4>(to, n - 4, &b[n - 4..]);
            }
            8..=16 => {
                set::<8>(to, 0, b);
                set::<8>(to, n - 8, &b[n - 8..]);
            }
            _ => to[..n].copy_from_slice(b),
        }
        self.at = end;
    }
}

/// Moves the first `N` bytes of `from` to `to[at..]` as one array.
fn set<const N: usize>(to: &mut [u8], at: usize, from: &[u8]) {
    if let (Some(to), Some(from)) = (to.get_mut(at..at + N), from.get(..N)) {
        if let (Ok(to), Ok(from)) = (<&mut [u8; N]>::try_from(to), <&[u8; N]>::try_from(from)) {
            *to = *from;
        }
    }
}

impl io::Write for Out {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.put(b);
        Ok(b.len())
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.put(b);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn every_length_is_copied_whole_and_the_buffer_grows() {
        let mut out = Out::for_arrays(0);
        let mut want = Vec::new();
        for n in 0..40 {
            let b: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            for _ in 0..10 {
                out.write_all(&b).unwrap();
                want.extend_from_slice(&b);
            }
        }
        assert!(want.len() > 1024, "the first buffer was outgrown");
        assert_eq!(out.into_bytes(), want);
    }
}
