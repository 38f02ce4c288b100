//! Pages waiting for the browser when their host changes hands: indexed from the HTML
//! already fetched, never fetched twice, fetched by the next owner when they were not.

use super::*;

/// A leaving node does not wait for its browser: the pages waiting for it whose HTML it holds
/// are indexed from that HTML and go to their hosts' new owner as done (handed off as queued
/// they would be fetched a second time; rendered first, a loaded machine spent the whole stop
/// bound rendering and the node exited having handed nothing over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_node_indexes_the_pages_waiting_for_its_browser_from_their_html_instead_of_handing_them_off() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(|port| web(port, &[("hub2.test", "r")])).await.unwrap();
    let first = start(&server, 0, vec![], 0).await;
    let boot = first.network.status().listen_addrs[0].clone();

    // Node 1 (the defaults: layouts on, Chromium) with its crawl paused, so its renderer waits.
    let (second, renders) = join_owning(&[&first], &hosts("r"), || start_paused(&server, 1, vec![boot.clone()])).await;

    // Pages of node 1's hosts whose HTML its crawl fetched and that wait for the browser.
    let ring = second.network.ring();
    let mine: Vec<String> =
        (0..HOSTS).map(|i| format!("r{i}.test")).filter(|h| ring.owner(h) == Some(&second.network.peer_id())).collect();
    assert!(!mine.is_empty(), "node 1 owns some r-hosts");
    // More pages than its browser renders at once: some are still waiting when it leaves.
    let urls: Vec<url::Url> =
        mine.iter().flat_map(|h| ["/", "/a", "/b"].map(|p| url::Url::parse(&server.url(h, p)).unwrap())).collect();
    for u in &urls {
        let body = format!("<html><body><p>{} waits for the browser</p></body></html>", u.host_str().unwrap());
        let page = weft_node::layouts::StoredPage { status: 200, content_type: None, body: body.into_bytes() };
        let reason = weft_node::page::RenderReason::LayoutNeedsJs;
        renders.push_stored(u, 1, &reason, Some(&page)).unwrap();
    }
    // What its crawl leaves when it fetched a page the browser must show: the URL done (a page
    // the browser finishes before the stop goes over as done with the rest of the done list —
    // on a fast machine it renders a few).
    second.crawler.mark_done(urls.clone()).await.unwrap();

    // It resumes and is stopped at once.
    second.crawler.resume();
    second.stop.send(true).unwrap();
    second.task.await.unwrap().unwrap();

    // Node 0 owns the hosts now: it holds every page as done, and nobody fetched any.
    tokio::time::timeout(Duration::from_secs(30), first.network.wait_for(|s| s.members.len() == 1)).await.unwrap();
    for u in &urls {
        let report = tokio::task::block_in_place(|| first.crawler.url_report(u)).unwrap();
        assert_eq!(report.frontier, weft_frontier::UrlState::Done, "{u}: node 0 was not told it is done");
    }
    let fetched: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.host.starts_with('r'))
        .map(|r| format!("{}{}", r.host, r.path))
        .collect();
    assert!(fetched.is_empty(), "fetched although node 1 held their HTML: {fetched:?}");

    first.stop.send(true).unwrap();
    first.task.await.unwrap().unwrap();
}

