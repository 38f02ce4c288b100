//! Faults of the machine under a running `weft` (the real binary, the default configuration,
//! the real model): the data dir removed, a full disk (a 30 MiB tmpfs), a read-only data dir.
//! Each ends with a clear message naming the path and the OS error and a non-zero exit within
//! a bound — never a hang — and a restart on a good dir resumes the crawl, having lost nothing
//! it had acknowledged.
//!
//! The disk-full and read-only cases mount things (tmpfs, a read-only bind mount), which needs
//! root; where that is refused they say so and skip (and fail under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use weft_simnet::{generated_site, WebServer};

use crate::common;

const HOST: &str = "faults.test";
const PAGES: usize = 40;
/// `storage.flush_timeout_secs` and `storage.check_interval_secs` in these tests.
const FLUSH_TIMEOUT: u64 = 5;
const CHECK_EVERY: u64 = 1;
/// Detection (a check or a flush bound) plus the watchdog's grace, with room for a slow CI.
const EXIT_BOUND: Duration = Duration::from_secs(FLUSH_TIMEOUT + CHECK_EVERY + 5 + 9);

fn write_config(server: &WebServer, dir: &Path, data: &Path) -> PathBuf {
    let body = format!(
        "data_dir = \"{}\"\n[crawl]\nseeds = [\"{}\"]\n[fetch]\nallow_private_networks = true\n[fetch.resolve]\n\"{HOST}\" = \"127.0.0.1\"\n\
         [politeness]\ndefault_delay_ms = 250\n[api]\nlisten = \"127.0.0.1:0\"\n\
         [storage]\nflush_timeout_secs = {FLUSH_TIMEOUT}\ncheck_interval_secs = {CHECK_EVERY}\n",
        data.display(),
        server.url(HOST, "/"),
    );
    common::write_config_with_model(dir, &body)
}

fn fetched(server: &WebServer) -> Vec<String> {
    server.requests().into_iter().filter(|r| r.path == "/" || r.path.starts_with("/p/")).map(|r| r.path).collect()
}

/// Runs the node until `pages` pages were requested; returns it with its log.
fn start_until(server: &WebServer, config: &Path, pages: usize) -> (Child, common::Logs) {
    let (child, logs) = common::spawn_weft(config, &[]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while fetched(server).len() < pages {
        assert!(Instant::now() < deadline, "the node did not start crawling");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, logs)
}

/// Waits for the node to exit; panics if it outlives `bound`. Returns its exit code.
fn exit_within(child: &mut Child, bound: Duration) -> (i32, Duration) {
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), t.elapsed());
        }
        if t.elapsed() > bound {
            let _ = child.kill();
            panic!("the node was still running {bound:?} after the fault");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A restart on a good data dir finishes the crawl: every page fetched, and none more than
/// once except those in flight when the fault hit (their outcome was never acknowledged).
fn restart_resumes(server: &WebServer, config: &Path) {
    let (mut child, mut logs) = common::spawn_weft(config, &["--exit-when-idle"]);
    let (code, _) = exit_within(&mut child, Duration::from_secs(180));
    if code != 0 {
        panic!("the restarted node failed ({code}): {}", logs.field("message", "error"));
    }
    let all = fetched(server);
    let mut counts = std::collections::BTreeMap::<&str, usize>::new();
    for p in &all {
        *counts.entry(p.as_str()).or_default() += 1;
    }
    assert_eq!(counts.len(), PAGES, "every page fetched: {counts:?}");
    let twice = counts.values().filter(|n| **n > 1).count();
    assert!(twice <= 8, "at most the in-flight pages again (crawl.concurrency): {counts:?}");
}

fn run(cmd: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(cmd).args(args).output().map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{cmd} {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// Unmounts on drop, whatever happens to the test.
struct Mounted(PathBuf);

impl Mounted {
    fn new(args: &[&str], at: &Path) -> Option<Mounted> {
        let mut all: Vec<&str> = args.to_vec();
        all.push(at.to_str().unwrap());
        match run("mount", &all) {
            Ok(()) => Some(Mounted(at.to_path_buf())),
            Err(e) => {
                common::skip(&format!("cannot mount ({e}); this test needs root and mount(8)"));
                None
            }
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = run("umount", &["-l", self.0.to_str().unwrap()]);
    }
}

fn server() -> (tokio::runtime::Runtime, WebServer) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(WebServer::start(vec![generated_site(HOST, PAGES, 3)])).unwrap();
    (rt, server)
}

/// `rm -rf` of a directory a running node is writing into: the node may create a file (a sled
/// segment, a tantivy segment of the lexical index) between the listing and the last `rmdir`,
/// so the removal is tried again, as an operator would, until the directory is gone.
fn remove_while_written(dir: &Path) {
    for _ in 0..50 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
            Err(e) => panic!("removing {}: {e}", dir.display()),
        }
    }
    panic!("{} keeps being written into", dir.display());
}

#[test]
fn the_data_dir_removed_under_a_running_node() {
    let (_rt, server) = server();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let config = write_config(&server, dir.path(), &data);
    let (mut child, mut logs) = start_until(&server, &config, 5);
    remove_while_written(&data);
    let (code, took) = exit_within(&mut child, EXIT_BOUND);
    assert_eq!(code, 74, "a storage fault exits with EX_IOERR");
    let path = logs.field("path", "data");
    assert_eq!(Path::new(&path), data, "the log names the data dir");
    let error = logs.field("error", "");
    assert!(error.contains("gone") || error.contains("No such file"), "{error}");
    println!("data dir removed: exit {code} after {:.1} s ({error})", took.as_secs_f64());
    restart_resumes(&server, &config);
}

#[test]
fn a_full_disk_under_a_running_node() {
    let (_rt, server) = server();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let Some(_mount) = Mounted::new(&["-t", "tmpfs", "-o", "size=30m", "tmpfs"], &data) else { return };
    let config = write_config(&server, dir.path(), &data);
    let (mut child, mut logs) = start_until(&server, &config, 5);
    // Fill the rest of the 30 MiB.
    let filler = data.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0xa5u8; 1 << 20];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let (code, took) = exit_within(&mut child, EXIT_BOUND);
    assert_eq!(code, 74, "a storage fault exits with EX_IOERR");
    let error = logs.field("error", "");
    assert!(error.contains("No space left on device") || error.contains("os error 28"), "{error}");
    println!("disk full: exit {code} after {:.1} s ({error})", took.as_secs_f64());
    // The operator frees space: the filler goes and the volume grows (the seen-set snapshot
    // alone, at the default capacity, is a good part of 30 MiB).
    std::fs::remove_file(&filler).unwrap();
    run("mount", &["-o", "remount,size=256m", data.to_str().unwrap()]).unwrap();
    restart_resumes(&server, &config);
}

