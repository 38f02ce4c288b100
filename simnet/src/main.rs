//! `weft-simnet serve`: the synthetic web on loopback, for the demo and for manual crawls.
//! (The multi-node runner arrives with the simnet issue.)

use clap::{Parser, Subcommand};
use weft_simnet::{generated_site, topic_site, WebServer};

#[derive(Parser)]
#[command(name = "weft-simnet", about = "Weft's synthetic web and network simulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve generated sites `site0.test` … (and, with --topics, `topics.test`) on 127.0.0.1 (virtual hosts by Host header) until
    /// interrupted. Prints one line per host: `<host> <seed URL>`.
    Serve {
        #[arg(long, default_value_t = 3)]
        hosts: usize,
        #[arg(long, default_value_t = 40)]
        pages: usize,
        /// Also serve the topic web (thirty pages on distinct subjects) as `topics.test`.
        #[arg(long)]
        topics: bool,
    },
}

fn main() -> std::io::Result<()> {
    let Command::Serve { hosts, pages, topics } = Cli::parse().command;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let mut sites: Vec<_> = (0..hosts).map(|h| generated_site(&format!("site{h}.test"), pages, 3)).collect();
        if topics {
            sites.push(topic_site("topics.test"));
        }
        let server = WebServer::start(sites).await?;
        for host in (0..hosts).map(|h| format!("site{h}.test")).chain(topics.then(|| "topics.test".to_string())) {
            println!("{host} {}", server.url(&host, "/"));
        }
        tokio::signal::ctrl_c().await?;
        let requests = server.requests();
        eprintln!("served {} requests", requests.len());
        Ok(())
    })
}
