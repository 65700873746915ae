// kv_write.cu — quantize-on-write: new cells of one layer stored into a device KV pool in
// any kvq format, bit-exact with native/kvq's encoders (the same float32 operations, rounded
// once each, never contracted into fused multiply-adds; binary16 by round-to-nearest-even).
//
// Row writers: kv_write_<format>(pool, src, pos, n, heads, d, cap, tiled[, sc]).
//   src    n cells × heads rows × d floats (cell-major, then head, then dimension), the
//          layout kvcache.Cache.Write takes;
//   pool   the layer's pool for K or V: head h's cell c at the offsets of common.cuh
//          (tiled = 1 for K pools, 0 for V pools and exact copies);
//   cells  pos … pos+n−1 are written; cap is the pool's capacity (a multiple of 32).
// Launch: grid (n, heads), block 32 (one warp per row). d ≥ 8; tq4 needs d ≤ 1024.
#include "common.cuh"

// row_dst returns the address of byte k of the row of (head, cell).
__device__ __forceinline__ u8* row_dst(u8* pool, int head, int cell, int k, int rb, int cap, int tiled) {
  const i64 base = (i64)head * cap * rb;
  return pool + (tiled ? kv_tiled_offset(base, cell, k, rb) : base + (i64)cell * rb + k);
}

__device__ __forceinline__ void put16(u8* pool, int h, int c, int k, int rb, int cap, int tiled, u16 v) {
  *row_dst(pool, h, c, k, rb, cap, tiled) = (u8)v;
  *row_dst(pool, h, c, k + 1, rb, cap, tiled) = (u8)(v >> 8);
}

__device__ __forceinline__ void put32(u8* pool, int h, int c, int k, int rb, int cap, int tiled, u32 v) {
  for (int i = 0; i < 4; i++) *row_dst(pool, h, c, k + i, rb, cap, tiled) = (u8)(v >> (8 * i));
}

// blockClamp of kvq: truncate toward zero and clamp into [0, hi]; NaN gives 0.
__device__ __forceinline__ u32 clamp_code(float v, int hi) {
  if (!(v >= 0.f)) return 0;
  if (v >= (float)hi) return (u32)hi;
  return (u32)(int)v;
}

// argbest reduces (key, index) over the warp: the largest key, the smallest index on ties.
__device__ __forceinline__ void argbest(float& key, int& idx) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float k2 = __shfl_xor_sync(0xffffffffu, key, o);
    const int i2 = __shfl_xor_sync(0xffffffffu, idx, o);
    if (k2 > key || (k2 == key && i2 < idx)) {
      key = k2;
      idx = i2;
    }
  }
}

// pack_nibbles: for an m-value block whose lane l holds code l, the lanes l < ⌈m/2⌉ return
// byte l of the nibble payload: code l in the low nibble, code l+⌈m/2⌉ (if any) in the high.
__device__ __forceinline__ u32 pack_nibbles(u32 code, int lane, int m) {
  const int h = (m + 1) / 2;
  const u32 hi = __shfl_sync(0xffffffffu, code, (lane + h) & 31);
  return (code & 15u) | ((lane + h < m) ? (hi & 15u) << 4 : 0u);
}

extern "C" __global__ void kv_write_f16(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled) {
  const int cell = pos + blockIdx.x, h = blockIdx.y, rb = 2 * d;
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  for (int i = threadIdx.x; i < d; i += 32) put16(pool, h, cell, 2 * i, rb, cap, tiled, f2h_rn(x[i]));
}

extern "C" __global__ void kv_write_q8_0(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled) {
  const int cell = pos + blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  const int rb = kv_row_bytes(KV_Q8_0, d);
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  for (int b = 0; b * 32 < d; b++) {
    const int m = min(32, d - 32 * b), o = 34 * b;
    const float v = lane < m ? x[32 * b + lane] : 0.f;
    float a = fabsf(v);
    if (!(a == a)) a = 0.f;  // NaN: C's MAX(amax, NaN) keeps the NaN; finite input never has it
    const float amax = warp_max(a);
    const float dd = __fdiv_rn(amax, 127.f);
    const float id = dd != 0.f ? __fdiv_rn(1.f, dd) : 0.f;
    if (lane == 0) put16(pool, h, cell, o, rb, cap, tiled, f2h_rn(dd));
    if (lane < m) {
      const float t = __fmul_rn(v, id);
      int q;
      if (!(t == t)) q = 0;
      else if (t >= 127.f) q = 127;
      else if (t <= -127.f) q = -127;
      else q = (int)roundf(t);
      *row_dst(pool, h, cell, o + 2 + lane, rb, cap, tiled) = (u8)q;
    }
  }
}

