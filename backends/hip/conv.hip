// Convolution kernels (candle-kernels conv.cu ABI), T in f32 f64 u8 u32 f16 bf16. All sizes are
// size_t; one thread per output element (no grid-stride loop), as Candle launches them.
//   conv1d_T(src_numel, l_out, stride, padding, dilation, info[3+3+3+3], src, k, dst)
//   conv2d_T(src_numel, w_out, h_out, stride, padding, dilation, info[4+4+4+4], src, k, dst)
//   conv_transpose1d_T(src_numel, l_out, stride, padding, out_padding, dilation, info, src, k, dst)
//   conv_transpose2d_T(src_numel, w_out, h_out, stride, padding, out_padding, dilation, info, src, k, dst)
//   im2col_T(dst_numel, h_out, w_out, h_k, w_k, stride, padding, dilation, info[4+4], src, dst)
//   im2col1d_T(n_threads, l_out, l_k, stride, padding, dilation, info[3+3], src, dst)
//   col2im1d_T(dst_el, l_out, l_in, c_out, k_size, stride, src, dst)
// The math is the correct one: src = stride*out + k*dilation - padding (candle's direct conv1d
// multiplies the whole sum by dilation, a known bug we do not reproduce). Accumulation: f16/bf16
// in float, other dtypes in T (integers wrap).
#include "structured.h"

