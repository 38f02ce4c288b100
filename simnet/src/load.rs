//! The box's load while the questions are asked: once a second, how busy the CPUs were (and
//! waiting on the disk), and which node's which thread took the CPU — read from `/proc`, so a
//! question phase whose answers slow down says whether the nodes or something else held the
//! box, and which thread. Written to `<work dir>/load.tsv`, one line a second; the busiest
//! threads over the phase are summed into the report.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the sampler saw over the phase.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct LoadReport {
    pub seconds: usize,
    /// Share of all CPUs busy in a second: the median and the highest.
    pub busy_p50: f64,
    pub busy_max: f64,
    /// Share of the CPUs idle waiting on the disk, the highest second.
    pub iowait_max: f64,
    /// Seconds with the CPUs 90% busy or more.
    pub saturated_seconds: usize,
    /// CPU seconds the nodes' processes took in all, and the box's busy CPU seconds.
    pub nodes_cpu_secs: f64,
    pub box_cpu_secs: f64,
    /// The threads that took most CPU, summed over the nodes by name (`weft-search`,
    /// `tokio-rt-worker`…): (name, CPU seconds).
    pub threads: Vec<(String, f64)>,
}

/// The `cpu` line of `/proc/stat`: (busy, total, iowait) in ticks.
fn box_ticks(stat: &str) -> Option<(u64, u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is counted in user already).
    let total: u64 = v.iter().take(8).sum();
    let (idle, iowait) = (v[3], v[4]);
    Some((total - idle - iowait, total, iowait))
}

/// A thread's `stat`: its name and its user + system ticks. The name is between the first
/// `(` and the last `)` (it may hold spaces and parentheses).
fn thread_ticks(stat: &str) -> Option<(String, u64)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = stat.get(close + 1..)?.split_whitespace().collect();
    // After the name: state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt,
    // cmajflt, utime, stime.
    let utime: u64 = rest.get(11)?.parse().ok()?;
    let stime: u64 = rest.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

/// Every thread of process `pid`: (thread id, name, ticks).
fn threads_of(pid: u32) -> Vec<(u32, String, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    dir.flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (name, ticks) = thread_ticks(&stat)?;
            Some((tid, name, ticks))
        })
        .collect()
}

/// Samples until stopped, on a thread of its own.
pub struct LoadSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<LoadReport>,
}

impl LoadSampler {
    /// Starts sampling the box and the nodes' processes (`(node, pid)`), a line a second to
    /// `out`.
    pub fn start(nodes: Vec<(usize, u32)>, out: PathBuf) -> LoadSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || sample(&nodes, &out, &flag));
        LoadSampler { stop, thread }
    }

    pub fn stop(self) -> LoadReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

