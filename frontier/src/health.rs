//! Is a host refusing the crawler? (seed 000 "Stall Detection": "checks if the target site is
//! blocking".) A host that answers 401/403/451 or a bot-check page to most requests is not
//! worked through URL by URL: it is marked **blocked**, with the evidence, and its queue pauses.
//!
//! Each host's last [`WINDOW`] answers are kept as classes — served, refused, challenge, other.
//! Once at least [`MIN_ANSWERS`] are in and three quarters of them are refusals or challenges,
//! the host is blocked for `pause` (the crawl requeues the URL that tipped it, so nothing is
//! lost). When the pause ends, the next request is a probe: a page served (or any answer that is
//! neither a refusal nor a challenge) unblocks the host — and the URLs it refused before it was
//! judged blocked are handed back to be fetched again; another refusal pauses it again, twice
//! as long, up to `pause_max`. Pure: the crawl feeds answers and persists [`HostHealth`].

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;

/// Answers remembered per host.
pub const WINDOW: usize = 16;
/// Answers before a host can be judged.
pub const MIN_ANSWERS: usize = 8;
/// Refusal examples kept as evidence.
const EXAMPLES: usize = 4;

/// One answer of a host, as far as blocking goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// A page (2xx, not a bot check) or a redirect.
    Served,
    /// 401, 403 or 451.
    Refused { status: u16 },
    /// A bot-check page (`cf-chl`, captcha markers), whatever its status.
    Challenge { status: u16 },
    /// Anything else: 404, 5xx, a network error. Says nothing about blocking.
    Other,
}

impl Answer {
    fn refuses(self) -> bool {
        matches!(self, Answer::Refused { .. } | Answer::Challenge { .. })
    }

    /// The class of a response with `status` and the start of its body.
    pub fn of(status: u16, body_head: &[u8]) -> Answer {
        if is_challenge(status, body_head) {
            Answer::Challenge { status }
        } else if matches!(status, 401 | 403 | 451) {
            Answer::Refused { status }
        } else if (200..400).contains(&status) {
            Answer::Served
        } else {
            Answer::Other
        }
    }
}

/// Markers of bot-check pages: Cloudflare's challenge, reCAPTCHA, hCaptcha, DataDome, PerimeterX.
const MARKERS: &[&str] = &[
    "cf-chl",
    "cf_chl",
    "challenge-platform",
    "/cdn-cgi/challenge",
    "g-recaptcha",
    "h-captcha",
    "hcaptcha.com",
    "captcha-delivery",
    "px-captcha",
];
/// Titles of bot-check pages.
const TITLES: &[&str] = &["just a moment", "attention required", "captcha", "are you a robot", "access denied"];

/// A bot-check page: a marker in the first 32 KiB of a small page. A long page that merely
/// mentions a captcha is an article about one.
pub fn is_challenge(status: u16, body: &[u8]) -> bool {
    if body.is_empty() || (status < 400 && body.len() > 64 * 1024) {
        return false;
    }
    let head = String::from_utf8_lossy(&body[..body.len().min(32 * 1024)]).to_ascii_lowercase();
    if MARKERS.iter().any(|m| head.contains(m)) {
        return true;
    }
    let title = head.split_once("<title").and_then(|(_, t)| t.split_once('>')).map(|(_, t)| t);
    let title = title.and_then(|t| t.split_once("</title")).map_or("", |(t, _)| t);
    TITLES.iter().any(|t| title.contains(t))
}

/// The blocked state of a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Blocked {
    /// Seconds since the Unix epoch.
    pub since: u64,
    /// The pause runs until then (seconds since the Unix epoch); a probe follows.
    pub until: u64,
    /// Pauses so far (each doubles the next).
    pub pauses: u32,
    /// One sentence for the operator.
    pub reason: String,
    /// The answers behind it.
    pub evidence: Vec<String>,
}

/// What the crawl should do after an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Carry on.
    Continue,
    /// The host is blocked: requeue the URL and leave the host alone for `pause`. `newly`:
    /// it was not blocked before this answer.
    Pause { pause: Duration, newly: bool },
    /// A probe was served: the host is no longer blocked. `retry`: the URLs it refused before
    /// it was judged blocked (those refused after were requeued), to fetch again.
    Unblocked { retry: Vec<String> },
}

