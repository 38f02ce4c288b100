//! Page metadata, by precedence: JSON-LD > OpenGraph > Twitter cards > other meta tags >
//! heuristics (`<title>`, byline markup, `<time>`, a date in the URL).
//!
//! JSON-LD is preferred because it is typed and meant for machines; OpenGraph is next because
//! every share button depends on it being right. Each field takes the first source that has it.
//! Dates come out as RFC 3339; a date without a time is midnight UTC.

use crate::dom::MetaFacts;
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;
use url::Url;

#[derive(Debug, Default, Clone, PartialEq, serde::Serialize)]
pub struct Metadata {
    pub title: Option<String>,
    pub byline: Option<String>,
    pub published: Option<String>,
    pub modified: Option<String>,
    pub language: Option<String>,
    pub canonical: Option<String>,
    pub site_name: Option<String>,
    pub description: Option<String>,
    /// schema.org type of the page's main entity (`NewsArticle`, `Product`, ...) or the
    /// OpenGraph type, capitalised (`Article`, `Website`, ...).
    pub content_type: Option<String>,
    /// The JSON-LD `articleBody` (a `Product`'s `description`), when the page publishes one:
    /// the text when the visible page lacks it (not part of the metadata output).
    #[serde(skip)]
    pub article_body: Option<String>,
}

/// What JSON-LD said about the page's main entity.
#[derive(Debug, Default)]
struct JsonLd {
    kind: Option<String>,
    headline: Option<String>,
    author: Option<String>,
    published: Option<String>,
    modified: Option<String>,
    description: Option<String>,
    publisher: Option<String>,
    language: Option<String>,
    url: Option<String>,
    body: Option<String>,
}

/// schema.org types that mean "this page is an article".
pub(crate) fn is_article_type(t: &str) -> bool {
    t.ends_with("Article")
        || matches!(t, "BlogPosting" | "Report" | "LiveBlogPosting" | "SocialMediaPosting" | "Review")
}

/// Main-entity types worth reporting, in order of preference when a graph holds several.
fn type_rank(t: &str) -> u8 {
    if is_article_type(t) {
        0
    } else if matches!(t, "Product" | "Recipe" | "Event" | "JobPosting" | "Course" | "Book" | "Movie" | "VideoObject") {
        1
    } else if matches!(
        t,
        "WebPage" | "ItemPage" | "CollectionPage" | "AboutPage" | "ProfilePage" | "QAPage" | "FAQPage"
    ) {
        2
    } else {
        3
    }
}