fn sample(nodes: &[(usize, u32)], out: &std::path::Path, stop: &AtomicBool) -> LoadReport {
    // Ticks are USER_HZ, 100 a second on Linux.
    const HZ: f64 = 100.0;
    let mut file = std::fs::File::create(out).ok();
    if let Some(f) = file.as_mut() {
        let _ = writeln!(f, "secs\tbusy\tiowait\tbusiest threads (node/name: share of one CPU)");
    }
    let read_box = || std::fs::read_to_string("/proc/stat").ok().as_deref().and_then(box_ticks);
    let read_threads = || -> HashMap<(usize, u32), (String, u64)> {
        nodes
            .iter()
            .flat_map(|(n, pid)| threads_of(*pid).into_iter().map(move |(tid, name, t)| ((*n, tid), (name, t))))
            .collect()
    };
    let (mut last_box, mut last_threads) = (read_box(), read_threads());
    let (mut busy, mut iowait_max, mut by_name) = (Vec::new(), 0f64, HashMap::<String, f64>::new());
    let (mut nodes_secs, mut box_secs) = (0f64, 0f64);
    let started = std::time::Instant::now();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_secs(1));
        let (now_box, now_threads) = (read_box(), read_threads());
        let (Some((b0, t0, w0)), Some((b1, t1, w1))) = (last_box, now_box) else { continue };
        let total = (t1.saturating_sub(t0)).max(1) as f64;
        let share = (b1.saturating_sub(b0)) as f64 / total;
        let wait = (w1.saturating_sub(w0)) as f64 / total;
        busy.push(share);
        iowait_max = iowait_max.max(wait);
        box_secs += (b1.saturating_sub(b0)) as f64 / HZ;
        let mut this: Vec<(String, f64)> = Vec::new();
        for (key, (name, ticks)) in &now_threads {
            let before = last_threads.get(key).map_or(0, |(_, t)| *t);
            let secs = ticks.saturating_sub(before) as f64 / HZ;
            if secs > 0.0 {
                nodes_secs += secs;
                *by_name.entry(name.clone()).or_default() += secs;
                this.push((format!("{}/{name}", key.0), secs));
            }
        }
        this.sort_by(|a, b| b.1.total_cmp(&a.1));
        if let Some(f) = file.as_mut() {
            let top: Vec<String> = this.iter().take(5).map(|(w, s)| format!("{w}: {s:.2}")).collect();
            let _ = writeln!(f, "{:.0}\t{share:.2}\t{wait:.2}\t{}", started.elapsed().as_secs_f64(), top.join(", "));
        }
        (last_box, last_threads) = (now_box, now_threads);
    }
    busy.sort_by(f64::total_cmp);
    let mut threads: Vec<(String, f64)> = by_name.into_iter().collect();
    threads.sort_by(|a, b| b.1.total_cmp(&a.1));
    threads.truncate(8);
    LoadReport {
        seconds: busy.len(),
        busy_p50: busy.get(busy.len() / 2).copied().unwrap_or(0.0),
        busy_max: busy.last().copied().unwrap_or(0.0),
        iowait_max,
        saturated_seconds: busy.iter().filter(|b| **b >= 0.9).count(),
        nodes_cpu_secs: nodes_secs,
        box_cpu_secs: box_secs,
        threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_box_and_a_thread_are_read_from_their_stat_lines() {
        let stat = "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n";
        // busy = 100 + 5 + 50 + 3 + 2 = 160 of 1000, 40 waiting on the disk.
        assert_eq!(box_ticks(stat), Some((160, 1000, 40)));
        assert_eq!(box_ticks("intr 1 2 3"), None);
        let task = "4242 (tokio-runtime-w) S 1 2 3 0 -1 4194368 10 0 0 0 123 45 0 0 20 0 1 0 99 0 0";
        assert_eq!(thread_ticks(task), Some(("tokio-runtime-w".into(), 168)));
        // A name with spaces and parentheses of its own.
        let odd = "7 (a (b) c) R 1 2 3 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 99 0 0";
        assert_eq!(thread_ticks(odd), Some(("a (b) c".into(), 10)));
        assert_eq!(thread_ticks("7 (short) R 1"), None);
    }

    /// The CPU time the calling thread has had.
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_gettime writes the timespec it is given.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime: {}", std::io::Error::last_os_error());
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[test]
    fn the_sampler_sees_this_process_work() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("load.tsv");
        let me = std::process::id();
        let sampler = LoadSampler::start(vec![(0, me)], out.clone());
        // Keep a thread busy for over two seconds, and until it has had 1.5 s of CPU: on a box
        // saturated by other work, wall time alone buys a thread less CPU than the sampler is
        // asked to see.
        let spin = std::thread::Builder::new()
            .name("busy-test".into())
            .spawn(|| {
                let t = std::time::Instant::now();
                let mut x = 0u64;
                while t.elapsed() < Duration::from_millis(2300) || thread_cpu() < Duration::from_millis(1500) {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
                x
            })
            .unwrap();
        spin.join().unwrap();
        let report = sampler.stop();
        assert!(report.seconds >= 2, "{report:?}");
        assert!(report.threads.iter().any(|(name, secs)| name == "busy-test" && *secs >= 1.0), "{report:?}");
        let tsv = std::fs::read_to_string(out).unwrap();
        assert!(tsv.lines().count() >= 3 && tsv.contains("0/busy-test"), "{tsv}");
    }
}