#[test]
fn a_read_only_data_dir_under_a_running_node() {
    let (_rt, server) = server();
    let dir = common::work_dir();
    let data = dir.path().join("data");
    let config = write_config(&server, dir.path(), &data);
    let (mut child, mut logs) = start_until(&server, &config, 5);
    // The data dir's path becomes a read-only view of itself (what a remount read-only after
    // an I/O error looks like to a process). The view is made read-only elsewhere first and
    // then bound over the data dir, read-only from its first instant: a bind over the data
    // dir remounted read-only in place fails with "mount point is busy" whenever the node
    // opened a file for writing through it in between (it rotates journals and segments).
    let view = dir.path().join("read-only-view");
    std::fs::create_dir(&view).unwrap();
    let Some(view_mount) = Mounted::new(&["--bind", data.to_str().unwrap()], &view) else {
        let _ = child.kill();
        return;
    };
    if let Err(e) = run("mount", &["-o", "remount,bind,ro", view.to_str().unwrap()]) {
        common::skip(&format!("cannot remount read-only ({e})"));
        let _ = child.kill();
        return;
    }
    let Some(bind) = Mounted::new(&["--bind", view.to_str().unwrap()], &data) else {
        let _ = child.kill();
        return;
    };
    let (code, took) = exit_within(&mut child, EXIT_BOUND);
    assert_eq!(code, 74, "a storage fault exits with EX_IOERR");
    let error = logs.field("error", "");
    assert!(error.contains("Read-only file system") || error.contains("os error 30"), "{error}");
    println!("read-only: exit {code} after {:.1} s ({error})", took.as_secs_f64());
    drop(bind);
    drop(view_mount);
    restart_resumes(&server, &config);
}

/// A node's configuration for tests that only open its data dir: nothing is crawled, so the
/// model, the browser and the network stay out.
fn open_only(dir: &Path) -> weft_config::Config {
    let mut c = weft_config::Config { data_dir: dir.join("data"), ..Default::default() };
    c.fetch.allow_private_networks = true; // nothing is fetched (a node with no reach does not open)
    c.index.enabled = false; // no page is indexed: the test only opens the data dir
    c.layouts.enabled = false; // no page is rendered: the test only opens the data dir
    c.p2p.enabled = false; // no peer is involved: the test only opens the data dir
    c
}

/// The open error names another node only when another node holds the lock: a damaged
/// database said "is another weft node running?" and sent the operator looking for one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lock_is_named_as_another_node_and_unreadable_files_are_not() {
    let dir = common::work_dir();
    let mut c = open_only(dir.path());
    let first = weft_node::Node::open(c.clone()).unwrap();
    let err = format!("{:#}", weft_node::Node::open(c.clone()).err().expect("the lock is held"));
    assert!(err.contains("another weft node is running on this data dir"), "{err}");
    drop(first);

    let unreadable = dir.path().join("unreadable");
    std::fs::create_dir_all(&unreadable).unwrap();
    std::fs::write(unreadable.join("db"), b"not a database directory").unwrap();
    c.data_dir = unreadable;
    let err = format!("{:#}", weft_node::Node::open(c).err().expect("db is a file"));
    assert!(!err.contains("another weft node") && err.contains("could not be read"), "{err}");
}

