#!/usr/bin/env python3
"""Checks `fuser run` on the cross entropy fusion against torch.nn.functional.cross_entropy.

Writes random logits and targets as .npy, runs `fuser run` on the CPU interpreter (and on the
GPU with --gpu), reads the loss back and compares it with PyTorch in float64, for every
reduction, with ignore_index rows and with label smoothing. Needs python3 with numpy and torch
(the GPU machine has both); prints one line per case and exits 1 on any mismatch.

    scripts/check_torch_ce.py build/fuser/fuser [--gpu]
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

FUSION = """fusion ce_check
param N = 4
param V = 7
input logits: f32[N, V]
input target: i64[N]
loss = cross_entropy(logits, target, reduction=%s, ignore_index=%d, label_smoothing=%s)
output loss
"""


def run_case(fuser, device, n, v, reduction, ignore_index, smoothing, seed, tmp):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, v)).astype(np.float32)
    t = rng.integers(0, v, size=n).astype(np.int64)
    if n > 2:
        t[1] = ignore_index  # one ignored row
    path = os.path.join(tmp, "ce.fusion")
    with open(path, "w") as f:
        f.write(FUSION % (reduction, ignore_index, repr(float(smoothing))))
    np.save(os.path.join(tmp, "x.npy"), x)
    np.save(os.path.join(tmp, "t.npy"), t)
    out = os.path.join(tmp, "loss.npy")
    if os.path.exists(out):
        os.remove(out)
    cmd = [fuser, "run", path, "--set", "N=%d" % n, "--set", "V=%d" % v, "--device", device,
           "--input", "logits=" + os.path.join(tmp, "x.npy"), "--input", "target=" + os.path.join(tmp, "t.npy"),
           "--output", "loss=" + out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    ours = np.load(out).astype(np.float64)
    ref = F.cross_entropy(torch.from_numpy(x).double(), torch.from_numpy(t), reduction=reduction,
                          ignore_index=ignore_index, label_smoothing=smoothing).numpy()
    err = float(np.max(np.abs(ours - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    return err, None


def main():
    fuser = sys.argv[1]
    devices = ["cpu"] + (["gpu"] if "--gpu" in sys.argv else [])
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for device in devices:
            for (n, v) in [(4, 7), (1, 5), (64, 50257)]:
                for reduction in ["mean", "sum", "none"]:
                    for smoothing in [0.0, 0.1]:
                        err, msg = run_case(fuser, device, n, v, reduction, -100, smoothing, 1, tmp)
                        ok = msg is None and err <= 1e-5
                        bad += not ok
                        print("%-4s N=%-3d V=%-6d %-4s smoothing=%.1f  %s" % (
                            device, n, v, reduction, smoothing,
                            ("max_rel_error=%.2e PASS" % err) if msg is None and ok else
                            ("max_rel_error=%.2e FAIL" % err) if msg is None else "FAIL: " + msg))
    print("torch cross_entropy check: %d failed" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
