//! The words a block's features look for — in class and id names, in what a page says it is,
//! in its URL, in a block's own text — and the counts of a block's text.

use super::ratio;
use crate::dom::Walk;

/// Class/id word groups, looked for in the class and id of the block's element and its
/// ancestors (each group one feature: is it on the element itself or above it).
pub(super) const GROUPS: &[&[&str]] = &[
    &["nav", "menu", "breadcrumb", "toolbar", "pagination", "pager"],
    &["footer", "copyright", "legal", "colophon"],
    &["header", "masthead", "topbar", "banner"],
    &["sidebar", "aside", "widget", "rail"],
    &["comment", "reply", "discuss", "respond", "thread", "forum", "post"],
    &["share", "social", "follow"],
    &["related", "recommend", "more", "trending", "popular", "teaser", "card"],
    &["ad", "ads", "advert", "sponsor", "promo", "banner"],
    &["content", "article", "entry", "body", "main", "text", "story", "prose", "rich"],
    &["author", "byline", "bio", "profile"],
    &["meta", "date", "tag", "tags", "categor", "label"],
    &["cookie", "consent", "newsletter", "subscribe", "signup", "modal", "popup"],
    &["product", "price", "sku", "offer", "buy", "purchase"],
    &["description", "spec", "specs", "detail", "details", "feature", "features", "overview", "summary"],
    &["review", "reviews", "rating", "ratings", "testimonial", "question", "questions", "qa"],
    &["title", "heading", "headline", "caption"],
];

/// What a page says it is, in its JSON-LD `@type`s and `og:type` (matched as quoted words in
/// the JSON-LD, whole values in `og:type`): one feature each, for every block of the page.
pub(super) const PAGE_KINDS: &[&[&str]] = &[
    &["Article", "NewsArticle", "BlogPosting", "Report", "ScholarlyArticle", "article"],
    &["Product", "Offer", "AggregateOffer", "product", "og:product"],
    &["DiscussionForumPosting", "QAPage", "Question", "Answer", "Comment", "SocialMediaPosting"],
    &["ItemList", "CollectionPage", "SearchResultsPage", "OfferCatalog"],
    &["FAQPage", "HowTo", "Recipe", "TechArticle", "APIReference"],
    &["Service", "Organization", "LocalBusiness", "WebSite", "website"],
];

/// Words of the URL's path that say what a page is (whole path segments or their words).
pub(super) const URL_KINDS: &[&[&str]] = &[
    &["news", "blog", "article", "articles", "story", "post", "posts", "opinion"],
    &["product", "products", "p", "dp", "item", "shop", "store", "buy"],
    &["forum", "forums", "thread", "threads", "t", "topic", "community", "discussion", "questions", "comments", "r"],
    &["docs", "doc", "documentation", "guide", "guides", "manual", "reference", "api", "help", "learn", "wiki"],
    &["category", "categories", "collection", "collections", "tag", "tags", "search", "list", "c"],
    &["services", "service", "solutions", "pricing", "features", "about", "contact"],
];

/// Words of a block's own text that say what it is — interface, legal, commerce, a forum's
/// chrome — as groups; each group is one feature, the share of the block's words in it.
/// English only for now (most of the labelled pages are); a block in another language reads 0.
pub(super) const TEXT_GROUPS: &[&[&str]] = &[
    &["copyright", "rights", "reserved", "privacy", "terms", "cookie", "cookies", "policy", "consent", "gdpr"],
    &["sign", "login", "log", "account", "cart", "checkout", "wishlist", "basket", "register", "password"],
    &[
        "subscribe",
        "newsletter",
        "follow",
        "share",
        "facebook",
        "twitter",
        "instagram",
        "linkedin",
        "youtube",
        "pinterest",
        "tiktok",
        "whatsapp",
        "email",
    ],
    &[
        "home", "menu", "search", "next", "previous", "prev", "back", "top", "skip", "more", "see", "view", "all",
        "page",
    ],
    &[
        "reply", "replies", "quote", "posted", "joined", "member", "members", "likes", "like", "report", "edited",
        "views", "votes", "answers", "comments", "thread",
    ],
    &[
        "price", "shipping", "delivery", "returns", "stock", "sale", "add", "buy", "order", "reviews", "rating",
        "stars", "usd", "qty",
    ],
    &[
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "ago",
        "am",
        "pm",
        "min",
        "read",
    ],
    &[
        "related",
        "recommended",
        "popular",
        "trending",
        "latest",
        "also",
        "stories",
        "articles",
        "posts",
        "sponsored",
        "advertisement",
        "ad",
    ],
];

