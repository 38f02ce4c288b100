#!/usr/bin/env python3
"""Runs the workspace's test binaries (built by `cargo test --no-run`) and says where the time
went: every test's duration, the slowest tests, each binary's wall time, a JUnit file.

Why not `cargo test` alone: it prints no test's duration on stable Rust. libtest can
(`--report-time`, an unstable option): it is unlocked here for the test binaries only
(RUSTC_BOOTSTRAP=1 in their environment). Passed to cargo, that variable changes every crate's
fingerprint and rebuilds the whole tree. Why not cargo-nextest: see docs/src/testing.md, "How the suite is
laid out".

Usage: run_tests.py BUILD_JSON [--only FILTER ...] [--skip FILTER ...] [--bound SECS] [--name NAME] [--jobs N]
BUILD_JSON is `cargo test --no-run --message-format=json`'s output. Exit status 1 when any test
failed or a binary ended badly (it crashed, or outlived --bound and was killed).
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
import xml.etree.ElementTree as ET

RESULT = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)(?: <([0-9.]+)s>)?")



def executables(build_json):
    """(package name, package dir, executable, binary label) of every test binary."""
    found = []
    with open(build_json) as f:
        for line in f:
            try:
                m = json.loads(line)
            except json.JSONDecodeError:
                continue
            if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"].get("test"):
                continue
            package = m["package_id"]
            name = m["target"]["name"]
            kind = m["target"]["kind"][0]
            pkg_dir = os.path.dirname(m["manifest_path"])
            pkg_name = os.path.basename(pkg_dir)
            found.append((pkg_name, pkg_dir, m["executable"], f"{pkg_name}::{kind}:{name}", package))
    return sorted(set(found))


PRINT = threading.Lock()


def dump_stacks(pid, tag):
    """Before a binary that outlived its bound is killed, prints every thread's stack (gdb, when
    installed), so a hang in CI says where it hung instead of only that it did."""
    gdb = shutil.which("gdb")
    if gdb is None:
        with PRINT:
            print(f"{tag}(no stacks: gdb is not installed)", flush=True)
        return
    try:
        out = subprocess.run([gdb, "-p", str(pid), "-batch", "-nx", "-ex", "thread apply all bt"],
                             capture_output=True, text=True, errors="replace", timeout=120).stdout
    except (subprocess.TimeoutExpired, OSError) as e:
        out = f"gdb failed: {e}"
    with PRINT:
        print(f"{tag}==> stacks of the binary outliving its bound (pid {pid}):", flush=True)
        for line in out.splitlines():
            if line.startswith(("Thread ", "#")):
                print(f"{tag}{line}")
        sys.stdout.flush()


def run(binary, pkg_dir, args, bound, tag):
    """Runs one test binary, echoing its output (each line tagged with its binary when binaries
    run side by side); returns (exit code or None if killed, lines, secs)."""
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", CARGO_MANIFEST_DIR=pkg_dir)
    cmd = [binary, *args, "-Z", "unstable-options", "--report-time"]
    started = time.monotonic()
    p = subprocess.Popen(cmd, cwd=pkg_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace", start_new_session=True)
    lines = []
    killed = threading.Event()

    def stop():
        killed.set()
        dump_stacks(p.pid, tag)
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    timer = threading.Timer(bound, stop)
    timer.start()
    for line in p.stdout:
        with PRINT:
            sys.stdout.write(f"{tag}{line}")
            sys.stdout.flush()
        lines.append(line.rstrip("\n"))
    code = p.wait()
    timer.cancel()
    return (None if killed.is_set() else code), lines, time.monotonic() - started


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build_json")
    ap.add_argument("--only", action="append", default=[], help="run only the tests matching (libtest filter)")
    ap.add_argument("--skip", action="append", default=[], help="skip the tests matching")
    ap.add_argument("--bound", type=int, default=1800, help="seconds a binary may run before it is killed")
    ap.add_argument("--name", default="tests", help="names the JUnit file and the summary")
    ap.add_argument("--out", default="target/test-results")
    ap.add_argument("--jobs", type=int, default=1, help="test binaries run at once")
    o = ap.parse_args()

    results = []  # (binary label, test, status, secs)
    binaries = []  # (label, secs, code)
    failed_binaries = []
    args = list(o.only)
    for s in o.skip:
        args += ["--skip", s]
    # Biggest binaries first: they hold the system tests, the longest runs, so the small ones
    # fill the gaps beside them. Tests that run a network of nodes take turns across binaries
    # (weft_test_support::failures: one_network_at_a_time, one_of_several_networks).
    found = sorted(executables(o.build_json), key=lambda e: -os.path.getsize(e[2]))
    tagged = o.jobs > 1

    def one(e):
        pkg_name, pkg_dir, exe, label, _ = e
        with PRINT:
            print(f"\n==> {label} ({os.path.basename(exe)})", flush=True)
        return e, run(exe, pkg_dir, args, o.bound, f"[{label}] " if tagged else "")

    # Each network turn is written down as it ends (weft_test_support::failures::turns_log).
    turns = os.path.join(os.environ.get("CARGO_TARGET_DIR")
                         or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "target"),
                         "network-turns.tsv")
    if os.path.exists(turns):
        os.remove(turns)
    wall = time.monotonic()
    with ThreadPoolExecutor(max_workers=o.jobs) as pool:
        for (pkg_name, pkg_dir, exe, label, _), (code, lines, secs) in pool.map(one, found):
            ran = 0
            for line in lines:
                m = RESULT.match(line)
                if m:
                    ran += 1
                    results.append((label, m.group(1), m.group(2), float(m.group(3) or 0)))
            binaries.append((label, secs, code, ran))
            if code != 0:
                failed_binaries.append(label if code is not None else f"{label} (killed after {o.bound} s)")
    wall = time.monotonic() - wall

    os.makedirs(o.out, exist_ok=True)
    suite = ET.Element("testsuites", name=o.name)
    by_binary = {}
    for label, test, status, secs in results:
        by_binary.setdefault(label, []).append((test, status, secs))
    for label, tests in by_binary.items():
        s = ET.SubElement(suite, "testsuite", name=label, tests=str(len(tests)),
                          failures=str(sum(1 for t in tests if t[1] == "FAILED")))
        for test, status, secs in tests:
            case = ET.SubElement(s, "testcase", classname=label, name=test, time=f"{secs:.3f}")
            if status == "FAILED":
                ET.SubElement(case, "failure", message="failed; see the log")
            elif status == "ignored":
                ET.SubElement(case, "skipped")
    junit = os.path.join(o.out, f"{o.name}.junit.xml")
    ET.ElementTree(suite).write(junit, encoding="utf-8", xml_declaration=True)

    failed = [(l, t) for l, t, s, _ in results if s == "FAILED"]
    print(f"\n==> {o.name}: {len(results)} tests in {len(binaries)} binaries, {wall:.0f} s "
          f"({sum(b[1] for b in binaries):.0f} s of binaries, {o.jobs} at a time); JUnit: {junit}")
    print("slowest tests:")
    for label, test, _, secs in sorted(results, key=lambda r: -r[3])[:10]:
        print(f"  {secs:8.1f} s  {label} {test}")
    if os.path.exists(turns):
        held = []  # (secs held, secs waited, test, slots held)
        with open(turns) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 4:
                    held.append((float(parts[2]), float(parts[1]), parts[0], int(parts[3])))
        # A slot is held by one test at a time: the slot-seconds held, over the slots, are the
        # suite's floor on any machine.
        slots = max((n for _, _, _, n in held), default=1)
        floor = sum(h * n for h, _, _, n in held) / slots
        print(f"network turns: {len(held)}, held {sum(h for h, _, _, _ in held):.0f} s in all, "
              f"a floor of {floor:.0f} s ({slots} slots; a whole turn holds them all):")
        for h, w, test, n in sorted(held, reverse=True)[:10]:
            print(f"  {h:8.1f} s  {test} (waited {w:.0f} s{', whole' if n == slots and slots > 1 else ''})")
    print("binaries (wall time):")
    for label, secs, code, ran in sorted(binaries, key=lambda b: -b[1]):
        if ran or code != 0:
            state = "ok" if code == 0 else ("KILLED" if code is None else f"exit {code}")
            print(f"  {secs:8.1f} s  {label}: {ran} tests, {state}")
    if failed or failed_binaries:
        print("FAILED:")
        for label, test in failed:
            print(f"  {label} {test}")
        for b in failed_binaries:
            print(f"  binary {b}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
