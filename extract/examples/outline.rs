//! Development aid: `outline DEVSET_DIR ID_PREFIX [MIN_CHARS]` prints the element outline that
//! content selection sees for one dev-set page.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = weft_extract::devset::locate(args.get(1).map(std::path::Path::new)).expect("dev set");
    let pages = weft_extract::devset::load(&dir).expect("load");
    let p = pages.iter().find(|p| p.id.starts_with(&args[2])).expect("page id");
    let min = args.get(3).and_then(|m| m.parse().ok()).unwrap_or(300);
    let url = url::Url::parse(&p.url).expect("url");
    print!("{}", weft_extract::debug_outline(&p.html, &url, min));
}
