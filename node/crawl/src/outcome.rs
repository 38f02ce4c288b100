//! The crawl's decisions, without I/O: how a fetch ends a lease, where a redirect leads, which
//! links, sitemap entries and robots.txt hints become candidates for the frontier.
//!
//! The crawl loop (`mod.rs`) does the fetching, counting and queueing; every choice it makes
//! about a response is a function here, tested case by case in milliseconds.

use url::Url;
use weft_extract::{Link, Sitemap, SitemapError};
use weft_fetch::fetcher::{FetchError, Fetched};
use weft_frontier::health::Answer;
use weft_frontier::{Candidate, Completion, Fate, UrlKind};
use weft_url::{normalize, normalize_url, HostKey, NormalizeError};

/// What the crawl does with a response, besides completing the lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// An HTML page: down the pipeline, its links queued.
    ProcessPage,
    /// A sitemap: parsed for the URLs it lists.
    ParseSitemap,
    /// A redirect to follow (see [`redirect`]).
    Follow(String),
    /// Nothing more.
    Nothing,
}

/// How one fetch ends its lease.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub completion: Completion,
    /// Whether the host was contacted (the politeness delay counts from it).
    pub requested: bool,
    pub action: Action,
    /// An error to count, by kind, with its detail.
    pub error: Option<(&'static str, String)>,
}

impl Outcome {
    fn done(action: Action) -> Outcome {
        Outcome { completion: Completion::Done { page: false }, requested: true, action, error: None }
    }
}

/// Whether a response is a bot-check page rather than what was asked for.
pub fn is_challenge(fetched: &Result<Fetched, FetchError>) -> bool {
    match fetched {
        Ok(Fetched::Challenge { .. }) => true,
        Ok(Fetched::Body { status, body, .. }) => weft_frontier::health::is_challenge(*status, body),
        _ => false,
    }
}

/// How a response counts toward judging whether its host refuses the crawler.
pub fn answer(fetched: &Result<Fetched, FetchError>) -> Answer {
    match fetched {
        _ if is_challenge(fetched) => {
            let status = match fetched {
                Ok(Fetched::Challenge { status } | Fetched::Body { status, .. }) => *status,
                _ => 0,
            };
            Answer::Challenge { status }
        }
        Ok(Fetched::Body { .. } | Fetched::NotModified | Fetched::Redirect { .. }) => Answer::Served,
        Ok(Fetched::Status { status }) => Answer::of(*status, b""),
        _ => Answer::Other,
    }
}

/// The outcome of fetching a URL of `kind`.
pub fn of_fetch(kind: UrlKind, fetched: &Result<Fetched, FetchError>) -> Outcome {
    if is_challenge(fetched) {
        // Not the page: tried again later (and, if the host keeps doing it, it is blocked).
        let status = match fetched {
            Ok(Fetched::Challenge { status } | Fetched::Body { status, .. }) => *status,
            _ => 0,
        };
        return Outcome {
            completion: Completion::Retry,
            error: Some(("challenge", format!("HTTP {status} bot-check page"))),
            ..Outcome::done(Action::Nothing)
        };
    }
    match fetched {
        Ok(Fetched::Body { .. }) if kind == UrlKind::Sitemap => Outcome::done(Action::ParseSitemap),
        // A revisit does not count against the host's page budget: the page was counted once.
        Ok(Fetched::Body { .. }) if kind == UrlKind::Revisit => Outcome::done(Action::ProcessPage),
        Ok(Fetched::Body { .. }) => {
            Outcome { completion: Completion::Done { page: true }, ..Outcome::done(Action::ProcessPage) }
        }
        Ok(Fetched::NotModified) => Outcome::done(Action::Nothing),
        Ok(Fetched::Challenge { .. }) => Outcome::done(Action::Nothing),
        Ok(Fetched::Redirect { location, .. }) => Outcome::done(Action::Follow(location.clone())),
        Ok(Fetched::RateLimited { retry_after, .. }) => Outcome {
            completion: Completion::RateLimited { retry_after: *retry_after },
            ..Outcome::done(Action::Nothing)
        },
        Ok(Fetched::Status { status }) => {
            let status = *status;
            // A missing speculative /sitemap.xml is normal, not an error.
            let quiet = kind == UrlKind::Sitemap && (status == 404 || status == 410);
            let error =
                (!quiet).then(|| (if status >= 500 { "http_5xx" } else { "http_4xx" }, format!("HTTP {status}")));
            let completion = if status >= 500 { Completion::Retry } else { Completion::Done { page: false } };
            Outcome { completion, error, ..Outcome::done(Action::Nothing) }
        }
        Err(e) => Outcome {
            completion: if e.is_transient() { Completion::Retry } else { Completion::Done { page: false } },
            // A host the SSRF guard refuses was never contacted.
            requested: !matches!(e, FetchError::Blocked(_)),
            action: Action::Nothing,
            error: Some((e.kind(), e.to_string())),
        },
    }
}

