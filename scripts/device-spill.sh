#!/usr/bin/env bash
# device-spill.sh — the host-spill tail of the CUDA cache on a card (issue 14), as one run for
# a machine with an NVIDIA GPU, its driver and NVRTC (CUDA toolkit or PyTorch's wheels); Go
# is not needed when a kvlab binary is given:
#
#   1. parity   kvlab bench spill --check: decode over a tail in pinned host memory against the
#               all-resident cache holding the same cells, same tokens: logits within 1e-3
#               relative RMS and the same argmax, or the step fails. kvlab-tiny-64 (f16 and
#               q8_0/q4_0 KV, chunks of 64 cells: many host chunks) and a synthetic
#               TinyLlama-1.1B shape (q8_0 weights, f16 KV).
#   2. curve    kvlab bench spill on the 1.1B shape, f16 KV, contexts 16k and 64k, tails of 0,
#               1/8, 1/4, 1/2 and 3/4 of each: decode tokens/s against tail size (3 rounds of
#               32 tokens, best kept), the speed against the all-resident point and the host
#               link rate the extra time implies.
#   3. fit      kvlab plan --fit spill.json --gpu h200: the planner's spill model before (the
#               H200 preset's nominal figures) and after the fit, point by point.
#
# Usage: scripts/device-spill.sh [KVLAB_BINARY]   (default ./kvlab, else bin/kvlab, else built
#        with go when go is there; build it elsewhere with
#        CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o bin/kvlab ./cmd/kvlab)
# Output under $OUT (default ./device-spill-out), at most 8 files: env.txt, parity.txt,
# spill.json, spill.txt, fit.txt, fit.json, log.txt (every step's stderr), summary.txt. Every
# step runs even when one fails; the script exits non-zero if any did. Parity runs first: a
# failed parity makes the curve's figures suspect (summary.txt says so).
#
# Environment:
#   STEPS  the steps to run, default "parity curve fit"
#   TINY   kvlab-tiny-64.gguf; default the first of ../shared/models/, shared/models/, bin/
#          (the device machine gets only the checkout: copy the fixture into bin/, carry bin)
#   CTX    the curve's contexts, default 16k,64k
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
out=${OUT:-$PWD/device-spill-out}
steps=" ${STEPS:-parity curve fit} "
mkdir -p "$out"
export KVLAB_CUDA_CACHE=${KVLAB_CUDA_CACHE:-$out/cuda-cache}
synth=${SYNTH_DIR:-/tmp/kvlab-bench}
log=$out/log.txt
: > "$log"

bin=${1:-}
if [ -z "$bin" ]; then
  for c in ./kvlab "$root/bin/kvlab"; do
    if [ -x "$c" ]; then bin=$c; break; fi
  done
fi
if [ -z "$bin" ] && command -v go > /dev/null; then
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -o bin/kvlab ./cmd/kvlab) >> "$log" 2>&1 && bin=$root/bin/kvlab
fi
if [ -z "$bin" ]; then
  echo "no kvlab binary: pass one, or put it in bin/ (CGO_ENABLED=0 go build -o bin/kvlab ./cmd/kvlab)" | tee "$out/summary.txt"
  exit 2
fi

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
  uptime
  nvidia-smi
} > "$out/env.txt" 2>&1

fail=0
parity_failed=0
run() { # run LIMIT_S OUTFILE CMD... : stdout appended to OUTFILE, stderr to log.txt
  local limit=$1 dst=$2
  shift 2
  local t0=$SECONDS
  echo "== $*" >> "$log"
  timeout "$limit" "$@" >> "$dst" 2>> "$log"
  local rc=$?
  echo "$(basename "$dst"): exit $rc in $((SECONDS - t0)) s: $*" | tee -a "$log"
  return $rc
}
has() { [[ "$steps" == *" $1 "* ]]; }

