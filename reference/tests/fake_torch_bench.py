#!/usr/bin/env python3
"""Stands in for reference/torch_bench.py in the tests (no PyTorch, no GPU):
takes the same arguments and writes a run file with fixed times for every
item: torch_eager 200 us, torch_compile 100 us (2 kernels, 1 launch more)."""
import argparse
import json

ap = argparse.ArgumentParser()
ap.add_argument("--items", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--quiet-if-absent", action="store_true")
for flag in ("--repetitions", "--time-limit", "--mode", "--seed"):
    ap.add_argument(flag)
a = ap.parse_args()
rows = []
for item in a.items.split(","):
    suite, case, dtype, size = item.split("/")
    for variant, t in (("torch_eager", 200.0), ("torch_compile", 100.0)):
        name = f"{suite}/{case}/{variant}/{dtype}/{size}"
        rows.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1,
                     "repetition_index": 0, "threads": 1, "iterations": 3, "real_time": t, "cpu_time": t,
                     "time_unit": "us", "suite": suite, "case": case, "variant": variant, "dtype": dtype,
                     "size": size, "kernels": 2, "launches": 3, "segments": 0, "bytes": 1000000,
                     "bytes_formula": "fake", "status": "ok", "samples_us": [t, t, t]})
with open(a.out, "w") as f:
    json.dump({"context": {"schema": "fusebench-run/1"}, "benchmarks": rows}, f)
