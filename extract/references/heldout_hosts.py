"""The hosts of the held-out extraction benchmarks (issue 38), one a line, `www.` dropped.

Extra training pages from these hosts are left out (`extra_training.py`, `full_training.py`):
the 2026 benchmark's pages outside `extraction-devset-2` and the rest of the ScrapingHub
benchmark are the held-out measure, and a page of the same site in training would flatter it.

    python3 extract/references/heldout_hosts.py \\
        --web2026 TIPTOPJAW_CHECKOUT/benchmark/ground-truth \\
        --scrapinghub SCRAPINGHUB_CHECKOUT/ground-truth.json > target/extract-extra/heldout-hosts.txt

The checkouts come from github.com/tiptopjaw/web-content-extraction-benchmark and
github.com/scrapinghub/article-extraction-benchmark. Nothing here reaches the network.
"""
import argparse
import glob
import json
import os
import re
from urllib.parse import urlparse


def site(url):
    """A URL's site: its host without `www.` or a port; for web.archive.org, the archived URL's.
    '' for a URL that does not parse."""
    try:
        u = urlparse(url.strip())
    except ValueError:
        return ''
    host = u.netloc.lower()
    if host.endswith('web.archive.org'):
        m = re.search(r'/web/\d+[a-z_]*/(https?://.*)$', u.path + ('?' + u.query if u.query else ''))
        if m:
            return site(m.group(1))
    host = host.split(':')[0]
    return host[4:] if host.startswith('www.') else host


def read_hosts(files):
    """The hosts listed in `files` (this script's output), `www.` dropped."""
    hosts = set()
    for f in files:
        hosts |= {h.strip().lower().removeprefix('www.') for h in open(f) if h.strip()}
    return hosts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--web2026', required=True, help='the benchmark/ground-truth directory of one JSON per page')
    ap.add_argument('--scrapinghub', required=True, help='its ground-truth.json')
    a = ap.parse_args()
    hosts = set()
    for f in glob.glob(os.path.join(a.web2026, '*.json')):
        url = json.load(open(f)).get('url') or ''
        if url:
            hosts.add(site(url))
    for v in json.load(open(a.scrapinghub)).values():
        if v.get('url'):
            hosts.add(site(v['url']))
    hosts.discard('')
    for h in sorted(hosts):
        print(h)


if __name__ == '__main__':
    main()
