//! Chromium's processes: started so that none outlives the node, and reaped if one did.
//!
//! A node can die without running any cleanup — SIGKILL, the OOM killer, a power cut of the
//! process tree — and a headless Chromium left behind holds a few hundred MB for good (it does
//! not notice that its DevTools client is gone). So:
//!
//! - **Parent-death signal.** Every Chromium is started with `prctl(PR_SET_PDEATHSIG,
//!   SIGKILL)` set between fork and exec: the kernel kills it the moment its parent goes. The
//!   signal is tied to the *thread* that forked, so all launches happen on one thread that
//!   lives as long as the process ([`launch`]). Chromium's own helpers (zygote, renderers,
//!   utility processes) exit when the browser process does; they also share its process
//!   group, which [`kill_group`] ends at once.
//! - **Marked profiles, reaped at start.** Each instance's profile directory is named
//!   `weft-chromium-<owner pid>-<owner start time>-<random>` in the temp dir. [`reap_orphans`]
//!   kills every Chromium whose profile names an owner that is no longer running (pid gone or
//!   reused: the start time differs) and removes such profiles — a second wall for anything
//!   the first missed.
//! - **Its temp files inside the profile.** Chromium makes a directory in the temp dir for its
//!   singleton socket (`org.chromium.Chromium.XXXXXX`) and removes it only on a clean exit; a
//!   killed or restarted instance left one behind each time (93 in `/tmp` after a day of
//!   tests). [`launch`] points its `TMPDIR` into the profile, so whatever it leaves goes with
//!   the profile.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::Duration;

/// Profile directories start with this.
pub const PROFILE_PREFIX: &str = "weft-chromium-";

/// A started Chromium: the process and the DevTools websocket it listens on.
pub struct Launched {
    pub child: Child,
    pub ws_url: String,
}

/// This process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`): with
/// the pid it names one process, even after the pid is reused.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A fresh profile directory marked with this process as its owner.
pub fn profile_dir() -> std::io::Result<tempfile::TempDir> {
    let me = std::process::id();
    let prefix = format!("{PROFILE_PREFIX}{me}-{}-", start_time(me).unwrap_or(0));
    tempfile::Builder::new().prefix(&prefix).tempdir()
}

/// The owner named by a profile directory's name, if it is one of ours.
fn owner_of(profile: &str) -> Option<(u32, u64)> {
    let name = Path::new(profile).file_name()?.to_str()?;
    let mut parts = name.strip_prefix(PROFILE_PREFIX)?.splitn(3, '-');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether the process that made a profile is still running.
fn owner_alive(owner: (u32, u64)) -> bool {
    start_time(owner.0) == Some(owner.1)
}

struct Request {
    command: Command,
    reply: mpsc::Sender<std::io::Result<Child>>,
}

/// The launcher thread: every Chromium is forked here, so the parent-death signal fires when
/// the process ends, not when some short-lived worker thread does.
fn launcher() -> &'static mpsc::Sender<Request> {
    static LAUNCHER: OnceLock<mpsc::Sender<Request>> = OnceLock::new();
    LAUNCHER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("weft-chromium-launcher".into())
            .spawn(move || {
                for mut r in rx {
                    let _ = r.reply.send(r.command.spawn());
                }
            })
            .expect("the launcher thread starts");
        tx
    })
}

/// Where Chromium's temp files go: a directory inside its profile, unless that would make
/// the singleton socket's path (`<dir>/org.chromium.Chromium.XXXXXX/SingletonSocket`) longer
/// than a Unix socket's path may be (108 bytes with the NUL) — then the system's temp dir.
fn temp_dir_in(profile: &Path) -> Option<PathBuf> {
    let dir = profile.join("tmp");
    let socket = dir.join("org.chromium.Chromium.XXXXXX").join("SingletonSocket");
    (socket.as_os_str().len() < 108).then_some(dir)
}

/// Starts `executable` with `args`, the profile `profile` (which also holds its temp files)
/// and `--remote-debugging-port=0`, killed by the kernel when this process dies, in its own
/// process group; waits up to `timeout` for its DevTools address. Blocking: call it off the
/// async runtime.
pub fn launch(executable: &Path, profile: &Path, args: &[String], timeout: Duration) -> std::io::Result<Launched> {
    let parent = std::process::id();
    let mut command = Command::new(executable);
    if let Some(temp) = temp_dir_in(profile) {
        std::fs::create_dir_all(&temp)?;
        command.env("TMPDIR", temp);
    }
    command
        .args(args)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--remote-debugging-port=0")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command.process_group(0);
    // SAFETY: only async-signal-safe calls (prctl, getppid, _exit) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died between fork and prctl: then nobody would send it.
            if libc::getppid() as u32 != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply, answer) = mpsc::channel();
    launcher()
        .send(Request { command, reply })
        .map_err(|_| std::io::Error::other("the Chromium launcher thread is gone"))?;
    let mut child = answer.recv().map_err(|_| std::io::Error::other("the Chromium launcher thread is gone"))??;
    let stderr = child.stderr.take().expect("piped");
    // Read stderr on a thread until the DevTools line, then keep draining it (a full pipe would
    // stall Chromium).
    let (tx, rx) = mpsc::channel::<Result<String, String>>();
    std::thread::Builder::new().name("weft-chromium-stderr".into()).spawn(move || {
        let mut told = false;
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if told {
                tracing::trace!(target: "chromium", "{line}");
                continue;
            }
            if let Some((_, ws)) = line.rsplit_once("listening on ") {
                if ws.starts_with("ws") {
                    let _ = tx.send(Ok(ws.trim().to_string()));
                    told = true;
                    continue;
                }
            }
            if seen.len() < 4096 {
                seen.push_str(&line);
                seen.push('\n');
            }
        }
        if !told {
            let _ = tx.send(Err(seen));
        }
    })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(ws_url)) => Ok(Launched { child, ws_url }),
        Ok(Err(stderr)) => {
            let _ = kill_group(&mut child);
            Err(std::io::Error::other(format!("Chromium exited before listening: {}", stderr.trim())))
        }
        Err(_) => {
            let _ = kill_group(&mut child);
            Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "Chromium did not listen in time"))
        }
    }
}

