//! The simulator's listening ports (nodes' API and p2p ports).

/// Where the simulator's listening ports come from: below Linux's ephemeral range (32768 and
/// up by default). A port the kernel hands out for port 0 is an ephemeral one, and by the time
/// a node binds it — a restarted node binds its ports again — an outgoing connection (another
/// node's fetch or dial) may hold it: a sweep of many runs met `Address already in use` so.
const PORTS: std::ops::Range<u16> = 20_000..32_000;

/// A port free now in [`PORTS`], each handed out once per process (a killed node's ports stay
/// its own for its restart).
pub(crate) fn free_port() -> std::io::Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    // Start where another simulator process on the machine is unlikely to be.
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let span = u32::from(PORTS.end - PORTS.start);
    let _ = NEXT.compare_exchange(u32::MAX, std::process::id() % span, Ordering::Relaxed, Ordering::Relaxed);
    for _ in 0..span {
        let port = PORTS.start + (NEXT.fetch_add(1, Ordering::Relaxed) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(std::io::Error::new(std::io::ErrorKind::AddrInUse, "every port from 20000 to 32000 is taken"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_ports_come_from_below_the_ephemeral_range_once_each() {
        let ports: Vec<u16> = (0..50).map(|_| free_port().unwrap()).collect();
        assert!(ports.iter().all(|p| PORTS.contains(p)), "{ports:?}");
        let distinct: std::collections::HashSet<&u16> = ports.iter().collect();
        assert_eq!(distinct.len(), ports.len(), "a port is handed out once");
    }
}