fn types(v: &Value) -> Vec<&str> {
    match v.get("@type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    }
}

fn str_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Value::Array(a) => a.iter().find_map(|x| str_of(Some(x))),
        Value::Object(o) => str_of(o.get("name")).or_else(|| str_of(o.get("@value"))),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn names(v: Option<&Value>) -> Option<String> {
    let v = v?;
    let list: Vec<String> = match v {
        Value::Array(a) => a.iter().filter_map(|x| str_of(Some(x))).collect(),
        other => str_of(Some(other)).into_iter().collect(),
    };
    let list: Vec<String> = list.into_iter().filter(|n| !n.starts_with("http")).collect();
    (!list.is_empty()).then(|| list.join(", "))
}

/// Flattens top-level arrays and `@graph` into candidate entities.
fn entities(v: &Value, out: &mut Vec<Value>, depth: u8) {
    if depth > 4 {
        return;
    }
    match v {
        Value::Array(a) => a.iter().for_each(|x| entities(x, out, depth + 1)),
        Value::Object(o) => {
            if let Some(g) = o.get("@graph") {
                entities(g, out, depth + 1);
            }
            if o.contains_key("@type") {
                out.push(v.clone());
            }
            if let Some(m) = o.get("mainEntity").filter(|m| m.is_object()) {
                entities(m, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn json_ld(scripts: &[String]) -> JsonLd {
    let mut all = Vec::new();
    for s in scripts {
        // Sites embed raw control characters and trailing commas; serde_json rejects the former
        // inside strings, so clean them first. Unparseable blocks are skipped.
        let cleaned: String = s.chars().map(|c| if c.is_control() && c != '\n' { ' ' } else { c }).collect();
        if let Ok(v) = serde_json::from_str::<Value>(cleaned.trim().trim_end_matches(';')) {
            entities(&v, &mut all, 0);
        }
    }
    let Some(main) = all.iter().min_by_key(|e| types(e).iter().map(|t| type_rank(t)).min().unwrap_or(9)) else {
        return JsonLd::default();
    };
    let kind = types(main).iter().min_by_key(|t| type_rank(t)).map(|t| t.to_string());
    let publisher = str_of(main.get("publisher")).or_else(|| {
        all.iter()
            .find(|e| types(e).contains(&"Organization") || types(e).contains(&"NewsMediaOrganization"))
            .and_then(|o| str_of(o.get("name")))
    });
    let site_name = all.iter().find(|e| types(e).contains(&"WebSite")).and_then(|w| str_of(w.get("name")));
    JsonLd {
        kind,
        headline: str_of(main.get("headline")).or_else(|| str_of(main.get("name"))),
        author: names(main.get("author")).or_else(|| names(main.get("creator"))),
        published: str_of(main.get("datePublished")).or_else(|| str_of(main.get("dateCreated"))),
        modified: str_of(main.get("dateModified")),
        description: str_of(main.get("description")),
        publisher: publisher.or(site_name),
        language: str_of(main.get("inLanguage")),
        url: str_of(main.get("url")).or_else(|| match main.get("mainEntityOfPage") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(o @ Value::Object(_)) => str_of(o.get("@id")),
            _ => None,
        }),
        // A product's description is its body: shops render it with scripts from this data.
        body: str_of(main.get("articleBody"))
            .or_else(|| str_of(main.get("description")).filter(|_| types(main).contains(&"Product"))),
    }
}

/// Parses the date formats seen in the wild into RFC 3339.
pub fn normalize_date(raw: &str) -> Option<String> {
    let s = raw.trim();
    if s.is_empty() || s.len() > 64 {
        return None;
    }
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d.to_rfc3339());
    }
    if let Ok(d) = DateTime::parse_from_rfc2822(s) {
        return Some(d.to_rfc3339());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f%z",
        "%Y-%m-%dT%H:%M:%S%z",
        "%Y-%m-%dT%H:%M%z",
        "%Y-%m-%d %H:%M:%S%.f%z",
        "%Y-%m-%d %H:%M:%S %z",
    ] {
        if let Ok(d) = DateTime::<FixedOffset>::parse_from_str(s, f) {
            return Some(d.to_rfc3339());
        }
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y%m%dT%H%M%S",
    ] {
        if let Ok(d) = NaiveDateTime::parse_from_str(s, f) {
            return Some(Utc.from_utc_datetime(&d).to_rfc3339());
        }
    }
    let day = s.get(..10).unwrap_or(s);
    for f in ["%Y-%m-%d", "%Y/%m/%d", "%Y%m%d"] {
        if let Ok(d) = NaiveDate::parse_from_str(day, f) {
            return midnight(d);
        }
    }
    for f in ["%B %d, %Y", "%b %d, %Y", "%d %B %Y", "%d %b %Y", "%B %d %Y", "%b. %d, %Y"] {
        if let Ok(d) = NaiveDate::parse_from_str(s, f) {
            return midnight(d);
        }
    }
    None
}

fn midnight(d: NaiveDate) -> Option<String> {
    d.and_hms_opt(0, 0, 0).map(|t| Utc.from_utc_datetime(&t).to_rfc3339())
}

/// `/YYYY/MM/DD/` or `/YYYY-MM-DD/` in a URL path.
fn date_in_url(url: &Url) -> Option<String> {
    let segs: Vec<&str> = url.path_segments()?.collect();
    for w in segs.windows(3) {
        if let (Ok(y), Ok(m), Ok(d)) = (w[0].parse::<i32>(), w[1].parse::<u32>(), w[2].parse::<u32>()) {
            if (1990..=2100).contains(&y) && w[0].len() == 4 {
                if let Some(date) = NaiveDate::from_ymd_opt(y, m, d) {
                    return midnight(date);
                }
            }
        }
    }
    for s in &segs {
        if s.len() >= 10 {
            for start in 0..=s.len() - 10 {
                if let Some(cand) = s.get(start..start + 10) {
                    if cand.as_bytes()[4] == b'-' && cand.as_bytes()[7] == b'-' {
                        if let Ok(d) = NaiveDate::parse_from_str(cand, "%Y-%m-%d") {
                            if (1990..=2100).contains(&chrono::Datelike::year(&d)) {
                                return midnight(d);
                            }
                        }
                    }
                }
            }
        }
    }
    None
}

fn clean_byline(s: &str) -> Option<String> {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = s.to_lowercase();
    let s = if lower.starts_with("by ") { &s[3..] } else { &s[..] };
    let s = s.trim().trim_end_matches(['|', ',', '-']).trim();
    (!s.is_empty() && s.chars().count() <= 100 && !s.starts_with("http")).then(|| s.to_string())
}

/// Strips a trailing " | Site" / " - Site" from a document title.
fn strip_site_suffix(title: &str, site: Option<&str>) -> String {
    let t = title.trim();
    for sep in [" | ", " - ", " – ", " — ", " :: ", " · "] {
        if let Some(pos) = t.rfind(sep) {
            let (head, tail) = (&t[..pos], &t[pos + sep.len()..]);
            let tail_is_site = site.is_some_and(|s| tail.trim().eq_ignore_ascii_case(s.trim()))
                || (tail.split_whitespace().count() <= 4 && head.split_whitespace().count() >= 3);
            if tail_is_site {
                return head.trim().to_string();
            }
        }
    }
    t.to_string()
}

/// Builds the metadata from the facts the DOM walk gathered.
pub fn metadata(facts: &MetaFacts, page: &Url, base: &Url, content_language: Option<&str>) -> Metadata {
    let ld = json_ld(&facts.json_ld);
    let meta = |keys: &[&str]| -> Option<String> {
        keys.iter().find_map(|k| facts.metas.iter().find(|(key, v)| key == k && !v.is_empty()).map(|(_, v)| v.clone()))
    };
    let og_title = meta(&["og:title"]);
    let tw_title = meta(&["twitter:title"]);
    let site_name = ld
        .publisher
        .clone()
        .or_else(|| meta(&["og:site_name"]))
        .or_else(|| meta(&["application-name", "twitter:site"]).map(|s| s.trim_start_matches('@').to_string()));
    let title = ld
        .headline
        .clone()
        .or(og_title)
        .or(tw_title)
        .or_else(|| meta(&["title", "dc.title", "sailthru.title", "parsely-title"]))
        .or_else(|| {
            facts.title.as_deref().map(|t| strip_site_suffix(t, site_name.as_deref())).filter(|t| !t.is_empty())
        })
        .or_else(|| facts.first_h1.clone());
    let byline = ld
        .author
        .clone()
        .or_else(|| meta(&["article:author", "og:article:author"]).filter(|a| !a.starts_with("http")))
        .or_else(|| meta(&["author", "dc.creator", "dcterms.creator", "byl", "sailthru.author", "parsely-author"]))
        .or_else(|| facts.byline.clone())
        .and_then(|b| clean_byline(&b));
    let itemprop_time =
        |prop: &str| facts.times.iter().find(|(p, _)| p.as_deref() == Some(prop)).map(|(_, v)| v.clone());
    let published = ld
        .published
        .iter()
        .cloned()
        .chain(meta(&["article:published_time", "og:article:published_time"]))
        .chain(meta(&[
            "datepublished",
            "date",
            "pubdate",
            "publishdate",
            "publish-date",
            "dc.date",
            "dc.date.issued",
            "dcterms.created",
            "dcterms.date",
            "sailthru.date",
            "parsely-pub-date",
            "article.published",
            "published_time",
        ]))
        .chain(itemprop_time("datePublished"))
        .chain(facts.times.first().map(|(_, v)| v.clone()))
        .find_map(|d| normalize_date(&d))
        .or_else(|| date_in_url(page));
    let modified = ld
        .modified
        .iter()
        .cloned()
        .chain(meta(&["article:modified_time", "og:updated_time"]))
        .chain(meta(&["datemodified", "last-modified", "dcterms.modified", "article.updated"]))
        .chain(itemprop_time("dateModified"))
        .find_map(|d| normalize_date(&d));
    let language = ld
        .language
        .clone()
        .or_else(|| meta(&["og:locale"]).map(|l| l.replace('_', "-")))
        .or_else(|| meta(&["content-language", "language", "dc.language"]))
        .or_else(|| facts.html_lang.clone())
        .or_else(|| content_language.map(|l| l.split(',').next().unwrap_or(l).trim().to_string()))
        .filter(|l| !l.is_empty() && l.len() <= 35);
    let resolve = |href: &str| -> Option<String> {
        let u = base.join(href.trim()).ok()?;
        weft_url::normalize_url(u).ok().map(|u| u.to_string())
    };
    let canonical = facts
        .link_rels
        .iter()
        .find(|(r, _)| r == "canonical")
        .and_then(|(_, h)| resolve(h))
        .or_else(|| meta(&["og:url"]).and_then(|h| resolve(&h)))
        .or_else(|| ld.url.as_deref().and_then(resolve));
    let description = ld
        .description
        .clone()
        .or_else(|| meta(&["og:description"]))
        .or_else(|| meta(&["twitter:description"]))
        .or_else(|| meta(&["description", "dc.description"]));
    let content_type = ld.kind.clone().or_else(|| {
        meta(&["og:type"]).map(|t| {
            let t = t.split([':', '.']).next().unwrap_or(&t).to_string();
            let mut c = t.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
        })
    });
    Metadata {
        title,
        byline,
        published,
        modified,
        language,
        canonical,
        site_name,
        description,
        content_type,
        article_body: ld.body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_normalize_to_rfc3339() {
        assert_eq!(normalize_date("2019-11-19T10:00:00Z").unwrap(), "2019-11-19T10:00:00+00:00");
        assert_eq!(normalize_date("2019-11-19T10:00:00.000-0500").unwrap(), "2019-11-19T10:00:00-05:00");
        assert_eq!(normalize_date("2019-11-19").unwrap(), "2019-11-19T00:00:00+00:00");
        assert_eq!(normalize_date("2019-11-19 08:30:00").unwrap(), "2019-11-19T08:30:00+00:00");
        assert_eq!(normalize_date("Tue, 19 Nov 2019 10:00:00 GMT").unwrap(), "2019-11-19T10:00:00+00:00");
        assert_eq!(normalize_date("November 19, 2019").unwrap(), "2019-11-19T00:00:00+00:00");
        assert_eq!(normalize_date("yesterday"), None);
    }

    #[test]
    fn url_dates() {
        let u = Url::parse("https://n.test/2019/11/19/politics/story.html").unwrap();
        assert_eq!(date_in_url(&u).unwrap(), "2019-11-19T00:00:00+00:00");
        let u = Url::parse("https://n.test/news/story-2020-02-29-leap").unwrap();
        assert_eq!(date_in_url(&u).unwrap(), "2020-02-29T00:00:00+00:00");
        assert_eq!(date_in_url(&Url::parse("https://n.test/2019/13/40/x").unwrap()), None);
    }

    #[test]
    fn bylines_and_titles_are_cleaned() {
        assert_eq!(clean_byline("  By   Jane Doe ").unwrap(), "Jane Doe");
        assert_eq!(
            strip_site_suffix("Big story happens today | The Daily", Some("The Daily")),
            "Big story happens today"
        );
        assert_eq!(strip_site_suffix("A - B", None), "A - B");
    }
}
