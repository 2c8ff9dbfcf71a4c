"""fusion_torch.py -- a fusion, op by op, as a PyTorch function.

The input is a fusion in the text format as the fuser prints a built fusion
(fu_fusion_print: every size a number, every attribute named, literals as
`full` statements; docs/format.md). `parse(text)` reads it; `translate(fusion,
torch, mode)` returns a Python function of the inputs (in the fusion's order)
that returns the outputs (in order), each op written with the PyTorch call of
the same meaning as the fuser's interpreter (NumPy broadcasting; each op's
result rounded to its dtype, which PyTorch's float ops do by computing in at
least f32 and rounding the result; reductions accumulate in f32 or wider).

mode "eager": composite backwards as PyTorch computes them in training
(autograd through F.cross_entropy; aten.embedding_dense_backward), for the
torch_eager rows. mode "graph": everything as plain tensor ops (the backward
formulas written out), which torch.compile traces in one graph.

An op without a translation raises Untranslatable with the reason; the bench
writes that reason in the row instead of failing the run. Every op of the
fuser's op table (FU_OP_LIST in fuser/include/fuser.h) has one:
OPS below lists them, and reference/tests/test_torch_ops.py checks that the
two lists agree and each op against the interpreter.
"""
import re

DTYPES = ("f32", "f16", "bf16", "f64", "i32", "i64", "bool")


class Untranslatable(Exception):
    """An op (or attribute) with no PyTorch translation; the message says why."""


class Stmt:
    def __init__(self, name, op, args, attrs, line):
        self.name, self.op, self.args, self.attrs, self.line = name, op, args, attrs, line


class Fusion:
    def __init__(self):
        self.name = ""
        self.inputs = []   # (name, dtype, shape)
        self.stmts = []
        self.outputs = []