/// One host's recent answers and whether it is blocked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostHealth {
    recent: VecDeque<Answer>,
    /// The latest refusals: (URL, answer).
    examples: VecDeque<(String, Answer)>,
    /// URLs refused while the host was not (yet) blocked, within the window.
    #[serde(default)]
    refused: VecDeque<String>,
    pub blocked: Option<Blocked>,
}

/// The pauses of a blocked host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PausePolicy {
    pub first: Duration,
    pub max: Duration,
}

impl HostHealth {
    /// Nothing worth remembering: not blocked, and no refusal among the recent answers.
    pub fn is_clean(&self) -> bool {
        self.blocked.is_none() && !self.recent.iter().any(|a| a.refuses())
    }

    /// Forgets refused URLs once they have slid out of the window (they were answers, not
    /// a block).
    fn trim_refused(&mut self) {
        let refusals = self.recent.iter().filter(|a| a.refuses()).count();
        while self.refused.len() > refusals {
            self.refused.pop_front();
        }
    }

    /// Records `answer` to a request for `url` at `now` (seconds since the Unix epoch).
    pub fn answer(&mut self, answer: Answer, url: &str, now: u64, policy: PausePolicy) -> Verdict {
        if answer.refuses() {
            self.examples.push_back((url.to_string(), answer));
            while self.examples.len() > EXAMPLES {
                self.examples.pop_front();
            }
            if self.blocked.is_none() {
                self.refused.push_back(url.to_string());
                while self.refused.len() > WINDOW {
                    self.refused.pop_front();
                }
            }
        }
        if let Some(b) = &mut self.blocked {
            // A probe (or a request that was in flight when the host was blocked).
            if answer.refuses() {
                b.pauses += 1;
                let pause = pause_of(policy, b.pauses);
                b.until = now + pause.as_secs();
                return Verdict::Pause { pause, newly: false };
            }
            if answer == Answer::Other {
                // A network error says nothing: probe again after the same pause.
                let pause = pause_of(policy, b.pauses);
                b.until = now + pause.as_secs();
                return Verdict::Pause { pause, newly: false };
            }
            self.blocked = None;
            self.recent.clear();
            self.recent.push_back(answer);
            let retry = self.refused.drain(..).collect();
            return Verdict::Unblocked { retry };
        }
        self.recent.push_back(answer);
        while self.recent.len() > WINDOW {
            self.recent.pop_front();
        }
        self.trim_refused();
        let refused = self.recent.iter().filter(|a| a.refuses()).count();
        if self.recent.len() < MIN_ANSWERS || refused * 4 < self.recent.len() * 3 || !answer.refuses() {
            return Verdict::Continue;
        }
        let challenges = self.recent.iter().filter(|a| matches!(a, Answer::Challenge { .. })).count();
        let pause = pause_of(policy, 1);
        let what = if challenges * 2 >= refused { "bot-check (challenge) pages" } else { "refusals (401/403/451)" };
        let mut evidence = vec![format!(
            "{refused} of its last {} answers were refusals or bot checks ({challenges} challenge pages)",
            self.recent.len()
        )];
        evidence.extend(self.examples.iter().map(|(u, a)| match a {
            Answer::Challenge { status } => format!("{u} → {status}, a bot-check page"),
            Answer::Refused { status } => format!("{u} → {status}"),
            _ => u.clone(),
        }));
        self.blocked = Some(Blocked {
            since: now,
            until: now + pause.as_secs(),
            pauses: 1,
            reason: format!(
                "The host answers most requests with {what}: its queue is paused and probed again after {} s.",
                pause.as_secs()
            ),
            evidence,
        });
        Verdict::Pause { pause, newly: true }
    }
}

