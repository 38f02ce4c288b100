//! The server-side truth of a run, judged from the web server's request log alone (never from
//! what the nodes say about themselves): coverage over time, duplicate fetches, lost URLs and
//! politeness violations.

use crate::web::Request;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// What the crawl should have achieved and how politely.
pub struct Expectations<'a> {
    /// Every page reachable from the seeds: (host, path).
    pub reachable: &'a HashSet<(String, String)>,
    /// The least time between the end of one response and the start of the next request to a
    /// host (its delay, or its robots.txt Crawl-delay), per host; `default_gap` otherwise.
    pub gaps: &'a HashMap<String, Duration>,
    pub default_gap: Duration,
    /// (host, path prefix) robots.txt forbids: any request there is a violation.
    pub disallowed: &'a [(String, String)],
    /// After a 429, the host's `Retry-After`: the next request must not come sooner.
    pub retry_after: Duration,
    /// Time zero of `coverage_over_time` (the start of the run); the first request if `None`.
    pub start: Option<Instant>,
    /// Nodes killed with SIGKILL: (the User-Agent their requests carry, when). A page such a
    /// node fetched before its kill may be fetched again after it — the fetch was never
    /// acknowledged — and that repeat is counted apart from the duplicates that must not be.
    pub kills: &'a [(String, Instant)],
    /// Nodes told to leave (SIGTERM): (User-Agent, when). A leaver hands what it is done with
    /// to each host's next owner, one member; a page it fetched may be fetched again when a
    /// node is killed after the leave and before the repeat — the member that held the only
    /// record may be the one killed. Counted with the repeats after a kill (until documents
    /// and their records are kept on several members: issue 36).
    pub leaves: &'a [(String, Instant)],
    /// The pages the nodes still up held copies of just after a kill: one of them fetched again
    /// after the kill is a page the crawl should have taken from its copy (counted apart).
    pub held_at_kill: &'a HashSet<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub reachable: usize,
    /// Reachable pages fetched at least once.
    pub covered: usize,
    pub coverage: f64,
    /// Successful fetches of a page that had been fetched successfully already (robots.txt,
    /// sitemaps and rendered pages' subresources excluded; a retry after a 429 or 5xx is not a
    /// duplicate), other than those a crash explains: these must be 0.
    pub duplicate_fetches: usize,
    pub duplicate_rate: f64,
    /// Repeats of a page whose earlier fetch was made by a node killed with SIGKILL before the
    /// repeat (its fetch was in flight or not yet acknowledged when it died), or by a node that
    /// left when a node was killed between the leave and the repeat (the one member the leaver
    /// told may be the one killed; see [`Expectations::leaves`]).
    pub duplicates_after_kill: usize,
    /// Of those, the pages the nodes still up held a copy of just after the kill: the crawl
    /// should have indexed them from the copy (must be 0). The rest had no copy left anywhere,
    /// and fetching them again is right.
    pub repeats_with_a_copy: Vec<String>,
    /// The pages fetched more than once and how often, for either kind of duplicate.
    pub repeated_pages: BTreeMap<String, usize>,
    /// Each duplicate no kill explains, with every fetch of its page: `host/path: agent at
    /// seconds into the run, …` — what to read first when one shows up.
    pub unexplained: Vec<String>,
    /// Requests for robots.txt, sitemaps and subresources (scripts, stylesheets, data that
    /// rendered pages asked for).
    pub robots_requests: usize,
    pub sitemap_requests: usize,
    pub subresource_requests: usize,
    /// Subresource URLs requested more than once by the same node (its cache should have
    /// answered; not across a kill of the node, whose cache is memory), and the most requests
    /// any one subresource URL got from all nodes together.
    pub subresource_repeats_by_a_node: usize,
    pub subresource_max_requests: usize,
    /// Reachable pages never fetched, sorted.
    pub lost: Vec<String>,
    /// Requests that came sooner than their host's gap after its previous response (or its
    /// Retry-After after a 429), two requests to one host in flight at once, and requests
    /// for paths robots.txt disallows.
    pub politeness_violations: Vec<String>,
    /// Requests in all, and those answered 2xx.
    pub requests: usize,
    pub ok_responses: usize,
    /// (seconds since the first request, pages covered by then), one point per second.
    pub coverage_over_time: Vec<(u64, usize)>,
}

