//! The search threads' priority: the worker's only `unsafe` code (a system call), allowed in this
//! module alone.
#![allow(unsafe_code)]

/// Search threads yield the CPU to the runtime's threads, which carry cancels, heartbeats and
/// results: on a machine whose every core is searching, a cancel must not wait for a time slice.
#[cfg(target_os = "linux")]
pub(crate) fn lower_priority() {
    // SAFETY: gettid and setpriority take no pointers; PRIO_PROCESS with a thread id changes only
    // this thread's nice value (Linux semantics). Failure just leaves the priority unchanged.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn lower_priority() {}
