"""trafilatura_predict.py DEVSET_DIR OUT.json: runs trafilatura (Python, `extract()` with its
defaults and the page's URL) on every page of an extraction dev set and writes
{id: {"articleBody": text, "ms": milliseconds}}, the predictions format the sets' score.py
reads, with each page's single-threaded extraction time (median of 3 runs)."""
import gzip, json, sys, time, statistics
import trafilatura

REPEAT = 3

def main():
    if len(sys.argv) != 3:
        sys.exit("usage: trafilatura_predict.py DEVSET_DIR OUT.json")
    root, out = sys.argv[1], sys.argv[2]
    truth = json.load(open(f"{root}/ground-truth.json"))
    predictions = {}
    for pid, item in truth.items():
        html = gzip.open(f"{root}/html/{pid}.html.gz").read()
        times, text = [], ""
        for _ in range(REPEAT):
            started = time.perf_counter()
            text = trafilatura.extract(html, url=item.get("url")) or ""
            times.append((time.perf_counter() - started) * 1e3)
        predictions[pid] = {"articleBody": text, "ms": statistics.median(times)}
    json.dump(predictions, open(out, "w"))
    print(f"trafilatura {trafilatura.__version__}: {len(predictions)} pages of {root} -> {out}", file=sys.stderr)

main()
