#!/usr/bin/env python3
"""Bytes each running `weft` process sends and receives over TCP, from the kernel's own counters.

Samples `ss -tinpH` (tcp_info's bytes_acked / bytes_received per socket, with the owning
process) every `--every` seconds for `--secs` seconds, follows each socket by its addresses, and
prints each process's rates over the window: what the scale simulator's per-member traffic is
checked against on a live loopback network (`weft-simnet run`, TCP only). Only sockets whose
other end is a `weft` process too are counted: peer-to-peer traffic, not the API or the crawl.
Sockets that close between two samples lose at most their last interval's bytes.

    python3 scripts/p2p-bytes.py --secs 120
"""

import argparse
import re
import subprocess
import sys
import time

SOCKET = re.compile(r"^(\S+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(\S+)\s+users:\(\(\"([^\"]+)\",pid=(\d+)")


def sample():
    text = subprocess.run(["ss", "-tinpH"], capture_output=True, text=True, check=True).stdout
    lines = text.splitlines()
    found = {}
    weft_ends = set()
    sockets = []
    i = 0
    while i < len(lines):
        m = SOCKET.match(lines[i].strip())
        info = lines[i + 1] if i + 1 < len(lines) else ""
        i += 2 if m else 1
        if not m or m.group(6) != "weft":
            continue
        local, peer, pid = m.group(4), m.group(5), int(m.group(7))
        weft_ends.add(local)
        sockets.append((local, peer, pid, info))
    for local, peer, pid, info in sockets:
        if peer not in weft_ends:
            continue
        sent = re.search(r"bytes_acked:(\d+)", info)
        recv = re.search(r"bytes_received:(\d+)", info)
        found[(pid, local, peer)] = (int(sent.group(1)) if sent else 0, int(recv.group(1)) if recv else 0)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--secs", type=float, default=120)
    ap.add_argument("--every", type=float, default=2)
    args = ap.parse_args()
    last = sample()
    totals = {}
    conns = {}
    start = time.time()
    while time.time() - start < args.secs:
        time.sleep(args.every)
        now = sample()
        for key, (s, r) in now.items():
            s0, r0 = last.get(key, (0, 0))
            t = totals.setdefault(key[0], [0, 0])
            t[0] += max(0, s - s0)
            t[1] += max(0, r - r0)
        for pid in {k[0] for k in now}:
            conns.setdefault(pid, []).append(sum(1 for k in now if k[0] == pid))
        last = now
    secs = time.time() - start
    rows = sorted(totals.items(), key=lambda kv: kv[0])
    if not rows:
        print("no weft sockets seen", file=sys.stderr)
        sys.exit(1)
    ups = [t[0] / secs for _, t in rows]
    downs = [t[1] / secs for _, t in rows]
    held = [sum(conns.get(pid, [0])) / len(conns.get(pid, [0])) for pid, _ in rows]
    for (pid, t), h in zip(rows, held):
        print(f"pid {pid}: up {t[0] / secs / 1e3:.1f} KB/s, down {t[1] / secs / 1e3:.1f} KB/s, {h:.0f} connections")
    ups.sort()
    downs.sort()
    print(
        f"{len(rows)} processes over {secs:.0f} s: up mean {sum(ups) / len(ups) / 1e3:.1f} KB/s (max {ups[-1] / 1e3:.1f}), "
        f"down mean {sum(downs) / len(downs) / 1e3:.1f} KB/s (max {downs[-1] / 1e3:.1f}), "
        f"connections mean {sum(held) / max(1, len(held)):.1f}"
    )


if __name__ == "__main__":
    main()