extern "C" __global__ void kv_write_q4_0(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled) {
  const int cell = pos + blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  const int rb = kv_row_bytes(KV_Q4_0, d);
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  for (int b = 0; b * 32 < d; b++) {
    const int m = min(32, d - 32 * b), o = 18 * b;
    const float v = lane < m ? x[32 * b + lane] : 0.f;
    float key = fabsf(v);
    if (lane >= m || !(key == key)) key = -1.f;
    int idx = lane;
    argbest(key, idx);
    float mx = __shfl_sync(0xffffffffu, v, idx);
    if (!(key > 0.f)) mx = 0.f;  // kvq starts from mx = 0 and replaces it only on amax < |x|
    const float dd = __fdiv_rn(mx, -8.f);
    const float id = dd != 0.f ? __fdiv_rn(1.f, dd) : 0.f;
    if (lane == 0) put16(pool, h, cell, o, rb, cap, tiled, f2h_rn(dd));
    const u32 code = clamp_code(__fadd_rn(__fmul_rn(v, id), 8.5f), 15);
    const u32 byte = pack_nibbles(code, lane, m);
    if (lane < (m + 1) / 2) *row_dst(pool, h, cell, o + 2 + lane, rb, cap, tiled) = (u8)byte;
  }
}

extern "C" __global__ void kv_write_q5_1(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled) {
  const int cell = pos + blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  const int rb = kv_row_bytes(KV_Q5_1, d);
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  for (int b = 0; b * 32 < d; b++) {
    const int m = min(32, d - 32 * b), o = 24 * b, nh = (m + 7) / 8;
    const float v = lane < m ? x[32 * b + lane] : 0.f;
    const bool ok = lane < m && v == v;
    // kvq scans from ±FLT_MAX with strict comparisons: the first extreme wins ties. Lanes
    // without a value carry indices ≥ 32, so they lose every tie.
    float klo = ok ? -v : KV_NEG_INF, khi = ok ? v : KV_NEG_INF;
    int ilo = ok ? lane : 32 + lane, ihi = ilo;
    argbest(klo, ilo);
    argbest(khi, ihi);
    const float vlo = __shfl_sync(0xffffffffu, v, ilo & 31), vhi = __shfl_sync(0xffffffffu, v, ihi & 31);
    const float lo = ilo < 32 ? vlo : 3.40282347e38f;
    const float hi = ihi < 32 ? vhi : -3.40282347e38f;
    const float dd = __fdiv_rn(__fsub_rn(hi, lo), 31.f);
    const float id = dd != 0.f ? __fdiv_rn(1.f, dd) : 0.f;
    if (lane == 0) {
      put16(pool, h, cell, o, rb, cap, tiled, f2h_rn(dd));
      put16(pool, h, cell, o + 2, rb, cap, tiled, f2h_rn(lo));
    }
    const u32 code = lane < m ? clamp_code(__fadd_rn(__fmul_rn(__fsub_rn(v, lo), id), 0.5f), 31) : 0u;
    const u32 qh = __ballot_sync(0xffffffffu, (code >> 4) & 1u);
    if (lane < nh) *row_dst(pool, h, cell, o + 4 + lane, rb, cap, tiled) = (u8)(qh >> (8 * lane));
    const u32 byte = pack_nibbles(code, lane, m);
    if (lane < (m + 1) / 2) *row_dst(pool, h, cell, o + 4 + nh + lane, rb, cap, tiled) = (u8)byte;
  }
}

// f64_to_e4m3 is kvq.F64ToFP8E4M3: round to the nearest e4m3 code, ties to even, saturating
// at ±448; NaN to the NaN code of its sign.
__device__ __forceinline__ u32 f64_to_e4m3(double v) {
  const u64 bits = (u64)__double_as_longlong(v);
  const u32 sign = (u32)(bits >> 56) & 0x80u;
  const double a = fabs(v);
  if (a != a) return sign | 0x7fu;
  if (a >= 448.0) return sign | 0x7eu;
  if (a < 1.0 / 64) return sign | (u32)rint(a * 512.0);
  u64 b = (u64)__double_as_longlong(a);
  b = (b + ((1ull << 48) - 1) + ((b >> 49) & 1ull)) >> 49;
  u64 c = b - ((u64)(1023 - 7) << 3);
  if (c > 0x7e) c = 0x7e;
  return sign | (u32)c;
}

extern "C" __global__ void kv_write_fp8(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled) {
  const int cell = pos + blockIdx.x, h = blockIdx.y, lane = threadIdx.x, rb = d + 4;
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  float a = 0.f;
  for (int i = lane; i < d; i += 32) {
    const float t = fabsf(x[i]);
    if (t > a && t <= 3.40282347e38f) a = t;
  }
  const float amax = warp_max(a);
  const float scale = __fdiv_rn(amax, 448.f);
  for (int i = lane; i < d; i += 32) {
    const u32 c = scale == 0.f ? 0u : f64_to_e4m3(__ddiv_rn((double)x[i], (double)scale));
    *row_dst(pool, h, cell, i, rb, cap, tiled) = (u8)c;
  }
  if (lane == 0) put32(pool, h, cell, d, rb, cap, tiled, scale == 0.f ? 0u : __float_as_uint(scale));
}

// kvq tq4Thresholds: the midpoints of TQ4_LEVELS.
__constant__ float tq4_thresholds[15] = {-2.3988483f, -1.84829295f, -1.44193065f, -1.1011107f, -0.799616098f,
                                         -0.524338424f, -0.262169212f, 0.f, 0.262169212f, 0.524338424f,
                                         0.799616098f, 1.1011107f, 1.44193065f, 1.84829295f, 2.3988483f};