/// What to tell an operator about the URL fetched: `url` answered `fetched`, and the lease
/// ends with `completion`.
pub fn fate(url: &Url, fetched: &Result<Fetched, FetchError>, completion: &Completion) -> Fate {
    let retrying = *completion == Completion::Retry;
    match fetched {
        _ if is_challenge(fetched) => {
            Fate::Failed { error: "challenge".into(), detail: "a bot-check page instead of the page".into(), retrying }
        }
        Ok(Fetched::Body { status, .. }) => Fate::Fetched { status: *status },
        Ok(Fetched::NotModified) => Fate::Fetched { status: 304 },
        Ok(Fetched::Challenge { status }) => Fate::Status { status: *status, retrying },
        Ok(Fetched::Redirect { status, location }) => Fate::Redirected {
            status: *status,
            to: url.join(location).map_or_else(|_| location.clone(), |u| u.to_string()),
        },
        Ok(Fetched::RateLimited { status, .. }) => Fate::RateLimited { status: *status },
        Ok(Fetched::Status { status }) => Fate::Status { status: *status, retrying },
        Err(e) => Fate::Failed { error: e.kind().to_string(), detail: e.to_string(), retrying },
    }
}

/// Why a redirect is not followed.
#[derive(Debug, thiserror::Error)]
pub enum RedirectError {
    #[error(transparent)]
    Location(#[from] NormalizeError),
    #[error("redirect loop back to {0}")]
    Loop(Url),
    #[error("more than {0} redirects")]
    TooMany(u32),
}

impl RedirectError {
    /// The counter it goes to.
    pub fn kind(&self) -> &'static str {
        match self {
            RedirectError::Location(e) => e.kind(),
            RedirectError::Loop(_) => "redirect_loop",
            RedirectError::TooMany(_) => "too_many_redirects",
        }
    }
}

/// Where a redirect from `from` to `location` leads: a candidate of the same kind and depth
/// carrying the chain so far (`chain`, then `from`), unless it loops or the chain is longer
/// than `max`.
pub fn redirect(
    kind: UrlKind,
    depth: u32,
    chain: &[String],
    from: &Url,
    location: &str,
    max: u32,
) -> Result<Candidate, RedirectError> {
    let target = normalize(location, Some(from))?;
    let mut redirects = chain.to_vec();
    redirects.push(from.to_string());
    if redirects.iter().any(|u| u == target.as_str()) {
        return Err(RedirectError::Loop(target));
    }
    if redirects.len() > max as usize {
        return Err(RedirectError::TooMany(max));
    }
    Ok(Candidate { redirects, ..Candidate::of(target, kind, depth) })
}

/// The kind of a linked URL: a linked sitemap is fetched as one (parsed for its URLs, not
/// extracted).
pub fn link_kind(url: &Url) -> UrlKind {
    let path = url.path().to_ascii_lowercase();
    if path.contains("sitemap") && (path.ends_with(".xml") || path.ends_with(".xml.gz")) {
        UrlKind::Sitemap
    } else {
        UrlKind::Page
    }
}