/// A page request: not robots.txt, not a sitemap, not a subresource.
pub fn is_page(r: &Request) -> bool {
    r.path != "/robots.txt" && !r.path.contains("sitemap") && !is_subresource(&r.path)
}

/// A script, stylesheet or data file a rendered page asks for (the simulator's web serves
/// them under these extensions).
pub fn is_subresource(path: &str) -> bool {
    let p = path.split('?').next().unwrap_or(path);
    [".js", ".css", ".json"].iter().any(|ext| p.ends_with(ext))
}

/// See `killed_between` in [`judge`]: how long after a kill the server may still log a request
/// its node sent before dying.
const KILL_SLACK: Duration = Duration::from_secs(2);

/// Judges `log` against `expect`.
pub fn judge(log: &[Request], expect: &Expectations) -> Report {
    let mut log: Vec<&Request> = log.iter().collect();
    log.sort_by_key(|r| r.started);
    let start = expect.start.or(log.first().map(|r| r.started)).unwrap_or_else(Instant::now);
    let fetched = Fetched::of(&log, expect, start);
    let covered = expect.reachable.iter().filter(|k| fetched.seen.contains(*k)).count();
    let mut lost: Vec<String> =
        expect.reachable.iter().filter(|k| !fetched.seen.contains(*k)).map(|(h, p)| format!("{h}{p}")).collect();
    lost.sort();
    let violations = politeness(&log, expect, start);
    let coverage_over_time = coverage_over_time(&log, start, &fetched.points);
    let subresources = Subresources::of(&log, expect);
    let reachable = expect.reachable.len();
    let Fetched {
        seen,
        duplicate_fetches,
        duplicates_after_kill,
        repeats_with_a_copy,
        repeated_pages,
        unexplained,
        ..
    } = fetched;
    let pages = seen.len() + duplicate_fetches + duplicates_after_kill;
    Report {
        reachable,
        covered,
        coverage: if reachable == 0 { 1.0 } else { covered as f64 / reachable as f64 },
        duplicate_fetches,
        duplicate_rate: if pages == 0 { 0.0 } else { duplicate_fetches as f64 / pages as f64 },
        duplicates_after_kill,
        repeats_with_a_copy,
        repeated_pages,
        unexplained,
        robots_requests: log.iter().filter(|r| r.path == "/robots.txt").count(),
        sitemap_requests: log.iter().filter(|r| r.path.contains("sitemap")).count(),
        subresource_requests: subresources.requests,
        subresource_repeats_by_a_node: subresources.repeats_by_a_node,
        subresource_max_requests: subresources.max_requests,
        lost,
        politeness_violations: violations,
        requests: log.len(),
        ok_responses: log.iter().filter(|r| (200..300).contains(&r.status)).count(),
        coverage_over_time,
    }
}

/// Whether the node of `agent` was killed between `from` and `to`. A request the server logs up
/// to `KILL_SLACK` after its node's SIGKILL was sent before it: the server reads the bytes a
/// little later (on a loaded machine, hundreds of ms), and a node killed does not start again
/// that fast. Its repeat is the kill's.
fn killed_between(expect: &Expectations, agent: &str, from: Instant, to: Instant) -> bool {
    expect.kills.iter().any(|(a, at)| agent.starts_with(a.as_str()) && *at + KILL_SLACK >= from && *at <= to)
}

/// The pages fetched (answered 2xx), in the order their requests started: which were fetched
/// again, and whether a kill explains each repeat.
struct Fetched {
    seen: HashSet<(String, String)>,
    duplicate_fetches: usize,
    duplicates_after_kill: usize,
    repeats_with_a_copy: Vec<String>,
    repeated_pages: BTreeMap<String, usize>,
    unexplained: Vec<String>,
    /// Reachable pages covered so far, by the second of the run.
    points: BTreeMap<u64, usize>,
}

