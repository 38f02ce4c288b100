//! What the layout tier counts, and where the counts go: the worker's, the browser's and the
//! teacher's outcomes ([`Event`]), handed to a [`Tally`] the node keeps (`/status`
//! `extraction`, `/metrics`), with the errors it logs once per kind.

/// Where the layout tier's counts and errors go (the node's metrics).
pub trait Tally: Send + Sync {
    /// Counts an outcome.
    fn count_event(&self, event: Event);
    /// Counts an error of `kind` and logs it (the first of each kind loudly).
    fn error(&self, kind: &'static str, url: &str, detail: &dyn std::fmt::Display);
}

/// An outcome the layout tier counts, by group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Layout(Layout),
    Render(Render),
    RenderRequest(RenderRequest),
    Teacher(Teacher),
}

impl Event {
    /// `group:value`, as `/status` `extraction` keys it.
    pub fn key(&self) -> String {
        let (group, value): (&str, &str) = match self {
            Event::Layout(l) => ("layout", l.as_str()),
            Event::Render(r) => ("render", r.as_str()),
            Event::RenderRequest(RenderRequest::Refused(why)) => return format!("render_requests:refused_{why}"),
            Event::RenderRequest(r) => ("render_requests", r.as_str()),
            Event::Teacher(t) => ("teacher", t.as_str()),
        };
        format!("{group}:{value}")
    }
}

/// Defines a counted group: an enum of unit variants and their names.
macro_rules! counted {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $($(#[$vdoc])* $variant),+ }
        impl $name {
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }
    };
}

counted!(
    /// What the layout worker did with a page.
    Layout {
        /// A template extracted it.
        Template => "template",
        /// The generic extraction stands.
        Generic => "generic",
        /// The layout's template did not validate.
        TemplateFailed => "template_failed",
        /// The template's selectors all matched a page too short for it (the generic
        /// extractor found no more text either): a short page, not a layout change.
        ShortPage => "short_page",
        /// A class rename was repaired on the spot.
        Repaired => "repaired",
        /// A template of another layout of the host fitted a new signature.
        Adopted => "adopted",
        /// The layout went to the teacher.
        TeacherQueued => "teacher_queued",
    }
);

counted!(
    /// The JavaScript tier.
    Render {
        Queued => "queued",
        Rendered => "rendered",
        /// A host's pages now all go to the browser.
        HostDecided => "host_decided",
        /// A host's expired decision was checked again and its pages are static again.
        HostStatic => "host_static_again",
        /// A page waiting for the browser that another member reported fetched: not rendered.
        DoneElsewhere => "done_elsewhere",
        /// A page whose host failed for now (its render and a fetch of its HTML): queued again
        /// for later.
        Retried => "retried",
        /// A page whose host kept failing (or refused it for good): not indexed.
        GaveUp => "gave_up",
    }
);

counted!(
    /// What the teacher did.
    Teacher {
        Runs => "runs",
        Learned => "learned",
        JsRequired => "js_required",
        Failed => "failed",
        Adopted => "adopted",
        /// A sample whose HTML is not kept (a store of an older version) was left out: the
        /// teacher never fetches a page the crawl fetched.
        SampleMissing => "sample_missing",
    }
);

/// A rendered page's request (see `render_fetch.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenderRequest {
    DocumentFromCrawl,
    DocumentFetched,
    SubresourceCached,
    SubresourceFetched,
    SubresourceOverCap,
    /// Refused outright, and why (the resource type).
    Refused(&'static str),
}

impl RenderRequest {
    pub fn as_str(&self) -> &'static str {
        match self {
            RenderRequest::DocumentFromCrawl => "document_from_crawl",
            RenderRequest::DocumentFetched => "document_fetched",
            RenderRequest::SubresourceCached => "subresource_cached",
            RenderRequest::SubresourceFetched => "subresource_fetched",
            RenderRequest::SubresourceOverCap => "subresource_over_cap",
            RenderRequest::Refused(_) => "refused",
        }
    }
}
