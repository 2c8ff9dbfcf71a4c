#!/usr/bin/env python3
"""torch_bench.py -- PyTorch eager and torch.compile on any fusion.

Each item (suite/case/dtype/size) comes with its fusion as the fuser prints
it at that size (run_suite --with-torch writes them into the --fusions file),
translated op by op into PyTorch by reference/fusion_torch.py: torch_eager
runs the translation as is (composite backwards through PyTorch's own
backward kernels), torch_compile runs torch.compile of the plain-op
translation. So every suite, including one a user just added, gets both
rows, and the rows cannot drift from the fusion. Timing as run_suite's
(cold L2: a buffer of twice the L2 zeroed before every sample, then a GPU
spin so that Python's dispatch is not on the clock; CUDA events around the
call only; warm-up first; samples until (p75 - p25) / median is under 2%
with at least 10, or the time limit; the repetition's time is the median),
kernel counts and kernel_time_us (a cold call's kernels' summed durations,
the median of 5 calls, as run_suite's CUPTI figure; left out where it does
not fit inside the call's event time) from torch.profiler, the bytes the
fuser counted. It writes a run file in docs/results-schema.md's schema with
the variants torch_eager and torch_compile, which run_suite merges. An item whose fusion cannot be
translated (or that raises) is a row with status "failed" and the reason.

    python3 reference/torch_bench.py --fusions items.json --out torch.json

The --fusions file: {"items": [{"item": "suite/case/dtype/size", "fusion":
TEXT, "bytes": N, "bytes_formula": "...", "deterministic": true|false,
"inputs": [{"name": ..., "index_bound": N}, ...]}, ...]}.

Exit status: 0 the run file is written; 3 PyTorch or a CUDA GPU is not there:
the reason, one line, is written to --out instead of JSON and printed; 2 bad
usage; 1 anything else.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import socket
import statistics
import sys
import time

EXIT_ABSENT = 3
HERE = os.path.dirname(os.path.abspath(__file__))


class Item:
    """One benchmark: suite/case/dtype/size, its fusion and its bytes."""

    def __init__(self, spec):
        parts = spec["item"].split("/")
        if len(parts) != 4:
            raise ValueError(f"item '{spec['item']}' is not suite/case/dtype/size")
        self.suite, self.case, self.dtype, self.size = parts
        self.text = spec["fusion"]
        self.bytes = int(spec.get("bytes", 0))
        self.formula = spec.get("bytes_formula", "")
        self.deterministic = bool(spec.get("deterministic", False))
        self.bounds = {i["name"]: int(i.get("index_bound", 0)) for i in spec.get("inputs", [])}

    def name(self, variant):
        return f"{self.suite}/{self.case}/{variant}/{self.dtype}/{self.size}"


def read_items(path, only):
    """The items of the --fusions file (those named in `only`, when given), in order."""
    with open(path) as f:
        doc = json.load(f)
    items = [Item(x) for x in doc.get("items", [])]
    if only:
        keep = set(only.split(","))
        missing = keep - {f"{i.suite}/{i.case}/{i.dtype}/{i.size}" for i in items}
        if missing:
            raise ValueError(f"--items: {', '.join(sorted(missing))} not in {path}")
        items = [i for i in items if f"{i.suite}/{i.case}/{i.dtype}/{i.size}" in keep]
    return items


def summarize(x):
    s = sorted(x)
    n = len(s)

    def q(p):  # NumPy's default (linear) quantile, as hb_quantile_sorted
        h = (n - 1) * p
        lo = math.floor(h)
        hi = min(lo + 1, n - 1)
        return s[lo] + (h - lo) * (s[hi] - s[lo])

    med = q(0.5)
    return med, ((q(0.75) - q(0.25)) / med if n >= 2 and med > 0 else 0.0)


def gpu_key(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_") or "none"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fusions", help="the items and their fusions (what run_suite writes); required")
    ap.add_argument("--items", help="comma-separated suite/case/dtype/size: only these of --fusions")
    ap.add_argument("--variants", default="torch_eager,torch_compile")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=2.0, help="seconds of samples per repetition")
    ap.add_argument("--min-samples", type=int, default=10)
    ap.add_argument("--max-samples", type=int, default=1000)
    ap.add_argument("--max-spread", type=float, default=0.02)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--mode", choices=("cold", "hot"), default="cold")
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--out", required=True, help="the run file to write")
    ap.add_argument("--quiet-if-absent", action="store_true",
                    help="without PyTorch or a GPU, only write the reason to --out (run_suite prints it)")
    args = ap.parse_args()
    if args.repetitions < 1 or not args.time_limit > 0:
        ap.error("--repetitions must be at least 1 and --time-limit above 0")
    variants = args.variants.split(",")
    for v in variants:
        if v not in ("torch_eager", "torch_compile"):
            ap.error(f"--variants: '{v}' is not torch_eager or torch_compile")

    if not args.fusions:
        ap.error("--fusions is required (run_suite --with-torch writes it)")
    try:
        items = read_items(args.fusions, args.items)
    except (OSError, ValueError, KeyError) as ex:
        ap.error(f"--fusions {args.fusions}: {ex}")

    def absent(why):
        line = why.replace("\n", " ")
        with open(args.out, "w") as f:
            f.write(line + "\n")
        if not args.quiet_if_absent:
            print(f"torch_bench: {line}", file=sys.stderr)
        sys.exit(EXIT_ABSENT)

    try:
        import torch
        import torch.nn.functional as F
    except Exception as ex:  # ImportError, or a broken installation
        absent(f"PyTorch is not available to {sys.executable} ({type(ex).__name__}: {ex})")
    if not torch.cuda.is_available():
        absent(f"PyTorch {torch.__version__} sees no CUDA GPU")

    Bench(torch, F, args, items, variants).run()


class Bench:
    def __init__(self, torch, F, args, items, variants):
        self.torch, self.F, self.args, self.items, self.variants = torch, F, args, items, variants
        torch.backends.cuda.matmul.allow_tf32 = False
        self.dev = torch.device("cuda")
        props = torch.cuda.get_device_properties(0)
        self.props = props
        self.l2 = int(getattr(props, "L2_cache_size", 0) or 50 << 20)
        self.flush = torch.empty(2 * self.l2, dtype=torch.uint8, device=self.dev) if args.mode == "cold" else None
        self.entries = []
        self.family = 0
        self.copy_gbps = self.copy_bandwidth()

    # ---- timing, as suites/harness/timing.c
    def prelude(self):
        # The GPU must still be busy when the call's first kernel is enqueued,
        # or the start event times Python's dispatch (50-300 us for a compiled
        # graph, more than many of these calls take on the GPU) instead of the
        # call. So the flush (cold) is followed by a spin of about 500 us; hot
        # is the spin alone. run_suite's C harness does the same with a 50 us
        # spin (it enqueues in a few microseconds), so that a call starts after
        # the same work in both. Launch gaps between the call's kernels count.
        if self.flush is not None:
            self.flush.zero_()
        self.torch.cuda._sleep(1000000)

    def time_once(self, fn):
        t = self.torch
        s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
        self.prelude()
        s.record()
        fn()
        e.record()
        e.synchronize()
        return s.elapsed_time(e) * 1e3  # us

    def measure(self, fn):
        a = self.args
        for _ in range(a.warmup):
            fn()
        self.torch.cuda.synchronize()
        samples, t0 = [], time.monotonic()
        while True:
            samples.append(self.time_once(fn))
            n, el = len(samples), time.monotonic() - t0
            if n >= a.min_samples and summarize(samples)[1] <= a.max_spread:
                break
            if n >= a.max_samples:
                break
            if el >= a.time_limit and n >= max(3, a.min_samples // 2) or el >= 2 * a.time_limit:
                break
        return samples

    def copy_bandwidth(self):
        t = self.torch
        n = 1 << 30
        a = t.empty(n, dtype=t.uint8, device=self.dev)
        b = t.empty_like(a)
        a.fill_(1)
        times = []
        for i in range(12):
            s, e = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
            s.record()
            b.copy_(a)
            e.record()
            e.synchronize()
            if i >= 2:
                times.append(s.elapsed_time(e) * 1e-3)
        del a, b
        t.cuda.empty_cache()
        return 2 * n / statistics.median(times) / 1e9

    PROFILED_CALLS = 5  # as run_suite's CUPTI records (suites/runner.c profile_calls)

    def kernels(self, fn):
        """Kernels, memsets and copies the profiler saw in a call, and the
        median over PROFILED_CALLS calls of a call's kernels' summed durations
        in us (the L2 flushed before each, outside the profiled span), as
        run_suite's CUPTI kernel_time_us: kernels only, memsets and copies
        left out. None when the profiler cannot say; the time alone None when
        the durations cannot be read."""
        t = self.torch
        try:
            from torch.profiler import profile, ProfilerActivity
            fn()
            t.cuda.synchronize()
            calls = []
            for _ in range(self.PROFILED_CALLS):
                if self.flush is not None:
                    self.flush.zero_()
                t.cuda.synchronize()
                with profile(activities=[ProfilerActivity.CUDA]) as p:
                    fn()
                    t.cuda.synchronize()
                calls.append([ev for ev in p.events() if ev.device_type == t.autograd.DeviceType.CUDA])
            names = [ev.name for ev in calls[-1]]
            memsets = sum(1 for n in names if n.startswith("Memset"))
            copies = sum(1 for n in names if "Memcpy" in n)
            counts = (len(names) - memsets - copies, memsets, copies)
        except Exception as ex:
            print(f"torch_bench: the profiler failed ({ex!r}); no kernel counts", file=sys.stderr)
            return None
        try:
            per_call = []
            for events in calls:
                spans = [ev.time_range.elapsed_us() for ev in events if not ev.name.startswith("Memset") and "Memcpy" not in ev.name]
                if not spans or not all(x > 0 for x in spans):
                    raise ValueError("a kernel without a positive duration")
                per_call.append(float(sum(spans)))
            kernel_us = statistics.median(per_call)
        except Exception as ex:
            print(f"torch_bench: no kernel durations from the profiler ({ex!r})", file=sys.stderr)
            kernel_us = None
        return counts, kernel_us

    @staticmethod
    def plausible_kernel_us(kernel_us, samples, label):
        """kernel_us where it fits inside the call's event time (at most 1.5x its
        median, at least 5%: a unit mistake would be 1000x off), else None."""
        if kernel_us is None or not samples:
            return kernel_us
        med = statistics.median(samples)
        if 0.05 * med <= kernel_us <= 1.5 * med:
            return kernel_us
        print(f"torch_bench: {label}: kernel time {kernel_us:.2f} us against an event time of {med:.2f} us: "
              f"left out", file=sys.stderr)
        return None

    # ---- the cases
    def make(self, it, variant):
        """The call to time (a closure over its inputs) for item it and variant."""
        sys.path.insert(0, HERE)
        import fusion_torch
        t, dev = self.torch, self.dev
        fusion = fusion_torch.parse(it.text)
        fn = fusion_torch.translate(fusion, t, mode="eager" if variant == "torch_eager" else "graph", device=dev)
        if variant == "torch_compile":
            fn = t.compile(fn, dynamic=False)
        g = t.Generator(device=dev)
        g.manual_seed(self.args.seed)
        inputs = []
        for name, dtype, shape in fusion.inputs:
            dt = fusion_torch.torch_dtype(t, dtype)
            if dt.is_floating_point:
                inputs.append(t.randn(shape, device=dev, dtype=t.float32, generator=g).to(dt))
            elif dt == t.bool:
                inputs.append(t.randint(0, 2, shape, device=dev, generator=g).to(t.bool))
            else:
                bound = it.bounds.get(name, 0) or 10
                inputs.append(t.randint(0, bound, shape, device=dev, generator=g).to(dt))
        return lambda: fn(*inputs)

    def entry(self, it, variant, rep, reps, status, error="", samples=None, counts=None, kernel_us=None):
        e = {
            "name": it.name(variant), "family_index": self.family, "per_family_instance_index": 0,
            "run_name": it.name(variant), "run_type": "iteration", "repetitions": reps, "repetition_index": rep,
            "threads": 1, "iterations": len(samples) if samples else 1,
        }
        if status == "failed":
            e.update({"error_occurred": True, "error_message": error})
        med, spread = summarize(samples) if samples else (0.0, 0.0)
        e.update({"real_time": med, "cpu_time": med, "time_unit": "us", "suite": it.suite, "case": it.case,
                  "variant": variant, "dtype": it.dtype, "size": it.size})
        if counts:
            e["kernels"], e["launches"] = counts[0], sum(counts)
        if kernel_us is not None:
            e["kernel_time_us"] = kernel_us
        e["segments"] = 0
        e["bytes"] = it.bytes
        if samples:
            gbps = it.bytes / (med * 1e-6) / 1e9
            e["GB/s"] = gbps
            e["peak_fraction"] = gbps / self.copy_gbps
            e["spread"] = spread
        e["bytes_formula"] = it.formula
        e["status"] = status
        if error:
            e["error"] = error
        if samples:
            e["samples_us"] = samples
        return e

    def aggregates(self, it, variant, reps):
        meds = [r["real_time"] for r in reps]
        mean = statistics.fmean(meds)
        sd = statistics.stdev(meds) if len(meds) > 1 else 0.0
        out = []
        for name, value, unit in (("median", statistics.median(meds), "time"), ("mean", mean, "time"),
                                  ("stddev", sd, "time"), ("cv", sd / mean if mean > 0 else 0.0, "percentage")):
            e = {k: reps[0][k] for k in ("family_index", "per_family_instance_index", "run_name", "repetitions",
                                         "threads", "suite", "case", "variant", "dtype", "size", "bytes_formula")}
            e.update({"name": f"{it.name(variant)}_{name}", "run_type": "aggregate", "aggregate_name": name,
                      "aggregate_unit": unit, "iterations": len(meds), "real_time": value, "cpu_time": value,
                      "time_unit": "us", "bytes": it.bytes, "status": "ok"})
            for k in ("kernels", "launches", "segments", "kernel_time_us"):
                if k in reps[0]:
                    e[k] = reps[0][k]
            if name in ("median", "mean") and value > 0:
                e["GB/s"] = it.bytes / (value * 1e-6) / 1e9
                e["peak_fraction"] = e["GB/s"] / self.copy_gbps
            out.append(e)
        return out

    def run_one(self, it, variant, index, total):
        t = self.torch
        reps = self.args.repetitions
        label = f"[{index}/{total}] {it.name(variant)}"
        deterministic = it.deterministic
        try:
            t._dynamo.reset()  # a fresh compile for every item: no recompile limit, no stale guards
            if deterministic:
                t.use_deterministic_algorithms(True, warn_only=True)
            t0 = time.monotonic()
            fn = self.make(it, variant)
            fn()  # compiles (torch.compile), loads the kernels
            t.cuda.synchronize()
            ready = time.monotonic() - t0
            profiled = self.kernels(fn)
            counts, kernel_us = profiled if profiled else (None, None)
            rows = []
            for r in range(reps):
                samples = self.measure(fn)
                if r == 0:
                    kernel_us = self.plausible_kernel_us(kernel_us, samples, label)
                rows.append(self.entry(it, variant, r, reps, "ok", samples=samples, counts=counts,
                                       kernel_us=kernel_us))
                med, spread = summarize(samples)
                kern = f"{counts[0]} kernel{'s' if counts[0] != 1 else ''}" if counts else "kernels unknown"
                print(f"{label}: rep {r + 1}/{reps}: {med:.2f} us +-{100 * spread:.1f}% ({len(samples)} samples), "
                      f"{it.bytes / (med * 1e-6) / 1e9:.0f} GB/s, {kern}; ready in {ready:.1f} s", flush=True)
            self.entries += rows + (self.aggregates(it, variant, rows) if reps > 1 else [])  # as Google Benchmark
        except Exception as ex:  # a case that raised: failed, the run goes on
            msg = f"{type(ex).__name__}: {ex}".replace("\n", " ")[:400]
            print(f"{label}: FAILED: {msg}", flush=True)
            self.entries.append(self.entry(it, variant, 0, reps, "failed", error=msg))
        finally:
            if deterministic:
                t.use_deterministic_algorithms(False)
            t.cuda.synchronize()
            t.cuda.empty_cache()
        self.family += 1

    def context(self):
        t, p = self.torch, self.props
        try:
            import triton
            triton_version = triton.__version__
        except Exception:
            triton_version = ""
        return {
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "host_name": socket.gethostname(), "executable": f"{sys.executable} {os.path.abspath(__file__)}",
            "num_cpus": os.cpu_count() or 0, "mhz_per_cpu": 0, "caches": [], "library_build_type": "release",
            "schema": "fusebench-run/1", "gpu_name": p.name, "gpu_key": gpu_key(p.name),
            "driver_version": t.version.cuda or "", "sm_count": p.multi_processor_count, "l2_bytes": self.l2,
            "copy_bandwidth_gbps": self.copy_gbps, "git_commit": "unknown", "build_type": "python",
            "timing_mode": self.args.mode, "l2_flush_bytes": 2 * self.l2 if self.flush is not None else 0,
            "min_samples": self.args.min_samples, "max_spread": self.args.max_spread,
            "time_limit_s": self.args.time_limit, "torch_version": t.__version__, "triton_version": triton_version,
            "python_version": platform.python_version(),
        }

    def run(self):
        print(f"torch_bench: PyTorch {self.torch.__version__} on {self.props.name}; copy bandwidth "
              f"{self.copy_gbps:.0f} GB/s (1 GiB device-to-device, read + write); {self.args.mode} L2", flush=True)
        total = len(self.items) * len(self.variants)
        k = 0
        for it in self.items:
            for v in self.variants:
                k += 1
                self.run_one(it, v, k, total)
        tmp = self.args.out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"context": self.context(), "benchmarks": self.entries}, f, indent=1)
        os.replace(tmp, self.args.out)


if __name__ == "__main__":
    main()
