//! Repairs of broken markup that html5ever would otherwise read "correctly" into nonsense, and
//! the work limits that keep parsing linear on hostile input.
//!
//! One left-to-right scan over the text, no backtracking:
//! - NULs and C0 control characters other than whitespace are dropped;
//! - doubled brackets around a tag, `<<p>>`, become `<p>`;
//! - a doubled equals sign in an attribute, `href=="/x"`, becomes `href="/x"`;
//! - nesting is capped: start tags deeper than [`MAX_DEPTH`] open elements are dropped (their
//!   text is kept), with a warning. html5ever's tree builder scans the stack of open elements on
//!   many tags, so 20 MB of `<div>` would otherwise take quadratic time, and every tree walk
//!   after it would need a 4-million-frame stack;
//!   Ruby annotations (`rb`, `rt`, `rtc`, `rp`) and `optgroup` close implicitly only inside
//!   `<ruby>` and `<select>`; elsewhere they nest (and html5ever scans the stack for a ruby or
//!   select in scope on each one), so there they count toward the cap;
//! - an element keeps at most [`MAX_ATTRIBUTES`] attributes (html5ever compares each new one
//!   with those before it: 200,000 on one element took 8 s), with a warning;
//! - input beyond [`MAX_HTML_BYTES`] is cut at a tag boundary, with a warning.
//!
//! Raw-text elements (`script`, `style`, `textarea`, `title`, ...) and comments are copied
//! verbatim: their content is not markup.

use crate::Warning;
use std::borrow::Cow;

/// Deepest nesting of open elements kept. Real pages stay under ~60.
pub const MAX_DEPTH: usize = 256;
/// Largest document parsed (after decoding). Larger input is truncated with a warning.
pub const MAX_HTML_BYTES: usize = 8 << 20;
/// Attributes kept on one element. Real elements carry a few dozen at most.
pub const MAX_ATTRIBUTES: usize = 256;

/// Does the tag whose name ends at `from` end with `/>`? (Quoted attribute values honoured.)
fn tag_self_closes(bytes: &[u8], from: usize) -> bool {
    let mut quote = 0u8;
    let mut prev = 0u8;
    for &c in &bytes[from.min(bytes.len())..] {
        if quote != 0 {
            if c == quote {
                quote = 0;
            }
        } else if c == b'"' || c == b'\'' {
            quote = c;
        } else if c == b'>' {
            return prev == b'/';
        }
        prev = c;
    }
    false
}

/// Elements that never have content, so never add depth.
fn is_void(name: &[u8]) -> bool {
    matches!(
        name,
        b"area"
            | b"base"
            | b"br"
            | b"col"
            | b"embed"
            | b"hr"
            | b"img"
            | b"input"
            | b"link"
            | b"meta"
            | b"param"
            | b"source"
            | b"track"
            | b"wbr"
            | b"keygen"
            | b"frame"
            | b"basefont"
            | b"isindex"
    )
}

/// Elements whose end tag is optional: html5ever closes them implicitly, so counting them would
/// overstate depth on perfectly normal pages (`<p>` after `<p>`, `<li>` after `<li>`).
fn is_optional_close(name: &[u8]) -> bool {
    matches!(
        name,
        b"p" | b"li"
            | b"dt"
            | b"dd"
            | b"option"
            | b"optgroup"
            | b"tr"
            | b"td"
            | b"th"
            | b"thead"
            | b"tbody"
            | b"tfoot"
            | b"rb"
            | b"rt"
            | b"rp"
            | b"rtc"
            | b"colgroup"
            | b"caption"
            | b"html"
            | b"head"
            | b"body"
    )
}

fn is_control(b: u8) -> bool {
    (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c)) || b == 0x7f
}

fn is_raw_text(name: &[u8]) -> bool {
    matches!(
        name,
        b"script" | b"style" | b"textarea" | b"title" | b"xmp" | b"iframe" | b"noembed" | b"noframes" | b"plaintext"
    )
}