/// 16 flipped bytes in `db/db`: sled panics on some such damage while opening; the node says
/// the database is corrupted, and where, instead of crashing (or blaming another node).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_database_is_named_as_such() {
    use std::io::{Read, Seek, SeekFrom, Write};
    let dir = common::work_dir();
    let c = open_only(dir.path());
    drop(weft_node::Node::open(c.clone()).unwrap());
    let db = c.data_dir.join("db");
    {
        // Something to damage: a node's database after a crawl holds megabytes.
        let d = weft_frontier::open_db(&db, 8 << 20).unwrap();
        let t = d.open_tree("filler").unwrap();
        for i in 0u32..20_000 {
            t.insert(i.to_be_bytes(), vec![(i % 251) as u8; 300]).unwrap();
        }
        d.flush().unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let flip = |file: &Path, at: u64| {
        let mut f = std::fs::OpenOptions::new().read(true).write(true).open(file).unwrap();
        let mut bytes = [0u8; 16];
        f.seek(SeekFrom::Start(at)).unwrap();
        f.read_exact(&mut bytes).unwrap();
        bytes.iter_mut().for_each(|b| *b ^= 0xff);
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&bytes).unwrap();
    };
    // Where a flip is noticed at open (elsewhere sled reads past it): tried on copies. Each
    // tenth of the file first; then the first segment, which holds live data however the log
    // was laid out: once, under load, sled wrote the filler's pages over again until every
    // tenth held only superseded copies (a 21 MB log against the usual 14).
    let len = std::fs::metadata(db.join("db")).unwrap().len();
    let at = (1..10)
        .map(|tenth| len * tenth / 10)
        .chain([1 << 20, 512 << 10, 20])
        .filter(|at| *at + 16 <= len)
        .find(|at| {
            let copy = tempfile::tempdir().unwrap();
            for f in ["conf", "db"] {
                std::fs::copy(db.join(f), copy.path().join(f)).unwrap();
            }
            flip(&copy.path().join("db"), *at);
            weft_frontier::open_db(copy.path(), 8 << 20).is_err()
        })
        .expect("a flip sled notices at open");
    flip(&db.join("db"), at);
    // `weft doctor` says so too, from a copy (the files are left as they are).
    let doctor = weft_node::doctor::database(&c.data_dir);
    assert_eq!(doctor.verdict, weft_node::doctor::Verdict::Fail, "{doctor:?}");
    assert!(doctor.detail.contains(&db.display().to_string()) && doctor.fix.is_some(), "{doctor:?}");
    let err = format!("{:#}", weft_node::Node::open(c).err().expect("a corrupted database"));
    assert!(err.contains("the database is corrupted") && err.contains(&db.display().to_string()), "{err}");
    assert!(!err.contains("another weft node"), "{err}");
}

/// A database behind its generation record (sled dropped writes it had flushed, taking damaged
/// files for a crash's torn tail — see `weft_frontier::generation`, whose tests make that
/// happen with flipped bytes): the node refuses to start on it and says why, and `weft doctor`
/// (which leaves a database a node holds to that node) says so beforehand. Here the record is
/// set ahead by hand, to test the node's side of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_lost_flushed_writes_is_refused() {
    let dir = common::work_dir();
    let c = open_only(dir.path());
    drop(weft_node::Node::open(c.clone()).unwrap());
    let db = c.data_dir.join("db");
    {
        let d = weft_frontier::open_db(&db, 8 << 20).unwrap();
        weft_frontier::generation::advance(&d, &db).unwrap();
        weft_frontier::generation::advance(&d, &db).unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    let node = weft_node::Node::open(c.clone()).expect("a database level with its record opens");
    use weft_node::doctor::{database, Verdict};
    let doctor = database(&c.data_dir);
    assert_eq!(doctor.verdict, Verdict::Skip, "a node holds it: {doctor:?}");
    drop(node);
    std::thread::sleep(Duration::from_millis(200));
    let doctor = database(&c.data_dir);
    assert_eq!(doctor.verdict, Verdict::Ok, "{doctor:?}");
    assert!(doctor.detail.contains("generation 2"), "{doctor:?}");
    std::fs::write(db.join(weft_frontier::generation::FILE), "9").unwrap();
    let doctor = database(&c.data_dir);
    assert_eq!(doctor.verdict, Verdict::Fail, "{doctor:?}");
    assert!(doctor.detail.contains("dropped writes"), "{doctor:?}");
    let err = format!("{:#}", weft_node::Node::open(c).err().expect("a database that lost writes"));
    assert!(err.contains("dropped writes") && err.contains("generation 2"), "{err}");
}
