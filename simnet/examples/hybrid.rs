//! Hybrid retrieval, measured: hit@1 and hit@3 of the vectors alone against the vectors fused
//! with BM25 — textbook reciprocal rank fusion, and the cosine plus a bonus for the words' rank
//! at three weights (the node's default among them) — on
//! - the topic web's thirty paraphrased questions (meaning, not words: fusion must not hurt);
//! - keyword-style questions over the simulator's PostgreSQL manual — function, setting and
//!   view names, what an operator types — each with the page that documents it;
//!
//! plus what the lexical index costs: its size on disk beside the vectors', indexing time, and
//! query latency (the same queries, both ways, alternating; medians).
//!
//! ```sh
//! cargo run --release -p weft-simnet --example hybrid            # the figures
//! cargo run --release -p weft-simnet --example hybrid -- --list  # the manual's pages in the set
//! ```
//!
//! The manual is the simulator's (`WEFT_SIMNET_DOCS`, default `postgresql-doc-15`'s HTML,
//! installed by `scripts/setup.sh`), the same 500 pages `WebSpec::default()` serves.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_config::IndexConfig;
use weft_index::{Document, Embedder, Fusion, Indexer, LocalIndex};
use weft_simnet::docs::{build, docs_dir, load, DocPage, WebSpec};
use weft_simnet::topics::topic_page;
use weft_simnet::TOPICS;

