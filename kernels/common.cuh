// common.cuh — types, conversions and warp helpers shared by every kvlab kernel.
//
// The kernels are compiled at run time by NVRTC for the device's exact architecture
// (native/cuda). They use no CUDA headers, so NVRTC needs no include path; the same sources
// also compile as host C++ against kernels/emu/emu.h (KVLAB_EMU), which runs them on the CPU
// for tests.
//
// Conventions: every pointer argument is a device address; sizes are in bytes unless named
// otherwise; "cells" are KV-cache positions; a "row" is one head's vector of one cell.
#pragma once

#ifdef KVLAB_EMU
#include "emu.h"
#else
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

#define KVLAB_DYNAMIC_SMEM(name) extern __shared__ __align__(16) u8 name[]

// h2f widens IEEE binary16 bits to float exactly.
__device__ __forceinline__ float h2f(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// f2h_rn rounds a float to binary16 bits, to nearest even (subnormals kept, overflow to
// infinity): the rounding of kvq.F32ToF16 and ggml's GGML_FP32_TO_FP16.
__device__ __forceinline__ u16 f2h_rn(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

// smem_u32 is the shared-window address of a pointer into shared memory.
__device__ __forceinline__ u32 smem_u32(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// cp_async16 copies 16 bytes global→shared without passing through registers (sm_80+;
// a plain copy below). Both addresses must be 16-byte aligned.
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src));
#else
  *(uint4*)dst = *(const uint4*)src;
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;");
#endif
}
// cp_async_wait<N> waits until at most N committed groups of this thread are pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N));
#endif
}
#endif  // KVLAB_EMU

#define KV_NEG_INF (__uint_as_float(0xff800000u))
#define KV_TILE 32  // cells per K tile: one warp, one cell per lane

// ---- warp reductions (all 32 lanes take part)

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- aligned little-endian reads: p must be aligned to the access size (the emulator traps
// otherwise, as the GPU faults).

#ifdef KVLAB_EMU
#define KV_ALIGNED(p, n) \
  if (((unsigned long long)(p)) & ((n) - 1)) emu_trap("misaligned " #n "-byte access")
#else
#define KV_ALIGNED(p, n)
#endif
__device__ __forceinline__ u16 ld16(const u8* p) {
  KV_ALIGNED(p, 2);
  return *(const u16*)p;
}
__device__ __forceinline__ u32 ld32(const u8* p) {
  KV_ALIGNED(p, 4);
  return *(const u32*)p;
}
__device__ __forceinline__ float ldf32(const u8* p) { return __uint_as_float(ld32(p)); }
__device__ __forceinline__ uint2 ld_u2(const u8* p) {
  KV_ALIGNED(p, 8);
  return *(const uint2*)p;
}
__device__ __forceinline__ uint4 ld_u4(const u8* p) {
  KV_ALIGNED(p, 16);
  return *(const uint4*)p;
}
__device__ __forceinline__ float4 ld_f4(const float* p) {
  KV_ALIGNED(p, 16);
  return *(const float4*)p;
}

// ---- formats (native/kvq). Row bytes for a head dimension d; see kvq's block.go, fp8.go,
// tq4.go and q2k.go for the layouts, which the device stores byte for byte.

enum KvFormat { KV_F16 = 1, KV_Q8_0 = 2, KV_Q4_0 = 3, KV_Q5_1 = 4, KV_FP8 = 5, KV_TQ4 = 6, KV_Q2K = 7 };

__host__ __device__ constexpr int kv_row_bytes(int f, int d) {
  return f == KV_F16    ? 2 * d
         : f == KV_Q8_0 ? (d / 32) * 34 + (d % 32 ? 2 + d % 32 : 0)
         : f == KV_Q4_0 ? (d / 32) * 18 + (d % 32 ? 2 + (d % 32 + 1) / 2 : 0)
         : f == KV_Q5_1 ? (d / 32) * 24 + (d % 32 ? 4 + (d % 32 + 7) / 8 + (d % 32 + 1) / 2 : 0)
         : f == KV_FP8  ? d + 4
         : f == KV_TQ4  ? (d + 1) / 2 + 4
         : f == KV_Q2K  ? 10 * d  // one group of 32 cells
                        : 0;
}

// kv_unit is the width in bytes of the units of the tiled K layout: the largest power of two
// dividing the row bytes, at most 16.
__host__ __device__ constexpr int kv_unit(int rb) { return (rb & -rb) > 16 ? 16 : (rb & -rb); }

// K pools of row formats are tiled: per KV head, cells in tiles of 32; within a tile, byte k
// of the row of cell j (0..31) sits at ((k / W)·32 + j)·W + k % W, W = kv_unit(row bytes), so
// a warp reading unit u of its 32 cells reads 32·W contiguous bytes. Tile t of head h starts
// at (h·cap + 32·t)·rb, cap (the pool's capacity in cells) a multiple of 32. V pools and all
// row formats outside K pools store rows contiguously: cell c of head h at (h·cap + c)·rb.
__host__ __device__ inline i64 kv_tiled_offset(i64 head_base, int cell, int k, int rb) {
  const int w = kv_unit(rb);
  return head_base + (i64)(cell / KV_TILE) * KV_TILE * rb + ((i64)(k / w) * KV_TILE + cell % KV_TILE) * w + k % w;
}

// ---- unpacking helpers

// word_at returns the 4 bytes at row offset k (k even) of a row laid out by unit reads: ld
// is a functor returning the aligned word at a multiple of 4.
template <class LD>
__device__ __forceinline__ u32 word_at(const LD& ld, int k) {
  if ((k & 3) == 0) return ld(k);
  return __funnelshift_r(ld(k - 2), ld(k + 2), 16);
}

// i8x4_to_f: the 4 signed bytes of x as floats (exact), via the 2^23 magic number.
__device__ __forceinline__ void i8x4_to_f(u32 x, float* f) {
  x ^= 0x80808080u;
  f[0] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7650)) - 8388736.f;
  f[1] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7651)) - 8388736.f;
  f[2] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7652)) - 8388736.f;
  f[3] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7653)) - 8388736.f;
}

