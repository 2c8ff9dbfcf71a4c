#!/usr/bin/env python3
"""test_torch_ops.py -- every op of the fuser's op table, translated into
PyTorch by reference/fusion_torch.py, against the fuser's CPU interpreter.

For each op: a small fusion using it (random inputs; positive where the op
needs it; some ignored targets and a padding row for the composites) is run by
`fuser run` on the CPU interpreter, and its printed form (`fuser print --set`)
is translated in both modes (eager, graph) and run by PyTorch on the GPU (the CPU without one);
the outputs must agree (f32 within 1e-5 of the largest value, bf16 within
1e-2, ints and bools exactly; PyTorch's own embedding backward, which rounds
its partial sums to a 16-bit gradient's dtype, within sqrt(n - 1) more
rounding units for n positions a row). The op list is read from FU_OP_LIST in
fuser/include/fuser.h: an op without a translation or without a case here
fails. The composites are also checked against torch.nn.functional directly
(cross_entropy with ignore_index, label_smoothing and each reduction, and its
gradient by autograd; embedding with padding_idx and its gradient; softmax,
log_softmax).

With FUSER_FUZZ_BIN (fuser-fuzz), also the sweep: every op over every dtype of
its operands (`fuser-fuzz sweep --out`), each file run by `fuser run`, which
writes its inputs and outputs (--output takes an input's name), and translated
in both modes onto those inputs: the dtypes a user may write (f16, f64, i32
indices, bool), where the cases above hold mostly f32.

Exit 0 when all pass, 1 when one fails, 77 (skipped, one line) where PyTorch
is not installed. Environment: FUSER_BIN (the fuser command), FUSER_HEADER
(fuser.h), FUSER_FUZZ_BIN (fuser-fuzz; the sweep is left out without it).
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import fusion_torch  # noqa: E402

FUSER = os.environ.get("FUSER_BIN", "fuser")
FUZZ = os.environ.get("FUSER_FUZZ_BIN", "")
HEADER = os.environ.get("FUSER_HEADER", os.path.join(HERE, "..", "..", "fuser", "include", "fuser.h"))
N = 6
failures = []


def op_table():
    text = open(HEADER).read()
    start = text.index("#define FU_OP_LIST")
    block = text[start:text.index("typedef enum fu_op {", start)]
    return re.findall(r'X\(\w+,\s*"(\w+)"', block)


# Without PyTorch too: the translation table names exactly the ops of FU_OP_LIST.
_ops = op_table()
_missing = [op for op in _ops if op not in fusion_torch.OPS]
_extra = [op for op in fusion_torch.OPS if op not in _ops]
if not _ops or _missing or _extra:
    print(f"test_torch_ops: FAILED: FU_OP_LIST has {len(_ops)} ops; no translation for {_missing}; "
          f"translations of ops not in the list: {_extra}")
    sys.exit(1)

try:
    import torch
    import torch.nn.functional as F
except Exception as ex:  # ImportError, or a broken installation
    print(f"test_torch_ops: skipped: PyTorch is not available to {sys.executable} ({type(ex).__name__}); "
          f"the {len(_ops)} ops of FU_OP_LIST all have a translation")
    sys.exit(77)


# where the translation runs: the GPU PyTorch's rows run on, else the CPU (TORCH_OPS_DEVICE chooses)
DEVICE = os.environ.get("TORCH_OPS_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")


# ---------------------------------------------------------------- .npy without NumPy

NPY = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2", torch.int64: "<i8", torch.int32: "<i4",
       torch.bool: "|b1"}
NPY_BACK = {v: k for k, v in NPY.items()}
DTYPE_NAME = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16"}


def npy_write(path, t):
    t = t.contiguous().clone()  # a storage of its own, nothing before or after the elements
    dims = [str(d) for d in t.shape]
    shape = f"({dims[0]},)" if len(dims) == 1 else "(" + ", ".join(dims) + ")"
    header = f"{{'descr': '{NPY[t.dtype]}', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * ((64 - (len(header) + 11) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode())
        f.write(bytes(t.untyped_storage()) if t.numel() else b"")


def npy_read(path):
    data = open(path, "rb").read()
    major = data[6]
    hl = int.from_bytes(data[8:10] if major == 1 else data[8:12], "little")
    start = 10 if major == 1 else 12
    header = data[start:start + hl].decode()
    descr = re.search(r"'descr':\s*'([^']+)'", header).group(1)
    shape = [int(x) for x in re.search(r"'shape':\s*\(([^)]*)\)", header).group(1).split(",") if x.strip()]
    body = bytearray(data[start + hl:])
    dt = NPY_BACK[descr]
    raw = torch.uint8 if dt == torch.bool else dt  # bools as their bytes
    t = torch.frombuffer(body, dtype=raw) if body else torch.empty(0, dtype=raw)
    return t.to(dt).reshape(shape)


# ---------------------------------------------------------------- one case

def run_case(label, body, inputs, dtype_tol="f32"):
    """body: the fusion's statements after the inputs (with `output`); inputs:
    name -> (decl, tensor). Checks the translation against the interpreter;
    returns the interpreter's outputs (name -> tensor)."""
    decls = "\n".join(f"input {n}: {d}" for n, (d, _) in inputs.items())
    text = f"fusion {label}\nparam N = {N}\n{decls}\n{body}\n"
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "case.fusion")
        open(src, "w").write(text)
        args = [FUSER, "run", src, "--set", f"N={N}"]
        for n, (_, t) in inputs.items():
            p = os.path.join(d, f"in_{n}.npy")
            npy_write(p, t.float() if t.dtype == torch.bfloat16 else t)
            args += ["--input", f"{n}={p}"]
        printed = subprocess.run([FUSER, "print", src, "--set", f"N={N}"], capture_output=True, text=True)
        if printed.returncode:
            failures.append(f"{label}: fuser print: {printed.stderr.strip()}")
            return {}
        fusion = fusion_torch.parse(printed.stdout)
        for o in fusion.outputs:
            args += ["--output", f"{o}={os.path.join(d, 'out_' + o + '.npy')}"]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode:
            failures.append(f"{label}: fuser run: {r.stderr.strip()}")
            return {}
        want = {o: npy_read(os.path.join(d, f"out_{o}.npy")) for o in fusion.outputs}
    check_translation(label, fusion, [inputs[n][1] for n, _, _ in fusion.inputs], want, dtype_tol)
    return want


