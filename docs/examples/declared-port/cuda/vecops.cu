// vecops: a tiny CUDA library (the original of the HIP port in ../hip). Four kernels, each stamped
// for float and double: axpy (contiguous), scale_strided (any strided view, 64-bit dims and
// strides), rowsum (one thread per row) and dot (block sums added into one value with atomicAdd).

#define VECOPS_KERNELS(T, S)                                                                          \
extern "C" __global__ void axpy_##S(const T* x, const T* y, T* out, T alpha, unsigned int n) {       \
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (i < n) out[i] = alpha * x[i] + y[i];                                                          \
}                                                                                                     \
extern "C" __global__ void scale_strided_##S(const T* x, T* out, const unsigned long long* dims,       \
                                             const unsigned long long* strides, unsigned int ndim,    \
                                             T factor, unsigned int n) {                              \
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (i >= n) return;                                                                               \
    unsigned long long rem = i, off = 0;                                                              \
    for (int d = (int)ndim - 1; d >= 0; --d) {                                                        \
        off += (rem % dims[d]) * strides[d];                                                          \
        rem /= dims[d];                                                                               \
    }                                                                                                 \
    out[i] = factor * x[off];                                                                         \
}                                                                                                     \
extern "C" __global__ void rowsum_##S(const T* a, T* out, unsigned int rows, unsigned int cols) {    \
    unsigned int r = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    if (r >= rows) return;                                                                            \
    T acc = 0;                                                                                        \
    for (unsigned int c = 0; c < cols; ++c) acc += a[(size_t)r * cols + c];                           \
    out[r] = acc;                                                                                     \
}                                                                                                     \
extern "C" __global__ void dot_##S(const T* x, const T* y, T* result, unsigned int n) {              \
    __shared__ T s[256];                                                                              \
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;                                           \
    s[threadIdx.x] = i < n ? x[i] * y[i] : (T)0;                                                      \
    __syncthreads();                                                                                  \
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {                                           \
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];                                    \
        __syncthreads();                                                                              \
    }                                                                                                 \
    if (threadIdx.x == 0) atomicAdd(result, s[0]);                                                    \
}

VECOPS_KERNELS(float, float)
VECOPS_KERNELS(double, double)
