//! The command's allocator: small blocks in power-of-two classes, carved from large slabs and
//! kept on one free list per class, for a program that runs once and exits.
//!
//! A run makes tens of thousands of small allocations (every attribute's text, every path, the
//! answer's strings) and frees most of them at once. musl's allocator (mallocng) pays for that
//! with about a fifth of the run's instructions and an `mmap`/`munmap` pair for many of its
//! small groups (about 300 system calls on the 64-array benchmark host, each `munmap` a TLB
//! flush); see docs/performance.md. Here a block of up to [`MAX_SMALL`] bytes takes its size
//! class (16, 32, ... 4096 bytes): it is popped from that class's free list, or cut from the
//! current slab; freeing it pushes it back on the list, and a `realloc` within its class keeps
//! it where it is. Slabs ([`SLAB`] bytes) and every larger block come from the C library's
//! allocator ([`System`]) and slabs are never given back: for each class, memory stays within
//! the most blocks of it live at once (a freed block serves its own class only). One spin lock
//! guards the lists (the command has one thread; the lock makes it sound should it ever have
//! more).
//!
//! Only the `mdtune` binary installs it (`#[global_allocator]` in `src/main.rs`), and the
//! `allocator` fuzz target (`fuzz/fuzz_targets/allocator.rs`), which checks it under arbitrary
//! sequences of allocations; the library, its tests and the other fuzz targets use the system
//! allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest block served from the classes; larger ones go to [`System`].
pub const MAX_SMALL: usize = 4096;
/// The smallest class, also the alignment every class block has.
const MIN_CLASS: usize = 16;
/// Classes 16, 32, ..., 4096.
const CLASSES: usize = 9;
/// The bytes taken from [`System`] at once for small blocks.
const SLAB: usize = 256 * 1024;

struct State {
    /// The head of each class's list of free blocks (each free block holds the next's address).
    free: [*mut u8; CLASSES],
    /// The unused part of the current slab.
    next: *mut u8,
    end: *mut u8,
}

/// The allocator (see the module's paragraph).
pub struct Arena {
    lock: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only touched while `lock` is held (`Arena::with`).
unsafe impl Sync for Arena {}

impl Arena {
    pub const fn new() -> Arena {
        Arena {
            lock: AtomicBool::new(false),
            state: UnsafeCell::new(State {
                free: [ptr::null_mut(); CLASSES],
                next: ptr::null_mut(),
                end: ptr::null_mut(),
            }),
        }
    }

    /// Runs `f` on the state with the lock held.
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the lock is held, so no other reference to the state exists.
        let r = f(unsafe { &mut *self.state.get() });
        self.lock.store(false, Ordering::Release);
        r
    }
}

impl Default for Arena {
    fn default() -> Arena {
        Arena::new()
    }
}

/// The class of a block of `size` bytes aligned to `align`, or `None` when [`System`] serves it.
fn class(size: usize, align: usize) -> Option<usize> {
    if size > MAX_SMALL || align > MIN_CLASS {
        return None;
    }
    let rounded = size.max(MIN_CLASS).next_power_of_two();
    Some((rounded.trailing_zeros() - MIN_CLASS.trailing_zeros()) as usize)
}

fn class_size(class: usize) -> usize {
    MIN_CLASS << class
}

impl State {
    /// A free block of `class`, or null when no memory is left.
    ///
    /// # Safety
    /// The lists and the slab hold only blocks this arena carved and nobody uses.
    unsafe fn take(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block's first word is the next free block's address.
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        let size = class_size(class);
        if (self.end as usize) - (self.next as usize) < size {
            // The rest of the slab goes unused: at most 4 KiB of a slab.
            // SAFETY: SLAB is a non-zero size and MAX_SMALL a valid alignment.
            let slab = unsafe { System.alloc(Layout::from_size_align_unchecked(SLAB, MAX_SMALL)) };
            if slab.is_null() {
                return slab;
            }
            self.next = slab;
            // SAFETY: the slab is SLAB bytes long.
            self.end = unsafe { slab.add(SLAB) };
        }
        let block = self.next;
        // SAFETY: at least `size` bytes remain in the slab (checked above).
        self.next = unsafe { block.add(size) };
        block
    }

    /// Puts `block` of `class` back on its list.
    ///
    /// # Safety
    /// `block` was taken for `class` and is no longer used.
    unsafe fn give(&mut self, block: *mut u8, class: usize) {
        // SAFETY: a block is at least 16 bytes, aligned to 16: room for one address.
        unsafe { block.cast::<*mut u8>().write(self.free[class]) };
        self.free[class] = block;
    }
}