/// Returns the repaired document, borrowing when nothing had to change.
pub fn sanitize<'a>(input: &'a str, warnings: &mut Vec<Warning>) -> Cow<'a, str> {
    let input = truncated(input, warnings);
    let bytes = input.as_bytes();
    let mut out = Output { input, out: None, copied: 0 };
    let mut nesting = Nesting::default();
    let mut limited_elements = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        // Jump to the next '<', dropping control characters on the way.
        let next = memchr::memchr(b'<', &bytes[i..]).map(|p| i + p).unwrap_or(bytes.len());
        if bytes[i..next].iter().any(|&b| is_control(b)) {
            for (k, &c) in bytes.iter().enumerate().take(next).skip(i) {
                if is_control(c) {
                    out.drop(k, k + 1);
                }
            }
        }
        i = next;
        if i >= bytes.len() {
            break;
        }
        // `<<tag` → `<tag`
        if bytes.get(i + 1) == Some(&b'<') && bytes.get(i + 2).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'/') {
            out.drop(i, i + 1);
            i += 1;
            continue;
        }
        // Comments are skipped whole.
        if bytes[i..].starts_with(b"<!--") {
            i = find(bytes, i + 4, b"-->").map(|e| e + 3).unwrap_or(bytes.len());
            continue;
        }
        let closing = bytes.get(i + 1) == Some(&b'/');
        let name_start = i + 1 + closing as usize;
        if !bytes.get(name_start).is_some_and(u8::is_ascii_alphabetic) {
            i += 1;
            continue;
        }
        let tag = TagName::at(bytes, name_start);
        let name = tag.as_bytes();
        let drop_tag = nesting.tag(name, closing, bytes, tag.end);
        if drop_tag {
            out.keep_to(i);
        }
        let (j, cut_from) = attributes(bytes, tag.end, drop_tag, &mut out);
        if let Some(from) = cut_from {
            // Keep the tag up to the first attribute past the cap, then its end.
            out.drop(from, j.min(bytes.len()));
            limited_elements += 1;
        }
        let tag_end = (j + 1).min(bytes.len()); // one past '>'
        if drop_tag {
            out.copied = tag_end;
        }
        // `<<p>>`: drop a doubled closing bracket right after a tag that began with one.
        let doubled_close = i > 0 && bytes[i - 1] == b'<' && bytes.get(tag_end) == Some(&b'>');
        i = tag_end;
        if doubled_close {
            out.drop(i, i + 1);
            i += 1;
        }
        // Raw text: skip to the matching end tag, verbatim.
        if !closing && is_raw_text(name) {
            i = raw_text_end(bytes, i, name);
        }
    }
    if nesting.dropped_tags > 0 {
        warnings.push(Warning::DepthLimited { max_depth: MAX_DEPTH, dropped_tags: nesting.dropped_tags });
    }
    if limited_elements > 0 {
        warnings.push(Warning::AttributesLimited { max_attributes: MAX_ATTRIBUTES, elements: limited_elements });
    }
    out.finish()
}

/// `input` cut to [`MAX_HTML_BYTES`] (with a warning), before an unfinished tag at the cut.
fn truncated<'a>(input: &'a str, warnings: &mut Vec<Warning>) -> &'a str {
    if input.len() <= MAX_HTML_BYTES {
        return input;
    }
    let mut cut = MAX_HTML_BYTES;
    while !input.is_char_boundary(cut) {
        cut -= 1;
    }
    // Inside an unfinished tag, cut before it; in text (a page whose tail is one large text
    // node), keep the text up to the cut rather than going back to its opening tag.
    let head = &input[..cut];
    let cut = match (head.rfind('<'), head.rfind('>')) {
        (Some(lt), gt) if lt > 0 && gt.is_none_or(|gt| gt < lt) => lt,
        _ => cut,
    };
    warnings.push(Warning::Truncated { bytes: input.len(), kept: cut });
    &input[..cut]
}