fn pause_of(policy: PausePolicy, pauses: u32) -> Duration {
    policy.first.saturating_mul(1 << pauses.saturating_sub(1).min(16)).min(policy.max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: PausePolicy = PausePolicy { first: Duration::from_secs(60), max: Duration::from_secs(600) };

    #[test]
    fn most_answers_refused_blocks_the_host_with_evidence_and_a_served_probe_unblocks_it() {
        let mut h = HostHealth::default();
        for i in 0..3 {
            assert_eq!(h.answer(Answer::Served, &format!("https://a.test/{i}"), 10, P), Verdict::Continue);
        }
        let mut verdicts = Vec::new();
        for i in 3..12 {
            verdicts.push(h.answer(Answer::Refused { status: 403 }, &format!("https://a.test/{i}"), 20, P));
        }
        // 3 served + 9 refused: blocked once 3/4 of the window refuse (at the ninth answer: 6/9 no,
        // at the twelfth: 9/12 yes).
        assert_eq!(verdicts.iter().filter(|v| matches!(v, Verdict::Pause { newly: true, .. })).count(), 1);
        assert_eq!(verdicts.last(), Some(&Verdict::Pause { pause: Duration::from_secs(60), newly: true }));
        let b = h.blocked.clone().unwrap();
        assert_eq!((b.since, b.until, b.pauses), (20, 80, 1));
        assert!(b.evidence[0].starts_with("9 of its last 12 answers"), "{:?}", b.evidence);
        assert!(b.evidence.iter().any(|e| e == "https://a.test/11 → 403"));
        // A refused probe doubles the pause, up to the ceiling.
        assert_eq!(
            h.answer(Answer::Refused { status: 403 }, "https://a.test/p", 100, P),
            Verdict::Pause { pause: Duration::from_secs(120), newly: false }
        );
        for _ in 0..6 {
            h.answer(Answer::Challenge { status: 403 }, "https://a.test/p", 100, P);
        }
        assert_eq!(h.blocked.as_ref().unwrap().until, 700, "capped at ten minutes");
        let Verdict::Unblocked { retry } = h.answer(Answer::Served, "https://a.test/ok", 800, P) else { panic!() };
        // The nine refused before the block, to fetch again (the probes were requeued).
        assert_eq!(retry.len(), 9);
        assert_eq!(retry[0], "https://a.test/3");
        assert!(h.blocked.is_none());
        assert_eq!(
            h.answer(Answer::Refused { status: 403 }, "https://a.test/q", 801, P),
            Verdict::Continue,
            "a fresh window"
        );
    }

    #[test]
    fn a_few_refusals_or_many_missing_pages_block_nothing() {
        let mut h = HostHealth::default();
        for i in 0..40 {
            let a = if i % 3 == 0 { Answer::Refused { status: 403 } } else { Answer::Other };
            assert_eq!(h.answer(a, "https://a.test/x", 1, P), Verdict::Continue);
        }
        let mut h = HostHealth::default();
        for _ in 0..5 {
            assert_eq!(
                h.answer(Answer::Refused { status: 401 }, "https://a.test/x", 1, P),
                Verdict::Continue,
                "too few to judge"
            );
        }
    }

    #[test]
    fn bot_check_pages_are_recognized_by_markers_not_by_a_mention() {
        assert!(is_challenge(
            403,
            b"<html><head><title>Just a moment...</title></head><body><div id=cf-chl-widget></div>"
        ));
        assert!(is_challenge(200, b"<html><form><div class=\"g-recaptcha\" data-sitekey=x></div></form></html>"));
        assert!(is_challenge(503, b"<title>Attention Required! | Cloudflare</title>"));
        assert!(!is_challenge(
            200,
            b"<title>How captchas work</title><p>Our long article.</p>".repeat(3000).as_slice()
        ));
        assert!(!is_challenge(200, b"<title>News</title><p>The council approved the new bridge.</p>"));
        assert!(!is_challenge(403, b""));
        assert_eq!(Answer::of(403, b"<p>Forbidden</p>"), Answer::Refused { status: 403 });
        assert_eq!(Answer::of(200, b"<title>Just a moment...</title>"), Answer::Challenge { status: 200 });
        assert_eq!(Answer::of(404, b""), Answer::Other);
        assert_eq!(Answer::of(301, b""), Answer::Served);
    }
}