def eager_rounded_terms(fusion, tensors):
    """PyTorch's embedding backward kernel rounds its partial sums to a 16-bit gradient's dtype (on
    the CPU at every position, on the GPU every few): the most positions one table row sums, where
    the fusion has one over an input's ids (1 otherwise)."""
    env = {n: t for (n, _, _), t in zip(fusion.inputs, tensors)}
    terms = 1
    for s in fusion.stmts:
        ids = env.get(s.args[1]) if s.op == "embedding_backward" else None
        if ids is not None and ids.numel():
            terms = max(terms, int(torch.bincount(ids.reshape(-1).long().clamp(min=0)).max()))
    return terms


def check_translation(label, fusion, tensors, want, tol_kind=None):
    """The translation in both modes on tensors (the fusion's inputs) against want (output name
    -> the interpreter's tensor); tol_kind: the tolerance's dtype, else each output's own."""
    tensors = [t.to(DEVICE) for t in tensors]
    for mode in ("eager", "graph"):
        try:
            got = fusion_torch.translate(fusion, torch, mode=mode)(*tensors)
        except Exception as ex:
            failures.append(f"{label} ({mode}): the translation raised {type(ex).__name__}: {ex}")
            continue
        terms = eager_rounded_terms(fusion, tensors) if mode == "eager" else 1
        for o, g in zip(fusion.outputs, got):
            compare(f"{label} ({mode}) output {o}", g.cpu(), want[o], tol_kind or DTYPE_NAME.get(g.dtype, "f32"),
                    terms)


# max |torch - interpreter| / max |interpreter| by dtype: an element's rounding in 16 bits, and
# f32's (and f64's) computed in another order
TOLERANCE = {"bf16": 1e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}
# a 16-bit dtype's rounding unit: a sum rounded after each of n terms drifts by ~sqrt(n) of them
EPSILON = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}


