// Pooling and upsampling (candle-kernels conv.cu ABI), T in f32 f64 u8 u32 f16 bf16.
//   avg_pool2d_T / max_pool2d_T(size_t src_numel, size_t w_k, size_t h_k, size_t w_stride,
//                               size_t h_stride, const size_t* info, const T* src, T* dst)
//   upsample_nearest2d_T(size_t w_out, size_t h_out, double w_scale, double h_scale,
//                        const size_t* info, const T* src, T* dst)
//   upsample_bilinear2d_T(size_t w_out, size_t h_out, bool align_corners, bool has_sh, double sh,
//                         bool has_sw, double sw, const size_t* info, const T* src, T* dst)
// info = [4 dims, 4 strides] of the NCHW source. One thread per output element (no grid-stride
// loop), as Candle launches them (for_num_elems(dst_el)). In pool and nearest the kernel's "w" is
// dims[2]: Candle's host passes (k_h, k_w) into (w_k, h_k), so the swap cancels. avg accumulates
// f16/bf16 in float and other dtypes in T (u8/u32 wrap) and scales by the float 1/(w_k*h_k).
// bilinear follows PyTorch's upsample_bilinear2d with h = dims[2], w = dims[3], in double.
#include "structured.h"

namespace pk {

template <class T> PK_DEV T to_half_like(double r);
template <> PK_DEV f16 to_half_like<f16>(double r) { return double_to_half(r); }
template <> PK_DEV bf16 to_half_like<bf16>(double r) { return double_to_bf16(r); }

template <class T> PK_DEV T to_storage_from_double(double r) {
  if constexpr (Num<T>::is_float) {
    if constexpr (sizeof(T) == 8) {
      return r;
    } else if constexpr (sizeof(T) == 4) {
      return canon_nan((float)r);
    } else {
      return to_half_like<T>(r);
    }
  } else {
    return (T)r;  // truncation (values are >= 0 here)
  }
}

template <class T>
PK_DEV void pool2d(bool is_avg, usize w_k, usize h_k, usize w_stride, usize h_stride, const usize* info,
                   const T* src, T* dst) {
  typedef typename Num<T>::C C;
  const usize dst_i = (usize)blockIdx.x * blockDim.x + threadIdx.x;
  const usize* dims = info;
  const usize* s = info + 4;
  const usize c = dims[1], w_in = dims[2], h_in = dims[3];
  const usize w_out = (w_in - w_k) / w_stride + 1;
  const usize h_out = (h_in - h_k) / h_stride + 1;
  if (dst_i >= dims[0] * c * w_out * h_out) return;
  const usize b_idx = dst_i / (w_out * h_out * c);
  const usize c_idx = (dst_i / (w_out * h_out)) % c;
  const usize dst_w = (dst_i / h_out) % w_out;
  const usize dst_h = dst_i % h_out;
  const usize base = b_idx * s[0] + c_idx * s[1];
  if (is_avg) {
    const float scale = (float)(1.0 / (double)(w_k * h_k));
    C d = (C)0;
    for (usize wo = 0; wo < w_k; ++wo) {
      const usize sw = w_stride * dst_w + wo;
      if (sw >= w_in) continue;
      for (usize ho = 0; ho < h_k; ++ho) {
        const usize sh = h_stride * dst_h + ho;
        if (sh >= h_in) continue;
        d = (C)(d + Num<T>::to_c(src[base + sw * s[2] + sh * s[3]]));  // integers wrap in T
      }
    }
    if constexpr (Num<T>::is_float) {
      dst[dst_i] = Num<T>::from_c((C)(d * scale));
    } else {
      dst[dst_i] = (T)((float)d * scale);
    }
  } else {
    C d = (C)0;
    bool set = false;
    for (usize wo = 0; wo < w_k; ++wo) {
      const usize sw = w_stride * dst_w + wo;
      if (sw >= w_in) continue;
      for (usize ho = 0; ho < h_k; ++ho) {
        const usize sh = h_stride * dst_h + ho;
        if (sh >= h_in) continue;
        const C x = Num<T>::to_c(src[base + sw * s[2] + sh * s[3]]);
        d = set ? maxg<T, true>(d, x) : x;
        set = true;
      }
    }
    dst[dst_i] = Num<T>::from_c(d);
  }
}

template <class T>
PK_DEV void upsample_nearest2d(usize w_out, usize h_out, double w_scale, double h_scale, const usize* info,
                               const T* src, T* dst) {
  const usize dst_i = (usize)blockIdx.x * blockDim.x + threadIdx.x;
  const usize* dims = info;
  const usize* s = info + 4;
  const usize c = dims[1], w_in = dims[2], h_in = dims[3];
  if (dst_i >= dims[0] * c * w_out * h_out) return;
  const usize b_idx = dst_i / (w_out * h_out * c);
  const usize c_idx = (dst_i / (w_out * h_out)) % c;
  const usize dst_w = (dst_i / h_out) % w_out;
  const usize dst_h = dst_i % h_out;
  usize sw = (usize)((double)dst_w * w_scale);
  usize sh = (usize)((double)dst_h * h_scale);
  if (sw >= w_in) sw = w_in - 1;
  if (sh >= h_in) sh = h_in - 1;
  dst[dst_i] = src[b_idx * s[0] + c_idx * s[1] + sw * s[2] + sh * s[3]];
}

struct Lerp {
  usize i0, i1;
  double w;
};

PK_DEV Lerp bilinear_coord(usize d, usize n_out, usize n_in, bool align, bool has_scale, double factor) {
  double src;
  if (align) {
    const double sc = n_out > 1 ? (double)(n_in - 1) / (double)(n_out - 1) : 0.0;
    src = sc * (double)d;
  } else {
    const double sc = has_scale ? 1.0 / factor : (double)n_in / (double)n_out;
    src = sc * ((double)d + 0.5) - 0.5;
  }
  src = src > 0.0 ? src : 0.0;
  Lerp l;
  l.i0 = (usize)floor(src);
  if (l.i0 > n_in - 1) l.i0 = n_in - 1;
  l.i1 = l.i0 + 1 < n_in - 1 ? l.i0 + 1 : n_in - 1;
  double w = src - (double)l.i0;
  l.w = w < 0.0 ? 0.0 : (w > 1.0 ? 1.0 : w);
  return l;
}

template <class T>
PK_DEV void upsample_bilinear2d(usize w_out, usize h_out, bool align, bool has_sh, double sh, bool has_sw, double sw,
                                const usize* info, const T* src, T* dst) {
  const usize dst_i = (usize)blockIdx.x * blockDim.x + threadIdx.x;
  const usize* dims = info;
  const usize* s = info + 4;
  const usize c = dims[1], h_in = dims[2], w_in = dims[3];
  if (dst_i >= dims[0] * c * h_out * w_out) return;
  const usize b_idx = dst_i / (h_out * w_out * c);
  const usize c_idx = (dst_i / (h_out * w_out)) % c;
  const usize dh = (dst_i / w_out) % h_out;
  const usize dw = dst_i % w_out;
  const Lerp lh = bilinear_coord(dh, h_out, h_in, align, has_sh, sh);
  const Lerp lw = bilinear_coord(dw, w_out, w_in, align, has_sw, sw);
  const usize base = b_idx * s[0] + c_idx * s[1];
  auto at = [&](usize h, usize w) -> double { return (double)Num<T>::to_c(src[base + h * s[2] + w * s[3]]); };
  const double r = at(lh.i0, lw.i0) * (1.0 - lw.w) * (1.0 - lh.w) + at(lh.i0, lw.i1) * lw.w * (1.0 - lh.w) +
                   at(lh.i1, lw.i0) * (1.0 - lw.w) * lh.w + at(lh.i1, lw.i1) * lw.w * lh.w;
  dst[dst_i] = to_storage_from_double<T>(r);
}

}  // namespace pk

