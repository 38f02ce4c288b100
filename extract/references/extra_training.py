"""More labelled pages for the learned extractor (issue 38): trafilatura's evaluation corpus.

trafilatura's repository (github.com/adbar/trafilatura, Apache-2.0) keeps ~990 web pages of
2012–2023 — news, magazines, blogs, government, company and shop pages in a dozen languages —
each with a few sentences its main text must contain ("with") and a few it must not ("without").
Those are partial labels: `learn --extra` marks a block kept when it holds a "with" sentence,
dropped when it holds a "without" one, and trains on those blocks only.

Pages are left out when they belong to a held-out measure or would leak across the dev sets'
folds: the ScrapingHub benchmark's pages (named by their 32-hex ids in trafilatura's corpus), and
any page whose site (its host without `www.`; for web.archive.org, the archived URL's) is in one
of the `--exclude-hosts` files — the held-out benchmarks' hosts — or in the dev sets (`learn`
checks those itself).

    python3 extract/references/extra_training.py TRAFILATURA_CHECKOUT \\
        --exclude-hosts HOSTS.txt [HOSTS.txt ...] --out target/extract-extra/pages.jsonl

TRAFILATURA_CHECKOUT holds `tests/evaldata.json` and the pages under `tests/eval`, `tests/cache`
(this machine: `git --git-dir=<mirror> archive HEAD tests | tar x`). Nothing here reaches the
network: the corpus and host lists are brought by whoever trains.
"""
import argparse
import json
import os
import re
import sys

from heldout_hosts import read_hosts, site


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('checkout')
    ap.add_argument('--exclude-hosts', nargs='*', default=[])
    ap.add_argument('--out', default='target/extract-extra/pages.jsonl')
    a = ap.parse_args()
    tests = os.path.join(a.checkout, 'tests')
    data = json.load(open(os.path.join(tests, 'evaldata.json')))
    excluded = read_hosts(a.exclude_hosts)
    os.makedirs(os.path.dirname(a.out) or '.', exist_ok=True)
    kept = skipped_sh = skipped_host = skipped_bare = 0
    with open(a.out, 'w') as out:
        for url, v in data.items():
            name = v['file']
            if re.fullmatch(r'[0-9a-f]{32}\.html', name):
                skipped_sh += 1
                continue
            if not url.startswith('http'):
                skipped_bare += 1
                continue
            if site(url) in excluded:
                skipped_host += 1
                continue
            path = next((p for p in (os.path.join(tests, d, name) for d in ('eval', 'cache')) if os.path.exists(p)), None)
            if path is None or not (v.get('with') or v.get('without')):
                skipped_bare += 1
                continue
            out.write(json.dumps({'url': url, 'site': site(url), 'path': os.path.abspath(path),
                                  'with': v.get('with', []), 'without': v.get('without', [])}) + '\n')
            kept += 1
    print(f'extra_training: {kept} pages to {a.out}; left out {skipped_sh} ScrapingHub pages, '
          f'{skipped_host} of held-out hosts, {skipped_bare} without a URL, page or labels', file=sys.stderr)


if __name__ == '__main__':
    main()
