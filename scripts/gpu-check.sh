#!/usr/bin/env bash
# gpu-check.sh — the GPU verification of issue 7, as one script for a machine with an NVIDIA
# GPU, its driver, NVRTC (CUDA toolkit or PyTorch's wheels) and PyTorch, but no Go:
#
#   1. kvlab gate --device cuda             every GPU kernel against the CPU reference
#   2. kvlab bench attn --device cuda ...   decode attention at 64k and 128k cells, 40/8 heads × 128
#   3. scripts/sdpa_ref.py                  PyTorch's scaled_dot_product_attention (f16) on the
#                                           same decode shape, the outside reference
#
# Usage: scripts/gpu-check.sh [KVLAB_BINARY]      (default ./kvlab; build it elsewhere with
#        CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o kvlab ./cmd/kvlab)
# Everything is written under $OUT (default ./gpu-check-out): env.txt, gate.txt, gate.json,
# bench.json, bench.txt, sdpa.json, sdpa.txt, and each step's stderr and exit status. The
# script runs every step even when one fails, and exits non-zero if any did.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-./kvlab}
out=${OUT:-$PWD/gpu-check-out}
mkdir -p "$out"
export KVLAB_CUDA_CACHE=${KVLAB_CUDA_CACHE:-$out/cuda-cache}

# NVRTC: the loader's path, $CUDA_HOME, /usr/local/cuda*, then PyTorch's nvidia-cuda-nvrtc wheel.
if [ -z "${KVLAB_NVRTC:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.1[23]'; then
  wheel=$(python3 -c 'import nvidia.cuda_nvrtc as m, os; print(os.path.join(list(m.__path__)[0], "lib"))' 2>/dev/null || true)
  for c in "${CUDA_HOME:-/usr/local/cuda}"/lib64/libnvrtc.so.1[23]* /usr/local/cuda*/lib64/libnvrtc.so.1[23]* ${wheel:+$wheel/libnvrtc.so.1[23]*}; do
    if [ -f "$c" ]; then export KVLAB_NVRTC="$c"; break; fi
  done
fi

{
  date -u
  echo "binary: $bin ($(sha256sum "$bin" 2>/dev/null | cut -c1-16))"
  "$bin" --version
  echo "KVLAB_NVRTC=${KVLAB_NVRTC:-<loader path>}  KVLAB_CUDA_CACHE=$KVLAB_CUDA_CACHE"
  nvidia-smi
  nvcc --version
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
} > "$out/env.txt" 2>&1

fail=0
step() { # step NAME TIMEOUT_S CMD... : stdout to NAME, stderr to NAME.err, status to NAME.rc
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$out/$name" 2> "$out/$name.err"
  local rc=$?
  echo "$rc" > "$out/$name.rc"
  echo "$name: exit $rc in $((SECONDS - t0)) s"
  [ "$rc" -eq 0 ] || fail=1
}

step gate.txt 480 "$bin" gate --device cuda
step bench.json 420 "$bin" bench attn --device cuda --ctx 65536,131072 --kv f16,q8_0,q4_0,q8_0/q4_0 \
  --heads 40 --kv-heads 8 --head-dim 128 --json
step sdpa.json 240 python3 "$here/sdpa_ref.py" --ctx 65536,131072 --heads 40 --kv-heads 8 --head-dim 128 --json
step gate.json 300 "$bin" gate --device cuda --json

# Human-readable copies of the JSON results.
python3 - "$out" > "$out/summary.txt" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception as e:
        print(f"{name}: {e}")
        return None
b, s = load("bench.json"), load("sdpa.json")
if b:
    print(f"kvlab decode attention on {b['device_name']}: copy {b['mem_bandwidth_gbps']:.0f} GB/s, read {b.get('read_bandwidth_gbps', 0):.0f} GB/s")
    print(f"{'ctx':>7} {'kv':<10} {'us/token':>9} {'GB/s':>7} {'x f16':>6} {'of copy bw':>10}")
    for r in b["results"]:
        print(f"{r['ctx']:>7} {r['kv']:<10} {r['seconds_per_token']*1e6:>9.1f} {r['gbps']:>7.0f} {r['ratio_to_f16']:>6.2f} {100*r['bw_fraction']:>9.0f}%")
if s:
    print(f"\nPyTorch SDPA f16 ({s['torch']}): copy {s['copy_gbps']:.0f} GB/s")
    for r in s["results"]:
        print(f"{r['ctx']:>7} {r['variant']:<28} {r['seconds']*1e6:>9.1f} us {r['gbps']:>7.0f} GB/s")
if b and s:
    best = {}
    for r in s["results"]:
        best[r["ctx"]] = min(best.get(r["ctx"], 1e9), r["seconds"])
    for r in b["results"]:
        if r["kv"] == "f16" and r["ctx"] in best:
            print(f"\nctx {r['ctx']}: kvlab f16 / best SDPA = {r['seconds_per_token'] / best[r['ctx']]:.2f} (target <= 1.2)")
    f16 = {r["ctx"]: r for r in b["results"] if r["kv"] == "f16"}
    for r in b["results"]:
        if r["kv"] == "q8_0/q4_0" and r["ctx"] in f16:
            print(f"ctx {r['ctx']}: q8_0/q4_0 time = {r['ratio_to_f16']:.2f} x f16 (target <= 0.75); "
                  f"f16 {100*f16[r['ctx']]['bw_fraction']:.0f}% and q8_0/q4_0 {100*r['bw_fraction']:.0f}% of copy bandwidth (target >= 70%)")
PY
cat "$out/summary.txt"
exit $fail
