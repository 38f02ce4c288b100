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
from urllib.parse import urlparse


def host_of(url):
    host = urlparse(url).netloc.lower().split(':')[0]
    return host[4:] if host.startswith('www.') else host


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--web2026', required=True, help='the benchmark/ground-truth directory of one JSON per page')
    ap.add_argument('--scrapinghub', required=True, help='its ground-truth.json')
    a = ap.parse_args()
    hosts = set()
    for f in glob.glob(os.path.join(a.web2026, '*.json')):
        url = json.load(open(f)).get('url') or ''
        if url:
            hosts.add(host_of(url))
    for v in json.load(open(a.scrapinghub)).values():
        if v.get('url'):
            hosts.add(host_of(v['url']))
    hosts.discard('')
    for h in sorted(hosts):
        print(h)


if __name__ == '__main__':
    main()
