//! Development aid: `outline DEVSET_DIR ID_PREFIX [MIN_CHARS]` prints the element outline that
//! content selection sees for one dev-set page; `outline DEVSET_DIR ID_PREFIX blocks` prints
//! every text block with what became of it.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::Path::new(&args[1]);
    let pages = weft_extract::devset::load(dir).expect("load the dev set");
    let p = pages.iter().find(|p| p.id.starts_with(&args[2])).expect("page id");
    if args.get(3).map(String::as_str) == Some("blocks") {
        for (text, verdict) in weft_extract::debug_blocks(&p.html) {
            println!("{verdict:?}\t{}", text.chars().take(150).collect::<String>().replace('\n', " / "));
        }
        return;
    }
    let min = args.get(3).and_then(|m| m.parse().ok()).unwrap_or(300);
    let url = url::Url::parse(&p.url).expect("url");
    print!("{}", weft_extract::debug_outline(&p.html, &url, min));
}
