//! The search page's HTML, rendered on the server: it works with JavaScript off and in any
//! browser, and it is small. Everything a page or a peer supplied — titles, snippets, URLs,
//! hosts, peer ids, a document's text — goes through [`escape`]: a result is text, never
//! markup. Links to results are `http(s)` only ([`super::answer`] drops the rest).

use super::answer::{last_page, FindAnswer, FindResult};
use crate::api::DocumentAnswer;
use std::fmt::Write as _;

/// Characters of a snippet shown; a stored document's text shown, in bytes.
const SNIPPET_CHARS: usize = 320;
const DOCUMENT_BYTES: usize = 256 << 10;

/// `s` safe as HTML text and inside a double- or single-quoted attribute.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `s` as a URL query value.
fn query_value(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The query's words, lowercased, for marking: runs of letters and digits, less the words that
/// say how a question is asked (the lexical index's stop words: "what", "and", "does").
fn words(query: &str) -> Vec<String> {
    let mut out: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| !weft_index::lexical::STOP_WORDS.contains(&w.as_str()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Whether `word` (lowercased) is one of the query's, or starts with one of four letters or
/// more (`feline` marks `felines`).
fn matches(word: &str, query: &[String]) -> bool {
    query.iter().any(|q| word == q || (q.chars().count() >= 4 && word.starts_with(q.as_str())))
}

/// `text` cut to `max` characters at a word, with an ellipsis when cut.
fn shorten(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(max) {
        None => text,
        Some((end, _)) => {
            let cut = &text[..end];
            let at = cut.rfind(' ').filter(|i| *i > end / 2).unwrap_or(end);
            format!("{}…", &cut[..at])
        }
    }
}

/// `text` escaped, with the query's words in `<mark>`.
pub fn marked(text: &str, query: &str) -> String {
    let query = words(query);
    let mut out = String::with_capacity(text.len() + 64);
    let mut word_start: Option<usize> = None;
    let flush = |out: &mut String, word: &str| {
        if matches(&word.to_lowercase(), &query) {
            let _ = write!(out, "<mark>{}</mark>", escape(word));
        } else {
            out.push_str(&escape(word));
        }
    };
    for (i, ch) in text.char_indices() {
        if ch.is_alphanumeric() {
            word_start.get_or_insert(i);
            continue;
        }
        if let Some(start) = word_start.take() {
            flush(&mut out, &text[start..i]);
        }
        out.push_str(&escape(ch.encode_utf8(&mut [0; 4])));
    }
    if let Some(start) = word_start {
        flush(&mut out, &text[start..]);
    }
    out
}

/// A peer id as a person reads it: "this node", or its last eight characters (the whole id in
/// the tooltip).
fn node_name(peer: &str, me: Option<&str>) -> String {
    if Some(peer) == me {
        return "this node".to_string();
    }
    let tail: String = peer.chars().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    format!("<span title=\"{}\">node …{}</span>", escape(peer), escape(&tail))
}

const STYLE: &str = "\
:root{color-scheme:light dark;--muted:#666;--link:#1a4fb0;--mark:#fde68a}\
@media (prefers-color-scheme:dark){:root{--muted:#aaa;--link:#8ab4f8;--mark:#705d00}}\
body{font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0 auto;max-width:46rem;padding:0 1rem 3rem}\
header{padding:1rem 0}header a{text-decoration:none;color:inherit;font-weight:600;font-size:1.25rem;margin-right:.75rem}\
form{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center}\
input[type=search]{flex:1 1 8rem;font-size:1.05rem;padding:.55rem .7rem;border:1px solid #999;border-radius:.5rem;min-width:0}\
button{font-size:1rem;padding:.55rem 1rem;border-radius:.5rem;border:1px solid #999;cursor:pointer}\
.note{color:var(--muted);font-size:.9rem;margin:.75rem 0}.note.partial{color:#a15c00}\
ol.results{list-style:none;padding:0;margin:0}ol.results li{margin:1.25rem 0}\
.results h2{font-size:1.1rem;margin:0;font-weight:500;overflow-wrap:anywhere}.results h2 a{color:var(--link)}\
.meta{color:var(--muted);font-size:.85rem;overflow-wrap:anywhere}.meta a{color:inherit}\
.snippet{margin:.25rem 0 0;overflow-wrap:anywhere}mark{background:var(--mark);color:inherit;padding:0 .1em}\
nav.pages{margin:2rem 0;display:flex;gap:1rem}\
article p{overflow-wrap:anywhere}";

/// The page's head and header, with the query in the box.
fn open(out: &mut String, title: &str, query: &str) {
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta name=\"referrer\" content=\"no-referrer\">\
         <title>{}</title>\
         <link rel=\"search\" type=\"application/opensearchdescription+xml\" title=\"Weft\" href=\"/opensearch.xml\">\
         <style>{STYLE}</style></head><body>\
         <header><form action=\"/find\" method=\"get\" role=\"search\"><a href=\"/find\">Weft</a>\
         <input type=\"search\" name=\"q\" id=\"q\" value=\"{}\" placeholder=\"Ask in your own words\" \
         aria-label=\"Search\" autofocus maxlength=\"4096\"><button type=\"submit\">Search</button></form></header><main>",
        escape(title),
        escape(query)
    );
}

fn close(out: &mut String) {
    out.push_str("</main></body></html>");
}

/// One result.
fn result(out: &mut String, r: &FindResult, query: &str, me: Option<&str>) {
    let _ = write!(
        out,
        "<li><h2><a href=\"{}\" rel=\"noreferrer\">{}</a></h2><div class=\"meta\"><span class=\"host\">{}</span>",
        escape(&r.url),
        escape(&shorten(&r.title, 200)),
        escape(&r.host)
    );
    if let Some(date) = &r.published_date {
        let _ = write!(out, " · <time datetime=\"{0}\">{0}</time>", escape(date));
    }
    if let Some(by) = &r.answered_by {
        let _ = write!(out, " · answered by {}", node_name(by, me));
    }
    if let Some(by) = r.crawled_by.as_deref().filter(|b| Some(*b) != r.answered_by.as_deref()) {
        let _ = write!(out, " · crawled by {}", node_name(by, me));
    }
    let peer = r.answered_by.as_deref().map(|p| format!("&amp;peer={}", query_value(p))).unwrap_or_default();
    let _ = write!(
        out,
        " · <a href=\"/find/doc/{}?q={}{peer}\">stored copy</a></div><p class=\"snippet\">{}</p></li>",
        escape(&r.id),
        query_value(query),
        marked(&shorten(&r.content, SNIPPET_CHARS), query)
    );
}

/// `/find`: the box alone without a query, else one page of results, with a line when the
/// answer is partial or empty and links to the pages around it.
pub fn results_page(query: &str, answer: Option<&FindAnswer>, me: Option<&str>) -> String {
    let mut out = String::with_capacity(16 << 10);
    let Some(answer) = answer else {
        open(&mut out, "Weft", "");
        out.push_str(
            "<p class=\"note\">Searches the pages this node and the Weft network crawled, by meaning: \
             ask a question in your own words.</p>",
        );
        close(&mut out);
        return out;
    };
    open(&mut out, &format!("{query} — Weft"), query);
    if answer.partial {
        let _ = write!(
            out,
            "<p class=\"note partial\" id=\"partial\">{} of the nodes asked did not answer in time: \
             some results may be missing.</p>",
            answer.unanswered.len().max(1)
        );
    }
    if answer.results.is_empty() {
        let line = if answer.page > 1 { "No more results for" } else { "Nothing matched" };
        let _ = write!(out, "<p class=\"note\" id=\"nothing\">{line} “{}”.</p>", escape(query));
    } else {
        let first = (answer.page - 1) * answer.per_page + 1;
        let _ = write!(
            out,
            "<p class=\"note\">Results {}–{} in {:.0} ms</p><ol class=\"results\" id=\"results\" start=\"{first}\">",
            first,
            first + answer.results.len() - 1,
            answer.took_ms
        );
        for r in &answer.results {
            result(&mut out, r, query, me);
        }
        out.push_str("</ol>");
    }
    let page_link = |page: usize, label: &str, rel: &str| {
        format!("<a href=\"/find?q={}&amp;page={page}\" rel=\"{rel}\">{label}</a>", query_value(query))
    };
    let previous = (answer.page > 1).then(|| page_link(answer.page - 1, "← previous", "prev"));
    let next = (answer.more && answer.page < last_page(answer.per_page))
        .then(|| page_link(answer.page + 1, "more results →", "next"));
    if previous.is_some() || next.is_some() {
        let _ = write!(out, "<nav class=\"pages\">{}{}</nav>", previous.unwrap_or_default(), next.unwrap_or_default());
    }
    close(&mut out);
    out
}

/// `/find/doc/{id}`: the network's stored copy of a page's text, for a page that is gone or
/// slow.
pub fn document_page(answer: &DocumentAnswer, query: &str, me: Option<&str>) -> String {
    let doc = &answer.document;
    let page = &doc.meta.page;
    let mut out = String::with_capacity(doc.text.len().min(DOCUMENT_BYTES) + 4096);
    let title = if page.title.trim().is_empty() { page.url.as_str() } else { page.title.trim() };
    open(&mut out, &format!("{title} — stored copy — Weft"), query);
    let _ = write!(out, "<article><h1>{}</h1><p class=\"meta\">", escape(title));
    let linkable = url::Url::parse(&page.url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
    if linkable {
        let _ = write!(out, "<a href=\"{0}\" rel=\"noreferrer\">{0}</a>", escape(&page.url));
    } else {
        out.push_str(&escape(&page.url));
    }
    let source = &answer.source;
    let held = match (source.held.as_str(), source.peer.as_deref()) {
        ("peer", Some(peer)) => format!("read from {}", node_name(peer, me)),
        ("copy", _) => "a copy this node keeps for the network".to_string(),
        _ => "this node's index".to_string(),
    };
    let _ = write!(out, "<br>The stored text as fetched {} · {held}", escape(&doc.meta.fetched_at));
    if let Some(by) = &source.crawled_by {
        let _ = write!(out, " · crawled by {}", node_name(by, me));
    }
    out.push_str("</p>");
    let mut shown = 0;
    for paragraph in doc.text.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        if shown + paragraph.len() > DOCUMENT_BYTES {
            out.push_str("<p class=\"note\">(the rest is not shown)</p>");
            break;
        }
        shown += paragraph.len();
        let _ = write!(out, "<p>{}</p>", marked(paragraph, query));
    }
    out.push_str("</article>");
    close(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result_with(title: &str, content: &str, url: &str) -> FindResult {
        FindResult {
            title: title.into(),
            url: url.into(),
            content: content.into(),
            published_date: Some("2024-05-01".into()),
            host: "a.test".into(),
            id: "00ff".into(),
            answered_by: Some("12D3KooWAbc\"<x>".into()),
            crawled_by: None,
        }
    }

    fn answer(results: Vec<FindResult>) -> FindAnswer {
        FindAnswer {
            query: "q".into(),
            page: 1,
            per_page: 10,
            more: true,
            partial: true,
            unanswered: vec!["p".into()],
            took_ms: 12.0,
            results,
        }
    }

    #[test]
    fn everything_a_page_or_a_peer_supplied_is_text_not_markup() {
        let r = result_with(
            "<script>alert('t')</script> Cats",
            "<img src=x onerror=alert(1)> cats & dogs",
            "https://a.test/?a=1&b=\"2\"",
        );
        let html = results_page("cats <b>", Some(&answer(vec![r])), None);
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(&#39;t&#39;)&lt;/script&gt; Cats"));
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(1)&gt; <mark>cats</mark> &amp; dogs"), "{html}");
        assert!(html.contains("href=\"https://a.test/?a=1&amp;b=&quot;2&quot;\""), "{html}");
        assert!(html.contains("value=\"cats &lt;b&gt;\""), "{html}");
        assert!(!html.contains("<x>") && html.contains("12D3KooWAbc&quot;&lt;x&gt;"), "{html}");
        // The page's own markup holds no script at all.
        assert!(!html.contains("<script"), "{html}");
    }

    #[test]
    fn the_query_s_words_are_marked_wherever_they_are_in_any_case() {
        assert_eq!(marked("Felines purr; a FELINE", "feline"), "<mark>Felines</mark> purr; a <mark>FELINE</mark>");
        assert_eq!(marked("cat catalogue", "cat"), "<mark>cat</mark> catalogue");
        assert_eq!(marked("naïve café", "café"), "naïve <mark>café</mark>");
        assert_eq!(marked("", "x"), "");
        assert_eq!(marked("lava and ash", "what makes lava and ash"), "<mark>lava</mark> and <mark>ash</mark>");
    }

    #[test]
    fn a_partial_answer_says_so_and_paging_links_keep_the_query() {
        let html = results_page("a&b", Some(&answer(vec![result_with("t", "c", "https://a.test/")])), None);
        assert!(html.contains("id=\"partial\""), "{html}");
        assert!(html.contains("/find?q=a%26b&amp;page=2"), "{html}");
        assert!(html.contains("<time datetime=\"2024-05-01\">"), "{html}");
        let mut empty = answer(Vec::new());
        empty.partial = false;
        empty.more = false;
        let html = results_page("zzz", Some(&empty), None);
        assert!(html.contains("Nothing matched “zzz”") && !html.contains("id=\"partial\""), "{html}");
        assert!(!html.contains("page=2"), "{html}");
    }

    #[test]
    fn long_text_is_cut_at_a_word() {
        let long = "word ".repeat(200);
        let cut = shorten(&long, 50);
        assert!(cut.ends_with("word…") && cut.chars().count() <= 51, "{cut}");
        assert_eq!(shorten("short  text", 50), "short text");
    }
}
