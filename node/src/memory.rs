//! The memory target (`crawl.memory_target_mb`): a node on a shared box should not grow without
//! bound. Every two seconds the node's resident memory — its own process plus its browsers'
//! process trees — is measured; over the target the crawl starts no new request (in-flight ones
//! finish, queues drain, the indexer catches up) until the use is back under 90% of the target.
//! `/status` shows `throttled` and the figures (`weft_memory_bytes` in `/metrics`).
//!
//! Measuring is not free: a process's proportional set size (`smaps_rollup`) makes the kernel
//! walk that process's page tables under its memory lock. So the node reads it only for its
//! browsers' own processes (found through the cheap `/proc/*/stat`), only here, every two
//! seconds, on the blocking pool; `/status` shows the last figures. (Reading every process on
//! the machine from every `/status` call once cost a box of six nodes most of its CPU in
//! system time.)

use crate::crawl::Crawler;
use crate::layouts::browser::LazyPool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// This process's resident set, bytes (Linux /proc; 0 elsewhere).
pub fn own_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Measures every `every`, publishing the figures and throttling the crawl around
/// `target_bytes` (0: measure only).
pub async fn watch(crawler: Crawler, browsers: Option<Arc<LazyPool>>, target_bytes: u64, every: Duration) {
    let metrics = crawler.metrics();
    metrics.memory_target_bytes.store(target_bytes, Relaxed);
    let mut throttled = false;
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let pool = browsers.as_ref().and_then(|b| b.started());
        let measured =
            tokio::task::spawn_blocking(move || own_rss() + pool.map_or(0, |p| p.measure_memory().iter().sum::<u64>()))
                .await;
        let Ok(used) = measured else { continue };
        metrics.memory_bytes.store(used, Relaxed);
        if target_bytes == 0 {
            continue;
        }
        if !throttled && used > target_bytes {
            throttled = true;
            tracing::warn!(
                used_mb = used >> 20,
                target_mb = target_bytes >> 20,
                "over the memory target: no new requests until it is back under 90%"
            );
            crawler.throttle(true);
        } else if throttled && used < target_bytes / 10 * 9 {
            throttled = false;
            tracing::info!(used_mb = used >> 20, "back under the memory target: crawling");
            crawler.throttle(false);
        }
    }
}

/// The memory of each process tree rooted at `roots`, in bytes: the proportional set size
/// (shared pages divided among their sharers) of the root and every descendant, RSS where
/// `smaps_rollup` is not readable. Linux `/proc`; zeros elsewhere. Blocking.
pub fn tree_pss(roots: &[u32]) -> Vec<u64> {
    if roots.is_empty() {
        return Vec::new();
    }
    let children = process_children();
    roots
        .iter()
        .map(|&root| {
            let mut total = 0;
            let mut stack = vec![root];
            let mut visited = std::collections::HashSet::new();
            while let Some(p) = stack.pop() {
                if !visited.insert(p) {
                    continue;
                }
                total += process_pss(p);
                stack.extend(children.get(&p).into_iter().flatten());
            }
            total
        })
        .collect()
}

/// Every process's children, from `/proc/<pid>/stat` (the parent is the second field after
/// the command name, which is in parentheses and may hold spaces or parentheses itself).
fn process_children() -> std::collections::HashMap<u32, Vec<u32>> {
    let mut children: std::collections::HashMap<u32, Vec<u32>> = std::collections::HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return children };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        if let Some(ppid) = parent_of(&stat) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    children
}

/// The parent pid in a `/proc/<pid>/stat` line.
fn parent_of(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// One process's PSS (RSS if `smaps_rollup` cannot be read), bytes; 0 if it is gone.
fn process_pss(pid: u32) -> u64 {
    let kb = |text: &str, field: &str| {
        text.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
    };
    let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok().and_then(|r| kb(&r, "Pss:"));
    let rss = || std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| kb(&s, "VmRSS:"));
    pss.or_else(rss).unwrap_or(0) * 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(parent_of("4242 (weft) S 17 4242 4242 0 -1"), Some(17));
        assert_eq!(parent_of("99 (a) (b c)) R 3 99 99"), Some(3));
        assert_eq!(parent_of("garbage"), None);
    }

    #[test]
    fn a_process_tree_counts_its_children_and_not_its_parent() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let me = std::process::id();
        let own = tree_pss(&[child.id()])[0];
        let with_children = tree_pss(&[me])[0];
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(own > 0, "sleep has some memory");
        assert!(with_children > own, "the test process and its sleep child: {with_children} vs {own}");
        assert_eq!(tree_pss(&[u32::MAX]), vec![0], "a process that is not there");
    }
}
