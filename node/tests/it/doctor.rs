//! `weft doctor`, the real binary: on a broken setup it names each problem with its fix and
//! exits 1; on a working one (the model from `scripts/setup.sh`, Debian's Chromium) it passes.

use crate::common;

use common::WEFT;
use std::process::Command;

fn doctor(config: &std::path::Path) -> (bool, String) {
    let out = Command::new(WEFT).args(["doctor", "--config"]).arg(config).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn doctor_names_every_problem_with_its_fix_and_passes_a_working_setup() {
    let dir = common::work_dir();
    // A data dir that is a file, missing model files, no Chromium, a taken API port, a
    // bootstrap peer nobody listens on, and no contact for site owners (the default).
    let data = dir.path().join("not-a-dir");
    std::fs::write(&data, "x").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key = weft_p2p::identity::load_or_create(&dir.path().join("peer")).unwrap();
    let peer = key.public().to_peer_id();
    let toml = format!(
        "data_dir = \"{}\"\n[embed]\nmodel = \"/nonexistent/model.onnx\"\n[layouts]\nchromium = \"/nonexistent/chromium\"\n\
         [api]\nlisten = \"{}\"\n[p2p]\nenabled = true\nlisten = [\"/ip4/127.0.0.1/tcp/0\"]\n\
         bootstrap = [\"/ip4/127.0.0.1/tcp/{closed}/p2p/{peer}\"]\n",
        data.display(),
        taken.local_addr().unwrap()
    );
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, toml).unwrap();
    let (ok, text) = doctor(&broken);
    assert!(!ok, "{text}");
    for problem in [
        "FAIL  data dir",
        "FAIL  contact for site owners",
        "FAIL  model and ONNX Runtime",
        "FAIL  Chromium",
        "FAIL  API port",
        "FAIL  bootstrap",
    ] {
        let at = text.find(problem).unwrap_or_else(|| panic!("{problem:?} missing from:\n{text}"));
        let next = &text[at..].lines().nth(1).unwrap_or_default();
        assert!(next.trim_start().starts_with("fix: "), "{problem} has no fix:\n{text}");
    }
    assert!(text.contains("6 problem(s) to fix"), "{text}");
    drop(taken);

    // A working setup.
    let models = weft_index::testing::model_files();
    let toml = format!(
        "data_dir = \"{}\"\n[embed]\nmodel = \"{}\"\ntokenizer = \"{}\"\nort_library = \"{}\"\n[api]\nlisten = \"127.0.0.1:0\"\n\
         [fetch]\ncontact_url = \"mailto:ops@crawler.weft-volunteers.org\"\n",
        dir.path().join("data").display(),
        models.model.display(),
        models.tokenizer.display(),
        models.ort_library.display()
    );
    let good = dir.path().join("good.toml");
    std::fs::write(&good, toml).unwrap();
    let (ok, text) = doctor(&good);
    assert!(ok, "{text}");
    assert!(text.contains("ok    model and ONNX Runtime") && text.contains("ok    Chromium"), "{text}");
    assert!(text.contains("all checks passed"), "{text}");
    assert!(text.contains("User-Agent: WeftBot/0.1 (+mailto:ops@crawler.weft-volunteers.org)"), "{text}");
    assert!(text.contains("ok    vector index"), "{text}");
    // The block classifier built in: its size and load time, and the extractor it makes.
    let line = text.lines().find(|l| l.contains("extraction model")).unwrap_or_default();
    assert!(line.starts_with("ok    extraction model"), "{text}");
    assert!(line.contains(" trees, ") && line.contains(" KiB, loaded in ") && line.contains("+model-"), "{line}");

    // A vector snapshot whose bytes changed since its checksum was written: named, with what
    // the node does about it.
    let data = dir.path().join("data");
    std::fs::write(data.join(weft_index::vectors::FILE), b"snapshot bytes, changed").unwrap();
    std::fs::write(data.join(weft_index::vectors::CHECKSUM_FILE), blake3::hash(b"the bytes written").to_hex().as_str())
        .unwrap();
    let (_, text) = doctor(&good);
    assert!(text.contains("vector index") && text.contains("does not match its checksum"), "{text}");
    assert!(text.contains("rebuilds the vector index"), "{text}");
}

/// The document store is read from a copy: its documents and chunks counted when every record
/// reads, a record that does not decode named as a failure with its fix; the store itself is
/// left as it was.
#[test]
fn doctor_reads_the_document_store_from_a_copy() {
    use weft_index::store::{ChunkRecord, DocStore, NewChunk};
    use weft_node::doctor::{documents, Verdict};
    let dir = common::work_dir();
    assert_eq!(documents(dir.path()).verdict, Verdict::Ok, "no store yet");
    {
        let db = weft_frontier::open_db(&dir.path().join("db"), 8 << 20).unwrap();
        let store = DocStore::open(dir.path(), &db).unwrap();
        for i in 0..3u64 {
            let url = format!("https://a.test/{i}");
            let id = weft_index::DocId::of_url(&url);
            let record = weft_index::testing::indexed_record(&url, "T", 1, 10, vec![i]);
            let chunk = NewChunk { key: i, record: ChunkRecord::new(id, 0, 0, 4, 1, "text"), vector: vec![0.5; 4] };
            store.put(id, &record, &[chunk]).unwrap();
        }
    }
    let ok = documents(dir.path());
    assert_eq!(ok.verdict, Verdict::Ok, "{ok:?}");
    assert!(ok.detail.contains("3 documents, 3 chunks"), "{ok:?}");

    let docs_in_store = || {
        let db = fjall::Database::builder(dir.path().join(weft_index::store::DIR)).open().unwrap();
        let docs = db.keyspace("docs", fjall::KeyspaceCreateOptions::default).unwrap();
        (db, docs)
    };
    {
        let (_db, docs) = docs_in_store();
        docs.insert([7u8; 16], &b"\xff\xff"[..]).unwrap();
    }
    let bad = documents(dir.path());
    assert_eq!(bad.verdict, Verdict::Fail, "{bad:?}");
    assert!(bad.detail.contains("corrupt") && bad.fix.is_some(), "{bad:?}");
    // Only the copy was opened: the store still holds what it held, the bad record too.
    let (_db, docs) = docs_in_store();
    assert_eq!(docs.len().unwrap(), 4);
}