// kv_write_tq4 takes sc (heads × d floats): each head's rotation diagonal ±1/√n, from
// kvq's seed, layer and head (native/cuda/engine computes it).
extern "C" __global__ void kv_write_tq4(u8* pool, const float* src, int pos, int n, int heads, int d, int cap, int tiled, const float* sc) {
  __shared__ float y[1024];
  __shared__ u8 codes[1024];
  const int cell = pos + blockIdx.x, h = blockIdx.y, lane = threadIdx.x;
  const int nb = (d + 1) / 2, rb = nb + 4;
  const float* x = src + ((i64)blockIdx.x * heads + h) * d;
  float s = 0.f;
  if (lane == 0) {
    double ss = 0;
    for (int i = 0; i < d; i++) ss = __dadd_rn(ss, __dmul_rn((double)x[i], (double)x[i]));
    s = (float)sqrt(__ddiv_rn(ss, (double)d));
  }
  s = __shfl_sync(0xffffffffu, s, 0);
  if (s == 0.f) {
    for (int k = lane; k < rb; k += 32) *row_dst(pool, h, cell, k, rb, cap, tiled) = 0;
    return;
  }
  for (int i = lane; i < d; i += 32) y[i] = __fmul_rn(x[i], sc[(i64)h * d + i]);
  __syncwarp();
  fwht_warp(y, d);
  for (int i = lane; i < d; i += 32) {
    u32 k = 0;
    for (int t = 0; t < 15; t++) k += y[i] >= __fmul_rn(s, tq4_thresholds[t]) ? 1u : 0u;
    codes[i] = (u8)k;
  }
  __syncwarp();
  for (int j = lane; j < nb; j += 32) {
    const u32 lo = codes[2 * j], hi = 2 * j + 1 < d ? codes[2 * j + 1] : 0u;
    *row_dst(pool, h, cell, j, rb, cap, tiled) = (u8)(lo | hi << 4);
  }
  if (lane == 0) put32(pool, h, cell, nb, rb, cap, tiled, __float_as_uint(s));
}

// kv_write_q2k re-encodes the last group of each head's q2k K pool after appending take cells
// (all within one group) at cell pos, exactly as kvq.Q2KHead.Append does: the group's raw
// values are kept in stage, the rule scales of the group in scales and of the group before
// in prev (all per head: stage 32·d floats, scales and prev d floats).
//   pool    per head, groups of 10·d bytes (kvq's group layout), group g of head h at
//           (h·cap/32 + g)·10·d;
//   src     take cells × heads × d floats.
// Launch: grid (heads), block 256.
extern "C" __global__ void kv_write_q2k(u8* pool, float* stage, float* scales, float* prev, const float* src,
                                        int pos, int take, int heads, int d, int cap, float gain) {
  KVLAB_DYNAMIC_SMEM(dsm);  // 4·d bytes of thresholds
  float* thr = (float*)dsm;
  const int h = blockIdx.x, g = pos / 32, j0 = pos % 32, m = j0 + take;
  float* st = stage + (i64)h * 32 * d;
  float* sc = scales + (i64)h * d;
  float* pv = prev + (i64)h * d;
  u8* grp = pool + ((i64)h * (cap / 32) + g) * 10 * d;
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    if (j0 == 0 && g > 0) pv[c] = sc[c];
    for (int j = 0; j < take; j++) st[(j0 + j) * d + c] = src[((i64)j * heads + h) * d + c];
  }
  __syncthreads();
  for (int c = threadIdx.x; c < d; c += blockDim.x) {
    double ss = 0;
    for (int j = 0; j < m; j++) {
      const double x = st[j * d + c];
      ss = __dadd_rn(ss, __dmul_rn(x, x));
    }
    double r;
    if (m == 32) {
      r = __ddiv_rn(ss, 32.0);
    } else if (g > 0) {
      const double p = pv[c];
      r = __ddiv_rn(__dadd_rn(ss, __dmul_rn((double)(32 - m), __dmul_rn(p, p))), 32.0);
    } else {
      r = __ddiv_rn(ss, (double)m);
    }
    const float s = (float)sqrt(r);
    sc[c] = s;
    thr[c] = __fmul_rn(s, 0.98172766f);  // kvq's q2kThreshold, 58.5 units
    const u16 hs = f2h_rn(fminf(__fmul_rn(gain, s), 65504.f));
    grp[2 * c] = (u8)hs;
    grp[2 * c + 1] = (u8)(hs >> 8);
  }
  __syncthreads();
  u8* codes = grp + 2 * d;
  for (int k = threadIdx.x; k < 8 * d; k += blockDim.x) {
    u32 byte = 0;
    for (int t = 0; t < 4; t++) {
      const int e = 4 * k + t;
      if (e < m * d) {
        const float x = st[e], tt = thr[e % d];
        const u32 code = (x >= -tt ? 1u : 0u) + (x >= 0.f ? 1u : 0u) + (x >= tt ? 1u : 0u);
        byte |= code << (2 * t);
      }
    }
    codes[k] = (u8)byte;
  }
}
