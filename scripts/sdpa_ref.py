#!/usr/bin/env python3
"""sdpa_ref.py — PyTorch's scaled_dot_product_attention in f16 on kvlab's decode shape: one
query position of `heads` query heads over a cache of `ctx` cells of `kv-heads` KV heads, the
outside reference for `kvlab bench attn --device cuda` (issue 7: kvlab's f16 decode within
1.2x of SDPA).

Two ways to ask SDPA for grouped-query decode, both reading K and V once:
  grouped   q reshaped to [1, kv_heads, heads/kv_heads, d], the group's query heads as query
            rows of their KV head (exact for decode, which has no causal mask);
  enable_gqa  q [1, heads, 1, d] with enable_gqa=True (PyTorch >= 2.5).
Each is timed under every SDPA backend that accepts it; time is CUDA-event time per call,
GB/s counts the K and V bytes (2 * ctx * kv_heads * d * 2). Also measures torch's
device-to-device copy rate (bytes read + written per second).
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F


def timeit(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / 1e3 / iters


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ctx", default="65536,131072")
    p.add_argument("--heads", type=int, default=40)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--json", action="store_true")
    a = p.parse_args()
    dev = torch.device("cuda")
    h, hk, d = a.heads, a.kv_heads, a.head_dim
    g = h // hk
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "heads": h, "kv_heads": hk,
           "head_dim": d, "results": []}
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    res["copy_gbps"] = 2 * x.numel() / timeit(lambda: y.copy_(x), 20) / 1e9
    del x, y
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = [("default", None), ("flash", SDPBackend.FLASH_ATTENTION),
                    ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION),
                    ("math", SDPBackend.MATH)]
    except ImportError:
        sdpa_kernel, backends = None, [("default", None)]
    for ctx in [int(c) for c in a.ctx.split(",")]:
        k = torch.randn(1, hk, ctx, d, dtype=torch.float16, device=dev)
        v = torch.randn(1, hk, ctx, d, dtype=torch.float16, device=dev)
        q = torch.randn(1, h, 1, d, dtype=torch.float16, device=dev)
        kv_bytes = 2 * ctx * hk * d * 2
        variants = {"grouped": lambda: F.scaled_dot_product_attention(q.view(1, hk, g, d), k, v)}
        try:
            F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            variants["enable_gqa"] = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        except TypeError:
            pass
        ref = F.scaled_dot_product_attention(q.view(1, hk, g, d).float(), k.float(), v.float())
        for vname, fn in variants.items():
            for bname, be in backends:
                if be is not None and bname == "math" and ctx > 65536:
                    continue  # the math backend materializes the scores; not a contender
                try:
                    if be is None:
                        t = timeit(fn, a.iters)
                        o = fn()
                    else:
                        with sdpa_kernel(be):
                            t = timeit(fn, a.iters)
                            o = fn()
                except Exception as e:  # a backend that refuses the shape
                    res.setdefault("skipped", []).append(f"{ctx} {vname} {bname}: {type(e).__name__}")
                    continue
                err = ((o.float().reshape(ref.shape) - ref).norm() / ref.norm()).item()
                res["results"].append({"ctx": ctx, "variant": f"{vname}/{bname}", "seconds": t,
                                       "gbps": kv_bytes / t / 1e9, "rel_err_vs_f32": err})
        del k, v
        torch.cuda.empty_cache()
    if a.json:
        json.dump(res, sys.stdout, indent=2)
        print()
    else:
        print(f"{res['device']} torch {res['torch']}: copy {res['copy_gbps']:.0f} GB/s")
        for r in res["results"]:
            print(f"{r['ctx']:>7} {r['variant']:<24} {r['seconds']*1e6:9.1f} us {r['gbps']:7.0f} GB/s  err {r['rel_err_vs_f32']:.1e}")


if __name__ == "__main__":
    main()
