// emu.h — compiles kvlab's CUDA kernels as host C++ (KVLAB_EMU) for the CPU emulator in
// kernels/emu: CUDA's qualifiers become plain C++, thread and block indices read the current
// emulated thread, and barriers, shuffles and ballots call into the emulator runtime
// (emu_driver.cc), which runs every CUDA thread of a block as a cooperative fiber.
// __shared__ variables become static: the emulator runs one block at a time.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t i64;

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __constant__ static const
#define __align__(n) alignas(n)
#define __restrict__ __restrict

struct dim3 {
  unsigned x, y, z;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct float4 {
  float x, y, z, w;
};

extern "C" {
const dim3* emu_tid();
const dim3* emu_bid();
const dim3* emu_bdim();
const dim3* emu_gdim();
void emu_syncthreads();
void emu_syncwarp();
u64 emu_shfl(u64 v, int arg, int xor_mode);
u32 emu_ballot(int pred);
u8* emu_dyn_smem();
u32 emu_dyn_smem_size();
void emu_trap(const char* msg);
}

#define threadIdx (*emu_tid())
#define blockIdx (*emu_bid())
#define blockDim (*emu_bdim())
#define gridDim (*emu_gdim())
#define KVLAB_DYNAMIC_SMEM(name) u8* name = emu_dyn_smem()

inline void __syncthreads() { emu_syncthreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { emu_syncwarp(); }
inline void __trap() { emu_trap("__trap()"); }
template <class T>
inline T emu_shfl_t(T v, int arg, int x) {
  static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
  u64 b = 0;
  memcpy(&b, &v, sizeof(T));
  b = emu_shfl(b, arg, x);
  T r;
  memcpy(&r, &b, sizeof(T));
  return r;
}
template <class T>
inline T __shfl_xor_sync(unsigned, T v, int o) { return emu_shfl_t(v, o, 1); }
template <class T>
inline T __shfl_sync(unsigned, T v, int src) { return emu_shfl_t(v, src, 0); }
inline unsigned __ballot_sync(unsigned, int p) { return emu_ballot(p); }

inline u32 __byte_perm(u32 x, u32 y, u32 s) {
  const u64 v = ((u64)y << 32) | x;
  u32 r = 0;
  for (int i = 0; i < 4; i++) r |= (u32)((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
  return r;
}
inline u32 __funnelshift_r(u32 lo, u32 hi, u32 sh) { return (u32)((((u64)hi << 32) | lo) >> (sh & 31)); }
inline float __uint_as_float(u32 x) {
  float f;
  memcpy(&f, &x, 4);
  return f;
}
inline float __int_as_float(int x) { return __uint_as_float((u32)x); }
inline float __int_as_float(unsigned x) { return __uint_as_float(x); }
inline u32 __float_as_uint(float f) {
  u32 x;
  memcpy(&x, &f, 4);
  return x;
}
inline int __float_as_int(float f) { return (int)__float_as_uint(f); }
inline long long __double_as_longlong(double d) {
  long long x;
  memcpy(&x, &d, 8);
  return x;
}
// The _rn intrinsics are plain operations: the emulator is built with -ffp-contract=off.
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// h2f and f2h_rn: exact binary16 widening and round-to-nearest-even narrowing (kvq's
// F16ToF32 and F32ToF16).
inline float h2f(u16 h) {
  const u32 sign = (u32)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | mant << 13);
  if (exp != 0) return __uint_as_float(sign | (exp + 112) << 23 | mant << 13);
  if (mant == 0) return __uint_as_float(sign);
  float f = std::ldexp((float)mant, -24);
  return sign ? -f : f;
}
inline u16 f2h_rn(float f) {
  const u32 b = __float_as_uint(f);
  const u16 sign = (u16)((b >> 16) & 0x8000);
  const int exp = (b >> 23) & 0xff;
  const u32 mant = b & 0x7fffff;
  if (exp == 0xff) return mant ? (u16)(sign | 0x7e00 | (mant >> 13)) : (u16)(sign | 0x7c00);
  if (exp > 142) return sign | 0x7c00;
  if (exp >= 113) {
    u32 h = (u32)(exp - 112) << 10 | mant >> 13;
    const u32 rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (u16)(sign | h);
  }
  if (exp >= 102) {
    const u32 m = mant | 0x800000, shift = (u32)(126 - exp);
    u32 h = m >> shift;
    const u32 rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) h++;
    return (u16)(sign | h);
  }
  return sign;
}

inline void cp_async16(void* dst, const void* src) {
  if (((uintptr_t)dst | (uintptr_t)src) & 15) emu_trap("misaligned cp.async");
  memcpy(dst, src, 16);
}
inline void cp_async_commit() {}
template <int N>
inline void cp_async_wait() {}

namespace emu {
typedef void (*Invoker)(void* fn, void** params);
struct Entry {
  void* fn;
  Invoker inv;
  int nparams;
};
inline std::map<std::string, Entry>& table() {
  static std::map<std::string, Entry> t;
  return t;
}
template <class... A, size_t... I>
inline void call(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*(std::remove_cv_t<std::remove_reference_t<A>>*)p[I]...);
}
// Reg registers one extern "C" kernel under its name, with an invoker that unpacks
// cuLaunchKernel's parameter array by the kernel's own parameter types.
struct Reg {
  template <class... A>
  Reg(const char* name, void (*f)(A...)) {
    table()[name] = Entry{(void*)f, [](void* fn, void** p) { call((void (*)(A...))fn, p, std::index_sequence_for<A...>{}); },
                          (int)sizeof...(A)};
  }
};
}  // namespace emu