/// The share of `text`'s words in each of [`TEXT_GROUPS`].
pub(super) fn text_groups(text: &str) -> [f32; TEXT_GROUPS.len()] {
    let mut counts = [0u32; TEXT_GROUPS.len()];
    let mut words = 0u32;
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).take(400) {
        words += 1;
        let lower = w.to_lowercase();
        for (g, group) in TEXT_GROUPS.iter().enumerate() {
            if group.contains(&lower.as_str()) {
                counts[g] += 1;
            }
        }
    }
    counts.map(|c| ratio(c, words))
}

/// Which of [`PAGE_KINDS`] the page declares, as bits.
pub(super) fn page_kinds(walk: &Walk) -> u32 {
    let og: Vec<&str> = walk.meta.metas.iter().filter(|(k, _)| k == "og:type").map(|(_, v)| v.as_str()).collect();
    let mut bits = 0u32;
    for (k, words) in PAGE_KINDS.iter().enumerate() {
        let said = words.iter().any(|w| {
            let quoted = format!("\"{w}\"");
            walk.meta.json_ld.iter().any(|j| j.contains(&quoted)) || og.iter().any(|o| o.eq_ignore_ascii_case(w))
        });
        if said {
            bits |= 1 << k;
        }
    }
    bits
}

/// Which of [`URL_KINDS`] the URL's path says, as bits, and its depth (segments).
pub(super) fn url_kinds(url: Option<&url::Url>) -> (u32, u32) {
    let Some(url) = url else { return (0, 0) };
    let mut bits = 0u32;
    let mut depth = 0;
    for segment in url.path_segments().into_iter().flatten().filter(|s| !s.is_empty()) {
        depth += 1;
        let lower = segment.to_ascii_lowercase();
        for (k, words) in URL_KINDS.iter().enumerate() {
            let whole = words.contains(&lower.as_str());
            let word = lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w.len() > 2 && words.contains(&w));
            if whole || word {
                bits |= 1 << k;
            }
        }
    }
    (bits, depth)
}

/// The lowercase words of a text, for overlaps.
pub(super) fn word_set(text: &str) -> std::collections::HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// The class/id word groups an element's `class id` label carries, as bits.
pub(super) fn group_bits(label: &str) -> u32 {
    let mut bits = 0u32;
    if label.is_empty() {
        return bits;
    }
    for token in label.split(|c: char| !c.is_ascii_alphanumeric()).filter(|t| !t.is_empty()) {
        let t = token.to_ascii_lowercase();
        for (g, words) in GROUPS.iter().enumerate() {
            // Short words match whole tokens (`ad` must not match `header`); longer ones match
            // as prefixes (`comment` in `comments`, `categor` in `category`).
            if words.iter().any(|w| if w.len() <= 3 { t == *w } else { t.starts_with(w) }) {
                bits |= 1 << g;
            }
        }
    }
    bits
}

pub(super) fn text_stats(text: &str) -> TextStats {
    let mut s = TextStats { words: 0, word_chars: 0, punctuation: 0, digits: 0, capitalised: 0, commas: 0 };
    for w in text.split_whitespace() {
        s.words += 1;
        s.word_chars += w.chars().count() as u32;
        if w.chars().next().is_some_and(char::is_uppercase) {
            s.capitalised += 1;
        }
    }
    for c in text.chars() {
        if matches!(c, '.' | ',' | ';' | ':' | '!' | '?' | '。' | '、' | '，') {
            s.punctuation += 1;
        }
        if matches!(c, ',' | '，' | '、') {
            s.commas += 1;
        }
        if c.is_ascii_digit() {
            s.digits += 1;
        }
    }
    s
}

pub(super) fn heading_level(tag: &str) -> f32 {
    match tag {
        "h1" => 1.0,
        "h2" => 2.0,
        "h3" => 3.0,
        "h4" => 4.0,
        "h5" => 5.0,
        "h6" => 6.0,
        _ => 0.0,
    }
}

/// Word, punctuation, digit and capitalisation counts of a block's text.
pub(super) struct TextStats {
    pub(super) words: u32,
    pub(super) word_chars: u32,
    pub(super) punctuation: u32,
    pub(super) digits: u32,
    pub(super) capitalised: u32,
    pub(super) commas: u32,
}
