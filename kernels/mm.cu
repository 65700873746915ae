// mm.cu — the weight kernels of the forward pass: matrix–vector products over weights kept on
// the device in their GGUF layout (f32, f16, q8_0, q4_0), and the embedding lookup.
//
// A weight matrix W has rows × cols values stored row-major as GGUF stores a tensor of dims
// [cols, rows]: row r is row_bytes(cols) bytes at r·row_bytes(cols). q8_0 rows are cols/32 blocks
// of 34 bytes (binary16 scale d, 32 int8 codes q; w = d·q); q4_0 rows are cols/32 blocks of 18
// bytes (d, 16 bytes of nibbles: byte j holds value j in its low nibble and value j+16 in its
// high one; w = d·(nibble − 8)); f16 rows are binary16 values, f32 rows float32 values. The
// blocks are 2-byte aligned only, so quantized rows are read with 2-byte loads. Every value
// is formed exactly as native/model's dequantization forms it (d·q in float32) and dotted in
// float32.
#include "common.cuh"

// GGUF type ids of the device weight formats (gguf.Type).
enum WType { W_F32 = 0, W_F16 = 1, W_Q4_0 = 2, W_Q8_0 = 8 };

__host__ __device__ constexpr i64 w_row_bytes(int t, int cols) {
  return t == W_F32 ? 4 * (i64)cols : t == W_F16 ? 2 * (i64)cols : t == W_Q8_0 ? (i64)(cols / 32) * 34 : (i64)(cols / 32) * 18;
}

// w_chunk loads chunk c of a row (8 values) into w and returns the offsets of its two runs of
// 4 values in the row: values x0…x0+3 and x1…x1+3. For f32, f16 and q8_0 the chunk is values
// 8c…8c+7; for q4_0 (block b = c/4, part s = c%4) it is 32b+4s…+3 (low nibbles of bytes 4s…4s+3)
// and 32b+16+4s…+3 (their high nibbles). f32 and f16 need cols % 8 == 0 (16-byte aligned chunks).
template <int T>
__device__ __forceinline__ void w_chunk(const u8* row, int c, float* w, int& x0, int& x1) {
  if (T == W_F32) {
    const float4 a = ld_f4((const float*)row + 8 * c), b = ld_f4((const float*)row + 8 * c + 4);
    w[0] = a.x, w[1] = a.y, w[2] = a.z, w[3] = a.w, w[4] = b.x, w[5] = b.y, w[6] = b.z, w[7] = b.w;
    x0 = 8 * c, x1 = 8 * c + 4;
  } else if (T == W_F16) {
    const uint4 u = ld_u4(row + 16 * c);
    const u32 h[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) w[2 * i] = h2f((u16)(h[i] & 0xffffu)), w[2 * i + 1] = h2f((u16)(h[i] >> 16));
    x0 = 8 * c, x1 = 8 * c + 4;
  } else if (T == W_Q8_0) {
    const u8* blk = row + (i64)(c >> 2) * 34;
    const float d = h2f(ld16(blk));
    const u8* q = blk + 2 + 8 * (c & 3);
    i8x4_to_f((u32)ld16(q) | (u32)ld16(q + 2) << 16, w);
    i8x4_to_f((u32)ld16(q + 4) | (u32)ld16(q + 6) << 16, w + 4);
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn(w[i], d);
    x0 = 8 * c, x1 = 8 * c + 4;
  } else {
    const u8* blk = row + (i64)(c >> 2) * 18;
    const float d = h2f(ld16(blk));
    const int s = c & 3;
    const u32 b = (u32)ld16(blk + 2 + 4 * s) | (u32)ld16(blk + 4 + 4 * s) << 16;
    u8x4_to_f(b & 0x0f0f0f0fu, 8.f, w);
    u8x4_to_f((b >> 4) & 0x0f0f0f0fu, 8.f, w + 4);
#pragma unroll
    for (int i = 0; i < 8; i++) w[i] = __fmul_rn(w[i], d);
    x0 = 32 * (c >> 2) + 4 * s, x1 = x0 + 16;
  }
}

// w_value is value i of a row, for the element-wise paths (the embedding lookup, and f32/f16
// rows whose length is not a multiple of 8).
template <int T>
__device__ __forceinline__ float w_value(const u8* row, int i) {
  if (T == W_F32) return ((const float*)row)[i];
  if (T == W_F16) return h2f(ld16(row + 2 * (i64)i));
  const int j = i & 31;
  if (T == W_Q8_0) {
    const u8* blk = row + (i64)(i >> 5) * 34;
    return __fmul_rn((float)(signed char)blk[2 + j], h2f(ld16(blk)));
  }
  const u8* blk = row + (i64)(i >> 5) * 18;
  const u8 b = blk[2 + (j & 15)];
  return __fmul_rn((float)((j < 16 ? (b & 15) : (b >> 4)) - 8), h2f(ld16(blk)));
}

// dot8 returns s + Σ_i w[i]·x[x0+i] + Σ_i w[4+i]·x[x1+i] (i < 4), adding in order.
__device__ __forceinline__ float dot8(float s, const float* w, const float* x, int x0, int x1) {
  const float4 a = ld_f4(x + x0), b = ld_f4(x + x1);
  s += w[0] * a.x;
  s += w[1] * a.y;
  s += w[2] * a.z;
  s += w[3] * a.w;
  s += w[4] * b.x;
  s += w[5] * b.y;
  s += w[6] * b.z;
  s += w[7] * b.w;
  return s;
}