if has parity; then
  : > "$out/parity.txt"
  tiny=${TINY:-}
  if [ -z "$tiny" ]; then
    for c in "$root/../shared/models/kvlab-tiny-64.gguf" "$root/shared/models/kvlab-tiny-64.gguf" "$root/bin/kvlab-tiny-64.gguf"; do
      if [ -f "$c" ]; then tiny=$c; break; fi
    done
  fi
  if [ -z "$tiny" ]; then
    echo "parity: kvlab-tiny-64.gguf not found (set TINY, or copy it into bin/ and carry bin); the synthetic model's parity still runs" | tee -a "$out/parity.txt"
    fail=1 parity_failed=1
  else
    for kv in f16 q8_0/q4_0; do
      run 180 "$out/parity.txt" "$bin" bench spill --model "$tiny" --kv "$kv" --ctx 1024,4096 --spill 0,64,512,960 \
        --chunk 64 --tokens 8 --rounds 2 --check || { fail=1 parity_failed=1; }
    done
  fi
  run 240 "$out/parity.txt" "$bin" bench spill --shape tinyllama-1.1b --weights q8_0 --dir "$synth" --kv f16 \
    --ctx 8192 --spill 0,1024,4096,7168 --tokens 8 --rounds 2 --check || { fail=1 parity_failed=1; }
fi

if has curve; then
  run 300 "$out/spill.json" "$bin" bench spill --shape tinyllama-1.1b --weights q8_0 --dir "$synth" --kv f16 \
    --ctx "${CTX:-16k,64k}" --tokens 32 --rounds 3 --json || fail=1
fi

if has fit; then
  if [ -s "$out/spill.json" ]; then
    run 60 "$out/fit.txt" "$bin" plan --fit "$out/spill.json" --gpu h200 --ctx 64k || fail=1
    run 60 "$out/fit.json" "$bin" plan --fit "$out/spill.json" --gpu h200 --ctx 64k --json || fail=1
  else
    echo "fit: no spill.json (the curve step did not run or failed)" | tee -a "$out/fit.txt"
    fail=1
  fi
fi

# A readable copy of the curve, and the verdict.
python3 - "$out" "$parity_failed" > "$out/summary.txt" 2>&1 <<'PY'
import json, os, sys
out, parity_failed = sys.argv[1], sys.argv[2] == "1"
print("parity:", "FAILED (the curve's figures are suspect)" if parity_failed else "passed (or not run)")
p = os.path.join(out, "spill.json")
if os.path.exists(p) and os.path.getsize(p) > 0:
    d = json.load(open(p))
    print(f"{os.path.basename(d['model'])} on {d['device_name']}, KV {d['kv']}, chunks of {d['chunk_cells']} cells, load {d['load_before']}")
    if d.get("emulated"):
        print("EMULATED: these are not device speeds")
    print(f"{'ctx':>7} {'spilled':>8} {'tail MiB':>9} {'tok/s':>8} {'median':>8} {'vs res':>7} {'link GB/s':>9}")
    for r in d["points"]:
        print(f"{r['base_ctx']:>7} {r['host_cells']:>8} {r['tail_bytes']/2**20:>9.1f} {r['tps']:>8.2f} "
              f"{1/r['median_seconds_per_token']:>8.2f} {r.get('ratio_to_resident', 0):>7.3f} {r.get('implied_link_gbps', 0):>9.2f}")
f = os.path.join(out, "fit.json")
if os.path.exists(f) and os.path.getsize(f) > 0:
    s = json.load(open(f)).get("spill_fit")
    if s:
        b, a = s["before"], s["params"]
        print(f"spill model before: device {b['device_gbps']} GB/s, link {b['link_gbps']} GB/s, overhead {b['overhead_ms']} ms")
        print(f"spill model after:  device {a['device_gbps']:.4g} GB/s, link {a['link_gbps']:.4g} GB/s, overhead {a['overhead_ms']:.4g} ms"
              f" (RMS log error {s['rms_log_err']:.3g}, worst factor {s['max_ratio']:.2f})")
PY
cat "$out/summary.txt"
exit $fail