/// The sanitized text: the input itself until the first change, then a copy being written.
struct Output<'a> {
    input: &'a str,
    out: Option<String>,
    /// Input bytes before this index are accounted for (copied, or dropped).
    copied: usize,
}

impl<'a> Output<'a> {
    /// Copies the input from where it was last accounted for up to `upto`.
    fn keep_to(&mut self, upto: usize) {
        let o = self.out.get_or_insert_with(|| String::with_capacity(self.input.len()));
        o.push_str(&self.input[self.copied..upto]);
    }

    /// Keeps the input up to `at` and drops it up to `next`.
    fn drop(&mut self, at: usize, next: usize) {
        self.keep_to(at);
        self.copied = next;
    }

    fn finish(self) -> Cow<'a, str> {
        match self.out {
            Some(mut o) => {
                o.push_str(&self.input[self.copied..]);
                Cow::Owned(o)
            }
            None => Cow::Borrowed(self.input),
        }
    }
}

/// A tag's name, lowercased in a stack buffer (longer names are none of the special ones),
/// and where it ends.
struct TagName {
    buf: [u8; 16],
    len: usize,
    long: bool,
    end: usize,
}

impl TagName {
    fn at(bytes: &[u8], start: usize) -> TagName {
        let mut end = start;
        while end < bytes.len() && !matches!(bytes[end], b' ' | b'\t' | b'\n' | b'\r' | 0x0c | b'/' | b'>') {
            end += 1;
        }
        let mut buf = [0u8; 16];
        let len = (end - start).min(16);
        for (k, c) in bytes[start..start + len].iter().enumerate() {
            buf[k] = c.to_ascii_lowercase();
        }
        TagName { buf, len, long: end - start > 16, end }
    }

    fn as_bytes(&self) -> &[u8] {
        if self.long {
            b"-"
        } else {
            &self.buf[..self.len]
        }
    }
}

/// The elements open where the scan is: how deep, and how many `<svg>`/`<math>` (inside them
/// `/>` closes an element), `<ruby>` and `<select>`/`<datalist>` (inside them ruby annotations
/// and option groups close one another).
#[derive(Default)]
struct Nesting {
    depth: usize,
    foreign: usize,
    ruby: usize,
    select: usize,
    /// Tags dropped for nesting past [`MAX_DEPTH`].
    dropped_tags: usize,
}

impl Nesting {
    /// Takes the tag `name` (whose name ends at `name_end`); says whether it is dropped, as an
    /// element past [`MAX_DEPTH`] or the closer of one.
    fn tag(&mut self, name: &[u8], closing: bool, bytes: &[u8], name_end: usize) -> bool {
        // html5ever ignores `/>` on HTML elements, so self-closing syntax changes nothing there;
        // inside `<svg>` and `<math>` it closes the element. Raw-text elements hold no markup:
        // never dropped (their text would show), never counted. A self-closed start tag opens
        // nothing.
        let self_closing = (self.foreign > 0 || matches!(name, b"svg" | b"math")) && tag_self_closes(bytes, name_end);
        let nests_here = match name {
            b"rb" | b"rt" | b"rtc" | b"rp" => self.ruby == 0,
            b"optgroup" => self.select == 0,
            _ => false,
        };
        let counts = !is_void(name)
            && (nests_here || !is_optional_close(name))
            && !is_raw_text(name)
            && (closing || !self_closing);
        let open = match name {
            b"svg" | b"math" => Some(&mut self.foreign),
            b"ruby" => Some(&mut self.ruby),
            b"select" | b"datalist" => Some(&mut self.select),
            _ => None,
        };
        if let Some(open) = open {
            if closing {
                *open = open.saturating_sub(1);
            } else if !self_closing {
                *open += 1;
            }
        }
        let mut drop_tag = false;
        if closing {
            if counts && self.depth > 0 {
                drop_tag = self.depth > MAX_DEPTH; // closer of a dropped element
                self.depth -= 1;
            }
        } else if counts {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                drop_tag = true;
                self.dropped_tags += 1;
            }
        }
        drop_tag
    }
}

