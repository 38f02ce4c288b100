//! Thread priorities: the node's background work runs below its questions.
//!
//! Linux keeps a nice value per thread, so one thread can step back without slowing the rest
//! of the process. An unprivileged thread may raise its nice value but never lower it again,
//! which is why the indexer is only ever lowered, once, at its start — and why a question that
//! needs the shared model does not wait for the lowered indexer to finish a run but stops it
//! ([`weft_index::Embedder::set_yielding`]).

/// Lowers the calling thread's priority to nice value `nice` (0 leaves it as it is). Threads
/// it starts afterwards inherit the value. A refusal (a sandbox without `setpriority`) is
/// logged and the thread runs on at its priority.
pub fn lower_this_thread(nice: i32) {
    if nice <= 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions; setpriority on this thread's own id changes
        // only this thread's nice value.
        let tid = unsafe { libc::gettid() };
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) } != 0 {
            tracing::warn!(nice, "cannot lower the thread's priority: {}", std::io::Error::last_os_error());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's nice value (Linux; 0 elsewhere).
    fn this_thread_nice() -> i32 {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: as above; getpriority only reads.
            let tid = unsafe { libc::gettid() };
            unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
        }
        #[cfg(not(target_os = "linux"))]
        0
    }

    #[test]
    fn a_lowered_thread_keeps_its_value_and_the_others_do_not_share_it() {
        let before = this_thread_nice();
        let lowered = std::thread::spawn(|| {
            lower_this_thread(19);
            // A thread it starts inherits the value (ONNX Runtime's helpers are started so).
            let child = std::thread::spawn(this_thread_nice).join().unwrap();
            (this_thread_nice(), child)
        })
        .join()
        .unwrap();
        if cfg!(target_os = "linux") {
            assert_eq!(lowered, (19, 19));
        }
        assert_eq!(this_thread_nice(), before, "only the lowered thread changed");
    }
}