def _split_top(s):
    """Splits s at the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _value(v):
    v = v.strip()
    if v.startswith("["):
        inner = v[1:-1].strip()
        return [int(x) for x in inner.split(",")] if inner else []
    if v in ("true", "false"):
        return v == "true"
    if v in DTYPES or v in ("mean", "sum", "none"):
        return v  # "none": reduction=none, or padding_idx=none (no padding row)
    try:
        return int(v)
    except ValueError:
        return float(v)  # 1.5, -inf, nan


def parse(text):
    """The printed fusion as a Fusion. ValueError names the line."""
    f = Fusion()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"fusion\s+(\w+)", line)
        if m:
            f.name = m.group(1)
            continue
        m = re.fullmatch(r"input\s+(\w+)\s*:\s*(\w+)\[([^\]]*)\]", line)
        if m:
            shape = [int(x) for x in m.group(3).split(",")] if m.group(3).strip() else []
            f.inputs.append((m.group(1), m.group(2), shape))
            continue
        m = re.fullmatch(r"output\s+(.*)", line)
        if m:
            f.outputs += [x.strip() for x in m.group(1).split(",")]
            continue
        m = re.fullmatch(r"(\w+)\s*=\s*(\w+)\((.*)\)", line)
        if not m:
            raise ValueError(f"line {lineno}: cannot read '{line}'")
        args, attrs = [], {}
        for part in _split_top(m.group(3)):
            if "=" in part and re.match(r"\w+\s*=", part):
                k, v = part.split("=", 1)
                attrs[k.strip()] = _value(v)
            else:
                args.append(part)
        f.stmts.append(Stmt(m.group(1), m.group(2), args, attrs, lineno))
    if not f.outputs:
        raise ValueError("the fusion has no output")
    return f


def torch_dtype(torch, name):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
            "i32": torch.int32, "i64": torch.int64, "bool": torch.bool}[name]


# ---------------------------------------------------------------- the ops

def _promote(torch, a, b):
    """NumPy broadcasting of two operands of the same dtype (the verifier makes them so)."""
    return a, b


def _unary(fn):
    return lambda T, F, x, at, mode: fn(T, x)


def _binary(fn):
    return lambda T, F, a, b, at, mode: fn(T, a, b)


def _axes(at, rank):
    axes = at.get("axes") or []
    return [a % rank for a in axes] if axes else list(range(rank))


def _reduce(kind):
    def run(T, F, x, at, mode):
        axes, keep = _axes(at, x.dim()), bool(at.get("keepdim", False))
        if x.dim() == 0:
            return x.clone()
        if kind == "sum":
            if x.dtype in (T.float16, T.bfloat16):  # f32 accumulation, one rounding
                return T.sum(x, dim=axes, keepdim=keep, dtype=T.float32).to(x.dtype)
            return T.sum(x, dim=axes, keepdim=keep, dtype=x.dtype if x.dtype != T.bool else T.int64)
        if kind == "mean":
            return T.mean(x.float() if x.dtype in (T.float16, T.bfloat16) else x, dim=axes, keepdim=keep).to(x.dtype)
        return (T.amax if kind == "max" else T.amin)(x, dim=axes, keepdim=keep)
    return run


def _slice(T, F, x, at, mode):
    idx = tuple(slice(a, b, c) for a, b, c in zip(at["start"], at["stop"], at.get("step") or [1] * x.dim()))
    return x[idx]


def _iota(T, F, at, mode, device):
    shape, axis = at["shape"], at["axis"] % len(at["shape"])
    dt = torch_dtype(T, at.get("dtype", "i64"))
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return T.arange(shape[axis], device=device, dtype=T.int64).to(dt).reshape(view).expand(shape)


def _full(T, F, at, mode, device):
    return T.full(at["shape"], at["value"], dtype=torch_dtype(T, at.get("dtype", "f32")), device=device)


def _take(T, F, x, idx, at, mode):
    axis = at["axis"] % x.dim()
    flat = T.index_select(x, axis, idx.reshape(-1))
    return flat.reshape(list(x.shape[:axis]) + list(idx.shape) + list(x.shape[axis + 1:]))


def _acc_dtype(T, x):
    """The dtype a written-out composite computes in: f64 for f64, else f32 (as the fuser does)."""
    return T.float64 if x.dtype == T.float64 else T.float32


def _ce_weights(T, x, t, at):
    """Per-row target weights of cross entropy: 1 where kept, 0 where ignored."""
    return (t != at.get("ignore_index", -100)).to(_acc_dtype(T, x))


def _cross_entropy(T, F, x, t, at, mode):
    red = at.get("reduction", "mean")
    t = t.long()  # PyTorch's targets are int64; the fuser's may be i32
    return F.cross_entropy(x, t, reduction=red, ignore_index=at.get("ignore_index", -100),
                           label_smoothing=float(at.get("label_smoothing", 0.0)))


def _cross_entropy_bwd(T, F, x, t, g, at, mode):
    red, ii, ls = at.get("reduction", "mean"), at.get("ignore_index", -100), float(at.get("label_smoothing", 0.0))
    t = t.long()
    if mode == "eager":  # PyTorch's own backward kernels, through autograd
        with T.enable_grad():
            xg = x.detach().requires_grad_(True)
            loss = F.cross_entropy(xg, t, reduction=red, ignore_index=ii, label_smoothing=ls)
            return T.autograd.grad(loss, xg, g.to(loss.dtype).expand_as(loss))[0]
    # the gradient written out: (softmax(x) - ((1 - ls) * onehot(t) + ls / V)) * g_row, 0 where ignored
    v, acc = x.shape[-1], _acc_dtype(T, x)
    xf = x.to(acc)
    keep = _ce_weights(T, x, t, at)
    safe = T.where(t == ii, T.zeros_like(t), t)
    target = F.one_hot(safe, v).to(acc) * (1 - ls) + ls / v
    if red == "mean":
        scale = g.to(acc) / keep.sum()
    elif red == "sum":
        scale = g.to(acc).expand(keep.shape)
    else:
        scale = g.to(acc)
    if scale.dim() == 0:
        scale = scale.expand(keep.shape)
    grad = (T.softmax(xf, dim=-1) - target) * (scale * keep).unsqueeze(-1)
    return grad.to(x.dtype)


def _embedding(T, F, w, ids, at, mode):
    return F.embedding(ids, w)  # padding_idx changes only the gradient


def _padding(at, rows):
    p = at.get("padding_idx", "none")
    return -1 if p == "none" else (p % rows)


def _embedding_bwd(T, F, g, ids, at, mode):
    rows = at["num_weights"]
    pad = _padding(at, rows)
    if mode == "eager":  # PyTorch's own kernel (sort-based; deterministic mode honoured)
        return T.ops.aten.embedding_dense_backward(g, ids.long(), rows, pad, False)
    flat = ids.reshape(-1)
    src = g.reshape(flat.shape[0], g.shape[-1])
    if pad >= 0:
        src = src * (flat != pad).unsqueeze(-1).to(src.dtype)
    acc = T.zeros(rows, g.shape[-1], device=g.device, dtype=_acc_dtype(T, g))
    return acc.index_add_(0, flat, src.to(acc.dtype)).to(g.dtype)


def _index_add(T, F, x, idx, src, at, mode):
    axis = at["axis"] % x.dim()
    if x.dtype in (T.float16, T.bfloat16):
        return x.float().index_add(axis, idx, src.float()).to(x.dtype)
    return x.index_add(axis, idx, src)


def _scatter_add(T, F, x, idx, src, at, mode):
    axis = at["axis"] % x.dim()
    idx = idx.long()  # scatter_add and gather take int64 indices only
    if x.dtype in (T.float16, T.bfloat16):
        return x.float().scatter_add(axis, idx, src.float()).to(x.dtype)
    return x.scatter_add(axis, idx, src)


def _softmax(log):
    def run(T, F, x, at, mode):
        axis = at.get("axis", -1)
        y = (T.log_softmax if log else T.softmax)(x.float() if x.dtype in (T.float16, T.bfloat16) else x, dim=axis)
        return y.to(x.dtype)
    return run


def _div(T, a, b):
    if a.dtype.is_floating_point:
        return a / b
    return T.div(a, b, rounding_mode="trunc")  # the interpreter's double division, truncated into the int


# op name -> (number of tensor operands, function(torch, F, *operands, attrs, mode))
OPS = {
    "neg": (1, _unary(lambda T, x: T.neg(x))),
    "abs": (1, _unary(lambda T, x: T.abs(x))),
    "exp": (1, _unary(lambda T, x: T.exp(x))),
    "log": (1, _unary(lambda T, x: T.log(x))),
    "log1p": (1, _unary(lambda T, x: T.log1p(x))),
    "sqrt": (1, _unary(lambda T, x: T.sqrt(x))),
    "rsqrt": (1, _unary(lambda T, x: T.rsqrt(x))),
    "tanh": (1, _unary(lambda T, x: T.tanh(x))),
    "sigmoid": (1, _unary(lambda T, x: T.sigmoid(x))),
    "reciprocal": (1, _unary(lambda T, x: T.reciprocal(x))),
    "logical_not": (1, _unary(lambda T, x: T.logical_not(x))),
    "add": (2, _binary(lambda T, a, b: a + b)),
    "sub": (2, _binary(lambda T, a, b: a - b)),
    "mul": (2, _binary(lambda T, a, b: a * b)),
    "div": (2, _binary(_div)),
    "maximum": (2, _binary(lambda T, a, b: T.maximum(a, b))),
    "minimum": (2, _binary(lambda T, a, b: T.minimum(a, b))),
    "pow": (2, _binary(lambda T, a, b: T.pow(a, b))),
    "eq": (2, _binary(lambda T, a, b: a == b)),
    "ne": (2, _binary(lambda T, a, b: a != b)),
    "lt": (2, _binary(lambda T, a, b: a < b)),
    "le": (2, _binary(lambda T, a, b: a <= b)),
    "gt": (2, _binary(lambda T, a, b: a > b)),
    "ge": (2, _binary(lambda T, a, b: a >= b)),
    "logical_and": (2, _binary(lambda T, a, b: T.logical_and(a, b))),
    "logical_or": (2, _binary(lambda T, a, b: T.logical_or(a, b))),
    "where": (3, lambda T, F, c, a, b, at, mode: T.where(c, a, b)),
    "cast": (1, lambda T, F, x, at, mode: x.to(torch_dtype(T, at["dtype"]))),
    "broadcast": (1, lambda T, F, x, at, mode: x.broadcast_to(at["shape"])),
    "sum": (1, _reduce("sum")),
    "max": (1, _reduce("max")),
    "min": (1, _reduce("min")),
    "mean": (1, _reduce("mean")),
    "reshape": (1, lambda T, F, x, at, mode: x.reshape(at["shape"])),
    "permute": (1, lambda T, F, x, at, mode: x.permute(at["dims"])),
    "slice": (1, _slice),
    "full": (0, _full),
    "iota": (0, _iota),
    "index_select": (2, lambda T, F, x, i, at, mode: T.index_select(x, at["axis"] % x.dim(), i)),
    "take": (2, _take),
    "take_along_axis": (2, lambda T, F, x, i, at, mode: T.gather(x, at["axis"] % x.dim(), i.long())),
    "index_add": (3, _index_add),
    "scatter_add": (3, _scatter_add),
    "softmax": (1, _softmax(False)),
    "log_softmax": (1, _softmax(True)),
    "cross_entropy": (2, _cross_entropy),
    "cross_entropy_backward": (3, _cross_entropy_bwd),
    "embedding": (2, _embedding),
    "embedding_backward": (2, _embedding_bwd),
    "segment_set": (1, lambda T, F, x, at, mode: x),
}


def translate(fusion, torch, mode="graph", device=None):
    """A function of the inputs (tensors, in the fusion's input order) returning
    the list of outputs. Untranslatable when an op has no translation."""
    import torch.nn.functional as F
    if mode not in ("eager", "graph"):
        raise ValueError(f"mode '{mode}' is not eager or graph")
    for s in fusion.stmts:
        if s.op not in OPS:
            raise Untranslatable(f"op '{s.op}' (line {s.line}) has no PyTorch translation")
        if OPS[s.op][0] != len(s.args):
            raise Untranslatable(f"op '{s.op}' (line {s.line}) takes {OPS[s.op][0]} operands, got {len(s.args)}")
    names = [n for n, _, _ in fusion.inputs]

    def fn(*inputs):
        env = dict(zip(names, inputs))
        dev = device if device is not None else (inputs[0].device if inputs else None)
        for s in fusion.stmts:
            arity, op = OPS[s.op]
            if arity == 0:
                env[s.name] = op(torch, F, s.attrs, mode, dev)
            else:
                env[s.name] = op(torch, F, *[env[a] for a in s.args], s.attrs, mode)
        return [env[o].contiguous() for o in fusion.outputs]

    return fn
