//! The corpus: the manuals' pages on their simulated hosts, extracted and indexed by the real
//! indexer into `target/placement/` (resumed where an earlier run stopped), and every chunk's
//! vector read back.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use weft_config::IndexConfig;
use weft_index::{Document, Indexer, LocalIndex};
use weft_simnet::rng::Rng;

/// The manuals read unless `WEFT_PLACEMENT_DOCS` names others.
pub(crate) const DEFAULT_DOCS: &[&str] = &[
    "/usr/share/doc/postgresql-doc-15/html",
    "/usr/share/doc/python3.11/html",
    "/usr/share/doc/rust-doc/html",
    "/usr/share/doc/git-doc",
    "/usr/share/doc/debian-reference-common/docs",
    "/usr/share/doc/linux-doc-6.1/html",
    "/usr/share/doc/debian-handbook/html/en-US",
    "/usr/share/doc/python-django-doc/html",
    "/usr/share/doc/sqlite3",
];

/// Pages per simulated host.
pub(crate) const PAGES_PER_HOST: usize = 40;

/// A page of a manual and the simulated host it is served from.
pub(crate) struct Page {
    pub(crate) path: PathBuf,
    pub(crate) host: String,
    pub(crate) url: String,
}

pub(crate) fn html_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            html_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "html" || x == "htm")
            // Rendered sources (rustdoc's, Sphinx's) and trait-implementor lists are code, not prose.
            && !p.components().any(|c| ["src", "implementors", "_modules", "_sources"].iter().any(|x| c.as_os_str() == *x))
        {
            out.push(p);
        }
    }
}

pub(crate) fn slug(s: &str) -> String {
    let s: String = s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    s.split('-').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("-")
}

/// Every page of the manuals, each on a host: a directory's pages, forty to a host, in name
/// order. Interleaved across the manuals (seeded), so a capped corpus holds some of each.
pub(crate) fn pages(roots: &[PathBuf]) -> Vec<Page> {
    let mut per_root: Vec<Vec<Page>> = Vec::new();
    for root in roots {
        let mut files = Vec::new();
        html_files(root, &mut files);
        files.sort();
        let mut by_dir: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
        for f in files {
            by_dir.entry(f.parent().unwrap().to_path_buf()).or_default().push(f);
        }
        let mut out = Vec::new();
        for (dir, files) in by_dir {
            let rel = dir.strip_prefix(root).unwrap_or(&dir).to_string_lossy().into_owned();
            let base = slug(&format!("{}-{}", root.to_string_lossy(), rel));
            for (i, group) in files.chunks(PAGES_PER_HOST).enumerate() {
                let host = format!("{base}-{i}.test");
                for f in group {
                    let name = f.file_name().unwrap().to_string_lossy().into_owned();
                    out.push(Page { path: f.clone(), url: format!("http://{host}/{name}"), host: host.clone() });
                }
            }
        }
        println!("  {}: {} pages", root.display(), out.len());
        per_root.push(out);
    }
    let mut rng = Rng(0x504c_4143); // "PLAC"
    for p in &mut per_root {
        rng.shuffle(p);
    }
    let mut mixed = Vec::new();
    let mut iters: Vec<_> = per_root.into_iter().map(|v| v.into_iter()).collect();
    loop {
        let before = mixed.len();
        for it in &mut iters {
            mixed.extend(it.next());
        }
        if mixed.len() == before {
            return mixed;
        }
    }
}

/// The corpus as indexed: documents, their hosts, their chunks' vectors.
pub(crate) struct Corpus {
    pub(crate) dims: usize,
    /// Per document: (url, title, host index).
    pub(crate) docs: Vec<(String, String, usize)>,
    pub(crate) hosts: Vec<String>,
    /// Per chunk: its document.
    pub(crate) chunk_doc: Vec<u32>,
    /// Chunk vectors, `dims` each, unit length.
    pub(crate) vectors: Vec<f32>,
}

impl Corpus {
    pub(crate) fn vector(&self, i: usize) -> &[f32] {
        &self.vectors[i * self.dims..(i + 1) * self.dims]
    }
    pub(crate) fn len(&self) -> usize {
        self.chunk_doc.len()
    }
}

pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Indexes pages until the index holds `chunks` chunks (resuming an index left by an earlier
/// run), then reads every chunk's vector back.
pub(crate) fn corpus(roots: &[PathBuf], chunks: usize) -> anyhow::Result<Corpus> {
    let dir = target_dir().join("placement").join("index");
    std::fs::create_dir_all(&dir)?;
    let db = sled::open(dir.join("db"))?;
    let config = IndexConfig::default();
    let index = Arc::new(LocalIndex::open(&db, &dir, 384, &config)?);
    let pages = pages(roots);
    anyhow::ensure!(
        !pages.is_empty(),
        "no pages under {roots:?}: run scripts/bench-placement.sh (or set WEFT_PLACEMENT_DOCS)"
    );
    if index.store().chunk_count() < chunks {
        let embed = weft_index::testing::embed_config();
        let mut indexer = Indexer::new(index.clone(), &embed, &config)?;
        let started = Instant::now();
        let at_start = index.store().chunk_count();
        println!("indexing into {} until it holds {chunks} chunks (has {at_start})", dir.display());
        let mut batch = Vec::new();
        for page in &pages {
            if index.store().chunk_count() >= chunks {
                break;
            }
            if index.document(&page.url)?.is_some() {
                continue;
            }
            let body = std::fs::read(&page.path)?;
            let url = url::Url::parse(&page.url)?;
            let e = weft_extract::extract(&body, &[("content-type", "text/html")], &url);
            if e.word_count < 20 {
                continue;
            }
            batch.push(Document {
                url: page.url.clone(),
                title: e.metadata.title.clone().unwrap_or_default(),
                text: e.text.clone(),
                fetched_at: 1,
                ..Default::default()
            });
            // Large batches: every batch ends in a sled sync and a tantivy commit.
            if batch.len() == 64 {
                indexer.index(std::mem::take(&mut batch))?;
                let n = index.store().chunk_count();
                let rate = (n - at_start) as f64 / started.elapsed().as_secs_f64();
                print!(
                    "\r  {n} chunks, {rate:.1} chunks/s, ~{:.0} min left   ",
                    chunks.saturating_sub(n) as f64 / rate.max(0.1) / 60.0
                );
                use std::io::Write;
                std::io::stdout().flush()?;
            }
        }
        if !batch.is_empty() {
            indexer.index(batch)?;
        }
        println!();
    }
    let host_of: HashMap<&str, &str> = pages.iter().map(|p| (p.url.as_str(), p.host.as_str())).collect();
    let mut hosts: Vec<String> = Vec::new();
    let mut host_index: HashMap<String, usize> = HashMap::new();
    let mut docs = Vec::new();
    let mut doc_index: HashMap<weft_index::DocId, u32> = HashMap::new();
    let mut chunk_doc = Vec::new();
    let mut vectors = Vec::new();
    let store = index.store();
    for item in store.vectors() {
        let (key, v) = item?;
        let Some(chunk) = store.chunk(key)? else { continue };
        let d = match doc_index.get(&chunk.doc) {
            Some(d) => *d,
            None => {
                let Some(record) = store.doc(&chunk.doc)? else { continue };
                let host = host_of.get(record.url.as_str()).copied().unwrap_or("unknown.test").to_string();
                let next = host_index.len();
                let h = *host_index.entry(host.clone()).or_insert_with(|| {
                    hosts.push(host);
                    next
                });
                docs.push((record.url, record.title, h));
                doc_index.insert(chunk.doc, docs.len() as u32 - 1);
                docs.len() as u32 - 1
            }
        };
        chunk_doc.push(d);
        vectors.extend_from_slice(&v);
    }
    Ok(Corpus { dims: 384, docs, hosts, chunk_doc, vectors })
}

/// The corpus of the hosts whose share point (a blake3 of the name, drawn apart from the
/// held-out bit) falls below `share`: the content of a network `share` times the size, each
/// member bringing as much.
pub(crate) fn subset(corpus: &Corpus, share: f64) -> Corpus {
    let point = |host: &str| {
        let h = blake3::hash(host.as_bytes());
        f64::from(u32::from_le_bytes(h.as_bytes()[4..8].try_into().expect("four bytes"))) / 4_294_967_296.0
    };
    let mut host_map: HashMap<usize, usize> = HashMap::new();
    let mut hosts = Vec::new();
    for (i, h) in corpus.hosts.iter().enumerate() {
        if point(h) < share {
            host_map.insert(i, hosts.len());
            hosts.push(h.clone());
        }
    }
    let mut doc_map: HashMap<u32, u32> = HashMap::new();
    let mut docs = Vec::new();
    for (i, (url, title, h)) in corpus.docs.iter().enumerate() {
        if let Some(nh) = host_map.get(h) {
            doc_map.insert(i as u32, docs.len() as u32);
            docs.push((url.clone(), title.clone(), *nh));
        }
    }
    let (mut chunk_doc, mut vectors) = (Vec::new(), Vec::new());
    for c in 0..corpus.len() {
        if let Some(d) = doc_map.get(&corpus.chunk_doc[c]) {
            chunk_doc.push(*d);
            vectors.extend_from_slice(corpus.vector(c));
        }
    }
    Corpus { dims: corpus.dims, docs, hosts, chunk_doc, vectors }
}
