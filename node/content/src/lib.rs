//! What a Weft node hands out, and in which shapes: the documents it indexed and the copies it
//! holds for other members, as the API shows them ([`copies`]); the HTTP responses it keeps for
//! WARC ([`responses`]); every URL's latest crawl outcome, and why a page is or is not indexed
//! ([`urls`]); `weft export`, which writes all of it as JSON lines, Parquet, WARC or WET from
//! the data dir or a running node's API ([`export`]); and `weft mcp`, the Model Context
//! Protocol server over that API ([`mcp`]).
//!
//! Nothing here runs a node: the node (`weft-node`) serves these shapes and stores what they
//! read; this crate reads stores and the API and turns them into formats. It depends on the
//! libraries only, never on `weft-node`.
//!
//! Module order: client, copies, responses, urls → export, mcp.

pub mod client;
pub mod copies;
pub mod export;
pub mod mcp;
pub mod responses;
pub mod urls;