/// Keyword-style questions — a program, function, setting, view or statement as an operator
/// would type it — and the manual page (among the 500 served) that documents it. Written by
/// reading the pages' names and checking each term occurs in its page; many occur on other
/// pages too (`dblink_is_busy` on four), as names do.
const KEYWORD_QUESTIONS: &[(&str, &str)] = &[
    ("pg_isready", "app-pg-isready.html"),
    ("pg_checksums --enable", "app-pgchecksums.html"),
    ("pg_verifybackup", "app-pgverifybackup.html"),
    ("vacuumdb --analyze-only", "app-vacuumdb.html"),
    ("auth_delay.milliseconds", "auth-delay.html"),
    ("auto_explain.log_min_duration", "auto-explain.html"),
    ("ldapbasedn", "auth-ldap.html"),
    ("radiusservers", "auth-radius.html"),
    ("pg_ident.conf", "auth-username-maps.html"),
    ("basebackup_to_shell.command", "basebackup-to-shell.html"),
    ("pages_per_range", "brin-intro.html"),
    ("citext", "citext.html"),
    ("dblink_connect_u", "contrib-dblink-connect-u.html"),
    ("dblink_get_notify", "contrib-dblink-get-notify.html"),
    ("dblink_is_busy", "contrib-dblink-is-busy.html"),
    ("ll_to_earth", "earthdistance.html"),
    ("gen_random_uuid", "functions-uuid.html"),
    ("setval", "functions-sequence.html"),
    ("ntile", "functions-window.html"),
    ("array_position", "functions-array.html"),
    ("pg_event_trigger_ddl_commands", "functions-event-triggers.html"),
    ("pg_mcv_list_items", "functions-statistics.html"),
    ("file_fdw", "file-fdw.html"),
    ("jit_provider", "jit-configuration.html"),
    ("PGPASSFILE", "libpq-pgpass.html"),
    ("PQnotifies", "libpq-notify.html"),
    ("PQsetNoticeProcessor", "libpq-notice-processing.html"),
    ("PQisthreadsafe", "libpq-threading.html"),
    ("pg_create_logical_replication_slot", "logicaldecoding-example.html"),
    ("pgrowlocks", "pgrowlocks.html"),
    ("pg_test_timing", "pgtesttiming.html"),
    ("pg_visibility_map", "pgvisibility.html"),
    ("plperl.on_init", "plperl-under-the-hood.html"),
    ("SPI_cursor_open_with_args", "spi-spi-cursor-open-with-args.html"),
    ("SPI_palloc", "spi-spi-palloc.html"),
    ("SPI_getnspname", "spi-spi-getnspname.html"),
    ("tsm_system_rows", "tsm-system-rows.html"),
    ("triggered_change_notification", "tcn.html"),
    ("ssl_client_cert_present", "sslinfo.html"),
    ("pg_hba_file_rules", "view-pg-hba-file-rules.html"),
    ("pg_backend_memory_contexts", "view-pg-backend-memory-contexts.html"),
    ("pg_shmem_allocations", "view-pg-shmem-allocations.html"),
    ("pg_timezone_abbrevs", "view-pg-timezone-abbrevs.html"),
    ("pg_available_extension_versions", "view-pg-available-extension-versions.html"),
    ("ALTER SYSTEM", "sql-altersystem.html"),
    ("REASSIGN OWNED", "sql-reassign-owned.html"),
    ("IMPORT FOREIGN SCHEMA", "sql-importforeignschema.html"),
    ("PREPARE TRANSACTION", "sql-prepare-transaction.html"),
    ("SET CONSTRAINTS", "sql-set-constraints.html"),
    ("ROLLBACK TO SAVEPOINT", "sql-rollback-to.html"),
    ("SECURITY LABEL", "sql-security-label.html"),
    ("TRUNCATE RESTART IDENTITY", "sql-truncate.html"),
    ("deadlock_timeout", "runtime-config-locks.html"),
    ("exit_on_error", "runtime-config-error-handling.html"),
    ("pg_receivexlog", "app-pgreceivexlog.html"),
    ("pg_lsn", "datatype-pg-lsn.html"),
    ("macaddr8", "datatype-net-types.html"),
    ("bytea_output", "datatype-binary.html"),
    ("ts_debug", "textsearch-debugging.html"),
    ("default_text_search_config", "textsearch-configuration.html"),
    ("int_array_aggregate", "intagg.html"),
    ("xpath_table", "xml2.html"),
    ("test_decoding", "test-decoding.html"),
    ("pg_replication_origin_create", "replication-origins.html"),
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn document(url: &str, html: &str) -> Document {
    let e = weft_extract::extract(html.as_bytes(), &[], &url::Url::parse(url).unwrap());
    Document {
        url: url.into(),
        title: e.metadata.title.clone().unwrap_or_default(),
        text: e.text,
        fetched_at: 1,
        ..Default::default()
    }
}

fn main() -> anyhow::Result<()> {
    let dir = docs_dir();
    let docs = match load(&dir) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("the PostgreSQL manual is not there ({e}): run scripts/setup.sh or set WEFT_SIMNET_DOCS");
            std::process::exit(2);
        }
    };
    let web = build(&docs, &WebSpec::default(), 8080)?;
    let served: HashSet<String> = web.titles.keys().map(|(_, path)| path.trim_start_matches('/').to_string()).collect();
    let pages: Vec<_> = docs.iter().filter(|d| served.contains(&d.name)).collect();
    if std::env::args().any(|a| a == "--list") {
        for p in &pages {
            println!("{}\t{}", p.name, p.title);
        }
        return Ok(());
    }

    let embed = weft_index::testing::embed_config();
    let indexed = index_all(&pages, &embed)?;
    let index = &indexed.index;
    let mut questions: Vec<(&str, String, &str)> =
        TOPICS.iter().map(|t| ("topic web", t.question.to_string(), t.slug)).collect();
    let mut missing = Vec::new();
    for (q, page) in KEYWORD_QUESTIONS {
        if served.contains(*page) {
            questions.push(("PostgreSQL keywords", q.to_string(), page));
        } else {
            missing.push(*page);
        }
    }
    if !missing.is_empty() {
        println!("left out (their page is not among the 500 served): {missing:?}");
    }

    let fusions = fusions();
    let sets = ["topic web", "PostgreSQL keywords"];
    let Asked { tally, dense_times, hybrid_times } = ask_all(index, &questions, &fusions, &sets, &embed)?;
    println!();
    println!("| questions | n | fusion | hit@1 | hit@3 |");
    println!("|---|---|---|---|---|");
    for (s, set) in sets.iter().enumerate() {
        for (f, (name, _)) in fusions.iter().enumerate() {
            let (n, at1, at3) = tally[s][f];
            let pct = |x: usize| 100.0 * x as f64 / n.max(1) as f64;
            println!("| {set} | {n} | {name} | {:.0}% | {:.0}% |", pct(at1), pct(at3));
        }
    }
    println!();
    println!(
        "lexical index: {} chunks, {:.1} MiB on disk (vector snapshot {:.1} MiB); indexing them all \
         lexically takes {:.2} s of the {:.1} s the whole indexing took",
        indexed.stats.lexical_chunks,
        indexed.stats.lexical_bytes as f64 / (1 << 20) as f64,
        indexed.vectors_bytes as f64 / (1 << 20) as f64,
        indexed.lexical_took.as_secs_f64(),
        indexed.took.as_secs_f64()
    );
    println!(
        "query latency after embedding, median of {}: dense {:.2} ms, hybrid (default) {:.2} ms",
        dense_times.len(),
        median(dense_times).as_secs_f64() * 1e3,
        median(hybrid_times).as_secs_f64() * 1e3
    );
    Ok(())
}

/// The topic web's pages and the manual's, indexed by the real indexer.
struct Indexed {
    _work: tempfile::TempDir,
    index: Arc<LocalIndex>,
    took: Duration,
    /// What the lexical side alone takes: all of it again, from sled.
    lexical_took: Duration,
    stats: weft_index::IndexStats,
    vectors_bytes: u64,
}

