//! The memory of a browser's processes: the proportional set size of a process and every
//! descendant (Chromium runs a dozen processes per instance), read from Linux `/proc`.

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
    let pss = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok().and_then(|r| kb(&r, "Pss:"));
    let rss = || std::fs::read_to_string(format!("/proc/{pid}/status")).ok().and_then(|s| kb(&s, "VmRSS:"));
    pss.or_else(rss).unwrap_or(0) * 1024
}

/// A `Field:   1234 kB` line's number.
fn kb(text: &str, field: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(field)).and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
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