namespace pk {

template <class T> struct Acc {
  typedef typename Num<T>::C A;
  static PK_DEV A mac(A d, T x, T w) {
    if constexpr (Num<T>::is_float) {
      return d + Num<T>::to_c(x) * Num<T>::to_c(w);
    } else {
      return (A)(d + (A)(x * w));  // wraps in T
    }
  }
};

PK_DEV usize gid() { return (usize)blockIdx.x * blockDim.x + threadIdx.x; }

template <class T>
PK_DEV void conv1d(usize l_out, usize stride, usize padding, usize dilation, const usize* info, const T* src,
                   const T* k, T* dst) {
  const usize i = gid();
  const usize *sd = info, *ss = info + 3, *kd = info + 6, *ks = info + 9;
  const usize k_size = kd[2], c_out = kd[0], c_in = sd[1], l_in = sd[2];
  if (i >= sd[0] * c_out * l_out) return;
  const usize b = i / (l_out * c_out), co = (i / l_out) % c_out, l = i % l_out;
  typename Num<T>::C d = 0;
  for (usize off = 0; off < k_size; ++off) {
    usize sl = stride * l + off * dilation;
    if (sl < padding || sl >= padding + l_in) continue;
    sl -= padding;
    for (usize c = 0; c < c_in; ++c)
      d = Acc<T>::mac(d, src[b * ss[0] + c * ss[1] + sl * ss[2]], k[co * ks[0] + c * ks[1] + off * ks[2]]);
  }
  dst[i] = Num<T>::from_c(d);
}

template <class T>
PK_DEV void conv2d(usize w_out, usize h_out, usize stride, usize padding, usize dilation, const usize* info,
                   const T* src, const T* k, T* dst) {
  const usize i = gid();
  const usize *sd = info, *ss = info + 4, *kd = info + 8, *ks = info + 12;
  const usize k_h = kd[2], k_w = kd[3], c_out = kd[0], c_in = sd[1], i_h = sd[2], i_w = sd[3];
  if (i >= sd[0] * c_out * w_out * h_out) return;
  const usize b = i / (w_out * h_out * c_out), co = (i / (w_out * h_out)) % c_out;
  const usize oh = (i / w_out) % h_out, ow = i % w_out;
  typename Num<T>::C d = 0;
  for (usize kx = 0; kx < k_w; ++kx) {
    usize sw = stride * ow + kx * dilation;
    if (sw < padding || sw >= i_w + padding) continue;
    sw -= padding;
    for (usize ky = 0; ky < k_h; ++ky) {
      usize sh = stride * oh + ky * dilation;
      if (sh < padding || sh >= i_h + padding) continue;
      sh -= padding;
      for (usize c = 0; c < c_in; ++c)
        d = Acc<T>::mac(d, src[b * ss[0] + c * ss[1] + sh * ss[2] + sw * ss[3]],
                        k[co * ks[0] + c * ks[1] + ky * ks[2] + kx * ks[3]]);
    }
  }
  dst[i] = Num<T>::from_c(d);
}

// input index of output position o through kernel tap t: o = in*stride + t*dilation - padding
PK_DEV bool t_source(usize o, usize t, usize stride, usize padding, usize dilation, usize n_in, usize* in) {
  const long long v = (long long)(o + padding) - (long long)(t * dilation);
  if (v < 0 || v % (long long)stride) return false;
  *in = (usize)(v / (long long)stride);
  return *in < n_in;
}

template <class T>
PK_DEV void conv_transpose1d(usize l_out, usize stride, usize padding, usize dilation, const usize* info,
                             const T* src, const T* k, T* dst) {
  const usize i = gid();
  const usize *sd = info, *ss = info + 3, *kd = info + 6, *ks = info + 9;
  const usize l_k = kd[2], c_out = kd[1], c_in = sd[1], l_in = sd[2];
  if (i >= sd[0] * c_out * l_out) return;
  const usize b = i / (l_out * c_out), co = (i / l_out) % c_out, ox = i % l_out;
  typename Num<T>::C d = 0;
  for (usize kx = 0; kx < l_k; ++kx) {
    usize ix;
    if (!t_source(ox, kx, stride, padding, dilation, l_in, &ix)) continue;
    for (usize c = 0; c < c_in; ++c)
      d = Acc<T>::mac(d, src[b * ss[0] + c * ss[1] + ix * ss[2]], k[c * ks[0] + co * ks[1] + kx * ks[2]]);
  }
  dst[i] = Num<T>::from_c(d);
}

template <class T>
PK_DEV void conv_transpose2d(usize w_out, usize h_out, usize stride, usize padding, usize dilation,
                             const usize* info, const T* src, const T* k, T* dst) {
  const usize i = gid();
  const usize *sd = info, *ss = info + 4, *kd = info + 8, *ks = info + 12;
  const usize k_h = kd[2], k_w = kd[3], c_out = kd[1], c_in = sd[1], i_h = sd[2], i_w = sd[3];
  if (i >= sd[0] * c_out * w_out * h_out) return;
  const usize b = i / (w_out * h_out * c_out), co = (i / (w_out * h_out)) % c_out;
  const usize oy = (i / w_out) % h_out, ox = i % w_out;
  typename Num<T>::C d = 0;
  for (usize ky = 0; ky < k_h; ++ky) {
    usize iy;
    if (!t_source(oy, ky, stride, padding, dilation, i_h, &iy)) continue;
    for (usize kx = 0; kx < k_w; ++kx) {
      usize ix;
      if (!t_source(ox, kx, stride, padding, dilation, i_w, &ix)) continue;
      for (usize c = 0; c < c_in; ++c)
        d = Acc<T>::mac(d, src[b * ss[0] + c * ss[1] + iy * ss[2] + ix * ss[3]],
                        k[c * ks[0] + co * ks[1] + ky * ks[2] + kx * ks[3]]);
    }
  }
  dst[i] = Num<T>::from_c(d);
}

template <class T>
PK_DEV void im2col(usize dst_numel, usize h_out, usize w_out, usize h_k, usize w_k, usize stride, usize padding,
                   usize dilation, const usize* info, const T* src, T* dst) {
  const usize i = gid();
  if (i >= dst_numel) return;
  const usize *sd = info, *ss = info + 4;
  const usize c_in = sd[1], h_in = sd[2], w_in = sd[3];
  const usize s4 = w_k, s3 = h_k * s4, s2 = c_in * s3, s1 = w_out * s2, s0 = h_out * s1;
  usize t = i;
  const usize b = t / s0; t -= b * s0;
  const usize h = t / s1; t -= h * s1;
  const usize w = t / s2; t -= w * s2;
  const usize c = t / s3; t -= c * s3;
  const usize kh = t / s4, kw = t - kh * s4;
  usize sh = h * stride + kh * dilation, sw = w * stride + kw * dilation;
  if (sh < padding || sh >= h_in + padding || sw < padding || sw >= w_in + padding) {
    dst[i] = Num<T>::from_c((typename Num<T>::C)0);
    return;
  }
  sh -= padding;
  sw -= padding;
  dst[i] = src[b * ss[0] + c * ss[1] + sh * ss[2] + sw * ss[3]];
}

template <class T>
PK_DEV void im2col1d(usize n_threads, usize l_out, usize l_k, usize stride, usize padding, usize dilation,
                     const usize* info, const T* src, T* dst) {
  const usize i = gid();
  if (i >= n_threads) return;
  const usize *sd = info, *ss = info + 3;
  const usize c_in = sd[1], l_in = sd[2];
  const usize b = i / (l_out * c_in), l = (i / c_in) % l_out, c = i % c_in;
  T* out = dst + i * l_k;
  for (usize kk = 0; kk < l_k; ++kk) {
    usize sl = l * stride + kk * dilation;
    if (sl < padding || sl >= l_in + padding) {
      out[kk] = Num<T>::from_c((typename Num<T>::C)0);
    } else {
      out[kk] = src[b * ss[0] + c * ss[1] + (sl - padding) * ss[2]];
    }
  }
}

template <class T>
PK_DEV void col2im1d(usize dst_el, usize l_out, usize l_in, usize c_out, usize k_size, usize stride, const T* src,
                     T* dst) {
  const usize i = gid();
  if (i >= dst_el) return;
  const usize b = i / (c_out * l_out), c = (i / l_out) % c_out, lo = i % l_out;
  typedef typename Num<T>::C C;
  C res = (C)0;
  for (usize li = 0; li < l_in; ++li) {  // l_in ascending, one term at most per l_in
    if (lo < li * stride) break;
    const usize kk = lo - li * stride;
    if (kk >= k_size) continue;
    res = add_in_t<T>(res, Num<T>::to_c(src[((b * l_in + li) * c_out + c) * k_size + kk]));
  }
  dst[i] = Num<T>::from_c(res);
}

}  // namespace pk

