"""Can a selector choose, page by page, between Weft's learned extractor and rs-trafilatura?
(issue 38: the ensemble option.) Reads the out-of-fold texts `learn --dump` writes and the
references' predictions (`scripts/extract-references.sh`), builds page features — Weft's own
(its block probabilities, its text against the rules', the page type) and, optionally, the pair's
agreement (which needs rs-trafilatura run on the page) — and trains regressors of
"rs-trafilatura's F1 minus the model's" on the same five folds by site, printing each set's F1
when the selector's choice is taken. Needs numpy and scikit-learn (a study, not the product):

    cargo run --release -p weft-extract --example learn -- --trees 200 --depth 8 --dump target/oof.jsonl
    python3 -m venv target/tools/study && target/tools/study/bin/pip install scikit-learn==1.9.1
    target/tools/study/bin/python extract/references/selector_study.py target/oof.jsonl
(`scripts/extract-references.sh` first, so that the dump carries rs-trafilatura's texts.)
"""
import json, re, collections, math, sys
import numpy as np
W = re.compile(r'\w+')
def shingles(t):
    w = W.findall(t)
    if not w: return collections.Counter()
    if len(w) < 4: return collections.Counter([tuple(w)])
    return collections.Counter(tuple(w[i:i+4]) for i in range(len(w)-3))
def f1(s):
    tp, fp, fn = s
    return 0.0 if tp == 0 else 2*tp/(2*tp+fp+fn)
def summarize(scores):
    """A set's F1 from its pages' (tp, fp, fn), as the dev sets' score.py aggregates them."""
    ps, rs = [], []
    for tp, fp, fn in scores:
        if tp == fp == fn == 0: continue
        if fp == 0 and fn == 0: ps.append(1); rs.append(1); continue
        if tp+fp > 0: ps.append(tp/(tp+fp))
        if tp+fn > 0: rs.append(tp/(tp+fn))
    P = sum(ps)/len(ps) if ps else 0; R = sum(rs)/len(rs) if rs else 0
    return 0 if P+R == 0 else 2*P*R/(P+R)
def overlap(a, b):
    """The pair's agreement: the share of each text's word 4-grams found in the other."""
    sa, sb = shingles(a), shingles(b)
    inter = sum((sa & sb).values())
    return inter / max(1, sum(sa.values())), inter / max(1, sum(sb.values()))
# Each page's texts and their scores come from the dump (learn scores them with the sets' metric).
pages = []
for line in open(sys.argv[1]):
    p = json.loads(line)
    for name, t in p.pop('texts').items():
        p[name] = t['text']; p['s_' + name] = tuple(t['score'])
    pages.append(p)
KINDS = sorted({p['page_kind'] for p in pages})
def weft_feats(p):
    pr = np.array(p['probs'], dtype=float); ch = np.array(p['chars'], dtype=float) + 1
    tot = max(ch.sum(), 1.0)
    kept = ch[pr >= 0.5].sum()
    unc = (np.minimum(pr, 1 - pr) * ch).sum() / tot
    mid = ch[(pr > 0.2) & (pr < 0.8)].sum() / tot
    mid_kept = ch[(pr > 0.2) & (pr < 0.8)].sum() / max(kept, 1)
    rule = np.array(p['rule']) > 0.5
    rkept = ch[rule].sum()
    lm = len(W.findall(p['model'])); lr = len(W.findall(p['rules']))
    a, b = overlap(p['model'], p['rules'])
    f = [math.log1p(lm), math.log1p(lr), math.log1p(lm) - math.log1p(lr), a, b, unc, mid, mid_kept,
         kept / tot, rkept / tot, math.log(tot), len(pr), p['confidence'], (pr.max() if len(pr) else 0.0), (pr >= 0.5).sum(),
         ch[pr >= 0.9].sum() / max(kept, 1)]
    f += [1.0 if p['page_kind'] == k else 0.0 for k in KINDS]
    return f
def pair_feats(p, ref):
    lm = len(W.findall(p['model'])); lx = len(W.findall(p[ref]))
    a, b = overlap(p['model'], p[ref])
    return [math.log1p(lx), math.log1p(lm) - math.log1p(lx), a, b]
X1 = np.array([weft_feats(p) for p in pages])
REF = 'rs-trafilatura'
X2 = np.array([pair_feats(p, REF) for p in pages])
gain = np.array([f1(p['s_' + REF]) - f1(p['s_model']) for p in pages])
folds = np.array([p['fold'] for p in pages])
sets = np.array([p['set'] for p in pages])
def report(choice, label):
    out = []
    for s in ['extraction-devset', 'extraction-devset-2']:
        sc = [p['s_' + REF] if c else p['s_model'] for p, c, ss in zip(pages, choice, sets) if ss == s]
        out.append(summarize(sc))
    print(f'{label:<40} news {out[0]:.3f}  modern {out[1]:.3f}  chose ref on {choice.mean():.2f}', flush=True)
report(np.zeros(len(pages), bool), 'model')
report(np.ones(len(pages), bool), REF)
report(gain > 0, 'oracle')
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
def cv(X, make, label, margin=0.0):
    pred = np.zeros(len(pages))
    for f in range(5):
        tr, te = folds != f, folds == f
        m = make(); m.fit(X[tr], gain[tr]); pred[te] = m.predict(X[te])
    for mg in [0.0, 0.02, 0.05]:
        report(pred > mg, f'{label} >{mg}')
    return pred
for name, X in [('weft only', X1), ('weft+pair', np.hstack([X1, X2])), ('pair only', X2)]:
    cv(X, lambda: GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.05, subsample=0.8, random_state=0), 'gbr ' + name)
    cv(X, lambda: RandomForestRegressor(n_estimators=300, min_samples_leaf=5, random_state=0), 'rf ' + name)