/// The candidates of a page at `depth`: its followable links one hop further, and the
/// extractor's predicted next page of a listing (`next_page`, which a script-driven "load
/// more" button may be the only link to). `may_follow` is the crawl's host filter. A hub's
/// links carry `from_hub`: the frontier fetches them sooner.
pub fn page_candidates(
    links: Vec<Link>,
    next_page: Option<Url>,
    depth: u32,
    from_hub: bool,
    may_follow: impl Fn(&Url) -> bool,
) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = links
        .into_iter()
        // Links arrive normalized by the extractor (with the frontier's normalizer).
        .filter(|l| !l.nofollow && may_follow(&l.url))
        .map(|l| Candidate { from_hub, ..Candidate::of(l.url.clone(), link_kind(&l.url), depth + 1) })
        .collect();
    if let Some(next) = next_page {
        if may_follow(&next) && !candidates.iter().any(|c| c.url == next) {
            candidates.push(Candidate::page(next, depth + 1));
        }
    }
    candidates
}

/// A page's links reach at most this many hosts other than its own. A real page links a few
/// dozen; a page of 100,000 links to distinct (dead) hosts once made 100,017 hosts, 1.9 GB and
/// minutes of robots.txt probes.
pub const MAX_HOSTS_PER_PAGE: usize = 100;

/// Keeps the candidates on `page_host` and on the first [`MAX_HOSTS_PER_PAGE`] other hosts the
/// page links; returns them and how many links were dropped.
pub fn cap_hosts(candidates: Vec<Candidate>, page_host: &HostKey) -> (Vec<Candidate>, usize) {
    let mut hosts: std::collections::HashSet<HostKey> = std::collections::HashSet::new();
    let before = candidates.len();
    let kept: Vec<Candidate> = candidates
        .into_iter()
        .filter(|c| {
            let host = HostKey::of(&c.url);
            host == *page_host || hosts.contains(&host) || (hosts.len() < MAX_HOSTS_PER_PAGE && hosts.insert(host))
        })
        .collect();
    let dropped = before - kept.len();
    (kept, dropped)
}

/// Keeps the candidates the links of a page on `source` may bring in (see
/// [`weft_frontier::fanout`]); returns them and how many were dropped.
pub fn cap_source(
    candidates: Vec<Candidate>,
    source: &HostKey,
    fanout: &mut weft_frontier::fanout::Fanout,
    now: std::time::Instant,
) -> (Vec<Candidate>, usize) {
    let before = candidates.len();
    let kept: Vec<Candidate> =
        candidates.into_iter().filter(|c| fanout.admit(source, &HostKey::of(&c.url), now)).collect();
    let dropped = before - kept.len();
    (kept, dropped)
}

/// The candidates a parsed sitemap at `depth` lists: an index lists more sitemaps (same
/// depth), a urlset lists pages (one hop further).
pub fn sitemap_candidates(
    parsed: Result<Sitemap, SitemapError>,
    depth: u32,
    may_follow: impl Fn(&Url) -> bool,
) -> Result<Vec<Candidate>, SitemapError> {
    let (urls, kind, depth) = match parsed? {
        Sitemap::Index(urls) => (urls, UrlKind::Sitemap, depth),
        Sitemap::Pages(urls) => (urls, UrlKind::Page, depth + 1),
    };
    Ok(urls
        .into_iter()
        .filter_map(|u| normalize_url(u).ok())
        .filter(|u| may_follow(u))
        .map(|u| Candidate::of(u, kind, depth))
        .collect())
}

