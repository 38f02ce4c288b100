//! A NAT lab on this machine: Linux network namespaces for a small "internet" and two home
//! networks behind routers that masquerade, one like a typical home router (port-preserving,
//! endpoint-dependent filtering: hole punching works) and one with a symmetric NAT (a random
//! source port per connection: hole punching cannot work, traffic must stay relayed).
//!
//! ```text
//!   inet (bridge br0, 198.51.100.1: the lab's web server)
//!    ├── pub   198.51.100.10                   a public node
//!    ├── r1    wan 198.51.100.21 │ lan 10.1.0.1  ── h1 10.1.0.2  (cone NAT)
//!    └── r2    wan 198.51.100.22 │ lan 10.2.0.1  ── h2 10.2.0.2  (symmetric NAT)
//! ```
//!
//! The addresses exist only inside the namespaces the lab creates (198.51.100.0/24 is a
//! documentation range; nothing leaves the machine). Needs root, `ip` (iproute2) and `nft`
//! (nftables); both come with `scripts/setup.sh`. The namespaces are removed when the [`Lab`]
//! is dropped — a panicking test included — and namespaces left by a lab whose process died
//! (SIGKILL) are removed by the next [`Lab::build`].

/// A run in the lab: the nodes, the crawl, the searches and the report.
mod run;

pub use run::{run_lab, LabExchange, LabNode, LabReport, LabSearch, LabSpec};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::process::Command;
use std::time::Duration;

/// The lab's web server, on the internet bridge.
pub const WEB: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
/// The public node.
pub const PUBLIC: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);
/// Home node `i` (from 1) sits at 10.`i`.0.2 behind router `r{i}` (WAN 198.51.100.`20+i`).
pub fn home_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, i as u8, 0, 2)
}

/// Namespace names start with this, then the owning process id.
const PREFIX: &str = "wlab";

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the NAT lab needs root (network namespaces and nftables)")]
    NotRoot,
    #[error("the NAT lab needs `{0}` (run scripts/setup.sh)")]
    Missing(&'static str),
    #[error("`{command}` failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// How a home router translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nat {
    /// Masquerade keeping source ports where it can; only replies come in.
    Cone,
    /// Masquerade with a random source port for every connection.
    Symmetric,
}

/// A built lab; removed on drop.
pub struct Lab {
    prefix: String,
    created: Vec<String>,
}

