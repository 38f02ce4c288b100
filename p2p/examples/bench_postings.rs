//! What one posting costs: its bytes on the wire, and the time to sign it (the publisher) and
//! to check it (a cell's owner: sizes, the unit vector, the claimed cell among the codebook's
//! best, the signature), against the reference of a plain CBOR decode of the same bytes.
//!
//! The postings are shaped like real ones: a 256-token chunk's text (~1.4 KB), a 384-dim unit
//! vector in f16 near one of the shipped codebook's cells, a page's URL and title. Five rounds
//! alternating the measures, medians printed.
//!
//! ```sh
//! cargo run --release -p weft-p2p --example bench_postings
//! ```

use std::time::Instant;
use weft_p2p::placement::shipped;
use weft_p2p::postings::{check, PageMeta, Posting, PostingBatch, MAX_BATCH_ITEMS};

const POSTINGS: usize = 2000;
const ROUNDS: usize = 5;

fn postings(key: &libp2p::identity::Keypair) -> Vec<Posting> {
    let book = shipped();
    let words = "the planner chooses a join order from the statistics it keeps for each table and index";
    (0..POSTINGS)
        .map(|i| {
            let cell = (i * 37 % book.len()) as u32;
            // Near the cell's centroid, not on it.
            let mut v: Vec<f32> =
                book.cell(cell).iter().enumerate().map(|(d, x)| x + 0.01 * ((d * 7 + i) % 5) as f32 - 0.02).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= n);
            let cell = book.nearest(&v, 1)[0].0;
            let url = format!("https://docs.example.org/manual/section-{i}.html");
            let mut p = Posting {
                codebook: book.id().to_string(),
                cell,
                model: "sentence-transformers/all-MiniLM-L6-v2".into(),
                doc: format!("{:032x}", i as u128 * 0x9e37_79b9_7f4a_7c15),
                position: (i % 12) as u32,
                page: PageMeta {
                    url,
                    title: format!("Section {i}: Query planning"),
                    published: Some("2025-03-01T00:00:00Z".into()),
                    ..Default::default()
                },
                text: std::iter::repeat_n(words, 16).collect::<Vec<_>>().join(" "),
                vector: Posting::encode_vector(&v),
                simhash: Some(i as u64 * 0x51_7cc1_b727_220a),
                language: Some("en".into()),
                fetched_at: 1_790_000_000 + i as u64,
                publisher: Vec::new(),
                signature: Vec::new(),
            };
            p.sign(key);
            p
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let key = libp2p::identity::Keypair::generate_ed25519();
    let ladder = weft_p2p::placement::shipped_ladder();
    let all = postings(&key);
    let encoded: Vec<Vec<u8>> = all.iter().map(|p| cbor4ii::serde::to_vec(Vec::new(), p).unwrap()).collect();
    let bytes = encoded.iter().map(Vec::len).sum::<usize>() as f64 / POSTINGS as f64;
    let text = all.iter().map(|p| p.text.len()).sum::<usize>() as f64 / POSTINGS as f64;
    let batch = PostingBatch { postings: all[..MAX_BATCH_ITEMS].to_vec(), ..Default::default() };
    let batch_bytes = cbor4ii::serde::to_vec(Vec::new(), &batch).unwrap().len();

    let (mut sign, mut checked, mut decode) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let mut copy = all.clone();
        let t = Instant::now();
        for p in &mut copy {
            p.sign(&key);
        }
        sign.push(t.elapsed().as_secs_f64() * 1e6 / POSTINGS as f64);

        let t = Instant::now();
        for bytes in &encoded {
            std::hint::black_box(cbor4ii::serde::from_slice::<Posting>(bytes).unwrap());
        }
        decode.push(t.elapsed().as_secs_f64() * 1e6 / POSTINGS as f64);

        let t = Instant::now();
        for p in &all {
            check(p, ladder, 0..=0, &p.model, |_, _| true).unwrap();
        }
        checked.push(t.elapsed().as_secs_f64() * 1e6 / POSTINGS as f64);
    }
    println!("{POSTINGS} postings, {ROUNDS} rounds, medians");
    println!("bytes per posting on the wire: {bytes:.0} (text {text:.0}, vector {})", ladder.level(0).dims() * 2);
    println!("a full batch of {MAX_BATCH_ITEMS}: {:.2} MB", batch_bytes as f64 / 1e6);
    println!("sign (publisher): {:.1} µs per posting", median(sign));
    println!("check (cell owner, signature included): {:.1} µs per posting", median(checked.clone()));
    println!("reference, CBOR decode of the same posting: {:.1} µs", median(decode));
    println!("a full batch checked on the event loop: {:.1} ms", median(checked) * MAX_BATCH_ITEMS as f64 / 1000.0);
}