impl Fetched {
    fn of(log: &[&Request], expect: &Expectations, start: Instant) -> Fetched {
        let mut seen: HashSet<(String, String)> = HashSet::new();
        // Who fetched each page, and when: a repeat is explained by a kill of an earlier fetcher.
        let mut fetchers: HashMap<(String, String), Vec<(&str, Instant)>> = HashMap::new();
        let mut duplicate_fetches = 0;
        let mut duplicates_after_kill = 0;
        let mut repeats_with_a_copy = Vec::new();
        let mut repeated_pages: BTreeMap<String, usize> = BTreeMap::new();
        let mut unexplained = Vec::new();
        let mut covered_so_far = 0;
        let mut points: BTreeMap<u64, usize> = BTreeMap::new();
        for r in log.iter().filter(|r| is_page(r) && (200..300).contains(&r.status)) {
            let key = (r.host.clone(), r.path.clone());
            let reachable = expect.reachable.contains(&key);
            let before = fetchers.entry(key.clone()).or_default();
            // Explained only by the latest earlier fetch: its node died before acknowledging it, or
            // left and a node was killed between the leave and the repeat.
            let left_then_a_kill = |agent: &str, from: Instant, to: Instant| {
                expect.leaves.iter().any(|(a, left)| {
                    agent.starts_with(a.as_str())
                        && *left >= from
                        && *left <= to
                        && expect.kills.iter().any(|(_, killed)| *killed >= *left && *killed <= to)
                })
            };
            let explained = before.last().is_some_and(|(agent, at)| {
                killed_between(expect, agent, *at, r.started) || left_then_a_kill(agent, *at, r.started)
            });
            before.push((r.user_agent.as_str(), r.started));
            if !seen.insert(key) {
                if explained {
                    duplicates_after_kill += 1;
                    if expect.held_at_kill.contains(&(r.host.clone(), r.path.clone())) {
                        repeats_with_a_copy.push(format!("{}{}", r.host, r.path));
                    }
                } else {
                    duplicate_fetches += 1;
                    let fetches: Vec<String> = before
                        .iter()
                        .map(|(agent, at)| {
                            format!("{agent} at {:.1} s", at.saturating_duration_since(start).as_secs_f64())
                        })
                        .collect();
                    unexplained.push(format!("{}{}: {}", r.host, r.path, fetches.join(", ")));
                }
                *repeated_pages.entry(format!("{}{}", r.host, r.path)).or_insert(1) += 1;
            } else if reachable {
                covered_so_far += 1;
                points.insert(r.started.saturating_duration_since(start).as_secs(), covered_so_far);
            }
        }
        Fetched {
            seen,
            duplicate_fetches,
            duplicates_after_kill,
            repeats_with_a_copy,
            repeated_pages,
            unexplained,
            points,
        }
    }
}

/// Politeness: per host, each request starts no sooner than `gap` after the previous one was
/// answered, and never while it is still being answered; and nothing robots.txt disallows.
fn politeness(log: &[&Request], expect: &Expectations, start: Instant) -> Vec<String> {
    let mut violations = Vec::new();
    let mut by_host: HashMap<&str, Vec<&Request>> = HashMap::new();
    for r in log {
        by_host.entry(r.host.as_str()).or_default().push(r);
    }
    for (host, requests) in by_host {
        let host_gap = expect.gaps.get(host).copied().unwrap_or(expect.default_gap);
        for w in requests.windows(2) {
            let (prev, next) = (w[0], w[1]);
            let gap = if prev.status == 429 { host_gap.max(expect.retry_after) } else { host_gap };
            if next.started < prev.answered {
                violations.push(format!("{host}: {} started before {} was answered", next.path, prev.path));
            } else if next.started.duration_since(prev.answered) < gap {
                let ms = next.started.duration_since(prev.answered).as_millis();
                // Who asked, and when: a violation across two nodes is a hand-over's.
                violations.push(format!(
                    "{host}: {} {ms} ms after {} (at least {} ms; {} at {:.1} s after {})",
                    next.path,
                    prev.path,
                    gap.as_millis(),
                    next.user_agent,
                    next.started.saturating_duration_since(start).as_secs_f64(),
                    prev.user_agent,
                ));
            }
        }
    }
    for r in log {
        if expect.disallowed.iter().any(|(h, prefix)| *h == r.host && r.path.starts_with(prefix.as_str())) {
            violations.push(format!("{}: {} is disallowed by robots.txt", r.host, r.path));
        }
    }
    violations.sort();

    violations
}

