//! What system tests need to fail readably: a work dir — node data dirs and logs, the web
//! server's request log — removed when the test passes and kept under
//! `target/test-failures/<test>/` when it fails, in CI too (a failure whose logs went away with
//! its temporary dir cannot be read, only re-run); and turns for networks (one or two at a
//! time), so a test does not fail for its neighbour's load.

use std::path::{Path, PathBuf};

/// A temporary work dir that outlives a failing test (see the module doc). `SIMNET_KEEP=1`
/// keeps it where it is whatever the outcome.
pub struct WorkDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    test: String,
}

impl WorkDir {
    /// A fresh dir for the test named `test` (its kept copy's name).
    pub fn new(test: &str) -> std::io::Result<WorkDir> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().to_path_buf();
        let dir = if std::env::var_os("SIMNET_KEEP").is_some() {
            let _ = dir.keep();
            None
        } else {
            Some(dir)
        };
        eprintln!("work dir: {}", path.display());
        Ok(WorkDir { dir, path, test: test.to_string() })
    }

    /// A fresh dir for the test running on this thread, named after it (libtest names each
    /// test's thread after the test): `module-test`, then `module-test-2`, `-3`, ... for the
    /// test's further dirs. For a system test's data dirs, so a failure keeps them.
    pub fn for_this_test() -> std::io::Result<WorkDir> {
        thread_local! {
            static MADE: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        }
        let n = MADE.with(|m| {
            m.set(m.get() + 1);
            m.get()
        });
        let test = std::thread::current().name().unwrap_or("unnamed").replace("::", "-");
        WorkDir::new(&if n == 1 { test } else { format!("{test}-{n}") })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Tests whose network works the machine or is timed tightly (the NAT lab, search hedges, the
/// churn scenarios' real processes) take this first: it holds every one of the [`SLOTS`]. On
/// two cores, two such networks at once slow each other past their bounds. Tests that run no
/// network run beside them; shared turns asked while one waits wait behind it (see [`turn`]).
/// The turn is held across processes too (an `flock` on each slot's file in the target dir),
/// because the test runner runs several test binaries at once and each crate's tests share one
/// process.
pub fn one_network_at_a_time() -> NetworkTurn {
    turn(&locks_dir(), Weight::Whole)
}

/// Tests whose network mostly waits — on politeness delays, membership timers, a newcomer's
/// probation — and whose bounds are generous take this first: one of the [`SLOTS`], so several
/// such networks run at once. While they took whole turns, the machine's cores sat ~90% idle
/// and their waits, one after another, were the suite's floor.
pub fn one_of_several_networks() -> NetworkTurn {
    turn(&locks_dir(), Weight::Slot)
}

/// How many networks may run at once (see [`one_of_several_networks`]); a whole turn takes them
/// all. Two, not more: past two the CPU-bound test binaries running beside the networks, not
/// the networks' waits, set the suite's length (measured in `docs/src/testing.md`).
pub const SLOTS: usize = 2;

/// What a turn holds: one slot, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weight {
    Slot,
    Whole,
}

/// A turn of `weight` among the slot files in `dir`.
///
/// A whole turn first takes the gate (`network-gate.lock`) exclusively and keeps it while it
/// waits and runs; a shared turn takes it shared only while it looks for a free slot. So a
/// whole turn waiting for the slots to drain is not starved by shared turns asked after it,
/// which would otherwise keep taking each slot as it frees.
fn turn(dir: &Path, weight: Weight) -> NetworkTurn {
    let asked = std::time::Instant::now();
    let _ = std::fs::create_dir_all(dir);
    // An `flock` belongs to the open file, not the process: two tests of one binary exclude each
    // other as two processes do.
    let open = |path: &Path| {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("the network lock {}: {e}", path.display()))
    };
    let gate_path = dir.join(GATE);
    let gate = open(&gate_path);
    let mut files: Vec<(usize, std::fs::File)> = (0..SLOTS).map(|slot| (slot, open(&slot_file(dir, slot)))).collect();
    let (held, gate) = match weight {
        // Every slot, always in the same order, behind the gate: two whole turns never hold one
        // slot each, and no shared turn starts while one waits.
        Weight::Whole => {
            flock(&gate, Lock::Exclusive, &gate_path);
            for (slot, file) in &files {
                flock(file, Lock::Exclusive, &slot_file(dir, *slot));
            }
            (files, Some(gate))
        }
        // Any free slot, looked for again until one is: a shared turn does not wait for one
        // slot while the other is free.
        Weight::Slot => loop {
            flock(&gate, Lock::Shared, &gate_path);
            let free = files.iter().position(|(slot, file)| flock(file, Lock::TryExclusive, &slot_file(dir, *slot)));
            unlock(&gate, &gate_path);
            if let Some(i) = free {
                break (vec![files.swap_remove(i)], None);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        },
    };
    let test = std::thread::current().name().unwrap_or("unnamed").to_string();
    NetworkTurn { held, _gate: gate, log: dir.join(TURNS_LOG), test, asked, got: std::time::Instant::now() }
}

/// The file a whole turn holds while it waits and runs (see [`turn`]).
const GATE: &str = "network-gate.lock";

/// An `flock` to take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    /// Exclusive, waiting for it.
    Exclusive,
    /// Exclusive if free now.
    TryExclusive,
    /// Shared, waiting for it.
    Shared,
}

