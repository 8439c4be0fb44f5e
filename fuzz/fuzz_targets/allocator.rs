//! The binary's allocator (`mdtune::sys::Arena`) under arbitrary sequences of allocations, frees
//! and reallocations: sizes of 1 byte to 8 KiB (across the 4 KiB edge between the arena's
//! classes and the C library) and alignments of 1 to 64 bytes (above 16, the C library's). The
//! target installs the arena as its global allocator, as `src/main.rs` does, so that its own
//! bookkeeping allocates through it as well. Each live block holds a byte of its own in every
//! byte. A block must be aligned and must not overlap another live block, and it must keep its
//! bytes until it is freed. A reallocation keeps the bytes the smaller of the two sizes holds.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use mdtune::sys::Arena;
use std::alloc::{GlobalAlloc, Layout};

#[global_allocator]
static ARENA: Arena = Arena::new();

/// The most blocks live at once: 64 blocks of 4 KiB fill a slab.
const MAX_LIVE: usize = 64;
const MAX_SIZE: usize = 8192;

struct Block {
    ptr: *mut u8,
    layout: Layout,
    fill: u8,
}

impl Block {
    fn new(ptr: *mut u8, layout: Layout, fill: u8, live: &[Block]) -> Block {
        assert!(!ptr.is_null(), "{layout:?}: out of memory");
        assert_eq!(ptr as usize % layout.align(), 0, "{layout:?}: misaligned");
        let (start, end) = (ptr as usize, ptr as usize + layout.size());
        for other in live {
            let (s, e) = (other.ptr as usize, other.ptr as usize + other.layout.size());
            assert!(
                end <= s || e <= start,
                "{layout:?} at {start:#x} overlaps the live {:?} at {s:#x}",
                other.layout
            );
        }
        // SAFETY: the block was just allocated for `layout`.
        unsafe { ptr.write_bytes(fill, layout.size()) };
        Block { ptr, layout, fill }
    }

    /// Requires the first `len` bytes to be the block's own.
    fn check(&self, len: usize) {
        // SAFETY: the block is live and at least `len` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr, len) };
        if let Some(at) = bytes.iter().position(|b| *b != self.fill) {
            panic!(
                "{:?} at {:p}: byte {at} is {:#x}, was written {:#x}",
                self.layout, self.ptr, bytes[at], self.fill
            );
        }
    }
}

fn layout(u: &mut Unstructured) -> arbitrary::Result<Layout> {
    let size = u.int_in_range(1..=MAX_SIZE)?;
    let align = 1usize << u.int_in_range(0..=6u32)?;
    Ok(Layout::from_size_align(size, align).expect("a valid layout"))
}

fn steps(u: &mut Unstructured, live: &mut Vec<Block>) -> arbitrary::Result<()> {
    let mut serial = 0u8;
    while !u.is_empty() {
        serial = serial.wrapping_add(1);
        match u.int_in_range(0..=2u8)? {
            0 if live.len() < MAX_LIVE => {
                let layout = layout(u)?;
                // SAFETY: a layout of non-zero size.
                let ptr = unsafe { ARENA.alloc(layout) };
                let block = Block::new(ptr, layout, serial, live);
                live.push(block);
            }
            1 if !live.is_empty() => {
                let b = live.swap_remove(u.choose_index(live.len())?);
                b.check(b.layout.size());
                // SAFETY: allocated with this layout, freed once.
                unsafe { ARENA.dealloc(b.ptr, b.layout) };
            }
            2 if !live.is_empty() => {
                let i = u.choose_index(live.len())?;
                let new_size = u.int_in_range(1..=MAX_SIZE)?;
                let b = live.swap_remove(i);
                b.check(b.layout.size());
                // SAFETY: allocated with this layout; a non-zero size that fits the alignment.
                let ptr = unsafe { ARENA.realloc(b.ptr, b.layout, new_size) };
                let layout = Layout::from_size_align(new_size, b.layout.align()).unwrap();
                let moved = Block {
                    ptr,
                    layout,
                    fill: b.fill,
                };
                assert!(!ptr.is_null(), "{layout:?}: out of memory");
                moved.check(b.layout.size().min(new_size));
                live.push(Block::new(ptr, layout, serial, live));
            }
            _ => {}
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut live = Vec::with_capacity(MAX_LIVE);
    let _ = steps(&mut Unstructured::new(data), &mut live);
    for b in live {
        b.check(b.layout.size());
        // SAFETY: allocated with this layout, freed once.
        unsafe { ARENA.dealloc(b.ptr, b.layout) };
    }
});
