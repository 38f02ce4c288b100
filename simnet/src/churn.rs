//! Churn specs for the simulator: what happens to which node when, e.g.
//! `kill:3@60s,restart:3@90s,join:2@120s,leave:1@150s`.
//!
//! - `kill:N@T` — SIGKILL node N at T (it can be restarted);
//! - `restart:N@T` — start node N again on its data dir;
//! - `join:K@T` — K new nodes join at T;
//! - `leave:N@T` — SIGTERM node N, never back.
//!
//! Times are seconds (`90s`, or a bare `90`) or minutes (`2m`) from the start of the crawl:
//! when the node given the seeds starts, once the others formed a network.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Kill(usize),
    Restart(usize),
    Join(usize),
    Leave(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub at: Duration,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChurnError {
    #[error("churn event {0:?}: expected ACTION:N@TIME, e.g. kill:3@60s")]
    Shape(String),
    #[error("churn event {0:?}: unknown action (kill, restart, join, leave)")]
    Action(String),
    #[error("churn event {0:?}: {1:?} is not a number")]
    Number(String, String),
    #[error("churn event {0:?}: {1:?} is not a time (60s, 2m)")]
    Time(String, String),
    #[error("churn event {0:?}: node {1} does not exist at that time")]
    NoSuchNode(String, usize),
    #[error("churn event {0:?}: node {1} is not down, so it cannot restart")]
    NotDown(String, usize),
}

/// Parses a duration as the churn spec writes them: `90s`, `90` or `2m`.
pub fn parse_time(s: &str) -> Result<Duration, ChurnError> {
    time(s, s)
}

fn time(event: &str, s: &str) -> Result<Duration, ChurnError> {
    let bad = || ChurnError::Time(event.to_string(), s.to_string());
    let (number, unit) = match s.strip_suffix('m') {
        Some(n) => (n, 60),
        None => (s.strip_suffix('s').unwrap_or(s), 1),
    };
    let n: u64 = number.parse().map_err(|_| bad())?;
    Ok(Duration::from_secs(n.checked_mul(unit).ok_or_else(bad)?))
}

/// Parses a churn spec and checks it against `nodes` initial nodes (numbered from 0): events
/// are sorted by time; kills and leaves name live nodes, restarts name killed ones, joins add
/// nodes numbered after the existing ones.
pub fn parse(spec: &str, nodes: usize) -> Result<Vec<Event>, ChurnError> {
    let mut events = Vec::new();
    for raw in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (head, at) = raw.split_once('@').ok_or_else(|| ChurnError::Shape(raw.into()))?;
        let (action, n) = head.split_once(':').ok_or_else(|| ChurnError::Shape(raw.into()))?;
        let n: usize = n.trim().parse().map_err(|_| ChurnError::Number(raw.into(), n.into()))?;
        let action = match action.trim() {
            "kill" => Action::Kill(n),
            "restart" => Action::Restart(n),
            "join" => Action::Join(n),
            "leave" => Action::Leave(n),
            _ => return Err(ChurnError::Action(raw.into())),
        };
        events.push((raw.to_string(), Event { at: time(raw, at.trim())?, action }));
    }
    events.sort_by_key(|(_, e)| e.at);
    // Replay the states: up, killed (may restart) or gone.
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Up,
        Killed,
        Gone,
    }
    let mut states = vec![State::Up; nodes];
    for (raw, e) in &events {
        match e.action {
            Action::Kill(n) | Action::Leave(n) => {
                if states.get(n) != Some(&State::Up) {
                    return Err(ChurnError::NoSuchNode(raw.clone(), n));
                }
                states[n] = if matches!(e.action, Action::Kill(_)) { State::Killed } else { State::Gone };
            }
            Action::Restart(n) => {
                if states.get(n) != Some(&State::Killed) {
                    return Err(ChurnError::NotDown(raw.clone(), n));
                }
                states[n] = State::Up;
            }
            Action::Join(k) => states.extend(std::iter::repeat_n(State::Up, k)),
        }
    }
    Ok(events.into_iter().map(|(_, e)| e).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_spec_parses_in_time_order() {
        let e = parse("join:2@120s, kill:3@60s,restart:3@90s,leave:1@2m", 5).unwrap();
        let got: Vec<(u64, Action)> = e.iter().map(|e| (e.at.as_secs(), e.action)).collect();
        assert_eq!(
            got,
            vec![(60, Action::Kill(3)), (90, Action::Restart(3)), (120, Action::Join(2)), (120, Action::Leave(1))]
        );
        assert_eq!(parse("", 3).unwrap(), vec![]);
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        assert!(matches!(parse("kill3@60s", 5), Err(ChurnError::Shape(_))));
        assert!(matches!(parse("kill:3", 5), Err(ChurnError::Shape(_))));
        assert!(matches!(parse("nuke:3@60s", 5), Err(ChurnError::Action(_))));
        assert!(matches!(parse("kill:x@60s", 5), Err(ChurnError::Number(..))));
        assert!(matches!(parse("kill:3@soon", 5), Err(ChurnError::Time(..))));
        assert!(matches!(parse("kill:7@60s", 5), Err(ChurnError::NoSuchNode(_, 7))));
        assert!(matches!(parse("restart:2@60s", 5), Err(ChurnError::NotDown(_, 2))));
        assert!(matches!(parse("leave:1@10s,restart:1@20s", 5), Err(ChurnError::NotDown(_, 1))), "leave is final");
        assert!(parse("join:1@10s,kill:5@20s", 5).is_ok(), "joined nodes are numbered after the others");
    }
}