// u8x4_to_f: the 4 bytes of x (each < 2^8) as floats minus bias (exact for small values).
__device__ __forceinline__ void u8x4_to_f(u32 x, float bias, float* f) {
  const float m = 8388608.f + bias;
  f[0] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7650)) - m;
  f[1] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7651)) - m;
  f[2] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7652)) - m;
  f[3] = __uint_as_float(__byte_perm(x, 0x4B000000u, 0x7653)) - m;
}

// spread4: bits 0..3 of h to bit 0 of bytes 0..3.
__device__ __forceinline__ u32 spread4(u32 h) { return (h * 0x00204081u) & 0x01010101u; }

// fp8x2_f16bits: the e4m3 codes in bytes 0 and 1 of x as two binary16 bit patterns whose
// value is the e4m3 value ÷ 256 (sign, and exponent and mantissa shifted into the half
// layout; subnormals map exactly). NaN codes (0x7f, 0xff) read as ±480, not NaN.
__device__ __forceinline__ u32 fp8x2_f16bits(u32 x) {
  const u32 v = __byte_perm(x, 0u, 0x1404);  // byte0 → bits 8..15, byte1 → bits 24..31
  return (v & 0x80008000u) | ((v >> 1) & 0x3F803F80u);
}

// q2k_level is q2kLevels[code] (kvq: turbo2's levels, 27 and 90 units of 0.01678167, each
// rounded once to float32): ±0.453105062 for codes 1 and 2, ±1.51035023 for 0 and 3.
__device__ __forceinline__ float q2k_level(u32 code) {
  const float mag = ((code ^ (code >> 1)) & 1u) ? 0.453105062f : 1.51035023f;
  return (code & 2u) ? mag : -mag;
}

// fwht_warp applies kvq's rotation chunks to y (d values in shared memory): an unnormalized
// Walsh–Hadamard transform on each power-of-two chunk of d's binary expansion, largest first,
// stage by stage. Every butterfly is one float addition and one subtraction, exactly kvq's.
__device__ __forceinline__ void fwht_warp(float* y, int d) {
  int off = 0;
  for (int rest = d; rest > 0;) {
    int n = 1;
    while (n * 2 <= rest) n *= 2;
    for (int hh = 1; hh < n; hh <<= 1) {
      for (int p = threadIdx.x % 32; p < n / 2; p += 32) {
        const int i = off + (p / hh) * 2 * hh + p % hh;
        const float u = y[i], v = y[i + hh];
        y[i] = __fadd_rn(u, v);
        y[i + hh] = __fsub_rn(u, v);
      }
      __syncwarp();
    }
    off += n;
    rest -= n;
  }
}

// The 16-level tq4 codebook (kvq tq4Levels: tq4Ints × tq4Unit, the products rounded to float).
#define TQ4_LEVELS                                                                          \
  {-2.72655964f, -2.07113671f, -1.62544906f, -1.25841212f, -0.943809152f, -0.655422986f,    \
   -0.393253803f, -0.131084606f, 0.131084606f, 0.393253803f, 0.655422986f, 0.943809152f,     \
   1.25841212f,  1.62544906f,  2.07113671f,  2.72655964f}
