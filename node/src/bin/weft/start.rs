//! `weft start`: runs the node until a signal or a storage fault ends it, within bounds.

use std::time::Duration;
use weft_node::{Node, RunOptions};

/// Exit code of a node stopped by a storage fault (`EX_IOERR`).
const EXIT_STORAGE: i32 = 74;

/// Exit code of a node whose graceful stop outlasted its bound, or that was stopped by a
/// second signal.
const EXIT_FORCED: i32 = 130;

pub(super) async fn start(config: weft_config::Config, exit_when_idle: bool) -> anyhow::Result<()> {
    tracing::info!(data_dir = %config.data_dir.display(), "starting weft node");
    // Every stage of a graceful stop has its own bound — requests in flight
    // (`crawl.shutdown_grace_secs`), pages already fetched (`PROCESSING_GRACE`), the hand-off
    // (`p2p.leave_timeout_secs`) — and the process's bound is their sum and 15 s more: a
    // smaller one cut a leave on a loaded machine before it handed anything over.
    let stop_bound = Duration::from_secs(config.crawl.shutdown_grace_secs + config.p2p.leave_timeout_secs + 15)
        + weft_node::PROCESSING_GRACE;
    let node = Node::open(config)?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let storage = node.crawler().storage().clone();
    watch_signals(tx, stop_bound);
    watch_storage(storage.clone());
    match node.run(RunOptions { exit_when_idle }, rx, |_| {}).await {
        Ok(()) => {
            tracing::info!("stopped");
            Ok(())
        }
        Err(e) if storage.fault().is_some() => {
            // The runtime may hold threads stuck in the failed storage: leave now.
            say(&format!("error: {e:#}"));
            std::process::exit(EXIT_STORAGE);
        }
        Err(e) => Err(e),
    }
}

/// SIGTERM and SIGINT are taken by a thread of their own (blocked everywhere else), so they
/// are answered even when every runtime thread is busy: the first asks for a graceful stop and
/// arms a deadline (the sum of the stop's stages, see `start`), after which the process exits; a second
/// signal exits at once. Unfinished URLs stay queued either way.
fn watch_signals(shutdown: tokio::sync::watch::Sender<bool>, bound: Duration) {
    // SAFETY: sigset manipulation and sigwait on a set every thread blocks (see `block_signals`).
    let set = signal_set();
    std::thread::Builder::new()
        .name("weft-signals".into())
        .spawn(move || {
            let wait = || {
                let mut sig: libc::c_int = 0;
                // SAFETY: `set` is a valid, initialised signal set.
                unsafe { libc::sigwait(&set, &mut sig) };
                sig
            };
            wait();
            tracing::info!(
                bound_secs = bound.as_secs(),
                "shutdown requested; finishing in-flight work (signal again to force)"
            );
            let _ = shutdown.send(true);
            std::thread::spawn(move || {
                std::thread::sleep(bound);
                eprintln!(
                    "error: the node did not stop within {} s; exiting (unfinished URLs stay queued)",
                    bound.as_secs()
                );
                std::process::exit(EXIT_FORCED);
            });
            wait();
            say("forced exit; unfinished URLs stay queued");
            std::process::exit(EXIT_FORCED);
        })
        .expect("the signal thread starts");
}

/// A line on stderr that cannot panic (`eprintln!` does when stderr is closed).
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: initialising a sigset_t on the stack with the libc calls made for it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGINT);
        set
    }
}

/// Blocks SIGTERM and SIGINT in this thread and every thread it starts from now on (call it
/// before the runtime exists): they are delivered to the signal thread's `sigwait` only.
pub(super) fn block_signals() {
    let set = signal_set();
    // SAFETY: changes this thread's signal mask only.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// After a storage fault the node stops by itself; if anything keeps it from finishing (a
/// thread stuck in the failed storage), this exits the process a few seconds later.
fn watch_storage(storage: weft_node::storage::Storage) {
    std::thread::Builder::new()
        .name("weft-storage-watchdog".into())
        .spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            if let Some(fault) = storage.fault() {
                std::thread::sleep(Duration::from_secs(5));
                say(&format!("error: {fault}; exiting"));
                std::process::exit(EXIT_STORAGE);
            }
        })
        .expect("the storage watchdog starts");
}