def compare(what, got, want, tol_kind, rounded_terms=1):
    """rounded_terms: how many partial sums PyTorch rounds to a 16-bit output (its tolerance grows
    by sqrt(rounded_terms) rounding units; the interpreter sums in f32 and rounds once)."""
    if tuple(got.shape) != tuple(want.shape):
        failures.append(f"{what}: shape {tuple(got.shape)}, the interpreter's {tuple(want.shape)}")
        return
    if not got.dtype.is_floating_point:
        if not torch.equal(got.to(torch.int64), want.to(torch.int64)):
            failures.append(f"{what}: {got.tolist()} != interpreter {want.tolist()}")
        return
    g, w = got.double(), want.double()
    same = (torch.isinf(w) & (g == w)) | (torch.isnan(w) & torch.isnan(g))  # equal infinities, NaN for NaN
    g, w = torch.where(same, torch.zeros_like(g), g), torch.where(same, torch.zeros_like(w), w)
    scale = max(w.abs().max().item() if w.numel() else 0.0, 1e-30)
    err = (g - w).abs().max().item() / scale if w.numel() else 0.0
    tol = TOLERANCE.get(tol_kind, 1e-5) + (rounded_terms - 1) ** 0.5 * EPSILON.get(tol_kind, 0.0)
    if not err <= tol:
        failures.append(f"{what}: max error {err:.3g} of the largest value (tolerance {tol:g})")


# ---------------------------------------------------------------- the cases

def rnd(*shape, positive=False, dtype=torch.float32):
    t = torch.randn(*shape, dtype=torch.float64)
    if positive:
        t = t.abs() + 0.25
    return t.to(dtype)


