//! Bytes → text, the way a browser would decide, plus repair of the usual mojibake.
//!
//! Order of evidence (WHATWG "determine the character encoding", simplified): a byte order mark
//! wins, then the `charset` of the Content-Type header, then `<meta charset>` / `http-equiv` in
//! the first 1024 bytes, else statistical detection with chardetng. Labels go through
//! encoding_rs, which applies the WHATWG label table (`iso-8859-1` and `ascii` mean
//! windows-1252). Decoding never fails: invalid bytes become U+FFFD and a warning.
//!
//! Two real-world lies are corrected. A page labelled as a legacy single-byte encoding whose bytes
//! are valid UTF-8 with multi-byte sequences is UTF-8 (legacy text almost never forms valid
//! UTF-8 by accident). And text that was UTF-8 decoded as windows-1252 once upstream ("Ã©" for
//! "é", "â€™" for "’") is repaired run by run, only where the repair yields valid UTF-8.

use crate::Warning;
use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// Where the encoding decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CharsetSource {
    Bom,
    Header,
    Meta,
    Detected,
}

/// The decoded document.
#[derive(Debug)]
pub struct Decoded {
    pub text: String,
    pub encoding: &'static Encoding,
    pub source: CharsetSource,
}

/// How far into the document `<meta charset>` is looked for (the HTML spec's prescan window).
const PRESCAN_BYTES: usize = 1024;

/// Decodes `body`. `content_type` is the HTTP Content-Type header, if any; `tld` the last label
/// of the host (chardetng uses it as a hint for legacy encodings).
pub fn decode(body: &[u8], content_type: Option<&str>, tld: Option<&str>, warnings: &mut Vec<Warning>) -> Decoded {
    let (encoding, source, body) = if let Some((enc, bom_len)) = Encoding::for_bom(body) {
        (enc, CharsetSource::Bom, &body[bom_len..])
    } else if let Some(enc) = content_type.and_then(charset_param).and_then(label) {
        (enc, CharsetSource::Header, body)
    } else if let Some(enc) = prescan_meta(&body[..body.len().min(PRESCAN_BYTES)]) {
        (enc, CharsetSource::Meta, body)
    } else {
        (detect(body, tld), CharsetSource::Detected, body)
    };
    // A legacy label on valid, non-ASCII UTF-8 is a mislabel.
    let encoding = if source != CharsetSource::Bom
        && encoding != UTF_8
        && encoding.is_single_byte()
        && !body.is_ascii()
        && std::str::from_utf8(body).is_ok()
    {
        warnings.push(Warning::CharsetMismatch { declared: encoding.name().to_string(), used: "UTF-8".into() });
        UTF_8
    } else {
        encoding
    };
    let (text, had_errors) = encoding.decode_without_bom_handling(body);
    if had_errors {
        warnings.push(Warning::InvalidBytes { encoding: encoding.name().to_string() });
    }
    let mut text = text.into_owned();
    if let Some(fixed) = repair_mojibake(&text) {
        warnings.push(Warning::MojibakeRepaired);
        text = fixed;
    }
    Decoded { text, encoding, source }
}

/// Maps a label to an encoding the way browsers do. UTF-16 labels in markup mean UTF-8 (the
/// bytes were already read as ASCII-compatible to find the label at all).
fn label(name: &str) -> Option<&'static Encoding> {
    let enc = Encoding::for_label(name.trim().trim_matches(|c| c == '"' || c == '\'').as_bytes())?;
    Some(if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE || enc == encoding_rs::X_USER_DEFINED {
        UTF_8
    } else {
        enc
    })
}

/// `charset=...` from a Content-Type value (header or http-equiv content).
fn charset_param(content_type: &str) -> Option<&str> {
    let lower = content_type.to_ascii_lowercase();
    let at = lower.find("charset")?;
    let rest = &content_type[at + "charset".len()..];
    let rest = rest.trim_start().strip_prefix('=')?.trim_start();
    let end = rest.find([';', ',', ' ', '\t']).unwrap_or(rest.len());
    let value = rest[..end].trim_matches(|c| c == '"' || c == '\'');
    (!value.is_empty()).then_some(value)
}

/// Finds `<meta charset=X>` or `<meta http-equiv=content-type content="...charset=X">` in the
/// prescan window, tolerating any attribute order and quoting.
fn prescan_meta(window: &[u8]) -> Option<&'static Encoding> {
    let text = String::from_utf8_lossy(window);
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("<meta") {
        let start = from + pos;
        let end = lower[start..].find('>').map(|e| start + e).unwrap_or(lower.len());
        let tag = &lower[start..end];
        from = end.max(start + 5);
        if let Some(at) = tag.find("charset") {
            // Either `charset=` as an attribute or inside a content value.
            let after = tag[at + 7..].trim_start();
            if let Some(value) = after.strip_prefix('=') {
                let value = value.trim_start().trim_start_matches(['"', '\'']);
                let stop = value.find(['"', '\'', ' ', '/', ';', '>']).unwrap_or(value.len());
                if let Some(enc) = label(&value[..stop]) {
                    return Some(enc);
                }
            }
        }
    }
    None
}

fn detect(body: &[u8], tld: Option<&str>) -> &'static Encoding {
    if body.is_ascii() || std::str::from_utf8(body).is_ok() {
        return UTF_8;
    }
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    detector.feed(body, true);
    // chardetng asserts the hint is a lowercase ASCII label without dots.
    let tld =
        tld.filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
    detector.guess(tld.map(str::as_bytes), chardetng::Utf8Detection::Allow)
}

