//! Malformed input: never a panic, never a stack overflow, bounded work, warnings where the
//! output was degraded. Each case runs on a thread with the default 2 MiB stack, the size of
//! the runtime's blocking threads the node extracts on.

use std::time::Instant;
use url::Url;
use weft_extract::{extract, Extracted};

fn run_on_small_stack(body: Vec<u8>) -> Extracted {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || extract(&body, &[], &Url::parse("http://a.test/p").unwrap()))
        .unwrap()
        .join()
        .expect("extract must not panic or overflow the stack")
}

fn run(html: &str) -> Extracted {
    run_on_small_stack(html.as_bytes().to_vec())
}

#[test]
fn unclosed_tags_and_orphan_closers() {
    let e = run("<html><body><div><p>first paragraph of text<p>second <b>bold <i>both</b> italic?</i></div></span></p></table></body></html></html>");
    assert!(e.text.contains("first paragraph of text"));
    assert!(e.text.contains("second bold both italic?"), "{}", e.text);
    let e = run("</div></div></p><p>orphans before content</p></td></tr>");
    assert_eq!(e.text, "orphans before content");
}

#[test]
fn ten_thousand_deep_nesting_is_capped() {
    for (open, close) in [
        ("<div>", "</div>"),
        ("<span>", "</span>"),
        ("<table><tr><td>", "</td></tr></table>"),
        ("<ul><li>", "</li></ul>"),
        ("<b><i><u>", "</u></i></b>"),
    ] {
        let html = format!("{}deep text{}", open.repeat(10_000), close.repeat(10_000));
        let e = run(&html);
        assert!(e.warnings.iter().any(|w| w.kind() == "depth_limited"), "{open}: {:?}", e.warnings);
        assert!(e.text.contains("deep text") || e.text.is_empty(), "{open}");
    }
}

#[test]
fn twenty_megabytes_of_divs_in_bounded_time() {
    let html = "<div>".repeat(4 << 20); // 20 MiB
    let t = Instant::now();
    let e = run(&html);
    // Generous bound for a debug build on a loaded 2-core machine; release is ~100x faster.
    assert!(t.elapsed().as_secs() < 60, "took {:?}", t.elapsed());
    let kinds: Vec<_> = e.warnings.iter().map(|w| w.kind()).collect();
    assert!(kinds.contains(&"truncated") && kinds.contains(&"depth_limited"), "{kinds:?}");
}

/// The inputs that were quadratic in html5ever (100k `<rt>`: 11.4 s; 200k attributes on one
/// element: 8.2 s) are capped like any nesting, with their text kept. The benchmark over three
/// sizes is `examples/hostile.rs`.
#[test]
fn ruby_option_groups_and_attribute_floods_are_capped() {
    for unit in ["<rt>", "<rb>", "<rtc>", "<optgroup>"] {
        let e = run(&format!("<body><p>before</p>{}after</body>", unit.repeat(100_000)));
        assert!(e.warnings.iter().any(|w| w.kind() == "depth_limited"), "{unit}: {:?}", e.warnings);
        assert!(e.text.contains("before"), "{unit}: {}", e.text);
    }
    let attrs: String = (0..200_000).map(|i| format!(" a{i}=x")).collect();
    let e = run(&format!("<body><p{attrs}>the paragraph's text</p></body>"));
    assert!(e.warnings.iter().any(|w| w.kind() == "attributes_limited"), "{:?}", e.warnings);
    assert_eq!(e.text, "the paragraph's text");
}

/// Parsing stops at the time budget with what it read by then, and says so.
#[test]
fn parsing_past_its_time_budget_keeps_what_it_read() {
    let html = format!("<body><p>first words</p>{}</body>", "<p>more words here</p>".repeat(100_000));
    let mut warnings = Vec::new();
    let doc = weft_extract::parse(&html, std::time::Duration::ZERO, &mut warnings);
    let text: String = doc.root_element().text().collect();
    assert!(text.starts_with("first words"), "{}", &text[..40]);
    assert!(text.len() < html.len() / 2, "stopped early");
    match &warnings[..] {
        [weft_extract::Warning::TimeBudget { parsed_bytes, bytes, .. }] => {
            assert!(parsed_bytes < bytes, "{parsed_bytes} of {bytes}")
        }
        w => panic!("{w:?}"),
    }
    let mut warnings = Vec::new();
    let doc = weft_extract::parse(&html, weft_extract::PARSE_BUDGET, &mut warnings);
    assert!(warnings.is_empty() && doc.root_element().text().count() > 100_000);
}

#[test]
fn invalid_utf8_nuls_and_control_bytes() {
    let mut body =
        b"<html><head><meta charset=utf-8></head><body><p>good \xff\xfe\xfd bytes and \x00nul\x01 and \x1b escape"
            .to_vec();
    body.extend_from_slice(b" and a broken sequence \xe2\x82 end</p><a href=\"/x\0y\">link\0</a></body></html>");
    let e = run_on_small_stack(body);
    assert!(e.text.contains("good"), "{}", e.text);
    assert!(e.text.contains("nul"));
    assert!(!e.text.contains('\0'));
    assert!(e.warnings.iter().any(|w| w.kind() == "invalid_bytes"));
}

#[test]
fn mixed_encodings_in_one_document() {
    // UTF-8 prose, a windows-1252 byte pasted in, and double-encoded UTF-8, all on one page.
    let mut body = "<html><head><meta charset=utf-8></head><body><p>Zürich café — ".as_bytes().to_vec();
    body.extend_from_slice(b"caf\xe9 ");
    body.extend_from_slice("and cafÃ© too</p></body></html>".as_bytes());
    let e = run_on_small_stack(body);
    assert!(e.text.starts_with("Zürich café — caf\u{fffd} and café too"), "{}", e.text);
}

#[test]
fn script_written_markup_is_not_content() {
    let e = run(
        r#"<body><script>document.write("<p>WRITTEN BY SCRIPT</p><div>");</script><p>Real text that is on the page, with commas.</p>
        <script>document.write('</div><table><tr><td>')</script><noscript><p>NOSCRIPT TEXT</p></noscript></body>"#,
    );
    assert!(e.text.contains("Real text"));
    assert!(!e.text.contains("WRITTEN BY SCRIPT") && !e.text.contains("NOSCRIPT"));
}

#[test]
fn seed_004_repairs() {
    let e = run("<<p>>Doubled brackets paragraph<</p>> <a href==\"/home\">home</a>");
    assert!(e.text.contains("Doubled brackets paragraph"), "{}", e.text);
    assert_eq!(e.links[0].url.as_str(), "http://a.test/home");
}

#[test]
fn arbitrary_byte_soup_never_panics() {
    // A deterministic pseudo-random corpus biased toward markup characters.
    let alphabet = b"<>/=\"' abcdivpscrt-!\0\xff\xc3\xa9&#;\n";
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for len in [0usize, 1, 2, 7, 64, 1_000, 20_000] {
        for _ in 0..20 {
            let body: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    alphabet[(state % alphabet.len() as u64) as usize]
                })
                .collect();
            run_on_small_stack(body);
        }
    }
}

#[test]
fn empty_and_non_html_inputs() {
    assert_eq!(run("").text, "");
    assert!(run("").warnings.iter().any(|w| w.kind() == "no_main_content"));
    let e = run_on_small_stack(vec![0u8; 10_000]);
    assert_eq!(e.text, "");
    let e = run("{\"json\": true}");
    assert_eq!(e.text, "{\"json\": true}");
}