#define PK_CONV(T, SFX)                                                                                           \
  extern "C" __global__ void PK_BOUNDS conv1d_##SFX(pk::usize src_numel, pk::usize l_out, pk::usize stride,       \
                                                    pk::usize padding, pk::usize dilation, const pk::usize* info, \
                                                    const T* src, const T* k, T* dst) {                           \
    (void)src_numel;                                                                                              \
    pk::conv1d<T>(l_out, stride, padding, dilation, info, src, k, dst);                                           \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS conv2d_##SFX(pk::usize src_numel, pk::usize w_out, pk::usize h_out,        \
                                                    pk::usize stride, pk::usize padding, pk::usize dilation,      \
                                                    const pk::usize* info, const T* src, const T* k, T* dst) {    \
    (void)src_numel;                                                                                              \
    pk::conv2d<T>(w_out, h_out, stride, padding, dilation, info, src, k, dst);                                    \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS conv_transpose1d_##SFX(                                                    \
      pk::usize src_numel, pk::usize l_out, pk::usize stride, pk::usize padding, pk::usize out_padding,           \
      pk::usize dilation, const pk::usize* info, const T* src, const T* k, T* dst) {                              \
    (void)src_numel;                                                                                              \
    (void)out_padding;                                                                                            \
    pk::conv_transpose1d<T>(l_out, stride, padding, dilation, info, src, k, dst);                                 \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS conv_transpose2d_##SFX(                                                    \
      pk::usize src_numel, pk::usize w_out, pk::usize h_out, pk::usize stride, pk::usize padding,                 \
      pk::usize out_padding, pk::usize dilation, const pk::usize* info, const T* src, const T* k, T* dst) {       \
    (void)src_numel;                                                                                              \
    (void)out_padding;                                                                                            \
    pk::conv_transpose2d<T>(w_out, h_out, stride, padding, dilation, info, src, k, dst);                          \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS im2col_##SFX(pk::usize dst_numel, pk::usize h_out, pk::usize w_out,        \
                                                    pk::usize h_k, pk::usize w_k, pk::usize stride,               \
                                                    pk::usize padding, pk::usize dilation,                        \
                                                    const pk::usize* info, const T* src, T* dst) {                \
    pk::im2col<T>(dst_numel, h_out, w_out, h_k, w_k, stride, padding, dilation, info, src, dst);                  \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS im2col1d_##SFX(pk::usize n_threads, pk::usize l_out, pk::usize l_k,        \
                                                      pk::usize stride, pk::usize padding, pk::usize dilation,    \
                                                      const pk::usize* info, const T* src, T* dst) {              \
    pk::im2col1d<T>(n_threads, l_out, l_k, stride, padding, dilation, info, src, dst);                            \
  }                                                                                                               \
  extern "C" __global__ void PK_BOUNDS col2im1d_##SFX(pk::usize dst_el, pk::usize l_out, pk::usize l_in,          \
                                                      pk::usize c_out, pk::usize k_size, pk::usize stride,        \
                                                      const T* src, T* dst) {                                     \
    pk::col2im1d<T>(dst_el, l_out, l_in, c_out, k_size, stride, src, dst);                                        \
  }

PK_CONV(pk::f32, f32)
PK_CONV(pk::f64, f64)
PK_CONV(pk::u8, u8)
PK_CONV(pk::u32, u32)
PK_CONV(pk::f16, f16)
PK_CONV(pk::bf16, bf16)
