#!/usr/bin/python3
"""Compare the C++ model's results in an exchange file against the PyTorch reference.

usage: /usr/bin/python3 validation/reference/compare.py EXCHANGE.h5 [--tiny X]

Reads /config, /model/*, /batch/*, /optim (see MODEL_SPEC.md "Exchange file"), recomputes in float64
with autograd: logits, loss, the gradient of the loss w.r.t. every parameter, and (when
/ours/train_losses exists) the loss before each of /optim steps AdamW steps on the same batch.
Each is compared with /ours/* by relative error ||ours - ref|| / max(||ref||, tiny) (Frobenius norm
over the whole tensor; for train_losses, per step, reporting the maximum over steps).

Tolerances come from the noise floor of fp32 for the same computation, measured here
(validation/noise_floor.py): the reference run once more in float32 (PyTorch's own kernels, another
summation order than ours) is that floor's draw; ours must lie within noise_floor.DEFAULT_FACTOR of
it. Floors: logits, the float32 reference's relative error; loss, the larger of its own and the
logits' (one scalar is a single draw that can land near zero by chance); gradients, the largest over
all parameters; AdamW losses, the larger of the float32 reference's and of the float64 reference
started from weights moved by 2^-24 relative noise (the last bit of fp32), because Adam's sign-like
first steps amplify rounding by draw-dependent amounts.
Prints one line per quantity and "N passed, M failed".
Exit status: 0 all passed, 1 any failed (a missing /ours entry fails), 2 malformed file.
"""

import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import torch_model as tm  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import noise_floor  # noqa: E402

DEFAULT_TINY = 1e-30
LAST_BIT = 2.0 ** -24  # relative size of a last-bit change of a float32


def rel_error(ours, ref, tiny=DEFAULT_TINY):
    ours = torch.as_tensor(np.asarray(ours, dtype=np.float64))
    ref = torch.as_tensor(ref, dtype=torch.float64)
    diff = float(torch.linalg.norm((ours - ref).reshape(-1)))
    return diff / max(float(torch.linalg.norm(ref.reshape(-1))), tiny)


class Report:
    def __init__(self):
        self.n_pass = 0
        self.n_fail = 0
        self.lines = []

    def add(self, name, err, floor, note=""):
        """err against noise_floor.DEFAULT_FACTOR x floor; err None: the quantity is missing."""
        ok = err is not None and noise_floor.verdict(name, err, floor)
        if ok:
            self.n_pass += 1
        else:
            self.n_fail += 1
        err_s = ("%.3e" % err) if err is not None else "    -    "
        line = "%-40s rel_err %s  floor %.1e  %s%s" % (name, err_s, floor, "OK" if ok else "FAIL",
                                                        ("  (" + note + ")") if note else "")
        self.lines.append(line)
        print(line, flush=True)


def last_bit_noise(params):
    """The parameters with every element moved by a fixed draw of 2^-24 relative Gaussian noise."""
    gen = torch.Generator().manual_seed(20240601)
    return type(params)((n, t * (1 + LAST_BIT * torch.randn(t.shape, generator=gen, dtype=t.dtype)))
                        for n, t in params.items())


def read_ours(f, path, fname):
    """The numpy array at /ours/<path>, or None when absent. Non-numeric data is malformed."""
    import h5py
    full = "ours/" + path
    if full not in f:
        return None
    obj = f[full]
    if not isinstance(obj, h5py.Dataset):
        raise tm.ExchangeError("%s: /%s is not a dataset" % (fname, full))
    if obj.dtype.kind not in "fiu":
        raise tm.ExchangeError("%s: dataset /%s has non-numeric dtype %s" % (fname, full, obj.dtype))
    return np.asarray(obj[()], dtype=np.float64)


