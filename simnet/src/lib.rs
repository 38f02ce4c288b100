//! Weft's synthetic web and its multi-node simulator.
//!
//! [`web`] is an HTTP server on 127.0.0.1 that serves many virtual hosts by `Host` header and
//! records every request it receives — host, path, arrival and end time, status. That log is
//! the *server-side truth*: politeness, duplicate fetches and coverage are judged from it, not
//! from what a crawler says about itself. Tests, benchmarks and the demo all crawl it, with a
//! resolver override mapping the virtual hosts to 127.0.0.1, so no traffic leaves the machine.
//!
//! [`topics`] is a web of thirty pages on distinct subjects with a question for each, on which
//! semantic search is judged. [`churn`] parses the simulator's churn specs and [`report`] judges
//! a run from the server's log alone (coverage over time, duplicates, lost URLs, politeness).
//! [`docs`] builds the simulator's web from the PostgreSQL manual, [`runner`] runs real `weft`
//! processes against it under churn, [`search_eval`] judges the network's search answers
//! against an exact index over every node's chunks ([`load`] samples the box while it asks),
//! [`plot`] draws the run and [`demo`] is `weft demo`. [`natlab`] builds a small internet of Linux network namespaces with home
//! routers that masquerade (cone and symmetric NAT) and runs real nodes behind them.
//!
//! Module order (each module uses only those before it; `tests/architecture/tests/module_graph.rs`
//! checks it): churn, find_timing, load, ports, rng, web → scale, news, report, search_eval, topics →
//! docs, schedule → runner → demo, natlab, plot, sweep.

pub mod churn;
pub mod demo;
pub mod docs;
pub mod find_timing;
pub mod load;
pub mod natlab;
pub mod news;
pub mod plot;
mod ports;
pub mod report;
pub mod rng;
pub mod runner;
pub mod scale;
pub mod schedule;
pub mod search_eval;
pub mod sweep;
pub mod topics;
pub mod web;

pub use topics::{topic_page, topic_site, Topic, TOPICS};
pub use web::{generated_site, LinkFarm, Request, Resource, Site, WebServer};