/// Pages waiting for the browser whose HTML this node fetched, when a newcomer takes their
/// hosts: indexed here from that HTML, and the newcomer learns they are done. Handed over as
/// queued they were fetched a second time; rendered here, the browser's script requests
/// reached a host the newcomer was crawling, closer than its delay (the churn scenario caught
/// both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_waiting_for_the_browser_are_indexed_where_they_were_fetched_when_a_node_joins() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(|port| web(port, &[("hub3.test", "q")])).await.unwrap();

    // Node 0 (the defaults: layouts on, Chromium), paused so that its renderer waits.
    let (first, renders) = start_paused(&server, 0, vec![]).await;
    let boot = first.network.status().listen_addrs[0].clone();

    // What node 0's crawl leaves when it fetched a page the browser must show: the URL done,
    // its HTML held in the render queue.
    let urls: Vec<url::Url> = (0..HOSTS)
        .flat_map(|i| ["/", "/a", "/b"].map(|p| url::Url::parse(&server.url(&format!("q{i}.test"), p)).unwrap()))
        .collect();
    for u in &urls {
        let body = format!(
            "<html><body><p>{} waits for the browser</p><script src=\"/static/app.js\"></script></body></html>",
            u.host_str().unwrap()
        );
        let page = weft_node::layouts::StoredPage { status: 200, content_type: None, body: body.into_bytes() };
        let reason = weft_node::page::RenderReason::LayoutNeedsJs;
        renders.push_stored(u, 1, &reason, Some(&page)).unwrap();
    }
    first.crawler.mark_done(urls.clone()).await.unwrap();

    // Node 1 joins and takes some of the hosts.
    let (second, ()) = join_owning(&[&first], &hosts("q"), || {
        let boot = boot.clone();
        let server = &server;
        async move { (start(server, 1, vec![boot], 0).await, ()) }
    })
    .await;
    let ring = second.network.ring();
    let taken: Vec<&url::Url> =
        urls.iter().filter(|u| ring.owner(u.host_str().unwrap()) == Some(&second.network.peer_id())).collect();
    assert!(!taken.is_empty(), "node 1 owns some q-hosts");
    // The hand-over reached node 1: it knows their pages are done.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let states: Vec<weft_frontier::UrlState> = taken
            .iter()
            .map(|u| tokio::task::block_in_place(|| second.crawler.url_report(u)).unwrap().frontier)
            .collect();
        if states.iter().all(|s| *s == weft_frontier::UrlState::Done) {
            break;
        }
        assert!(Instant::now() < deadline, "node 1 was not told the pages are done: {states:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The pages of the hosts node 1 took leave node 0's render queue (indexed from their HTML)
    // while its crawl is still paused; the rest wait for its browser.
    let kept = urls.len() - taken.len();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::task::block_in_place(|| first.crawler.rendering()) > kept {
        assert!(Instant::now() < deadline, "node 0 kept the pages of hosts it gave away");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Node 0 resumes: its browser renders the pages of the hosts it still owns.
    first.crawler.resume();
    let deadline = Instant::now() + Duration::from_secs(120);
    while tokio::task::block_in_place(|| first.crawler.rendering()) > 0 {
        assert!(Instant::now() < deadline, "node 0's browser did not finish its queue");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Past node 1's hand-over grace: nobody fetched the pages again, and node 0's browser asked
    // nothing of the hosts node 1 now crawls.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let taken_hosts: HashSet<&str> = taken.iter().map(|u| u.host_str().unwrap()).collect();
    let requests = server.requests();
    let page_paths: HashSet<&str> = ["/", "/a", "/b"].into();
    let fetched: Vec<String> = requests
        .iter()
        .filter(|r| r.host.starts_with('q') && page_paths.contains(r.path.as_str()))
        .map(|r| format!("{}{} by node {}", r.host, r.path, node_of(r)))
        .collect();
    assert!(fetched.is_empty(), "fetched although their HTML was held: {fetched:?}");
    let to_taken: Vec<String> = requests
        .iter()
        .filter(|r| taken_hosts.contains(r.host.as_str()) && node_of(r) == 0)
        .map(|r| format!("{}{}", r.host, r.path))
        .collect();
    assert!(to_taken.is_empty(), "node 0 asked hosts it gave away: {to_taken:?}");
    let rendered = first.crawler.metrics().extractions().get("render:rendered").copied().unwrap_or(0);
    assert_eq!(rendered, kept as u64, "node 0 rendered the pages of the hosts it kept");
    let scripts = requests.iter().filter(|r| r.path == "/static/app.js").count();
    assert!(scripts > 0, "the renders asked for their script (the check above would see one)");

    for r in [first, second] {
        r.stop.send(true).unwrap();
        r.task.await.unwrap().unwrap();
    }
}

/// A host that renders queues its pages for the browser unfetched (the browser fetches them).
/// When the member that held the host meanwhile hands it back with its done list, those pages
/// leave the render queue; pages it did not report stay and are rendered. Random churn seed 29
/// caught a restarted node rendering three pages its host's interim owner had fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_waiting_for_the_browser_that_another_member_fetched_are_not_rendered() {
    let _network = common::one_of_several_networks();
    let server = WebServer::start_with(|port| web(port, &[("hub4.test", "s")])).await.unwrap();
    let (node, renders) = start_paused(&server, 0, vec![]).await;
    // Queued for the browser unfetched, as the crawl does for a host whose pages all render.
    let urls: Vec<url::Url> =
        ["/", "/a", "/b"].iter().map(|p| url::Url::parse(&server.url("s0.test", p)).unwrap()).collect();
    let reason = weft_node::page::RenderReason::HostRenders("test: every page needs the browser".into());
    for u in &urls {
        renders.push_stored(u, 1, &reason, None).unwrap();
    }
    assert_eq!(tokio::task::block_in_place(|| node.crawler.rendering()), 3);
    // The previous owner's done list names two of them.
    node.crawler.mark_done(urls[1..].to_vec()).await.unwrap();
    assert_eq!(
        tokio::task::block_in_place(|| node.crawler.rendering()),
        1,
        "pages fetched by another member still wait for the browser"
    );
    for u in &urls[1..] {
        let report = tokio::task::block_in_place(|| node.crawler.url_report(u)).unwrap();
        assert_eq!(report.frontier, weft_frontier::UrlState::Done, "{u}");
    }
    let dropped = node.crawler.metrics().extractions().get("render:done_elsewhere").copied().unwrap_or(0);
    assert_eq!(dropped, 2);

    // The crawl resumes: the browser renders the page nobody fetched, and only that one.
    node.crawler.resume();
    let deadline = Instant::now() + Duration::from_secs(120);
    while tokio::task::block_in_place(|| node.crawler.rendering()) > 0 {
        assert!(Instant::now() < deadline, "the browser did not render the page left");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let asked: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.host == "s0.test" && ["/", "/a", "/b"].contains(&r.path.as_str()))
        .map(|r| r.path)
        .collect();
    assert_eq!(asked, ["/"], "the browser fetched only the page no member had fetched");
    node.stop.send(true).unwrap();
    node.task.await.unwrap().unwrap();
}

/// A leaving node whose browser is still rendering a page of a host when its wait for the
/// renders ends tells the host's next owner at once what is done there, and hands the rest of
/// the host's queue over later. The pages of that host waiting for the browser unfetched went
/// to the render queue from the frontier's, so the frontier holds them done; told done, the
/// next owner dropped them as done when they came as queued, and nobody fetched them (random
/// churn seed 29 in CI: seven pages of the rendering host, on a loaded box whose renders were
/// slow).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_waiting_for_the_browser_unfetched_are_fetched_by_the_next_owner_when_their_node_leaves_mid_render() {
    let _network = common::one_of_several_networks();
    const SLOW: Duration = Duration::from_secs(11);
    const PATHS: [&str; 6] = ["/", "/a", "/b", "/c", "/d", "/e"];
    let server = WebServer::start_with(|_| {
        (0..HOSTS)
            .map(|i| {
                let page = |p: &str| format!("<html><body><p>v{i}{p} is a page of text</p></body></html>");
                // Its first page answers after SLOW: the browser is still on it when the node leaves.
                let slow = weft_simnet::web::Resource::Delayed {
                    delay: SLOW,
                    inner: Box::new(weft_simnet::web::Resource::Html(page("/"))),
                };
                PATHS[1..].iter().fold(Site::new(&format!("v{i}.test")).with("/", slow), |s, p| s.html(p, &page(p)))
            })
            .collect()
    })
    .await
    .unwrap();
    let first = start(&server, 0, vec![], 0).await;
    let boot = first.network.status().listen_addrs[0].clone();
    // A shorter leave than the default 30 s (the renders' wait is half of it), so that the
    // test's slow page outlasts that wait without nearing the render timeout (20 s).
    let (second, renders) = join_owning(&[&first], &hosts("v"), || {
        start_paused_with(&server, 1, vec![boot.clone()], |c| c.p2p.leave_timeout_secs = 16)
    })
    .await;

    let ring = second.network.ring();
    let host = (0..HOSTS)
        .map(|i| format!("v{i}.test"))
        .find(|h| ring.owner(h) == Some(&second.network.peer_id()))
        .expect("node 1 owns a v-host");
    // What the crawl leaves for a host whose pages all render: each URL done in the frontier,
    // and queued for the browser unfetched (done first: reported by itself, a page waiting
    // unfetched would leave the render queue).
    let urls: Vec<url::Url> = PATHS.iter().map(|p| url::Url::parse(&server.url(&host, p)).unwrap()).collect();
    second.crawler.mark_done(urls.clone()).await.unwrap();
    let reason = weft_node::page::RenderReason::HostRenders("test: every page needs the browser".into());
    for u in &urls {
        renders.push_stored(u, 1, &reason, None).unwrap();
    }

    // Its browser starts on the host's first pages (two at once), and the node is stopped.
    second.crawler.resume();
    let deadline = Instant::now() + Duration::from_secs(60);
    while second.crawler.hosts_rendering().is_empty() {
        assert!(Instant::now() < deadline, "node 1's browser did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    second.stop.send(true).unwrap();
    second.task.await.unwrap().unwrap();

    // Every page is fetched: the two being rendered by node 1, the rest by node 0.
    let fetched =
        || -> HashSet<String> { server.requests().into_iter().filter(|r| r.host == host).map(|r| r.path).collect() };
    let deadline = Instant::now() + Duration::from_secs(60);
    while PATHS.iter().any(|p| !fetched().contains(*p)) {
        assert!(
            Instant::now() < deadline,
            "pages never fetched: {:?}; node 0 received {:?}",
            PATHS.iter().filter(|p| !fetched().contains(**p)).collect::<Vec<_>>(),
            first.crawler.status().received
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.stop.send(true).unwrap();
    first.task.await.unwrap().unwrap();
}
