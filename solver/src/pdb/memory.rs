//! Where tables live: zeroed memory backed by huge pages where the kernel has them. The only
//! `unsafe` code of the solver is here.

use std::sync::Arc;

/// A zeroed table of `len` bytes, for entries read at random all over it. On Linux the kernel is
/// asked to back it with huge pages (2 MB) before it is touched: a lookup then needs one of a
/// few hundred TLB entries instead of a page walk (hard80 #1-4 with 7-8: 4.8-4.9 s against
/// 5.5-5.8 s with 4 KB pages).
pub(super) fn table_memory(len: usize) -> Arc<[u8]> {
    let mut table: Arc<[std::mem::MaybeUninit<u8>]> = Arc::new_uninit_slice(len);
    let Some(bytes) = Arc::get_mut(&mut table) else {
        // A fresh Arc is never shared; were it, plain zeroed memory does as well.
        return std::iter::repeat_n(0u8, len).collect();
    };
    advise_huge_pages(bytes.as_mut_ptr().cast(), len);
    // Touching the pages is most of the cost (the kernel clears each as it faults in): on
    // every core, in 2 MB-aligned shares.
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let share = len.div_ceil(threads).next_multiple_of(2 << 20).max(1);
    std::thread::scope(|scope| {
        for chunk in bytes.chunks_mut(share) {
            scope.spawn(move || {
                for b in chunk.iter_mut() {
                    b.write(0);
                }
            });
        }
    });
    // SAFETY: every byte was written just above (the scope joins every thread).
    unsafe { table.assume_init() }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(start: *mut u8, len: usize) {
    const PAGE: usize = 4096;
    let from = (start as usize).next_multiple_of(PAGE);
    let to = (start as usize + len) & !(PAGE - 1);
    if to > from {
        // SAFETY: madvise only advises the kernel on how to back the range, which is
        // page-aligned and lies inside the allocation; its failure changes nothing.
        unsafe {
            libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_start: *mut u8, _len: usize) {}

/// Asks for the cache line holding `table[index]` without waiting for it (a no-op past the end
/// or off x86-64).
#[inline(always)]
pub(super) fn prefetch(table: &[u8], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(byte) = table.get(index) {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch only hints the cache; the address is inside the table.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(byte).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, index);
}