/// Takes `file`'s `flock` as `how` says; whether it was taken (always, unless
/// [`Lock::TryExclusive`]).
fn flock(file: &std::fs::File, how: Lock, path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let op = match how {
        Lock::Exclusive => libc::LOCK_EX,
        Lock::TryExclusive => libc::LOCK_EX | libc::LOCK_NB,
        Lock::Shared => libc::LOCK_SH,
    };
    loop {
        // SAFETY: flock on a descriptor the caller owns; released when the file closes.
        if unsafe { libc::flock(file.as_raw_fd(), op) } == 0 {
            return true;
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => continue,
            std::io::ErrorKind::WouldBlock if how == Lock::TryExclusive => return false,
            _ => panic!("the network lock {}: {e}", path.display()),
        }
    }
}

/// Lets go of `file`'s `flock`.
fn unlock(file: &std::fs::File, path: &Path) {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a descriptor the caller owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) } != 0 {
        panic!("the network lock {}: {}", path.display(), std::io::Error::last_os_error());
    }
}

/// Where each network turn is written down when it ends, a line each: the test, the seconds it
/// waited for its turn, the seconds it held it and the slots it held. A slot is held by one
/// test at a time, so the slot-seconds held, over [`SLOTS`], are the suite's floor; the runner
/// sums them (`scripts/run_tests.py`).
pub fn turns_log() -> PathBuf {
    locks_dir().join(TURNS_LOG)
}

const TURNS_LOG: &str = "network-turns.tsv";