// SAFETY: a block of a class is at least `layout.size()` bytes and aligned to 16 (slabs are
// aligned to 4096 and cut at multiples of 16), larger than every alignment the classes take;
// every other layout is passed to `System` unchanged, and `dealloc`/`realloc` tell the two
// apart by the same `class` of the layout they are given.
unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match class(layout.size(), layout.align()) {
            // SAFETY: the arena's own lists and slab.
            Some(c) => self.with(|s| unsafe { s.take(c) }),
            // SAFETY: as the caller promised for `layout`.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        match class(layout.size(), layout.align()) {
            // SAFETY: `block` was allocated with this layout, so for this class.
            Some(c) => self.with(|s| unsafe { s.give(block, c) }),
            // SAFETY: as the caller promised for `layout`.
            None => unsafe { System.dealloc(block, layout) },
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (old, new) = (
            class(layout.size(), layout.align()),
            class(new_size, layout.align()),
        );
        match (old, new) {
            (Some(o), Some(n)) if o == n => block,
            // SAFETY: as the caller promised for `layout` and `new_size`.
            (None, None) => unsafe { System.realloc(block, layout, new_size) },
            _ => {
                // SAFETY: `new_size` with the layout's alignment is valid, as the caller promised.
                let new_layout =
                    unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: as for `alloc`.
                let moved = unsafe { self.alloc(new_layout) };
                if !moved.is_null() {
                    // SAFETY: both blocks hold at least the smaller size and do not overlap.
                    unsafe {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                }
                moved
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_the_smallest_class_that_holds_them() {
        assert_eq!(class(0, 1), Some(0));
        assert_eq!(class(16, 8), Some(0));
        assert_eq!(class(17, 8), Some(1));
        assert_eq!(class(4096, 16), Some(8));
        assert_eq!(class(4097, 1), None);
        assert_eq!(class(64, 32), None, "over-aligned layouts go to System");
        assert_eq!(class_size(8), MAX_SMALL);
    }

    #[test]
    fn blocks_keep_their_bytes_are_reused_when_freed_and_grow_across_classes() {
        let arena = Arena::new();
        let layout = |size| Layout::from_size_align(size, 8).unwrap();
        // SAFETY (the whole test): every block is used within the size it was allocated for and
        // freed once with the layout it has.
        unsafe {
            let a = arena.alloc(layout(24));
            let b = arena.alloc(layout(24));
            assert!(!a.is_null() && !b.is_null() && a != b);
            assert_eq!(a as usize % MIN_CLASS, 0);
            a.write_bytes(0xa5, 24);
            b.write_bytes(0x5a, 24);
            arena.dealloc(a, layout(24));
            let c = arena.alloc(layout(30));
            assert_eq!(c, a, "a freed block of the class is taken first");
            assert_eq!(std::slice::from_raw_parts(b, 24), &[0x5a; 24]);
            // Within the class: in place. Across classes and out to System: moved, kept.
            c.write_bytes(7, 30);
            assert_eq!(arena.realloc(c, layout(30), 32), c);
            let d = arena.realloc(c, layout(32), 3000);
            assert_eq!(std::slice::from_raw_parts(d, 30), &[7; 30]);
            let e = arena.realloc(d, layout(3000), 100_000);
            assert_eq!(std::slice::from_raw_parts(e, 30), &[7; 30]);
            let f = arena.realloc(e, layout(100_000), 40);
            assert_eq!(std::slice::from_raw_parts(f, 30), &[7; 30]);
            arena.dealloc(f, layout(40));
            arena.dealloc(b, layout(24));
            // Over-aligned and large layouts are System's, freed there.
            let big = Layout::from_size_align(64, 64).unwrap();
            let g = arena.alloc(big);
            assert_eq!(g as usize % 64, 0);
            arena.dealloc(g, big);
            // More than a slab of small blocks: a second slab is taken.
            let many: Vec<*mut u8> = (0..2 * SLAB / 4096)
                .map(|_| arena.alloc(layout(4096)))
                .collect();
            assert!(many.iter().all(|p| !p.is_null()));
            let distinct: std::collections::HashSet<_> = many.iter().collect();
            assert_eq!(distinct.len(), many.len());
            for p in many {
                arena.dealloc(p, layout(4096));
            }
        }
    }

    #[test]
    fn random_allocations_frees_and_reallocations_never_overlap_or_lose_bytes() {
        // A shadow of every live block (address, size, the byte it is filled with), checked
        // whole after every step: a block handed out twice, or cut across another, would show
        // as another block's bytes.
        let arena = Arena::new();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |below: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % below as u64) as usize
        };
        let mut live: Vec<(*mut u8, usize, u8)> = Vec::new();
        let layout = |size: usize| Layout::from_size_align(size, 8).unwrap();
        // SAFETY (the whole test): every block is written within its size and freed or
        // reallocated once, with the layout it was given.
        unsafe {
            let intact = |live: &[(*mut u8, usize, u8)]| {
                live.iter().all(|&(p, size, fill)| {
                    std::slice::from_raw_parts(p, size)
                        .iter()
                        .all(|&b| b == fill)
                })
            };
            for step in 0..3000u32 {
                let fill = (step % 251) as u8;
                let size = match next(10) {
                    0 => 4097 + next(20_000),
                    _ => 1 + next(MAX_SMALL),
                };
                match next(3) {
                    0 if !live.is_empty() => {
                        let (p, old, _) = live.swap_remove(next(live.len()));
                        arena.dealloc(p, layout(old));
                    }
                    1 if !live.is_empty() => {
                        let i = next(live.len());
                        let (p, old, was) = live[i];
                        let q = arena.realloc(p, layout(old), size);
                        assert!(!q.is_null());
                        let kept = std::slice::from_raw_parts(q, old.min(size));
                        assert!(
                            kept.iter().all(|&b| b == was),
                            "step {step}: realloc lost bytes"
                        );
                        q.write_bytes(fill, size);
                        live[i] = (q, size, fill);
                    }
                    _ => {
                        let p = arena.alloc(layout(size));
                        assert!(!p.is_null());
                        assert_eq!(p as usize % 8, 0);
                        p.write_bytes(fill, size);
                        live.push((p, size, fill));
                    }
                }
                assert!(intact(&live), "step {step}: a live block was overwritten");
            }
            for (p, size, _) in live {
                arena.dealloc(p, layout(size));
            }
        }
    }
}
