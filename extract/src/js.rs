//! JS-need score (seed 002's detector): does this page need a browser to show its content?
//!
//! Weighted signals, summed and capped at 1:
//!
//! | signal | weight |
//! |---|---|
//! | an app container (`#app`, `#root`, `#__next`, ...) with (almost) no text | 0.45 |
//! | client-side framework markers (React, Next.js, Vue, Nuxt, Angular, Svelte) | 0.15 |
//! | scripts are more than half of the bytes (0.3 if more than a quarter: 0.1) | 0.2 |
//! | hydration state shipped in the page (`__NEXT_DATA__`, `__NUXT__`, `__INITIAL_STATE__`) | 0.1 |
//! | `<noscript>` asks to enable JavaScript | 0.2 |
//! | little visible text: under 200 characters (under 2% of the bytes: 0.1) | 0.35 |
//!
//! A page that already carries its article in the HTML does not need a browser whatever its
//! framework, so substantial main text (over 1,000 characters) halves the score. Recommendation:
//! `static` below 0.4, `try_static_first` up to 0.8, `js_required` above.

use crate::dom::JsFacts;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recommendation {
    Static,
    TryStaticFirst,
    JsRequired,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JsScore {
    pub score: f64,
    /// The client-side framework detected, if any (`react`, `nextjs`, `vue`, `nuxt`, `angular`,
    /// `svelte`).
    pub framework: Option<&'static str>,
    /// What contributed, e.g. `empty_app_container`, `framework:nextjs`, `script_share:0.62`.
    pub signals: Vec<String>,
    pub recommendation: Recommendation,
}

fn framework(markers: &[&'static str]) -> Option<&'static str> {
    let has = |m: &str| markers.contains(&m);
    // Meta-frameworks first: Next.js implies React, Nuxt implies Vue.
    if has("__NEXT_DATA__") || has("/_next/") {
        Some("nextjs")
    } else if has("__NUXT__") {
        Some("nuxt")
    } else if has("data-reactroot") || has("__REACT") {
        Some("react")
    } else if has("ng-version") || has("ng-app") || has("_nghost") {
        Some("angular")
    } else if has("v-cloak") || has("data-v-") || has("__VUE__") || has("data-server-rendered") {
        Some("vue")
    } else if has("data-svelte") || has("__svelte") {
        Some("svelte")
    } else {
        None
    }
}

/// Scores a page. `html_bytes` is the document size, `visible_chars` all visible text,
/// `main_chars` the main content's, `empty_containers` how many app containers hold almost no
/// text.
pub fn score(
    facts: &JsFacts,
    html_bytes: usize,
    visible_chars: usize,
    main_chars: usize,
    empty_containers: usize,
) -> JsScore {
    let mut s = 0f32;
    let mut signals = Vec::new();
    if empty_containers > 0 {
        s += 0.45;
        signals.push("empty_app_container".to_string());
    }
    let fw = framework(&facts.markers);
    if let Some(f) = fw {
        s += 0.15;
        signals.push(format!("framework:{f}"));
    }
    let share = if html_bytes > 0 { facts.script_bytes as f32 / html_bytes as f32 } else { 0.0 };
    if share > 0.5 {
        s += 0.2;
        signals.push(format!("script_share:{share:.2}"));
    } else if share > 0.25 {
        s += 0.1;
        signals.push(format!("script_share:{share:.2}"));
    }
    if facts.markers.iter().any(|m| matches!(*m, "__NEXT_DATA__" | "__NUXT__" | "__INITIAL_STATE__")) {
        s += 0.1;
        signals.push("hydration_state".to_string());
    }
    let noscript = facts.noscript_text.to_ascii_lowercase();
    if noscript.contains("enable javascript")
        || noscript.contains("javascript is disabled")
        || noscript.contains("requires javascript")
        || noscript.contains("need to enable javascript")
    {
        s += 0.2;
        signals.push("noscript_enable_js".to_string());
    }
    if visible_chars < 200 {
        s += 0.35;
        signals.push(format!("low_text:{visible_chars}"));
    } else if html_bytes > 0 && (visible_chars as f32 / html_bytes as f32) < 0.02 {
        s += 0.1;
        signals.push("low_text_ratio".to_string());
    }
    if main_chars > 1_000 {
        s *= 0.5;
        signals.push("content_present".to_string());
    }
    let score = s.min(1.0);
    let recommendation = if score > 0.8 {
        Recommendation::JsRequired
    } else if score >= 0.4 {
        Recommendation::TryStaticFirst
    } else {
        Recommendation::Static
    };
    JsScore { score: (f64::from(score) * 100.0).round() / 100.0, framework: fw, signals, recommendation }
}