/// Characters that begin a UTF-8 sequence when that sequence is misread as windows-1252.
fn is_mojibake_lead(c: char) -> bool {
    matches!(
        c,
        'Â' | 'Ã'
            | 'Ä'
            | 'Å'
            | 'Æ'
            | 'Ç'
            | 'Ð'
            | 'Ñ'
            | 'Ø'
            | 'Ù'
            | 'â'
            | 'ã'
            | 'ä'
            | 'å'
            | 'æ'
            | 'ç'
            | 'è'
            | 'é'
            | 'ï'
            | 'ð'
    )
}

/// Repairs runs of non-ASCII characters that are UTF-8 bytes misread as windows-1252. Returns
/// `None` when nothing was repaired. Each run is repaired only if all its characters map back
/// to single windows-1252 bytes and those bytes are valid UTF-8 — genuine Latin-1 text almost
/// never passes that test.
pub fn repair_mojibake(text: &str) -> Option<String> {
    // Cheap gate, on bytes: every lead character is U+00C2..U+00F0, encoded C3 xx, and the
    // character after it is non-ASCII too (its first byte is at least 0xC2).
    let bytes = text.as_bytes();
    let gate = memchr::memchr_iter(0xC3, bytes).any(|i| {
        let (Some(&b1), Some(&b2)) = (bytes.get(i + 1), bytes.get(i + 2)) else { return false };
        b2 >= 0xC2 && char::from_u32(0xC0 + (b1 as u32 & 0x3F)).is_some_and(is_mojibake_lead)
    });
    if !gate {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| !c.is_ascii()) {
        out.push_str(&rest[..start]);
        let run_len = rest[start..].find(|c: char| c.is_ascii()).unwrap_or(rest.len() - start);
        let run = &rest[start..start + run_len];
        match fix_run(run) {
            Some(fixed) => {
                out.push_str(&fixed);
                changed = true;
            }
            None => out.push_str(run),
        }
        rest = &rest[start + run_len..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn fix_run(run: &str) -> Option<String> {
    if run.chars().count() < 2 || !run.chars().next().is_some_and(is_mojibake_lead) {
        return None;
    }
    let (bytes, _, unmappable) = WINDOWS_1252.encode(run);
    if unmappable {
        return None;
    }
    let fixed = std::str::from_utf8(&bytes).ok()?;
    // A real repair shrinks the text: multi-byte sequences collapse into single characters.
    (fixed.chars().count() < run.chars().count()).then(|| fixed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(body: &[u8], ct: Option<&str>) -> (String, &'static str, CharsetSource, Vec<Warning>) {
        let mut w = Vec::new();
        let d = decode(body, ct, None, &mut w);
        (d.text, d.encoding.name(), d.source, w)
    }

    #[test]
    fn header_wins_over_meta_and_latin1_means_windows_1252() {
        // 0x93/0x94 are curly quotes in windows-1252 but C1 controls in real ISO-8859-1.
        let body = b"<meta charset=utf-8><p>\x93hi\x94 caf\xe9</p>";
        let (text, enc, src, _) = dec(body, Some("text/html; charset=ISO-8859-1"));
        assert_eq!(enc, "windows-1252");
        assert_eq!(src, CharsetSource::Header);
        assert!(text.contains("\u{201c}hi\u{201d} café"), "{text}");
    }

    #[test]
    fn meta_charset_and_http_equiv_are_found() {
        let (text, enc, src, _) = dec(b"<html><head><meta charset='koi8-r'></head>\xf0\xd2\xc9", None);
        assert_eq!((enc, src), ("KOI8-R", CharsetSource::Meta));
        assert!(text.ends_with("При"));
        let body = b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=shift_jis\">\x93\xfa\x96\x7b";
        let (text, enc, _, _) = dec(body, Some("text/html"));
        assert_eq!(enc, "Shift_JIS");
        assert!(text.ends_with("日本"));
    }

    #[test]
    fn bom_wins_over_everything() {
        let (text, enc, src, _) = dec(b"\xef\xbb\xbf<p>caf\xc3\xa9</p>", Some("text/html; charset=windows-1252"));
        assert_eq!((enc, src), ("UTF-8", CharsetSource::Bom));
        assert_eq!(text, "<p>café</p>");
    }

    #[test]
    fn unlabelled_legacy_bytes_are_detected() {
        let body = "<p>Les élèves étudient à l'école où ils reçoivent des leçons très intéressantes.</p>";
        let (bytes, _, _) = WINDOWS_1252.encode(body);
        let (text, enc, src, _) = dec(&bytes, None);
        assert_eq!(src, CharsetSource::Detected);
        assert_eq!(enc, "windows-1252");
        assert_eq!(text, body);
    }

    #[test]
    fn utf8_labelled_as_latin1_is_read_as_utf8() {
        let (text, enc, _, w) = dec("<p>naïve café</p>".as_bytes(), Some("text/html; charset=iso-8859-1"));
        assert_eq!(enc, "UTF-8");
        assert_eq!(text, "<p>naïve café</p>");
        assert!(matches!(w[0], Warning::CharsetMismatch { .. }));
    }

    #[test]
    fn windows_1252_mojibake_is_repaired_but_real_latin1_is_left_alone() {
        let (text, _, _, w) = dec("<p>Itâ€™s a cafÃ© â€” naÃ¯ve</p>".as_bytes(), Some("text/html; charset=utf-8"));
        assert_eq!(text, "<p>It’s a café — naïve</p>");
        assert!(w.contains(&Warning::MojibakeRepaired));
        assert_eq!(repair_mojibake("Ãgua, São Paulo, Ärger"), None);
    }

    #[test]
    fn invalid_bytes_are_replaced_with_a_warning() {
        let (text, _, _, w) = dec(b"<p>ok \xff\xfe bad</p>", Some("text/html; charset=utf-8"));
        assert!(text.contains('\u{fffd}'));
        assert!(matches!(w[0], Warning::InvalidBytes { .. }));
    }
}
