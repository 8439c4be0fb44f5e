//! The floor of the Ansible benchmark: the smallest possible binary module. It ignores its
//! arguments, prints `{"changed": false}` and exits 0, with no libc and no allocator, so what
//! Ansible spends around it (templating, copying the module, spawning it, parsing its JSON) is
//! all that is left. Built by bench/benchlib.py with plain rustc for x86_64 Linux.
//!
//! Built with `--cfg replay` and `FLOOR_REPLAY=FILE FLOOR_PAD=FILE` in the environment, it is
//! the "replay" module instead: it prints FILE (a result mdtune printed) and carries the bytes of
//! FLOOR_PAD (the mdtune binary) as dead weight, so it is as big as mdtune and answers as much,
//! but does no work. Ansible's cost for a module of that size and that answer is then visible
//! apart from what mdtune's own run costs.
#![no_std]
#![no_main]

use core::arch::asm;

#[cfg(not(replay))]
const OUT: &[u8] = b"{\"changed\": false}\n";
#[cfg(replay)]
const OUT: &[u8] = include_bytes!(env!("FLOOR_REPLAY"));
#[cfg(replay)]
static PAD: &[u8] = include_bytes!(env!("FLOOR_PAD"));

/// Raw `write(1, OUT)` then `exit_group(0)`: x86_64 Linux system call numbers 1 and 231.
#[no_mangle]
pub extern "C" fn _start() -> ! {
    #[cfg(replay)]
    core::hint::black_box(PAD.as_ptr());
    unsafe {
        asm!("syscall", inlateout("rax") 1usize => _, in("rdi") 1usize,
             in("rsi") OUT.as_ptr(), in("rdx") OUT.len(), lateout("rcx") _, lateout("r11") _);
        asm!("syscall", in("rax") 231usize, in("rdi") 0usize, options(noreturn));
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {}
}
