// kv_attn.cu — the fixed-shape attention kernels: the exact combine of decode's split
// partials, and the tq4 rotation of queries and outputs. The decode and prefill kernels are
// templates in kv_attn.cuh, instantiated per shape by native/cuda/engine.
#include "common.cuh"

// kv_combine merges the nsplit partials of each query head exactly:
//   m = max_s m_s,  out = Σ_s 2^(m_s−m)·o_s / Σ_s 2^(m_s−m)·l_s   (0 when every split is empty)
//   out      heads × d floats;  part_o  heads × nsplit × d;  part_ml  heads × nsplit × 2.
// Launch: grid (heads), block 128, dynamic shared memory 4·nsplit bytes.
extern "C" __global__ void kv_combine(float* out, const float* part_o, const float* part_ml, int nsplit, int d) {
  KVLAB_DYNAMIC_SMEM(dsm);
  float* f = (float*)dsm;
  const int h = blockIdx.x;
  const float* ml = part_ml + (i64)h * nsplit * 2;
  float m = KV_NEG_INF;
  for (int s = 0; s < nsplit; s++) m = fmaxf(m, ml[2 * s]);
  for (int s = threadIdx.x; s < nsplit; s += blockDim.x) f[s] = ml[2 * s] == KV_NEG_INF ? 0.f : exp2f(ml[2 * s] - m);
  __syncthreads();
  float L = 0.f;
  for (int s = 0; s < nsplit; s++) L += f[s] * ml[2 * s + 1];
  const float inv = L > 0.f ? 1.f / L : 0.f;
  for (int dd = threadIdx.x; dd < d; dd += blockDim.x) {
    float o = 0.f;
    for (int s = 0; s < nsplit; s++) o += f[s] * part_o[((i64)h * nsplit + s) * d + dd];
    out[(i64)h * d + dd] = o * inv;
  }
}

// tq4_rotate applies a head's tq4 rotation R (transpose = 0: R·x, the query's preparation) or
// its transpose (transpose = 1: Rᵀ·x, an output back to the value domain) to rows of d
// floats, exactly as kvq's rotation.apply and applyT do. Launch row r (of count × heads ×
// (rows/(count·heads)) rows) maps to source row (r / count)·nsplit + r % count, of query head
// (r / count) % heads, which uses KV head ((r / count) % heads) / group's diagonal in sc
// (KV heads × d floats). dst may equal src.
// Launch: grid (rows), block 32; d ≤ 1024.
extern "C" __global__ void tq4_rotate(float* dst, const float* src, const float* sc, int count, int nsplit, int heads,
                                      int group, int d, int transpose) {
  __shared__ float y[1024];
  const int r = blockIdx.x, lane = threadIdx.x;
  const int head = (r / count) % heads;
  const i64 row = (i64)(r / count) * nsplit + r % count;
  const float* x = src + row * d;
  float* o = dst + row * d;
  const float* s = sc + (i64)(head / group) * d;
  for (int i = lane; i < d; i += 32) y[i] = transpose ? x[i] : __fmul_rn(x[i], s[i]);
  __syncwarp();
  fwht_warp(y, d);
  for (int i = lane; i < d; i += 32) o[i] = transpose ? __fmul_rn(y[i], s[i]) : y[i];
}