def check_ops():
    torch.manual_seed(0)
    covered = set()
    x = rnd(N, 3)
    pos = rnd(N, 3, positive=True)
    ints = torch.randint(-3, 4, (N, 3)).float()  # equal values for the comparisons
    b1 = torch.rand(N, 3) > 0.5
    b2 = torch.rand(N, 3) > 0.5
    for op in ("neg", "abs", "exp", "tanh", "sigmoid", "reciprocal"):
        run_case(op, f"y = {op}(x)\noutput y", {"x": ("f32[N, 3]", x)})
        covered.add(op)
    for op in ("log", "log1p", "sqrt", "rsqrt"):
        run_case(op, f"y = {op}(x)\noutput y", {"x": ("f32[N, 3]", pos)})
        covered.add(op)
    run_case("logical_not", "y = logical_not(b)\noutput y", {"b": ("bool[N, 3]", b1)})
    covered.add("logical_not")
    for op in ("add", "sub", "mul", "div", "maximum", "minimum"):
        run_case(op, f"y = {op}(a, b)\noutput y", {"a": ("f32[N, 3]", x), "b": ("f32[1, 3]", rnd(1, 3, positive=True))})
        covered.add(op)
    run_case("add_bf16", "y = add(a, b)\noutput y",
             {"a": ("bf16[N, 3]", x.bfloat16()), "b": ("bf16[3]", rnd(3).bfloat16())}, "bf16")
    # div takes floats only (the verifier says so); integer ops are exact past 2^53
    run_case("add_int", "y = add(a, b)\noutput y",
             {"a": ("i64[N, 3]", torch.randint(-20, 20, (N, 3)) + 2**53), "b": ("i64[N, 3]", torch.randint(1, 5, (N, 3)))})
    run_case("pow", "y = pow(a, b)\noutput y", {"a": ("f32[N, 3]", pos), "b": ("f32[N, 3]", x)})
    covered.add("pow")
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        run_case(op, f"y = {op}(a, b)\noutput y",
                 {"a": ("f32[N, 3]", ints), "b": ("f32[N, 3]", torch.randint(-3, 4, (N, 3)).float())})
        covered.add(op)
    for op in ("logical_and", "logical_or"):
        run_case(op, f"y = {op}(a, b)\noutput y", {"a": ("bool[N, 3]", b1), "b": ("bool[N, 3]", b2)})
        covered.add(op)
    run_case("where", "y = where(c, a, b)\noutput y",
             {"c": ("bool[N, 3]", b1), "a": ("f32[N, 3]", x), "b": ("f32[N, 1]", rnd(N, 1))})
    run_case("where_literal", "y = where(c, a, -inf)\noutput y", {"c": ("bool[N, 3]", b1), "a": ("f32[N, 3]", x)})
    covered.add("where")
    run_case("cast", "y = cast(x, i64)\nz = cast(x, bf16)\nw = cast(b, f32)\noutput y, z, w",
             {"x": ("f32[N, 3]", x * 10), "b": ("bool[N, 3]", b1)}, "bf16")
    covered.add("cast")
    run_case("broadcast", "y = broadcast(x, shape=[N, 3])\noutput y", {"x": ("f32[1, 3]", rnd(1, 3))})
    covered.add("broadcast")
    for op in ("sum", "max", "min", "mean"):
        run_case(op, f"y = {op}(x, axes=[1], keepdim=true)\nz = {op}(x, axes=[])\noutput y, z",
                 {"x": ("f32[N, 3]", x)})
        covered.add(op)
    run_case("sum_bf16", "y = sum(x, axes=[0])\nz = mean(x, axes=[1])\noutput y, z",
             {"x": ("bf16[N, 3]", x.bfloat16())}, "bf16")
    run_case("reshape", "y = reshape(x, shape=[3, N])\noutput y", {"x": ("f32[N, 3]", x)})
    run_case("permute", "y = permute(x, dims=[1, 0])\noutput y", {"x": ("f32[N, 3]", x)})
    run_case("slice", "y = slice(x, start=[1, 0], stop=[N, 3], step=[2, 2])\noutput y", {"x": ("f32[N, 3]", x)})
    covered |= {"reshape", "permute", "slice"}
    run_case("full", "c = full(shape=[N, 3], value=1.5, dtype=f32)\ny = add(x, c)\noutput y", {"x": ("f32[N, 3]", x)})
    run_case("iota", "i = iota(shape=[N, 3], axis=1, dtype=i64)\nj = cast(i, f32)\ny = add(x, j)\noutput y, i",
             {"x": ("f32[N, 3]", x)})
    covered |= {"full", "iota"}
    table = rnd(5, 3)
    ids = torch.randint(0, 5, (N,))
    run_case("index_select", "y = index_select(w, ids, axis=0)\noutput y", {"w": ("f32[5, 3]", table), "ids": ("i64[N]", ids)})
    run_case("take", "y = take(w, ids, axis=0)\noutput y",
             {"w": ("f32[5, 3]", table), "ids": ("i64[N, 2]", torch.randint(0, 5, (N, 2)))})
    run_case("take_along_axis", "y = take_along_axis(x, t, axis=1)\noutput y",
             {"x": ("f32[N, 5]", rnd(N, 5)), "t": ("i64[N, 1]", torch.randint(0, 5, (N, 1)))})
    run_case("index_add", "y = index_add(b, ids, s, axis=0)\noutput y",
             {"b": ("f32[5, 3]", table), "ids": ("i64[N]", ids), "s": ("f32[N, 3]", x)})
    run_case("scatter_add", "y = scatter_add(b, idx, s, axis=0)\noutput y",
             {"b": ("f32[5, 3]", table), "idx": ("i64[N, 3]", torch.randint(0, 5, (N, 3))), "s": ("f32[N, 3]", x)})
    covered |= {"index_select", "take", "take_along_axis", "index_add", "scatter_add"}
    run_case("segment_set", "s = segment_set(x)\ny = exp(s)\noutput y", {"x": ("f32[N, 3]", x)})
    covered.add("segment_set")
    covered |= check_composites()
    return covered


