#!/usr/bin/env python3
"""Stands in for reference/torch_bench.py in the tests (no PyTorch, no GPU):
takes the same arguments, reads the --fusions file run_suite wrote, parses
every item's fusion with reference/fusion_torch.py and checks that each of its
ops has a PyTorch translation (exit 1 if not), then writes a run file with
fixed times for every item: torch_eager 200 us, torch_compile 100 us (2
kernels, 1 launch more), with the bytes and formula the fuser counted."""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fusion_torch  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--items", required=True)
ap.add_argument("--fusions", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--quiet-if-absent", action="store_true")
for flag in ("--repetitions", "--time-limit", "--mode", "--seed"):
    ap.add_argument(flag)
a = ap.parse_args()
with open(a.fusions) as f:
    specs = {x["item"]: x for x in json.load(f)["items"]}
rows = []
for item in a.items.split(","):
    if item not in specs:
        sys.exit(f"fake_torch_bench: {item} has no fusion in {a.fusions}")
    fusion = fusion_torch.parse(specs[item]["fusion"])
    missing = [s.op for s in fusion.stmts if s.op not in fusion_torch.OPS]
    if missing:
        sys.exit(f"fake_torch_bench: {item}: no translation for {', '.join(missing)}")
    suite, case, dtype, size = item.split("/")
    for variant, t in (("torch_eager", 200.0), ("torch_compile", 100.0)):
        name = f"{suite}/{case}/{variant}/{dtype}/{size}"
        rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
                     "repetition_index": 0, "threads": 1, "iterations": 3, "real_time": t, "cpu_time": t,
                     "time_unit": "us", "suite": suite, "case": case, "variant": variant, "dtype": dtype,
                     "size": size, "kernels": 2, "launches": 3, "segments": 0, "bytes": specs[item]["bytes"],
                     "bytes_formula": specs[item]["bytes_formula"], "status": "ok", "samples_us": [t, t, t]})
with open(a.out, "w") as f:
    json.dump({"context": {"schema": "fusebench-run/1"}, "benchmarks": rows}, f)
