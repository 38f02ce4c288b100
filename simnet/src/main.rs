//! `weft-simnet serve`: the synthetic web on loopback, for the demo and for manual crawls.
//! (The multi-node runner arrives with the simnet issue.)

use clap::{Parser, Subcommand};
use weft_simnet::{generated_site, WebServer};

#[derive(Parser)]
#[command(name = "weft-simnet", about = "Weft's synthetic web and network simulator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve generated sites `site0.test` … on 127.0.0.1 (virtual hosts by Host header) until
    /// interrupted. Prints one line per host: `<host> <seed URL>`.
    Serve {
        #[arg(long, default_value_t = 3)]
        hosts: usize,
        #[arg(long, default_value_t = 40)]
        pages: usize,
    },
}

fn main() -> std::io::Result<()> {
    let Command::Serve { hosts, pages } = Cli::parse().command;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let sites = (0..hosts).map(|h| generated_site(&format!("site{h}.test"), pages, 3)).collect();
        let server = WebServer::start(sites).await?;
        for h in 0..hosts {
            let host = format!("site{h}.test");
            println!("{host} {}", server.url(&host, "/"));
        }
        tokio::signal::ctrl_c().await?;
        let requests = server.requests();
        eprintln!("served {} requests", requests.len());
        Ok(())
    })
}