def check_composites():
    covered = set()
    logits = rnd(N, 7)
    target = torch.randint(0, 7, (N,))
    target[1] = -100  # ignored rows
    target[4] = -100
    for op in ("softmax", "log_softmax"):
        want = run_case(op, f"y = {op}(x, axis=-1)\noutput y", {"x": ("f32[N, 7]", logits)})
        if want:
            compare(f"{op} vs F.{op}", getattr(F, op)(logits, dim=-1), want["y"], "f32")
        run_case(op + "_bf16", f"y = {op}(x, axis=1)\noutput y", {"x": ("bf16[N, 7]", logits.bfloat16())}, "bf16")
        covered.add(op)
    for red in ("mean", "sum", "none"):
        for ls in (0.0, 0.1):
            tag = f"cross_entropy_{red}_{int(ls * 10)}"
            grad = torch.rand(N if red == "none" else ()) + 0.5
            gdecl = "f32[N]" if red == "none" else "f32[]"
            attrs = f"reduction={red}, ignore_index=-100, label_smoothing={ls}"
            want = run_case(tag, f"l = cross_entropy(x, t, {attrs})\n"
                                 f"d = cross_entropy_backward(x, t, g, {attrs})\noutput l, d",
                            {"x": ("f32[N, 7]", logits), "t": ("i64[N]", target), "g": (gdecl, grad)})
            if want:
                xg = logits.clone().requires_grad_(True)
                loss = F.cross_entropy(xg, target, reduction=red, ignore_index=-100, label_smoothing=ls)
                loss.backward(grad)
                compare(f"{tag} vs F.cross_entropy", loss.detach(), want["l"], "f32")
                compare(f"{tag} gradient vs autograd", xg.grad, want["d"], "f32")
    run_case("cross_entropy_bf16", "l = cross_entropy(x, t, reduction=mean, ignore_index=-100, label_smoothing=0.0)\n"
                                   "output l", {"x": ("bf16[N, 7]", logits.bfloat16()), "t": ("i64[N]", target)}, "bf16")
    covered |= {"cross_entropy", "cross_entropy_backward"}
    table = rnd(5, 3)
    ids = torch.tensor([0, 2, 4, 2, 1, 2])[:N]
    gout = rnd(N, 3)
    for pad in ("none", "2"):
        tag = f"embedding_pad_{pad}"
        want = run_case(tag, f"y = embedding(w, ids, padding_idx={pad})\n"
                             f"d = embedding_backward(g, ids, num_weights=5, padding_idx={pad})\noutput y, d",
                        {"w": ("f32[5, 3]", table), "ids": ("i64[N]", ids), "g": ("f32[N, 3]", gout)})
        if want:
            wg = table.clone().requires_grad_(True)
            y = F.embedding(ids, wg, padding_idx=None if pad == "none" else int(pad))
            y.backward(gout)
            compare(f"{tag} vs F.embedding", y.detach(), want["y"], "f32")
            compare(f"{tag} gradient vs autograd", wg.grad, want["d"], "f32")
    covered |= {"embedding", "embedding_backward"}
    return covered


def check_sweep():
    """The sweep's fusions: returns how many were checked."""
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([FUZZ, "sweep", "--out", d], capture_output=True, text=True)
        if r.returncode:
            failures.append(f"fuser-fuzz sweep --out: exit {r.returncode}: {r.stderr.strip()}")
            return 0
        files = sorted(f for f in os.listdir(d) if f.endswith(".fusion"))
        for name in files:
            path = os.path.join(d, name)
            label = f"sweep {name[:-7]}"
            with open(path) as fh:
                fusion = fusion_torch.parse(fh.read())
            args = [FUSER, "run", path]
            for n, _, _ in fusion.inputs:
                args += ["--output", f"{n}={os.path.join(d, 'in_' + n + '.npy')}"]
            for o in fusion.outputs:
                args += ["--output", f"{o}={os.path.join(d, 'out_' + o + '.npy')}"]
            r = subprocess.run(args, capture_output=True, text=True)
            if r.returncode:
                failures.append(f"{label}: fuser run: {r.stderr.strip()}")
                continue
            # bf16 is written as f32 (exact): back to the declared dtype
            tensors = [npy_read(os.path.join(d, f"in_{n}.npy")).to(fusion_torch.torch_dtype(torch, dt))
                       for n, dt, _ in fusion.inputs]
            want = {o: npy_read(os.path.join(d, f"out_{o}.npy")) for o in fusion.outputs}
            check_translation(label, fusion, tensors, want)
        return len(files)


def main():
    ops = op_table()
    missing = [op for op in ops if op not in fusion_torch.OPS]
    extra = [op for op in fusion_torch.OPS if op not in ops]
    if missing:
        failures.append(f"no translation for {', '.join(missing)}")
    if extra:
        failures.append(f"translations of ops not in FU_OP_LIST: {', '.join(extra)}")
    covered = check_ops()
    swept = check_sweep() if FUZZ else 0
    untested = [op for op in ops if op not in covered]
    if untested:
        failures.append(f"no test case for {', '.join(untested)}")
    for f in failures[:80]:
        print(f"test_torch_ops: FAILED: {f}")
    if len(failures) > 80:
        print(f"test_torch_ops: ... and {len(failures) - 80} more")
    print(f"test_torch_ops: {len(ops)} ops of FU_OP_LIST, {len(covered)} tested on {DEVICE}, "
          f"{swept} sweep fusions{'' if FUZZ else ' (no FUSER_FUZZ_BIN)'}, {len(failures)} failures "
          f"(PyTorch {torch.__version__})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