fn index_all(pages: &[&DocPage], embed: &weft_config::EmbedConfig) -> anyhow::Result<Indexed> {
    let work = tempfile::tempdir()?;
    let db = sled::open(work.path().join("db"))?;
    let config = IndexConfig::default();
    let index = Arc::new(LocalIndex::open(&db, work.path(), 384, &config)?);
    let mut indexer = Indexer::new(index.clone(), embed, &config)?;
    let mut all: Vec<Document> =
        TOPICS.iter().map(|t| document(&format!("https://topics.test/t/{}", t.slug), &topic_page(t))).collect();
    all.extend(pages.iter().map(|p| document(&format!("https://pg.test/{}", p.name), &p.html)));
    let started = Instant::now();
    for batch in all.chunks(16) {
        indexer.index(batch.to_vec())?;
    }
    let took = started.elapsed();
    index.snapshot()?;
    // What the lexical side adds to indexing: all of it again, from sled, alone.
    let t = Instant::now();
    index.lexical().rebuild(index.store())?;
    let lexical_took = t.elapsed();
    let stats = index.stats();
    let vectors_bytes = weft_index::vectors::disk_bytes(work.path());
    println!(
        "indexed {} pages ({} topic, {} manual) into {} chunks in {:.1} s",
        all.len(),
        TOPICS.len(),
        pages.len(),
        stats.chunks,
        took.as_secs_f64()
    );

    Ok(Indexed { _work: work, index, took, lexical_took, stats, vectors_bytes })
}

/// The ways compared: the vectors alone, textbook RRF, and the cosine plus a bonus for the
/// words' rank at a few weights (the default among them).
fn fusions() -> Vec<(String, Option<Fusion>)> {
    [
        ("dense only", None),
        ("RRF, k = 60", Some(Fusion::Rrf { k: 60.0 })),
        ("cosine + 0.05 / rank", Some(Fusion::CosinePlusRank { weight: 0.05 })),
        ("cosine + 0.1 / rank", Some(Fusion::CosinePlusRank { weight: 0.1 })),
        ("cosine + 0.2 / rank", Some(Fusion::CosinePlusRank { weight: 0.2 })),
    ]
    .into_iter()
    .map(|(name, f)| (if f == Some(Fusion::DEFAULT) { format!("{name} (default)") } else { name.to_string() }, f))
    .collect()
}

/// What the questions found.
struct Asked {
    /// `tally[set][fusion]`: (questions, hit@1, hit@3).
    tally: Vec<Vec<(usize, usize, usize)>>,
    dense_times: Vec<Duration>,
    hybrid_times: Vec<Duration>,
}

/// Asks every question every way, and times the vectors alone against the default.
fn ask_all(
    index: &LocalIndex,
    questions: &[(&str, String, &str)],
    fusions: &[(String, Option<Fusion>)],
    sets: &[&str],
    embed: &weft_config::EmbedConfig,
) -> anyhow::Result<Asked> {
    let mut tally = vec![vec![(0usize, 0usize, 0usize); fusions.len()]; sets.len()];
    let mut embedder = Embedder::open(embed, 1)?;
    let (mut dense_times, mut hybrid_times) = (Vec::new(), Vec::new());
    let verbose = std::env::var_os("HYBRID_VERBOSE").is_some();
    for (round, (set, q, want)) in questions.iter().enumerate() {
        let vector = embedder.embed(&[q.as_str()])?.pop().unwrap_or_default();
        let is_hit = |h: &weft_index::Hit| {
            h.page.url.ends_with(&format!("/t/{want}")) || h.page.url.ends_with(&format!("/{want}"))
        };
        // Latency: the vectors alone against the default, alternating which goes first (the
        // machine is shared and noisy).
        let time = |hybrid: bool| -> anyhow::Result<Duration> {
            let t = Instant::now();
            if hybrid {
                index.search_hybrid(q, &vector, 3)?;
            } else {
                index.search(&vector, 3)?;
            }
            Ok(t.elapsed())
        };
        if round % 2 == 0 {
            dense_times.push(time(false)?);
            hybrid_times.push(time(true)?);
        } else {
            hybrid_times.push(time(true)?);
            dense_times.push(time(false)?);
        }
        let s = sets.iter().position(|x| x == set).unwrap_or(0);
        for (f, (name, fusion)) in fusions.iter().enumerate() {
            let hits = match fusion {
                None => index.search(&vector, 3)?,
                Some(fusion) => index.search_fused(q, &vector, 3, *fusion)?,
            };
            let t = &mut tally[s][f];
            t.0 += 1;
            t.1 += usize::from(hits.first().is_some_and(is_hit));
            t.2 += usize::from(hits.iter().take(3).any(is_hit));
            if verbose && (fusion.is_none() || *fusion == Some(Fusion::DEFAULT)) {
                let top: Vec<String> = hits
                    .iter()
                    .map(|h| {
                        format!("{} {:.3} {:?}", h.page.url.rsplit('/').next().unwrap_or(""), h.score, h.lexical_rank)
                    })
                    .collect();
                println!("{set}: {q:?} want {want}: {name}: {top:?}");
            }
        }
    }
    Ok(Asked { tally, dense_times, hybrid_times })
}