/// Scans a tag's attributes from the end of its name to its `>` (returned), honouring quoted
/// values: control characters and the first `=` of `==` are dropped, and the attributes are
/// counted (a name starts after whitespace, or after a value, outside quotes); where one past
/// [`MAX_ATTRIBUTES`] starts is returned too. A dropped tag is only scanned.
fn attributes(bytes: &[u8], name_end: usize, drop_tag: bool, out: &mut Output<'_>) -> (usize, Option<usize>) {
    let mut j = name_end;
    let mut quote = 0u8;
    let mut attributes = 0usize;
    // Between attributes (after whitespace, a value, or the name): the next name starts one.
    let mut between = true;
    // After `=`: the next non-space is a value, not a name.
    let mut value_next = false;
    let mut cut_from: Option<usize> = None;
    while j < bytes.len() {
        let c = bytes[j];
        if quote != 0 {
            if c == quote {
                quote = 0;
                between = true;
            }
        } else if is_control(c) {
            if !drop_tag && cut_from.is_none() {
                out.drop(j, j + 1);
            }
        } else if c == b'"' || c == b'\'' {
            quote = c;
            value_next = false;
        } else if c == b'>' {
            break;
        } else if matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0c) {
            if !value_next {
                between = true;
            }
        } else if c == b'=' {
            value_next = true;
            between = false;
            if !drop_tag && cut_from.is_none() && bytes.get(j + 1) == Some(&b'=') {
                out.drop(j, j + 1); // the first '='
            }
        } else if c == b'/' {
            between = true;
            value_next = false;
        } else if value_next {
            value_next = false; // an unquoted value; whitespace ends it
        } else if between {
            between = false;
            attributes += 1;
            if attributes > MAX_ATTRIBUTES && cut_from.is_none() && !drop_tag {
                cut_from = Some(j);
            }
        }
        j += 1;
    }
    (j, cut_from)
}

/// Where the raw text of `name` that starts at `from` ends: its end tag, verbatim (or the end).
fn raw_text_end(bytes: &[u8], from: usize, name: &[u8]) -> usize {
    let mut k = from;
    loop {
        match find(bytes, k, b"</") {
            Some(p)
                if bytes.len() >= p + 2 + name.len() && bytes[p + 2..p + 2 + name.len()].eq_ignore_ascii_case(name) =>
            {
                return p;
            }
            Some(p) => k = p + 2,
            None => return bytes.len(),
        }
    }
}