// matvec_body computes, for rows of W and tokens t0 … t0+nt−1 (t0 = blockIdx.y·NT, nt ≤ NT):
//   s = W_r · x_t (+ bias[r]),   y[t][r] = s, or y[t][r] + s when accumulate is set
// x is ntok × cols float32 (token-major), y ntok × rows; bias (rows floats) may be null. y must
// not overlap x. Each warp owns one row: lane l takes chunks l, l+32, … of it, dequantizes
// each chunk into registers once and dots it with the NT tokens' x, then the warp sums its
// lanes. Launch: grid (⌈rows/4⌉, ⌈ntok/NT⌉), block 128 (4 warps, 4 rows).
template <int T, int NT>
__device__ __forceinline__ void matvec_body(float* y, const u8* w, const float* x, const float* bias, int rows, int cols,
                                            int ntok, int accumulate) {
  const int lane = threadIdx.x & 31;
  const int r = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (r >= rows) return;  // whole warps leave together
  const int t0 = blockIdx.y * NT;
  const int nt = min(NT, ntok - t0);
  const u8* row = w + (i64)r * w_row_bytes(T, cols);
  const float* xt = x + (i64)t0 * cols;
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; t++) acc[t] = 0.f;
  if ((T == W_Q8_0 || T == W_Q4_0) || (cols & 7) == 0) {
    const int chunks = cols >> 3;
    int c = lane;
    if (NT == 1) {
      // Decode: two chunks per step, both loaded before either is used, to keep more bytes in
      // flight per warp.
      for (; c + 32 < chunks; c += 64) {
        float wa[8], wb[8];
        int a0, a1, b0, b1;
        w_chunk<T>(row, c, wa, a0, a1);
        w_chunk<T>(row, c + 32, wb, b0, b1);
        acc[0] = dot8(acc[0], wa, xt, a0, a1);
        acc[0] = dot8(acc[0], wb, xt, b0, b1);
      }
    }
    for (; c < chunks; c += 32) {
      float wv[8];
      int x0, x1;
      w_chunk<T>(row, c, wv, x0, x1);
#pragma unroll
      for (int t = 0; t < NT; t++)
        if (t < nt) acc[t] = dot8(acc[t], wv, xt + (i64)t * cols, x0, x1);
    }
  } else {
    for (int i = lane; i < cols; i += 32) {
      const float wv = w_value<T>(row, i);
#pragma unroll
      for (int t = 0; t < NT; t++)
        if (t < nt) acc[t] += wv * xt[(i64)t * cols + i];
    }
  }
#pragma unroll
  for (int t = 0; t < NT; t++) {
    float s = warp_sum(acc[t]);
    if (lane == 0 && t < nt) {
      if (bias) s = __fadd_rn(s, bias[r]);
      float* o = y + (i64)(t0 + t) * rows + r;
      *o = accumulate ? __fadd_rn(*o, s) : s;
    }
  }
}

// matvec_<type>_t<NT>: matvec_body for one weight type; t1 is decode's product (one token per
// weight read), t8 prefill's (eight tokens per weight read).
extern "C" __global__ void matvec_f32_t1(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_F32, 1>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_f32_t8(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_F32, 8>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_f16_t1(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_F16, 1>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_f16_t8(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_F16, 8>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_q8_0_t1(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_Q8_0, 1>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_q8_0_t8(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_Q8_0, 8>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_q4_0_t1(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_Q4_0, 1>(y, w, x, bias, rows, cols, ntok, accumulate);
}
extern "C" __global__ void matvec_q4_0_t8(float* y, const u8* w, const float* x, const float* bias, int rows, int cols, int ntok, int accumulate) {
  matvec_body<W_Q4_0, 8>(y, w, x, bias, rows, cols, ntok, accumulate);
}

// embed_<type>: x[t] = row tokens[t] of the embedding matrix (cols values), dequantized
// exactly. x is ntok × cols float32. Launch: grid (ntok), block 256.
template <int T>
__device__ __forceinline__ void embed_body(float* x, const u8* w, const int* tokens, int cols) {
  const u8* row = w + (i64)tokens[blockIdx.x] * w_row_bytes(T, cols);
  float* o = x + (i64)blockIdx.x * cols;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) o[i] = w_value<T>(row, i);
}
extern "C" __global__ void embed_f32(float* x, const u8* w, const int* tokens, int cols) { embed_body<W_F32>(x, w, tokens, cols); }
extern "C" __global__ void embed_f16(float* x, const u8* w, const int* tokens, int cols) { embed_body<W_F16>(x, w, tokens, cols); }
extern "C" __global__ void embed_q8_0(float* x, const u8* w, const int* tokens, int cols) { embed_body<W_Q8_0>(x, w, tokens, cols); }
extern "C" __global__ void embed_q4_0(float* x, const u8* w, const int* tokens, int cols) { embed_body<W_Q4_0>(x, w, tokens, cols); }