fn run(args: &[&str]) -> Result<String, LabError> {
    let out = Command::new(args[0]).args(&args[1..]).output().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound if args[0] == "ip" => LabError::Missing("ip"),
        std::io::ErrorKind::NotFound if args[0] == "nft" => LabError::Missing("nft"),
        _ => LabError::Io(e),
    })?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn run_stdin(args: &[&str], input: &str) -> Result<(), LabError> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    child.stdin.take().expect("piped").write_all(input.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(LabError::Command {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Removes namespaces of labs whose process is gone.
fn remove_stale() {
    let Ok(list) = run(&["ip", "netns", "list"]) else { return };
    for line in list.lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(rest) = name.strip_prefix(PREFIX) else { continue };
        let pid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if pid.parse::<u32>().is_ok_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists()) {
            let _ = run(&["ip", "netns", "del", name]);
        }
    }
}

impl Lab {
    /// Builds the lab of the test: a cone NAT (`h1`) and a symmetric NAT (`h2`).
    pub fn build() -> Result<Lab, LabError> {
        Lab::build_with(&[Nat::Cone, Nat::Symmetric])
    }

    /// Builds a lab with one home network per entry of `homes` (`r1`/`h1`, `r2`/`h2`, …; at
    /// most 8); says why not when this machine cannot (not root, tools missing).
    pub fn build_with(homes: &[Nat]) -> Result<Lab, LabError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(LabError::NotRoot);
        }
        run(&["ip", "-V"])?;
        run(&["nft", "--version"])?;
        remove_stale();
        let mut lab = Lab { prefix: format!("{PREFIX}{}-", std::process::id()), created: Vec::new() };
        lab.make(&homes[..homes.len().min(8)])?;
        Ok(lab)
    }

    /// The full name of lab namespace `short` (`inet`, `pub`, `r1`, `r2`, `h1`, `h2`).
    pub fn ns(&self, short: &str) -> String {
        format!("{}{short}", self.prefix)
    }

    fn ip(&self, short: &str, args: &[&str]) -> Result<String, LabError> {
        let ns = self.ns(short);
        let mut all = vec!["ip", "-n", ns.as_str()];
        all.extend_from_slice(args);
        run(&all)
    }

    fn make(&mut self, homes: &[Nat]) -> Result<(), LabError> {
        let mut names = vec!["inet".to_string(), "pub".to_string()];
        for i in 1..=homes.len() {
            names.push(format!("r{i}"));
            names.push(format!("h{i}"));
        }
        for short in &names {
            let ns = self.ns(short);
            run(&["ip", "netns", "add", &ns])?;
            self.created.push(ns);
            self.ip(short, &["link", "set", "lo", "up"])?;
        }
        self.ip("inet", &["link", "add", "br0", "type", "bridge"])?;
        self.ip("inet", &["addr", "add", &format!("{WEB}/24"), "dev", "br0"])?;
        self.ip("inet", &["link", "set", "br0", "up"])?;
        // The public node and the routers' WAN sides on the internet bridge.
        let mut wan = vec![("pub".to_string(), "eth0", PUBLIC)];
        for i in 1..=homes.len() {
            wan.push((format!("r{i}"), "wan", Ipv4Addr::new(198, 51, 100, 20 + i as u8)));
        }
        for (short, ifname, addr) in wan {
            let short = short.as_str();
            let port = format!("v{short}");
            let peer_ns = self.ns(short);
            self.ip("inet", &["link", "add", &port, "type", "veth", "peer", "name", ifname, "netns", &peer_ns])?;
            self.ip("inet", &["link", "set", &port, "master", "br0", "up"])?;
            self.ip(short, &["addr", "add", &format!("{addr}/24"), "dev", ifname])?;
            self.ip(short, &["link", "set", ifname, "up"])?;
        }
        // The home networks.
        for (i, nat) in homes.iter().copied().enumerate() {
            let lan = i + 1;
            let (router, home) = (format!("r{lan}"), format!("h{lan}"));
            let (router, home) = (router.as_str(), home.as_str());
            let host = home_ip(lan);
            let home_ns = self.ns(home);
            self.ip(router, &["link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", &home_ns])?;
            self.ip(router, &["addr", "add", &format!("10.{lan}.0.1/24"), "dev", "lan"])?;
            self.ip(router, &["link", "set", "lan", "up"])?;
            self.ip(home, &["addr", "add", &format!("{host}/24"), "dev", "eth0"])?;
            self.ip(home, &["link", "set", "eth0", "up"])?;
            self.ip(home, &["route", "add", "default", "via", &format!("10.{lan}.0.1")])?;
            let router_ns = self.ns(router);
            run(&["ip", "netns", "exec", &router_ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
            let masquerade = match nat {
                Nat::Cone => "masquerade",
                Nat::Symmetric => "masquerade random",
            };
            // Only replies come in: new connections from the internet are dropped on their way
            // to the home network, and new UDP to the router itself too (as home routers do;
            // a TCP SYN to a closed port of the router gets its reset).
            let rules = format!(
                "table ip nat {{\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n    oifname \"wan\" {masquerade}\n  }}\n}}\n\
                 table ip filter {{\n  chain forward {{\n    type filter hook forward priority filter; policy accept;\n    iifname \"wan\" ct state new drop\n  }}\n\
                 \x20 chain input {{\n    type filter hook input priority filter; policy accept;\n    iifname \"wan\" ct state new meta l4proto udp drop\n  }}\n}}\n"
            );
            run_stdin(&["ip", "netns", "exec", &router_ns, "nft", "-f", "-"], &rules)?;
        }
        Ok(())
    }

    /// Runs `f` on a thread inside namespace `short`: sockets made there belong to it.
    pub fn within<T: Send + 'static>(&self, short: &str, f: impl FnOnce() -> T + Send + 'static) -> std::io::Result<T> {
        let path = format!("/var/run/netns/{}", self.ns(short));
        std::thread::spawn(move || -> std::io::Result<T> {
            let file = std::fs::File::open(&path)?;
            use std::os::fd::AsRawFd;
            // SAFETY: a valid namespace fd; setns changes only this thread's network namespace.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(f())
        })
        .join()
        .map_err(|_| std::io::Error::other("lab thread panicked"))?
    }

    /// A TCP listener inside namespace `short`.
    pub fn listen(&self, short: &str, addr: SocketAddrV4) -> std::io::Result<std::net::TcpListener> {
        self.within(short, move || std::net::TcpListener::bind(addr))?
    }

    /// `GET path` (HTTP/1.0) from inside namespace `short`: the status and the body.
    pub fn get(&self, short: &str, addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
        self.http(short, addr, format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"))
    }

    /// `POST path` with a JSON body and a bearer token, from inside namespace `short`.
    pub fn post(
        &self,
        short: &str,
        addr: SocketAddr,
        path: &str,
        token: &str,
        json: &str,
    ) -> std::io::Result<(u16, String)> {
        self.http(
            short,
            addr,
            format!(
                "POST {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
                json.len()
            ),
        )
    }

    fn http(&self, short: &str, addr: SocketAddr, request: String) -> std::io::Result<(u16, String)> {
        self.within(short, move || -> std::io::Result<(u16, String)> {
            let mut stream = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
            stream.set_read_timeout(Some(Duration::from_secs(20)))?;
            stream.write_all(request.as_bytes())?;
            let mut raw = Vec::new();
            stream.read_to_end(&mut raw)?;
            let text = String::from_utf8_lossy(&raw);
            let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
            let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
            Ok((status, body.to_string()))
        })?
    }

    /// A command run inside namespace `short` (`ip netns exec`, which execs the program: the
    /// child's pid is the program's).
    pub fn command(&self, short: &str, program: &std::path::Path) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("ip");
        c.arg("netns").arg("exec").arg(self.ns(short)).arg(program);
        c
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in self.created.iter().rev() {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}
