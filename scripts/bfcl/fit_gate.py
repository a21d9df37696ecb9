#!/usr/bin/env python3
"""Fits an `auto` gate on the signals `examples/bfcl_gate.rs` records, as the `mutual` gate's
weights were fitted (docs/src/embedded.md): a logistic regression in which every group weighs the
same (BFCL simple_python / multiple, where a call is right; irrelevance, where none is; our own
tool and no-tool prompts, categories `own_tool*` / `own_none*`), then the accuracy per group for
the whole fit, a two-fold cross-validation, and intercept shifts. Needs numpy.

    python3 scripts/bfcl/fit_gate.py FEATURES.jsonl pmi,describe [pmi,shared,gap ...]

Features: pmi (max channel − neutral), describe (max over tools of describe − describe_null),
shared (max shared_params), gap (call − greedy), tokens.
"""
import json
import sys
from collections import Counter

import numpy as np

CALL = {"simple_python": 1, "multiple": 1, "own_tool": 1, "irrelevance": 0, "own_none": 0}
ORDER = ["simple_python", "multiple", "irrelevance", "own_tool", "own_none"]


def group(row):
    c = row["category"]
    for own in ("own_tool", "own_none"):
        if c.startswith(own):
            return own
    return c


def features(s, names):
    f = {
        "pmi": max(s["channel"]) - s["neutral"],
        "describe": max(a - b for a, b in zip(s["describe"], s["describe_null"])),
        "shared": max(s["shared_params"]),
        "gap": s["call"] - s["greedy"],
        "tokens": s["tokens"],
    }
    return [f[n] for n in names]


def fit(rows, names, iters=4000, lr=0.5):
    x = np.array([features(r["signals"], names) for r in rows], float)
    mu, sd = x.mean(0), x.std(0) + 1e-9
    z = (x - mu) / sd
    y = np.array([CALL[group(r)] for r in rows], float)
    count = Counter(group(r) for r in rows)
    w = np.array([1.0 / count[group(r)] for r in rows])
    w /= w.sum()
    a, b = np.zeros(z.shape[1]), 0.0
    for _ in range(iters):
        g = (1 / (1 + np.exp(-(z @ a + b))) - y) * w
        a -= lr * (z.T @ g + 1e-3 * a)
        b -= lr * g.sum()
    return a / sd, b - (a * mu / sd).sum()


def score(rows, names, coef, bias):
    out = {}
    for r in rows:
        call = float(np.dot(coef, features(r["signals"], names)) + bias) >= 0
        right = call if CALL[group(r)] else not call
        cell = out.setdefault(group(r), [0, 0])
        cell[0] += right
        cell[1] += 1
    return "  ".join(f"{g}={out[g][0]}/{out[g][1]}" for g in ORDER if g in out)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    rows = [json.loads(line) for line in open(sys.argv[1])]
    for spec in sys.argv[2:]:
        names = spec.split(",")
        coef, bias = fit(rows, names)
        print(f"{names}: weights {np.round(coef, 3).tolist()} intercept {bias:.3f}")
        print("  whole:", score(rows, names, coef, bias))
        even, odd = rows[0::2], rows[1::2]
        ce, be = fit(even, names)
        co, bo = fit(odd, names)
        print("  2-fold, even → odd:", score(odd, names, ce, be))
        print("  2-fold, odd → even:", score(even, names, co, bo))
        for shift in (0.6, 0.4, 0.2, 0.0, -0.2, -0.4, -0.6, -0.8):
            print(f"  intercept {shift:+.1f}:", score(rows, names, coef, bias + shift))


if __name__ == "__main__":
    main()
