// nn.cu — the element-wise and row-wise layers of a llama-family forward pass, matching
// native/model's CPU operations (double-precision sums and transcendental functions where
// the CPU uses float64), and a streaming read kernel for measuring memory bandwidth.
#include "common.cuh"

// rmsnorm: out[r][i] = w[i] · (x[r][i] · s_r), s_r = 1/√(mean_i x[r][i]² + eps), the sum of
// squares in double. Launch: grid (rows), block 256. out may equal x.
extern "C" __global__ void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
  __shared__ double part[256];
  const float* xr = x + (i64)blockIdx.x * n;
  float* orow = out + (i64)blockIdx.x * n;
  double ss = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) ss += (double)xr[i] * (double)xr[i];
  part[threadIdx.x] = ss;
  __syncthreads();
  for (int o = blockDim.x / 2; o > 0; o >>= 1) {
    if ((int)threadIdx.x < o) part[threadIdx.x] += part[threadIdx.x + o];
    __syncthreads();
  }
  const float s = (float)(1.0 / sqrt(part[0] / n + (double)eps));
  for (int i = threadIdx.x; i < n; i += blockDim.x) orow[i] = __fmul_rn(w[i], __fmul_rn(s, xr[i]));
}

// rope rotates the first dims values of every head of ntok tokens (x: ntok × heads × hd
// floats, token t at position pos0 + t): pair j by the angle (pos/scale)·freq[j], pairs
// (2j, 2j+1), or (j, j + dims/2) when neox is set; cos and sin are multiplied by mscale (YaRN's
// magnitude) unless it is 0 or 1. Launch: grid (ntok, heads), block 64.
extern "C" __global__ void rope(float* x, const float* freq, int pos0, int heads, int hd, int dims, int neox, float scale, float mscale) {
  const int t = blockIdx.x, h = blockIdx.y, half = dims / 2;
  float* v = x + ((i64)t * heads + h) * hd;
  float p = (float)(pos0 + t);
  if (scale != 1.f) p = __fdiv_rn(p, scale);
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    double sd, cd;
    sincos((double)__fmul_rn(p, freq[j]), &sd, &cd);
    float s = (float)sd, c = (float)cd;
    if (mscale != 1.f && mscale != 0.f) {
      s = __fmul_rn(s, mscale);
      c = __fmul_rn(c, mscale);
    }
    const int a = neox ? j : 2 * j, b = neox ? j + half : 2 * j + 1;
    const float x0 = v[a], x1 = v[b];
    v[a] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    v[b] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
  }
}

// swiglu: g[i] = SiLU(g[i]) · u[i], SiLU(z) = z / (1 + e^(−z)) with e^(−z) in double.
// Launch: grid (ceil(n/256)), block 256.
extern "C" __global__ void swiglu(float* g, const float* u, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float z = g[i];
  g[i] = __fmul_rn(__fmul_rn(z, __fdiv_rn(1.f, __fadd_rn(1.f, (float)exp(-(double)z)))), u[i]);
}

// add: x[i] += y[i]. Launch: grid (ceil(n/256)), block 256.
extern "C" __global__ void add(float* x, const float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __fadd_rn(x[i], y[i]);
}

// mem_read streams n16 16-byte words of src (a grid-stride loop of coalesced 16-byte loads)
// and folds them into one word per warp, stored to sink (one word per block) only when it
// equals a magic value, so the loads cannot be removed and nothing is written in practice:
// it measures read bandwidth. Launch: grid (SMs × 8), block 256.
extern "C" __global__ void mem_read(u32* sink, const uint4* src, unsigned long long n16) {
  u32 acc = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += (u64)gridDim.x * blockDim.x) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
  if (threadIdx.x % 32 == 0 && acc == 0x9e3779b9u) sink[blockIdx.x] = acc;  // practically never taken
}