/// Kills a Chromium and every process of its group, and reaps it.
pub fn kill_group(child: &mut Child) -> std::io::Result<()> {
    // SAFETY: plain syscall; the group is the child's own (process_group(0) at launch).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    child.wait().map(|_| ())
}

/// What [`reap_orphans`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reaped {
    pub processes: usize,
    pub profiles: usize,
}

/// Kills Chromium processes whose profile belongs to a dead owner, and removes such profiles
/// from `temp_dir`. Run at start; blocking (a few ms of /proc and the temp dir).
pub fn reap_orphans(temp_dir: &Path) -> Reaped {
    let mut reaped = Reaped::default();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
            let profile = cmdline
                .split(|b| *b == 0)
                .filter_map(|a| std::str::from_utf8(a).ok())
                .find_map(|a| a.strip_prefix("--user-data-dir="))
                .map(str::to_string);
            let Some(owner) = profile.as_deref().and_then(owner_of) else { continue };
            if owner_alive(owner) {
                continue;
            }
            // SAFETY: plain syscalls on a process whose profile names a dead weft node.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
            reaped.processes += 1;
        }
    }
    if let Ok(entries) = std::fs::read_dir(temp_dir) {
        for entry in entries.flatten() {
            let path: PathBuf = entry.path();
            let Some(owner) = path.to_str().and_then(owner_of) else { continue };
            if !owner_alive(owner) && std::fs::remove_dir_all(&path).is_ok() {
                reaped.profiles += 1;
            }
        }
    }
    if reaped != Reaped::default() {
        tracing::info!(processes = reaped.processes, profiles = reaped.profiles, "reaped Chromium left by a dead node");
    }
    reaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_name_their_owner() {
        let dir = profile_dir().unwrap();
        let owner = owner_of(dir.path().to_str().unwrap()).unwrap();
        assert_eq!(owner.0, std::process::id());
        assert!(owner_alive(owner));
        assert!(!owner_alive((owner.0, owner.1 + 1)), "another start time is another process");
        assert_eq!(owner_of("/tmp/other-dir"), None);
        assert_eq!(owner_of("/tmp/weft-chromium-x-1-abc"), None);
    }

    /// Debian's real Chromium, started and killed as a restart does: the singleton socket's
    /// directory is made inside the profile and goes with it.
    #[test]
    fn chromium_keeps_its_temp_files_in_the_profile() {
        let exe = super::super::browser::find_chromium(None).expect("Debian's chromium (scripts/setup.sh)");
        let profile = profile_dir().unwrap();
        let args = vec!["--headless=new".to_string(), "--no-sandbox".into(), "about:blank".into()];
        let mut launched = launch(&exe, profile.path(), &args, Duration::from_secs(30)).unwrap();
        let temp = profile.path().join("tmp");
        let made = |dir: &Path| {
            std::fs::read_dir(dir)
                .map(|d| d.flatten().any(|e| e.file_name().to_string_lossy().starts_with("org.chromium.Chromium.")))
                .unwrap_or(false)
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !made(&temp) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(made(&temp), "Chromium's singleton directory is in the profile's tmp");
        kill_group(&mut launched.child).unwrap();
        let path = profile.path().to_path_buf();
        drop(profile);
        assert!(!path.exists(), "the killed instance left nothing behind");
    }

    #[test]
    fn a_long_profile_path_leaves_temp_files_in_the_system_temp_dir() {
        assert!(temp_dir_in(Path::new("/tmp/weft-chromium-1-2-abcdef")).is_some());
        let long = format!("/{}", "d".repeat(80));
        assert_eq!(temp_dir_in(Path::new(&long)), None, "a socket path past 108 bytes would not bind");
    }

    #[test]
    fn reaping_removes_profiles_of_dead_owners_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dead = tmp.path().join(format!("{PROFILE_PREFIX}{}-1-abc", u32::MAX - 7));
        let me = std::process::id();
        let alive = tmp.path().join(format!("{PROFILE_PREFIX}{me}-{}-abc", start_time(me).unwrap()));
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::create_dir_all(&alive).unwrap();
        let r = reap_orphans(tmp.path());
        assert_eq!(r.profiles, 1);
        assert!(!dead.exists() && alive.exists());
    }
}
