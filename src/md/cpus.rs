//! CPU and node sets as the kernel prints them, pure: lists (`cpu/online`, `cpu/isolated`,
//! `node/has_cpu`: `0-3,8-11`, an empty line for none; `cpumap_print_list_to_buf`) and masks
//! (`devices/virtual/workqueue/cpumask`: hex in comma-separated 32-bit groups, the most
//! significant first, `00000000,0000ffff`; `cpumap_print_bitmask_to_buf`).

/// The most CPUs (or nodes) a set may name; the kernel's `NR_CPUS` is at most 8192.
const MOST: u32 = 1 << 16;

/// A set of CPU (or node) numbers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuSet(Vec<u64>);

impl CpuSet {
    /// A kernel list such as `0-3,8`; an empty text is the empty set. `None` for anything else,
    /// such as the `(null)` that `cpu/nohz_full` prints on kernels booted without `nohz_full=`.
    pub fn from_list(text: &str) -> Option<CpuSet> {
        let mut set = CpuSet::default();
        let text = text.trim();
        if text.is_empty() {
            return Some(set);
        }
        for part in text.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((lo, hi)) => (lo.parse::<u32>().ok()?, hi.parse::<u32>().ok()?),
                None => {
                    let n = part.parse::<u32>().ok()?;
                    (n, n)
                }
            };
            if lo > hi || hi >= MOST {
                return None;
            }
            (lo..=hi).for_each(|c| set.insert(c));
        }
        Some(set)
    }

    /// A kernel mask such as `ff` or `00000000,000000ff`; `None` when it is not one.
    pub fn from_mask(text: &str) -> Option<CpuSet> {
        let text = text.trim();
        let mut set = CpuSet::default();
        let groups: Vec<&str> = text.split(',').collect();
        if text.is_empty() || groups.len() as u32 * 32 > MOST {
            return None;
        }
        for (i, group) in groups.iter().rev().enumerate() {
            if group.is_empty() || group.len() > 8 {
                return None;
            }
            let bits = u32::from_str_radix(group, 16).ok()?;
            for b in 0..32 {
                if bits >> b & 1 == 1 {
                    set.insert(i as u32 * 32 + b);
                }
            }
        }
        Some(set)
    }

    fn insert(&mut self, c: u32) {
        let (word, bit) = ((c / 64) as usize, c % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    fn word(&self, i: usize) -> u64 {
        self.0.get(i).copied().unwrap_or(0)
    }

    /// How many it holds.
    pub fn len(&self) -> u64 {
        self.0.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The highest number it holds; `None` when empty.
    pub fn highest(&self) -> Option<u64> {
        let (i, w) = self.0.iter().enumerate().rev().find(|(_, w)| **w != 0)?;
        Some(i as u64 * 64 + 63 - u64::from(w.leading_zeros()))
    }

    /// The members of both.
    pub fn and(&self, other: &CpuSet) -> CpuSet {
        CpuSet(
            (0..self.0.len())
                .map(|i| self.0[i] & other.word(i))
                .collect(),
        )
    }

    /// The members of `self` that `other` lacks.
    pub fn minus(&self, other: &CpuSet) -> CpuSet {
        CpuSet(
            (0..self.0.len())
                .map(|i| self.0[i] & !other.word(i))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_and_masks_read_as_the_kernel_prints_them() {
        let list: fn(&str) -> Option<u64> = |t| CpuSet::from_list(t).map(|s| s.len());
        let mask: fn(&str) -> Option<u64> = |t| CpuSet::from_mask(t).map(|s| s.len());
        for (read, text, cpus) in [
            (list, "0\n", Some(1)),
            (list, "0-3,8-11\n", Some(8)),
            (list, "\n", Some(0)),
            (list, "(null)\n", None),
            (list, "3-1", None),
            (list, "0-4294967295", None),
            (mask, "07\n", Some(3)),
            (mask, "ffffffff,ffffffff", Some(64)),
            (mask, "00000001,00000000", Some(1)),
            (mask, "xyz", None),
            (mask, "", None),
        ] {
            assert_eq!(read(text), cpus, "{text:?}");
        }
        let online = CpuSet::from_list("0-7").unwrap();
        let unbound = CpuSet::from_mask("00000000,0000003f").unwrap();
        assert_eq!(online.and(&unbound).len(), 6);
        assert_eq!(online.minus(&CpuSet::from_list("6-9").unwrap()).len(), 6);
        assert!(online.and(&CpuSet::from_mask("300").unwrap()).is_empty());
        let sparse = CpuSet::from_list("0,8,252-255").unwrap();
        assert_eq!((sparse.len(), sparse.highest()), (6, Some(255)));
        assert_eq!(CpuSet::from_list("0").unwrap().highest(), Some(0));
        assert_eq!(CpuSet::from_list("").unwrap().highest(), None);
    }
}
