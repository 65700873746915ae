#!/usr/bin/env bash
# gpu-check.sh — the GPU verification of issue 7, as one script for a machine with an NVIDIA
# GPU, its driver, NVRTC (CUDA toolkit or PyTorch's wheels) and PyTorch, but no Go:
#
#   1. kvlab gate --device cuda             every GPU kernel against the CPU reference
#   2. kvlab bench attn --device cuda ...   decode attention at 64k and 128k cells, 40/8 heads × 128
#   3. scripts/sdpa_ref.py                  PyTorch's scaled_dot_product_attention (f16) on the
#                                           same decode shape, the outside reference
#   4. kvlab run --device cuda              the whole forward pass on the GPU: kvlab-tiny-64,
#                                           greedy, 64 tokens, f16 and q8_0/q4_0 KV, its text
#                                           compared with the CPU run's (kvlab run --device cpu)
#
# Usage: scripts/gpu-check.sh [KVLAB_BINARY]      (default ./kvlab; build it elsewhere with
#        CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o kvlab ./cmd/kvlab)
# Everything is written under $OUT (default ./gpu-check-out): env.txt, gate.txt, gate.json,
# bench.json, bench.txt, sdpa.json, sdpa.txt, run-*.txt, run.txt, summary.txt, and each step's
# stderr and exit status. The script runs every step even when one fails, and exits non-zero
# if any did.
#
# Environment:
#   STEPS   the groups to run, default "gate bench sdpa run" (the whole set can outlast one
#           10-minute device call: run "gate bench" and "sdpa run" in two calls if needed)
#   TINY    kvlab-tiny-64.gguf for step 4; default: the first of ../shared/models/ (beside the
#           checkout), shared/models/ and bin/ (inside it) that holds it. The device machine
#           gets only the checkout, so copy the fixture into bin/ (git-ignored) and carry bin.
#   PACK    a path: also pack every output file into this one .tgz (the device tool returns
#           at most 8 files from $OUT)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=${1:-./kvlab}
out=${OUT:-$PWD/gpu-check-out}
steps=" ${STEPS:-gate bench sdpa run} "
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

has() { [[ "$steps" == *" $1 "* ]]; }

if has gate; then
  step gate.txt 480 "$bin" gate --device cuda
fi
if has bench; then
  step bench.json 420 "$bin" bench attn --device cuda --ctx 65536,131072 --kv f16,q8_0,q4_0,q8_0/q4_0 \
    --heads 40 --kv-heads 8 --head-dim 128 --json
fi
if has sdpa; then
  step sdpa.json 240 python3 "$here/sdpa_ref.py" --ctx 65536,131072 --heads 40 --kv-heads 8 --head-dim 128 --json
fi
if has gate; then
  step gate.json 300 "$bin" gate --device cuda --json
fi

# 4. The forward pass on the GPU against the CPU's: the same greedy text is expected (the
#    emulator's parity tests bound the logits' difference; see native/cuda/engine).
if has run; then
  tiny=${TINY:-}
  if [ -z "$tiny" ]; then
    for c in "$root/../shared/models/kvlab-tiny-64.gguf" "$root/shared/models/kvlab-tiny-64.gguf" "$root/bin/kvlab-tiny-64.gguf"; do
      if [ -f "$c" ]; then tiny=$c; break; fi
    done
  fi
  if [ -z "$tiny" ]; then
    echo "run: kvlab-tiny-64.gguf not found (set TINY, or copy it into bin/ and carry bin)" | tee "$out/run.txt"
    fail=1
  else
    : > "$out/run.txt"
    for kv in f16 q8_0/q4_0; do
      name=${kv/\//-}
      for dev in cpu cuda; do
        step "run-$dev-$name.txt" 300 "$bin" run --model "$tiny" --temp 0 --n 64 --kv "$kv" --device "$dev"
      done
      if cmp -s "$out/run-cpu-$name.txt" "$out/run-cuda-$name.txt" && [ -s "$out/run-cpu-$name.txt" ]; then
        echo "run --kv $kv: the GPU's greedy text equals the CPU's" >> "$out/run.txt"
      else
        echo "run --kv $kv: the GPU's greedy text DIFFERS from the CPU's" >> "$out/run.txt"
        diff "$out/run-cpu-$name.txt" "$out/run-cuda-$name.txt" >> "$out/run.txt"
        fail=1
      fi
      grep -h "decode:" "$out/run-cpu-$name.txt.err" "$out/run-cuda-$name.txt.err" >> "$out/run.txt" 2>/dev/null
    done
    cat "$out/run.txt"
  fi
fi

# Human-readable copies of the JSON results.
python3 - "$out" > "$out/summary.txt" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    if not os.path.exists(os.path.join(out, name)):
        return None  # the step was not run (STEPS)
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
[ -f "$out/run.txt" ] && cat "$out/run.txt" >> "$out/summary.txt"
cat "$out/summary.txt"
if [ -n "${PACK:-}" ]; then
  tar -czf "$PACK" -C "$out" .
fi
exit $fail