/// The sitemaps to fetch once robots.txt is known for the host of `page` (at `depth`): those
/// robots.txt declares and the conventional `/sitemap.xml`.
pub fn robots_sitemaps(
    declared: &[String],
    page: &Url,
    depth: u32,
    may_follow: impl Fn(&Url) -> bool,
) -> Vec<Candidate> {
    declared
        .iter()
        .map(String::as_str)
        .chain(["/sitemap.xml"])
        .filter_map(|s| normalize(s, Some(page)).ok())
        .filter(|u| may_follow(u))
        .map(|u| Candidate::of(u, UrlKind::Sitemap, depth))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn body() -> Fetched {
        page_body("x")
    }

    fn page_body(html: &str) -> Fetched {
        Fetched::Body {
            status: 200,
            content_type: Some("text/html".into()),
            content_language: None,
            body: html.to_string().into(),
            validators: Default::default(),
            head: Default::default(),
        }
    }

    #[test]
    fn a_revisit_is_processed_without_counting_again_and_a_304_ends_it() {
        let o = of_fetch(UrlKind::Revisit, &Ok(body()));
        assert_eq!((o.completion, o.action), (Completion::Done { page: false }, Action::ProcessPage));
        let o = of_fetch(UrlKind::Revisit, &Ok(Fetched::NotModified));
        assert_eq!((o.completion, o.action, o.error), (Completion::Done { page: false }, Action::Nothing, None));
        let u = url("http://a.test/");
        assert_eq!(fate(&u, &Ok(Fetched::NotModified), &o.completion), Fate::Fetched { status: 304 });
    }

    #[test]
    fn a_bot_check_page_is_not_the_page_and_is_tried_again() {
        for fetched in [
            Ok(Fetched::Challenge { status: 403 }),
            Ok(page_body("<html><head><title>Just a moment...</title></head><body><div id=\"cf-chl-widget\"></div>")),
        ] {
            assert!(is_challenge(&fetched));
            let o = of_fetch(UrlKind::Page, &fetched);
            assert_eq!((o.completion, o.action), (Completion::Retry, Action::Nothing));
            assert_eq!(o.error.as_ref().map(|e| e.0), Some("challenge"));
            let f = fate(&url("http://a.test/x"), &fetched, &o.completion);
            assert!(matches!(f, Fate::Failed { ref error, retrying: true, .. } if error == "challenge"), "{f:?}");
        }
        assert!(!is_challenge(&Ok(page_body("<title>Council news</title><p>The bridge reopened.</p>"))));
    }

    #[test]
    fn a_page_body_is_processed_and_counts_as_a_page() {
        let o = of_fetch(UrlKind::Page, &Ok(body()));
        assert_eq!(o.completion, Completion::Done { page: true });
        assert_eq!((o.requested, o.action, o.error), (true, Action::ProcessPage, None));
    }

    #[test]
    fn a_sitemap_body_is_parsed_and_is_not_a_page() {
        let o = of_fetch(UrlKind::Sitemap, &Ok(body()));
        assert_eq!(o.completion, Completion::Done { page: false });
        assert_eq!(o.action, Action::ParseSitemap);
    }

    #[test]
    fn a_redirect_is_followed() {
        let o = of_fetch(UrlKind::Page, &Ok(Fetched::Redirect { status: 301, location: "/new".into() }));
        assert_eq!(o.completion, Completion::Done { page: false });
        assert_eq!(o.action, Action::Follow("/new".into()));
    }

    #[test]
    fn rate_limiting_carries_retry_after() {
        let wait = Some(Duration::from_secs(7));
        let o = of_fetch(UrlKind::Page, &Ok(Fetched::RateLimited { status: 429, retry_after: wait }));
        assert_eq!(o.completion, Completion::RateLimited { retry_after: wait });
        assert!(o.requested && o.error.is_none());
    }

    #[test]
    fn server_errors_are_retried_client_errors_are_final() {
        let o = of_fetch(UrlKind::Page, &Ok(Fetched::Status { status: 502 }));
        assert_eq!((o.completion, o.error.unwrap().0), (Completion::Retry, "http_5xx"));
        let o = of_fetch(UrlKind::Page, &Ok(Fetched::Status { status: 404 }));
        assert_eq!((o.completion, o.error.unwrap().0), (Completion::Done { page: false }, "http_4xx"));
    }

    #[test]
    fn a_missing_sitemap_is_not_an_error_but_a_broken_one_is() {
        for status in [404, 410] {
            assert_eq!(of_fetch(UrlKind::Sitemap, &Ok(Fetched::Status { status })).error, None);
        }
        assert!(of_fetch(UrlKind::Sitemap, &Ok(Fetched::Status { status: 403 })).error.is_some());
        assert!(of_fetch(UrlKind::Page, &Ok(Fetched::Status { status: 404 })).error.is_some());
    }

    #[test]
    fn transient_errors_are_retried_others_are_final() {
        let o = of_fetch(UrlKind::Page, &Err(FetchError::Timeout));
        assert_eq!((o.completion, o.requested), (Completion::Retry, true));
        assert_eq!(o.error.unwrap().0, "timeout");
        let o = of_fetch(UrlKind::Page, &Err(FetchError::NotHtml("image/png".into())));
        assert_eq!(o.completion, Completion::Done { page: false });
        assert_eq!(o.error.unwrap().0, "not_html");
    }

    #[test]
    fn a_host_the_guard_refuses_was_not_contacted() {
        let blocked = weft_fetch::guard::check_literal(
            &url("http://127.0.0.1/"),
            weft_fetch::guard::Reach { private: false, public: true },
        )
        .unwrap_err();
        let o = of_fetch(UrlKind::Page, &Err(FetchError::Blocked(blocked)));
        assert_eq!((o.completion, o.requested), (Completion::Done { page: false }, false));
        assert_eq!(o.error.unwrap().0, "ssrf_blocked");
    }

    #[test]
    fn a_redirect_keeps_kind_and_depth_and_records_the_chain() {
        let c = redirect(UrlKind::Sitemap, 3, &["http://a.test/0".into()], &url("http://a.test/1"), "/2?b=1&a=2", 5)
            .unwrap();
        assert_eq!(c.url.as_str(), "http://a.test/2?a=2&b=1", "normalized like every URL");
        assert_eq!((c.kind, c.depth), (UrlKind::Sitemap, 3));
        assert_eq!(c.redirects, vec!["http://a.test/0".to_string(), "http://a.test/1".to_string()]);
    }

    #[test]
    fn redirect_loops_and_long_chains_stop() {
        let from = url("http://a.test/b");
        let e = redirect(UrlKind::Page, 0, &["http://a.test/a".into()], &from, "/a", 5).unwrap_err();
        assert_eq!(e.kind(), "redirect_loop");
        let e = redirect(UrlKind::Page, 0, &[], &from, "/b", 5).unwrap_err();
        assert_eq!(e.kind(), "redirect_loop", "a page redirecting to itself");
        let chain: Vec<String> = (0..5).map(|i| format!("http://a.test/{i}")).collect();
        assert_eq!(redirect(UrlKind::Page, 0, &chain, &from, "/c", 5).unwrap_err().kind(), "too_many_redirects");
        assert!(redirect(UrlKind::Page, 0, &chain[..4], &from, "/c", 5).is_ok());
        assert!(redirect(UrlKind::Page, 0, &[], &from, "javascript:alert(1)", 5).is_err());
    }

    #[test]
    fn linked_sitemaps_are_fetched_as_sitemaps() {
        assert_eq!(link_kind(&url("http://a.test/sitemap-news.xml")), UrlKind::Sitemap);
        assert_eq!(link_kind(&url("http://a.test/SiteMap/1.XML.gz")), UrlKind::Sitemap);
        assert_eq!(link_kind(&url("http://a.test/sitemap.html")), UrlKind::Page);
        assert_eq!(link_kind(&url("http://a.test/feed.xml")), UrlKind::Page);
    }

    #[test]
    fn page_candidates_skip_nofollow_and_foreign_hosts_and_add_the_next_page_once() {
        let link =
            |u: &str, nofollow| Link { url: url(u), text: String::new(), rel: Vec::new(), nofollow, in_content: true };
        let links = vec![
            link("http://a.test/1", false),
            link("http://a.test/secret", true),
            link("http://b.test/x", false),
            link("http://a.test/sitemap.xml", false),
            link("http://a.test/page/2", false),
        ];
        let ours = |u: &Url| u.host_str() == Some("a.test");
        let c = page_candidates(links, Some(url("http://a.test/page/2")), 4, false, ours);
        let got: Vec<(&str, UrlKind, u32)> = c.iter().map(|c| (c.url.as_str(), c.kind, c.depth)).collect();
        assert_eq!(
            got,
            vec![
                ("http://a.test/1", UrlKind::Page, 5),
                ("http://a.test/sitemap.xml", UrlKind::Sitemap, 5),
                ("http://a.test/page/2", UrlKind::Page, 5),
            ]
        );
        let c = page_candidates(Vec::new(), Some(url("http://a.test/page/3")), 0, false, ours);
        assert_eq!(c.len(), 1, "the predicted next page is queued even when nothing links it");
        assert!(page_candidates(Vec::new(), Some(url("http://b.test/page/3")), 0, false, ours).is_empty());
    }

    #[test]
    fn a_page_reaches_at_most_a_hundred_other_hosts_and_all_of_its_own() {
        let mut links: Vec<Candidate> =
            (0..100_000).map(|i| Candidate::page(url(&format!("http://dead{i}.test/")), 1)).collect();
        links.extend((0..500).map(|i| Candidate::page(url(&format!("http://a.test/p{i}")), 1)));
        links.push(Candidate::page(url("http://dead7.test/again"), 1));
        let (kept, dropped) = cap_hosts(links, &HostKey::of(&url("http://a.test/")));
        let hosts: std::collections::HashSet<String> = kept.iter().map(|c| HostKey::of(&c.url).into_string()).collect();
        assert_eq!(hosts.len(), MAX_HOSTS_PER_PAGE + 1);
        assert_eq!(kept.len(), MAX_HOSTS_PER_PAGE + 500 + 1, "its own pages, and a second link to a kept host");
        assert_eq!(dropped, 100_000 - MAX_HOSTS_PER_PAGE);
    }

    #[test]
    fn a_sitemap_index_stays_at_its_depth_and_a_urlset_goes_one_further() {
        let all = |_: &Url| true;
        let index = sitemap_candidates(Ok(Sitemap::Index(vec![url("http://a.test/s2.xml")])), 2, all).unwrap();
        assert_eq!((index[0].kind, index[0].depth), (UrlKind::Sitemap, 2));
        let pages = Sitemap::Pages(vec![url("http://a.test/p#frag"), url("http://b.test/q")]);
        let pages = sitemap_candidates(Ok(pages), 2, |u| u.host_str() == Some("a.test")).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!((pages[0].url.as_str(), pages[0].kind, pages[0].depth), ("http://a.test/p", UrlKind::Page, 3));
    }

    #[test]
    fn robots_sitemaps_add_the_conventional_one() {
        let page = url("http://a.test/x/y");
        let c = robots_sitemaps(&["http://a.test/maps/main.xml".into()], &page, 1, |_| true);
        let got: Vec<&str> = c.iter().map(|c| c.url.as_str()).collect();
        assert_eq!(got, vec!["http://a.test/maps/main.xml", "http://a.test/sitemap.xml"]);
        assert!(c.iter().all(|c| c.kind == UrlKind::Sitemap && c.depth == 1));
        let c = robots_sitemaps(&["http://elsewhere.test/s.xml".into()], &page, 0, |u| u.host_str() == Some("a.test"));
        assert_eq!(c.len(), 1, "a sitemap on another host follows the host filter");
    }
}