fn find(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    hay.get(from..).and_then(|h| memchr::memmem::find(h, needle)).map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> (String, Vec<Warning>) {
        let mut w = Vec::new();
        let out = sanitize(s, &mut w).into_owned();
        (out, w)
    }

    #[test]
    fn clean_markup_is_borrowed_untouched() {
        let mut w = Vec::new();
        let html = "<html><body><p class=\"a\">x &lt; y</p><script>if (a<b) {}</script></body></html>";
        assert!(matches!(sanitize(html, &mut w), Cow::Borrowed(_)));
        assert!(w.is_empty());
    }

    #[test]
    fn repairs_seed_cases() {
        assert_eq!(clean("<<p>>hello</p>").0, "<p>hello</p>");
        assert_eq!(clean("<a href==\"/home\">h</a>").0, "<a href=\"/home\">h</a>");
        assert_eq!(clean("<p>a\0b\x01c\td</p>").0, "<p>abc\td</p>");
        // `==` inside a quoted value is content, not a typo.
        assert_eq!(clean("<a title=\"a==b\">x</a>").0, "<a title=\"a==b\">x</a>");
    }

    #[test]
    fn ruby_annotations_and_option_groups_nest_outside_their_parent_and_count_there() {
        // Outside <ruby>/<select> they nest: capped like any element.
        for tag in ["rt", "rb", "rtc", "rp", "optgroup"] {
            let (out, w) = clean(&format!("<body>{}x</body>", format!("<{tag}>").repeat(1000)));
            assert_eq!(out.matches(&format!("<{tag}>")).count(), MAX_DEPTH, "{tag}");
            assert!(matches!(w[..], [Warning::DepthLimited { .. }]), "{tag}: {w:?}");
        }
        // Inside them they close one another: nothing to cap, the page is left as it is.
        let ruby = format!("<body><ruby>{}</ruby></body>", "漢<rb>k<rt>kan<rtc>x<rp>(".repeat(1000));
        let select = format!("<body><select>{}</select></body>", "<optgroup label=g><option>o".repeat(1000));
        for page in [ruby, select] {
            let mut w = Vec::new();
            assert!(matches!(sanitize(&page, &mut w), Cow::Borrowed(_)));
            assert!(w.is_empty(), "{w:?}");
        }
    }

    #[test]
    fn an_element_keeps_at_most_max_attributes() {
        let attrs: String = (0..10_000).map(|i| format!(" a{i}=\"v {i}\"")).collect();
        let (out, w) = clean(&format!("<p{attrs}>text</p><i b=1>more</i>"));
        assert!(out.contains(&format!("a{}=", MAX_ATTRIBUTES - 1)) && !out.contains(&format!("a{}=", MAX_ATTRIBUTES)));
        assert!(out.ends_with(">text</p><i b=1>more</i>"), "{}", &out[out.len() - 40..]);
        assert!(matches!(w[..], [Warning::AttributesLimited { elements: 1, .. }]), "{w:?}");
        // Values with spaces, unquoted values, spaces around `=`, `/`: counted as attributes.
        let mixed: String =
            (0..MAX_ATTRIBUTES / 4).map(|i| format!(" t{i}=\"a b c\" u{i} = x v{i}=y w{i} /")).collect();
        let mut w = Vec::new();
        assert!(matches!(sanitize(&format!("<p{mixed}>x</p>"), &mut w), Cow::Borrowed(_)), "{w:?}");
    }

    #[test]
    fn deep_nesting_is_capped_with_a_warning() {
        let html = format!("{}text{}", "<div>".repeat(10_000), "</div>".repeat(10_000));
        let (out, w) = clean(&html);
        assert_eq!(out.matches("<div>").count(), MAX_DEPTH);
        assert_eq!(out.matches("</div>").count(), MAX_DEPTH);
        assert!(out.contains("text"));
        assert!(matches!(w[0], Warning::DepthLimited { dropped_tags: 9_744, .. }));
    }

    #[test]
    fn implicit_closers_do_not_count_as_depth() {
        let html = "<p>x".repeat(1_000);
        let (out, w) = clean(&html);
        assert_eq!(out, html);
        assert!(w.is_empty());
    }

    #[test]
    fn script_content_is_not_scanned_as_markup() {
        let html = format!("<script>{}</script><p>after</p>", "<div>".repeat(1_000));
        let (out, w) = clean(&html);
        assert_eq!(out, html);
        assert!(w.is_empty());
    }

    #[test]
    fn self_closed_svg_shapes_do_not_count_as_depth() {
        // Icons: `<path/>` closes itself inside `<svg>`; counted, a page of icons would look
        // 300 deep and lose its later tags (a real page did: its styles showed as text).
        let icon = "<svg viewBox=\"0 0 1 1\"><path d=\"M0 0/>\"/><circle r=\"1\" /></svg><svg/>";
        let html = format!("{}<div><style>p {{ color: red }}</style>text</div>", icon.repeat(1_000));
        let (out, w) = clean(&html);
        assert_eq!(out, html);
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn raw_text_elements_are_never_dropped() {
        let html = format!("{}<style>p {{ color: red }}</style>{}", "<div>".repeat(300), "</div>".repeat(300));
        let (out, _) = clean(&html);
        assert!(out.contains("<style>p { color: red }</style>"), "{}", &out[out.len() - 200..]);
    }
}