/// Where the slot files are: the target dir.
fn locks_dir() -> PathBuf {
    failures_dir().parent().map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// The file whose `flock` is a network slot: `network.lock`, `network-2.lock`, … in `dir`.
fn slot_file(dir: &Path, slot: usize) -> PathBuf {
    dir.join(if slot == 0 { "network.lock".to_string() } else { format!("network-{}.lock", slot + 1) })
}

/// A test's turn to run a network (see [`one_network_at_a_time`] and
/// [`one_of_several_networks`]); the slots it holds are free again when it is dropped.
pub struct NetworkTurn {
    /// The slots held, each with the file whose `flock` holds it.
    held: Vec<(usize, std::fs::File)>,
    /// A whole turn's gate, held until it ends (see [`turn`]).
    _gate: Option<std::fs::File>,
    /// Where the turn is written down (see [`turns_log`]).
    log: PathBuf,
    test: String,
    asked: std::time::Instant,
    got: std::time::Instant,
}

impl Drop for NetworkTurn {
    /// Writes the turn down (see [`turns_log`]) before the locks go; a log that cannot be
    /// written costs the figure, not the test.
    fn drop(&mut self) {
        use std::io::Write;
        let (waited, held) = (self.got - self.asked, self.got.elapsed());
        let slots = self.held.len();
        let line = format!("{}\t{:.1}\t{:.1}\t{slots}\n", self.test, waited.as_secs_f64(), held.as_secs_f64());
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log);
        if let Ok(mut f) = log {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// Where failing tests leave their work dirs: `$CARGO_TARGET_DIR/test-failures`, or the
/// workspace's `target/test-failures`.
pub fn failures_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => PathBuf::from(t).join("test-failures"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-failures"),
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !std::thread::panicking() || self.dir.is_none() {
            return;
        }
        let to = failures_dir().join(&self.test);
        let _ = std::fs::remove_dir_all(&to);
        let copied = std::fs::create_dir_all(&to).and_then(|()| copy_tree(&self.path, &to));
        match copied {
            Ok(()) => eprintln!("the failed test's work dir (logs, data dirs) is kept at {}", to.display()),
            Err(e) => eprintln!("could not keep the failed test's work dir at {}: {e}", to.display()),
        }
    }
}

/// Copies the tree at `from` into `to` (files and dirs; sockets and the like are left out).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir_all(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_test_leaves_its_work_dir_under_test_failures() {
        let name = "simnet-failures-unit-test";
        let kept = failures_dir().join(name);
        let _ = std::fs::remove_dir_all(&kept);
        let outcome = std::panic::catch_unwind(|| {
            let work = WorkDir::new(name).unwrap();
            std::fs::create_dir_all(work.path().join("node0")).unwrap();
            std::fs::write(work.path().join("node0/node.log"), "a line\n").unwrap();
            panic!("the test fails");
        });
        assert!(outcome.is_err());
        assert_eq!(std::fs::read_to_string(kept.join("node0/node.log")).unwrap(), "a line\n");
        std::fs::remove_dir_all(&kept).unwrap();
        // A passing test leaves nothing.
        let path = {
            let work = WorkDir::new(name).unwrap();
            work.path().to_path_buf()
        };
        assert!(!path.exists() && !kept.exists());
    }

    #[test]
    fn a_tests_dirs_are_named_after_it_and_numbered() {
        let first = failures_dir().join("failures-tests-a_tests_dirs_are_named_after_it_and_numbered");
        let second = first.with_file_name(format!("{}-2", first.file_name().unwrap().to_string_lossy()));
        let _ = std::fs::remove_dir_all(&first);
        let _ = std::fs::remove_dir_all(&second);
        let outcome = std::panic::catch_unwind(|| {
            let (a, b) = (WorkDir::for_this_test().unwrap(), WorkDir::for_this_test().unwrap());
            std::fs::write(a.path().join("a"), "").unwrap();
            std::fs::write(b.path().join("b"), "").unwrap();
            panic!("the test fails");
        });
        assert!(outcome.is_err());
        assert!(first.join("a").exists() && second.join("b").exists(), "{first:?} {second:?}");
        std::fs::remove_dir_all(&first).unwrap();
        std::fs::remove_dir_all(&second).unwrap();
    }

    #[test]
    fn networks_take_turns_across_processes() {
        // Slot files of its own: the suite's are held by the networks of tests running beside.
        let dir = tempfile::tempdir().unwrap();
        // Whether another process could take `slot` now (it is let go again at once).
        let free = |slot: usize| {
            let other = std::fs::File::open(slot_file(dir.path(), slot)).unwrap();
            flock(&other, Lock::TryExclusive, &slot_file(dir.path(), slot))
        };
        let whole = turn(dir.path(), Weight::Whole);
        assert_eq!(whole.held.iter().map(|(s, _)| *s).collect::<Vec<_>>(), (0..SLOTS).collect::<Vec<_>>());
        assert!((0..SLOTS).all(|s| !free(s)), "a slot taken during a whole turn");
        // A shared turn waits for a whole one to end.
        let waiting = std::thread::spawn({
            let dir = dir.path().to_path_buf();
            move || turn(&dir, Weight::Slot)
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!waiting.is_finished(), "a shared turn began during a whole one");
        drop(whole);
        let mut shared = vec![waiting.join().unwrap()];
        while shared.len() < SLOTS {
            shared.push(turn(dir.path(), Weight::Slot));
        }
        let held: std::collections::BTreeSet<usize> = shared.iter().map(|t| t.held[0].0).collect();
        assert_eq!(held.len(), SLOTS, "as many shared turns as slots hold them all");
        assert!((0..SLOTS).all(|s| !free(s)));
        let first = shared.remove(0);
        let freed = first.held[0].0;
        drop(first);
        assert!(free(freed), "a slot is free again when its turn ends");
        drop(shared);
        let log = std::fs::read_to_string(dir.path().join(TURNS_LOG)).unwrap();
        let slots: Vec<&str> = log.lines().map(|l| l.rsplit('\t').next().unwrap()).collect();
        let mut want = vec![SLOTS.to_string()];
        want.extend(std::iter::repeat_n("1".to_string(), SLOTS));
        assert_eq!(slots, want, "{log}");
    }

    #[test]
    fn a_waiting_whole_turn_is_not_overtaken_by_shared_turns_asked_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let running = turn(&path, Weight::Slot);
        let whole = std::thread::spawn({
            let path = path.clone();
            move || turn(&path, Weight::Whole)
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!whole.is_finished(), "a whole turn began beside a shared one");
        // A slot is free, but a whole turn waits for it: a shared turn asked now waits too.
        let later = std::thread::spawn({
            let path = path.clone();
            move || turn(&path, Weight::Slot)
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!later.is_finished(), "a shared turn overtook the waiting whole one");
        drop(running);
        let whole = whole.join().unwrap();
        assert_eq!(whole.held.len(), SLOTS);
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(!later.is_finished(), "a shared turn began during a whole one");
        drop(whole);
        assert_eq!(later.join().unwrap().held.len(), 1);
    }
}