/// Reachable pages covered, one point per second, carrying the last value forward.
fn coverage_over_time(log: &[&Request], start: Instant, points: &BTreeMap<u64, usize>) -> Vec<(u64, usize)> {
    let last = log.last().map_or(0, |r| r.started.saturating_duration_since(start).as_secs());
    let mut coverage_over_time = Vec::new();
    let mut value = 0;
    for s in 0..=last {
        if let Some(v) = points.range(..=s).next_back() {
            value = *v.1;
        }
        coverage_over_time.push((s, value));
    }
    coverage_over_time
}

/// Requests for subresources (a page's images, scripts, styles).
struct Subresources {
    requests: usize,
    /// Subresources a node asked for again while its cache held them.
    repeats_by_a_node: usize,
    /// The most requests for one subresource.
    max_requests: usize,
}

impl Subresources {
    fn of(log: &[&Request], expect: &Expectations) -> Subresources {
        let mut by_node: HashMap<(&str, &str, &str), Vec<Instant>> = HashMap::new();
        let mut by_url: HashMap<(&str, &str), usize> = HashMap::new();
        for r in log.iter().filter(|r| is_subresource(&r.path)) {
            by_node.entry((r.user_agent.as_str(), r.host.as_str(), r.path.as_str())).or_default().push(r.started);
            *by_url.entry((r.host.as_str(), r.path.as_str())).or_default() += 1;
        }
        // A node asking again for a subresource its cache holds — unless it was killed in between
        // (the cache is memory: it died with the process).
        let subresource_repeats_by_a_node = by_node
            .iter()
            .filter(|((agent, _, _), at)| at.windows(2).any(|w| !killed_between(expect, agent, w[0], w[1])))
            .count();
        Subresources {
            requests: by_url.values().sum(),
            repeats_by_a_node: subresource_repeats_by_a_node,
            max_requests: by_url.values().copied().max().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(t0: Instant, host: &str, path: &str, start_ms: u64, end_ms: u64) -> Request {
        status(t0, host, path, start_ms, end_ms, 200)
    }

    fn status(t0: Instant, host: &str, path: &str, start_ms: u64, end_ms: u64, status: u16) -> Request {
        Request {
            host: host.into(),
            path: path.into(),
            user_agent: "test".into(),
            started: t0 + Duration::from_millis(start_ms),
            answered: t0 + Duration::from_millis(end_ms),
            status,
        }
    }

    #[test]
    fn coverage_duplicates_lost_and_politeness_from_the_log() {
        let t0 = Instant::now();
        let reachable: HashSet<(String, String)> =
            ["/", "/a", "/b", "/c"].iter().map(|p| ("h.test".to_string(), p.to_string())).collect();
        let gaps = HashMap::from([("slow.test".to_string(), Duration::from_secs(2))]);
        let disallowed = vec![("h.test".to_string(), "/private/".to_string())];
        let expect = Expectations {
            reachable: &reachable,
            gaps: &gaps,
            default_gap: Duration::from_millis(100),
            disallowed: &disallowed,
            retry_after: Duration::from_secs(2),
            start: None,
            kills: &[],
            leaves: &[],
            held_at_kill: &HashSet::new(),
        };
        let log = vec![
            req(t0, "h.test", "/robots.txt", 0, 10),
            req(t0, "h.test", "/", 200, 210),
            req(t0, "h.test", "/a", 1500, 1510),
            req(t0, "h.test", "/a", 1650, 1660), // duplicate
            req(t0, "h.test", "/b", 1700, 1710), // 40 ms after: too soon
            status(t0, "h.test", "/c", 1900, 1910, 429),
            status(t0, "h.test", "/c", 3000, 3010, 429), // within Retry-After: too soon
            req(t0, "h.test", "/private/x", 9000, 9010), // disallowed
            req(t0, "slow.test", "/", 0, 10),
            req(t0, "slow.test", "/x", 5, 20), // overlapping
        ];
        let r = judge(&log, &expect);
        assert_eq!((r.reachable, r.covered), (4, 3));
        assert_eq!(r.lost, vec!["h.test/c"]);
        assert_eq!(r.duplicate_fetches, 1);
        assert_eq!(r.politeness_violations.len(), 4, "{:?}", r.politeness_violations);
        assert!(r.politeness_violations.iter().any(|v| v.contains("/c 1090 ms after /c (at least 2000 ms;")));
        assert!(r.politeness_violations.iter().any(|v| v.contains("/private/x is disallowed")));
        assert_eq!((r.requests, r.ok_responses), (10, 8));
        assert!(r.politeness_violations.iter().any(|v| v.contains("/b 40 ms after /a")));
        assert!(r.politeness_violations.iter().any(|v| v.contains("started before")));
        assert_eq!(r.coverage_over_time[..2], [(0, 1), (1, 3)], "/ in the first second, /a and /b in the next");
        assert_eq!(r.lost, vec!["h.test/c"], "429s do not cover a page");
    }

    #[test]
    fn repeats_after_a_kill_and_subresources_are_counted_apart() {
        let t0 = Instant::now();
        let reachable: HashSet<(String, String)> =
            ["/", "/a", "/b"].iter().map(|p| ("h.test".to_string(), p.to_string())).collect();
        let by = |agent: &str, path: &str, at: u64| Request {
            user_agent: agent.into(),
            ..req(t0, "h.test", path, at, at + 5)
        };
        let log = vec![
            by("Node1", "/", 0),
            by("Node1", "/a", 100),
            by("Node2", "/a", 900), // Node1 was killed at 500: explained
            by("Node2", "/b", 1000),
            by("Node3", "/b", 1100), // nobody was killed: a real duplicate
            by("Node4", "/c", 1150),
            by("Node5", "/c", 1900), // Node4 left at 1160, Node1 was killed at 1700: explained
            by("Node4", "/d", 1155),
            by("Node5", "/d", 1650), // Node4 left, but no kill came before this: a duplicate
            by("Node2", "/app.js", 1200),
            by("Node2", "/app.js", 1300), // the node's cache should have answered
            by("Node3", "/app.js", 1400),
            by("Node3", "/data/x.json?v=1", 1500),
            by("Node1", "/app.js", 200),
            by("Node1", "/app.js", 600), // Node1 was killed at 500: its cache went with it
            by("Node1", "/e", 1720),     // logged 20 ms after Node1's kill at 1700: sent before it
            by("Node2", "/e", 1800),     // so this repeat is the kill's
        ];
        let kills = vec![
            ("Node1".to_string(), t0 + Duration::from_millis(500)),
            ("Node1".to_string(), t0 + Duration::from_millis(1700)),
        ];
        let leaves = vec![("Node4".to_string(), t0 + Duration::from_millis(1160))];
        let expect = Expectations {
            reachable: &reachable,
            gaps: &HashMap::new(),
            default_gap: Duration::ZERO,
            disallowed: &[],
            retry_after: Duration::ZERO,
            start: None,
            kills: &kills,
            leaves: &leaves,
            held_at_kill: &HashSet::from([("h.test".to_string(), "/c".to_string())]),
        };
        let r = judge(&log, &expect);
        assert_eq!((r.covered, r.duplicate_fetches, r.duplicates_after_kill), (3, 2, 3));
        assert_eq!(r.repeats_with_a_copy, vec!["h.test/c".to_string()], "a copy survived the kill");
        assert_eq!(r.repeated_pages.get("h.test/b"), Some(&2));
        assert_eq!(r.unexplained.len(), 2, "{:?}", r.unexplained);
        assert!(r.unexplained.iter().any(|u| u.starts_with("h.test/d")), "{:?}", r.unexplained);
        assert_eq!((r.subresource_requests, r.subresource_repeats_by_a_node, r.subresource_max_requests), (6, 1, 5));
    }
}
