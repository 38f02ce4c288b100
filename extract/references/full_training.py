"""More labelled pages for the learned extractor (issue 38): public benchmarks with full gold text.

Older public extraction benchmarks give, for each page, the whole main text a person chose:
CleanEval (2007, dev and final sets: `URL:` header, `<p>`/`<h>`/`<l>` markers), Dragnet's data
(2012, news and blogs: plain text), L3S-GN1 / "page-signal" (2008 Google News pages: the page
itself with its parts marked `x-nc-sel1` headline and `x-nc-sel2` full text), CleanPortalEval
(news portals) and Mozilla Readability's test pages (its expected HTML). The mirror
github.com/j-szulc/html-cleaning-dataset-merged holds them all as `<set>/input/<name>.html` and
`<set>/GoldStandard/<name>.txt`. This turns them into `learn --extra` lines with a `truth`:
every block of such a page gets a label, as a dev-set page's blocks do.

A page's site is its `URL:` header (CleanEval), else its canonical / `og:url` / `<base>`,
else the host most of its absolute links point to (a news page links to itself most). Pages are
left out when that site is one of a held-out benchmark's (`--exclude-hosts`: the 2026 benchmark's
and ScrapingHub's hosts, from `heldout_hosts.py`); `learn` leaves out any page of a dev set's site.

    python3 extract/references/full_training.py MERGED_CHECKOUT \\
        --exclude-hosts target/extract-extra/heldout-hosts.txt --out target/extract-extra/full.jsonl

MERGED_CHECKOUT is an extracted copy of that repository (this machine:
`git --git-dir=<mirror> archive HEAD | tar x -C DIR`). Nothing here reaches the network.
"""
import argparse
import collections
import glob
import html as htmllib
import json
import os
import re
import sys

from heldout_hosts import read_hosts, site as host_of

SETS = ['cleaneval-dev', 'cleaneval-final', 'dragnet_data', 'page-signal-master', 'CleanPortalEval-master',
        'readability']


def strip_tags(text):
    text = re.sub(r'(?is)<(script|style)\b.*?</\1>', ' ', text)
    text = re.sub(r'(?s)<[^>]+>', '\n', text)
    return htmllib.unescape(text)


def l3s_truth(marked):
    """The headline and full text of an L3S-GN1 page: the text inside `x-nc-sel1`/`x-nc-sel2`
    spans (they do not nest one another)."""
    out = []
    for m in re.finditer(r'(?is)<span[^>]*class="?x-nc-sel([12])"?[^>]*>(.*?)</span>', marked):
        out.append(strip_tags(m.group(2)))
    return '\n'.join(out)


def truth_of(set_name, gold):
    if set_name == 'page-signal-master':
        return l3s_truth(gold), None
    url = None
    m = re.match(r'\s*URL:\s*(\S+)', gold)
    if m:
        url = m.group(1)
        gold = gold[m.end():]
    if set_name == 'readability':
        return strip_tags(gold), url
    # CleanEval's and CleanPortalEval's markers (<p>, <h>, <l>) and entities.
    return htmllib.unescape(re.sub(r'<[phl]>', '\n', gold)), url


def site_of(page_html, url):
    if url:
        return host_of(url), url
    for pattern in (r'<link[^>]+rel=["\']?canonical["\']?[^>]*href=["\']([^"\']+)',
                    r'<link[^>]+href=["\']([^"\']+)["\'][^>]*rel=["\']?canonical',
                    r'<meta[^>]+property=["\']og:url["\'][^>]*content=["\']([^"\']+)',
                    r'<meta[^>]+content=["\']([^"\']+)["\'][^>]*property=["\']og:url',
                    r'<base[^>]+href=["\']([^"\']+)'):
        m = re.search(pattern, page_html, re.I)
        if m and m.group(1).startswith('http'):
            return host_of(m.group(1)), m.group(1)
    hosts = collections.Counter(host_of(u) for u in re.findall(r'(?:href|src)=["\'](https?://[^"\']+)', page_html))
    hosts.pop('', None)
    if hosts:
        host = hosts.most_common(1)[0][0]
        return host, f'http://{host}/'
    return '', None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('checkout')
    ap.add_argument('--exclude-hosts', nargs='*', default=[])
    ap.add_argument('--out', default='target/extract-extra/full.jsonl')
    a = ap.parse_args()
    excluded = read_hosts(a.exclude_hosts)
    os.makedirs(os.path.dirname(a.out) or '.', exist_ok=True)
    counts = collections.Counter()
    with open(a.out, 'w') as out:
        for set_name in SETS:
            for gold_path in sorted(glob.glob(os.path.join(a.checkout, set_name, 'GoldStandard', '*.txt'))):
                name = os.path.basename(gold_path)[:-4]
                page_path = os.path.join(a.checkout, set_name, 'input', name + '.html')
                if not os.path.exists(page_path):
                    counts['no page'] += 1
                    continue
                gold = open(gold_path, 'rb').read().decode('utf-8', 'replace')
                page = open(page_path, 'rb').read().decode('utf-8', 'replace')
                truth, url = truth_of(set_name, gold)
                truth = re.sub(r'[ \t]+', ' ', truth).strip()
                site, url = site_of(page, url)
                if len(truth.split()) < 20:
                    counts['no truth'] += 1
                    continue
                if site in excluded:
                    counts['held-out host'] += 1
                    continue
                # A page without a site of its own is its own group.
                site = site or f'{set_name}/{name}'
                out.write(json.dumps({'url': url or f'http://{set_name}.invalid/{name}', 'site': site,
                                      'path': os.path.abspath(page_path), 'set': set_name, 'truth': truth}) + '\n')
                counts[set_name] += 1
    print(f'full_training: {sum(v for k, v in counts.items() if k in SETS)} pages to {a.out}; '
          + ', '.join(f'{k} {v}' for k, v in counts.items()), file=sys.stderr)


if __name__ == '__main__':
    main()