def compare(path, tiny=DEFAULT_TINY):
    """Run the comparison, printing as it goes.  Returns the Report.  Raises tm.ExchangeError."""
    import h5py
    t0 = time.time()
    config, params, batch = tm.load_exchange(path, dtype=torch.float64)
    inputs, targets = batch["inputs"], batch["targets"]
    B, T = inputs.shape
    frozen = tm.frozen_names(config, list(params))
    print("exchange %s: B=%d T=%d vocab=%d d_model=%d layers=%d heads=%d/%d dqk=%d dv=%d qk_norm=%s "
          "norm=%s pattern=%s window=%d rope=%s tie=%d; %d parameters, %d frozen"
          % (path, B, T, config["vocab_size"], config["d_model"], config["n_layers"], config["n_heads"],
             config["n_kv_heads"], config["head_dim_qk"], config["head_dim_v"], config["qk_norm"],
             config["norm_order"], config["layer_pattern"], config["window"], config["rope_scaling"],
             int(config["tie_embeddings"]), len(params), len(frozen)), flush=True)

    logits, loss, grads = tm.gradients(config, params, inputs, targets, dtype=torch.float64)
    logits32, loss32, grads32 = tm.gradients(config, params, inputs, targets, dtype=torch.float32)
    floor = {"logits": rel_error(logits32, logits, tiny)}
    floor["loss"] = max(rel_error(loss32, loss, tiny), floor["logits"])
    floor["grad"] = max(rel_error(grads32[n], g, tiny) for n, g in grads.items())
    rep = Report()
    with h5py.File(path, "r") as f:
        unused = sorted(k for k in f["config"].attrs if k not in tm.MODEL_KEYS + ("freeze",))
        if unused:
            print("note: /config attributes the reference does not use: %s" % ", ".join(unused))
        if frozen:
            print("frozen (gradients still compared, no AdamW update): %s" % ", ".join(frozen))
        # logits
        ours = read_ours(f, "logits", path)
        if ours is None:
            rep.add("logits", None, floor["logits"], "missing /ours/logits")
        elif ours.shape != tuple(logits.shape):
            rep.add("logits", None, floor["logits"],
                    "shape %s, expected %s" % (ours.shape, tuple(logits.shape)))
        else:
            rep.add("logits", rel_error(ours, logits, tiny), floor["logits"])

        # loss
        ours = read_ours(f, "loss", path)
        if ours is None:
            rep.add("loss", None, floor["loss"], "missing /ours/loss")
        elif ours.size != 1:
            rep.add("loss", None, floor["loss"], "shape %s, expected [1]" % (ours.shape,))
        else:
            rep.add("loss", rel_error(ours.reshape(()), loss, tiny), floor["loss"],
                    "ours %.9g ref %.9g" % (float(ours.reshape(())), float(loss)))

        # gradients: every parameter, frozen ones included
        for name, g in grads.items():
            label = "grad " + name + (" [frozen]" if name in frozen else "")
            ours = read_ours(f, "grad/" + name, path)
            if ours is None:
                rep.add(label, None, floor["grad"], "missing /ours/grad/" + name)
            elif ours.shape != tuple(g.shape):
                rep.add(label, None, floor["grad"], "shape %s, expected %s" % (ours.shape, tuple(g.shape)))
            else:
                rep.add(label, rel_error(ours, g, tiny), floor["grad"])
        if "ours/grad" in f and isinstance(f["ours/grad"], h5py.Group):
            extra = []
            f["ours/grad"].visit(lambda n: extra.append(n) if isinstance(f["ours/grad"][n], h5py.Dataset)
                                 and n not in grads else None)
            for name in extra:
                rep.add("grad " + name, None, floor["grad"], "unexpected: no such parameter in /model")

        # AdamW loss sequence
        if "ours/train_losses" in f:
            if "optim" not in batch:
                raise tm.ExchangeError("%s: /ours/train_losses present but group /optim is missing" % path)
            optim = batch["optim"]
            ours = read_ours(f, "train_losses", path).reshape(-1)
            label = "train_losses (AdamW, %d steps)" % optim["steps"]
            if ours.size != optim["steps"]:
                rep.add(label, None, 0.0, "%d values, expected /optim steps = %d" % (ours.size, optim["steps"]))
            else:
                ref = tm.adamw_losses(config, params, optim, inputs, targets, frozen=frozen,
                                      dtype=torch.float64)
                max_rel = lambda xs: max((abs(x - r) / max(abs(r), tiny) for x, r in zip(xs, ref)), default=0.0)
                floor["train_losses"] = max(
                    max_rel(tm.adamw_losses(config, params, optim, inputs, targets, frozen=frozen,
                                            dtype=torch.float32)),
                    max_rel(tm.adamw_losses(config, last_bit_noise(params), optim, inputs, targets,
                                            frozen=frozen, dtype=torch.float64)))
                errs = [abs(o - r) / max(abs(r), tiny) for o, r in zip(ours.tolist(), ref)]
                worst = max(range(len(errs)), key=lambda s: (math.isnan(errs[s]), errs[s])) if errs else 0
                err = max(errs, key=lambda e: (math.isnan(e), e)) if errs else 0.0
                note = ("max over steps, worst at step %d: ours %.9g ref %.9g" % (worst, ours[worst], ref[worst])
                        if errs else "zero steps")
                rep.add(label, err, floor["train_losses"], note)
    print("time %.1f s" % (time.time() - t0))
    return rep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("exchange", help="HDF5 exchange file")
    ap.add_argument("--tiny", type=float, default=DEFAULT_TINY,
                    help="floor on ||ref|| in the relative error (default %g)" % DEFAULT_TINY)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        rep = compare(args.exchange, tiny=args.tiny)
    except tm.ExchangeError as e:
        print("MALFORMED exchange file: %s" % e, file=sys.stderr)
        return 2
    print("%d passed, %d failed" % (rep.n_pass, rep.n_fail))
    return 0 if rep.n_fail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