#define PK_POOL(T, SFX)                                                                                         \
  extern "C" __global__ void PK_BOUNDS avg_pool2d_##SFX(pk::usize src_numel, pk::usize w_k, pk::usize h_k,      \
                                                        pk::usize w_stride, pk::usize h_stride,                 \
                                                        const pk::usize* info, const T* src, T* dst) {          \
    (void)src_numel;                                                                                            \
    pk::pool2d<T>(true, w_k, h_k, w_stride, h_stride, info, src, dst);                                          \
  }                                                                                                             \
  extern "C" __global__ void PK_BOUNDS max_pool2d_##SFX(pk::usize src_numel, pk::usize w_k, pk::usize h_k,      \
                                                        pk::usize w_stride, pk::usize h_stride,                 \
                                                        const pk::usize* info, const T* src, T* dst) {          \
    (void)src_numel;                                                                                            \
    pk::pool2d<T>(false, w_k, h_k, w_stride, h_stride, info, src, dst);                                         \
  }                                                                                                             \
  extern "C" __global__ void PK_BOUNDS upsample_nearest2d_##SFX(pk::usize w_out, pk::usize h_out, double w_scale, \
                                                                double h_scale, const pk::usize* info,          \
                                                                const T* src, T* dst) {                         \
    pk::upsample_nearest2d<T>(w_out, h_out, w_scale, h_scale, info, src, dst);                                  \
  }                                                                                                             \
  extern "C" __global__ void PK_BOUNDS upsample_bilinear2d_##SFX(                                               \
      pk::usize w_out, pk::usize h_out, bool align_corners, bool has_sh, double sh, bool has_sw, double sw,     \
      const pk::usize* info, const T* src, T* dst) {                                                            \
    pk::upsample_bilinear2d<T>(w_out, h_out, align_corners, has_sh, sh, has_sw, sw, info, src, dst);            \
  }

PK_POOL(pk::f32, f32)
PK_POOL(pk::f64, f64)
PK_POOL(pk::u8, u8)
PK_POOL(pk::u32, u32)
PK_POOL(pk::f16, f16)
PK_POOL(pk::bf16, bf16)
