// Reductions: fast_{sum,min,max}_T and fast_arg{min,max}_T (u32 out),
// T in u8 u32 i64 f32 f64 f16 bf16.
//   (size_t src_numel, size_t el_to_sum_per_block, size_t num_dims,
//    const size_t* info /*[permuted dims, permuted strides], never null*/,
//    const T* src, T* dst /* uint32_t* for arg* */)
// One block per output element (grid dst_el); block = a power of two <= 1024.
// arg*: candle's reduce.cu's picks, so their results (ties and NaN included)
// match for any block size: thread t folds t, t+B, ...; a shared-memory tree
// halves B; they keep the first element then strict improvements, the tree
// takes the partner only when it is strictly better (arg_rows runs the same
// picks in groups where the block allows). Sums (accumulated in T) and min/max
// take rows in groups where the block allows (reduce_rows), else the same tree.
// Wave-size correct: the trees go through shared memory, the groups' shuffles
// stay inside 32-thread segments (structured.h).
#include "structured.h"
#include "pairs.h"

namespace pk {

// blockDim.x read again where it is used: kept from the kernel's start, it was spilled there, a
// local store by every warp of every idle block (STL=1, f16/bf16 max 2: python3
// bench/idle_prologue.py). H100, side by side: 4096x4096 sum f16 / bf16 65 -> 69% of copy, max
// 57 -> 68-69 (a ceiling of 78), f32 unchanged.
PK_DEV unsigned ntid() {
#if defined(PK_NVIDIA)
  unsigned r;
  asm volatile("mov.u32 %0, %%ntid.x;" : "=r"(r));
  return r;
#else
  return blockDim.x;
#endif
}

template <class T> struct RedBuf {
  typedef typename Num<T>::C C;
};

template <class T> PK_DEV usize red_offset(usize idx, usize nd, const usize* info, usize numel) {
  return numel <= 0xffffffffull ? strided_index<u32>((u32)idx, nd, info, info + nd)
                                : strided_index<u64>((u64)idx, nd, info, info + nd);
}

// Folds the elements start+tid, start+tid+B, ... (< stop) of this thread in
// that order: fold(idx, value). A contiguous (permuted) layout, the usual case,
// loads U elements before folding them: U loads in flight instead of one
// (H100, f32 4096x16384 sum: 22% -> 73% of copy bandwidth), same order; then
// U/2 at a time, so that a row of 4*B elements is not read one dependent load
// at a time (H200, f32 4096x4096 fast_sum: 58 us one at a time, 47 us with the
// last elements' loads issued together).
template <class T, class F>
PK_DEV void fold_thread(usize start, usize stop, usize nd, const usize* info, usize numel, const T* src, F&& fold) {
  constexpr int U = 8;
  const usize b = ntid();
  usize idx = start + threadIdx.x;
  if (is_contiguous(nd, info, info + nd)) {
    for (; idx + (U - 1) * b < stop; idx += U * b) {
      T x[U];
#pragma unroll
      for (int j = 0; j < U; ++j) x[j] = src[idx + j * b];
#pragma unroll
      for (int j = 0; j < U; ++j) fold(idx + j * b, x[j]);
    }
    for (; idx + (U / 2 - 1) * b < stop; idx += U / 2 * b) {
      T x[U / 2];
#pragma unroll
      for (int j = 0; j < U / 2; ++j) x[j] = src[idx + j * b];
#pragma unroll
      for (int j = 0; j < U / 2; ++j) fold(idx + j * b, x[j]);
    }
    for (; idx < stop; idx += b) fold(idx, src[idx]);
  } else {
    for (; idx < stop; idx += b) fold(idx, src[red_offset<T>(idx, nd, info, numel)]);
  }
}

// ------------------------------------------------------------ rows dealt to groups
// Candle launches one block per row, the row's length rounded up to a power of two and at most
// 1024 threads: a 4096-float row is 4 elements a thread, and two such blocks an SM wait on their
// loads, then on their tree (H200, fast_sum f32 4096x4096: 39-41% of copy, Candle's own 18%). Sums,
// minima and maxima, whose judges take any order (a sum within its bound; min/max exact in every
// order, +-0 equal), deal rows to groups instead: G threads a row, the fewest (a power of two, at
// least a segment, at most the block) that hold it at kRedBytes bytes a thread; a working block
// takes R = B/G consecutive rows, and the blocks in between return at once, before any memory read
// (as common.h's idle blocks do).
// A group folds its row (16-byte packs, four in flight, when the rows are contiguous and
// aligned; elements otherwise), then combines: a butterfly in each segment, then one over its
// segments' partials (structured.h's group_allreduce). % of copy at 4096x4096 f32 (R = 4), side by
// side: H200, against one block a row: fast_sum 39 -> 63, fast_min/max 34 -> 50 (Candle 18), with
// two packs in flight, the partials folded in turn by one thread, min/max through maxg; H100, from
// there: fast_sum 70 -> 77 (group_allreduce, red_groups' log2s) -> 80 (four packs), fast_min/max
// 60 -> 77 (and fmax in fast_minmax) -> 80, under a ceiling of 97 (the launch copy; Candle 21).
// Rows of 64 KB and more keep one block a row (G = B). argmin/argmax: arg_rows, four rows a block.
constexpr u32 kRedBytes = 64;
struct RedGroups {
  u32 lg_g;  // G = 2^lg_g threads a row
  u32 rows;  // R = B / G rows a working block; 0 where the launch keeps one block a row
};
// Every idle warp runs this: shifts and compares in 32 bits (el < 2^32 where the rows are dealt, as
// numel is; log2_ceil(el) is 32 for el = 0: then no group fits), R as B >> lg_g, no log2 of B,
// where a 64-bit division and clamps took an idle warp 38 instructions (now 28).
// H100, side by side (% of copy): f32 16384x1024 sum / max 50 -> 55-56, 4096x4096 f16 / bf16 sum
// 66-67 -> 68-70 / 66-67 -> 67.5, max 66-67 -> 69-70 / 66-67 -> 69-70; f32 4096x4096 and longer
// rows unchanged. Written with the three tests of the launch in one (no branch), its values stayed
// in vector registers that the working warps spilled (f32 4096x4096 80 -> 77.6).
template <class T> PK_DEV RedGroups red_groups(usize numel, usize el) {
  const u32 b = ntid();
  if ((b & (b - 1)) != 0 || b < 2 * kSeg || numel > 0xffffffffull) return RedGroups{0, 0};
  const int lg_need = (int)log2_ceil((u32)el) - (int)Log2<kRedBytes / sizeof(T)>::v;  // threads at kRedBytes
  const u32 lg_g = (u32)max((int)kLgSeg, lg_need), rows = b >> lg_g;
  return RedGroups{lg_g, rows >= 2 ? rows : 0u};
}

// The folds: init() the identity, op(a, b) two values (or partials) of the compute type C; word(a, b)
// two 32-bit words of two 16-bit elements, lane by lane, where kPairFold<T> (pairs.h).
template <class T> struct SumFold {  // accumulated in T
  typedef typename Num<T>::C C;
  static PK_DEV C init() { return (C)0; }
  static PK_DEV C op(C a, C b) { return add_in_t<T>(a, b); }
  static PK_DEV u32 word(u32 a, u32 b) { return Pair<T>::add(a, b); }
};
// A NaN is the result where Num<T>::nan_max (f16/bf16's __hmax_nan: also word's max.NaN, the only
// 16-bit fold), or is passed over (f32/f64's fmaxf).
template <class T, bool IS_MAX> struct ExtremeFold {
  typedef typename Num<T>::C C;
  static PK_DEV C init() { return IS_MAX ? Limits<T>::lowest() : Limits<T>::highest(); }
  static PK_DEV C op(C a, C b) {
    // floats passing NaN over: fmax, one instruction where maxg's tests and branches take five
    if constexpr (Num<T>::is_float && !Num<T>::nan_max) return IS_MAX ? fmax(a, b) : fmin(a, b);
    else return maxg<T, IS_MAX>(a, b);
  }
  static PK_DEV u32 word(u32 a, u32 b) { return IS_MAX ? Pair<T>::max_nan(a, b) : Pair<T>::min_nan(a, b); }
};

// What a thread's fold leaves and a group combines: a value of C, or, where kPairFold<T>, a word of
// two 16-bit partials, so that each level of the group's combine is one f16x2/bf16x2 instruction
// where a float takes maxg's tests or a rounding to T; value() folds the word's lanes last. H100,
// side by side, % of copy at 4096x4096 (each_pack's registers below included): max f16 / bf16
// 45.8 / 45.9 -> 57.0 / 57.1, sum f16 / bf16 63.6 / 55.3 -> 64.9 / 64.5.
template <class T, class R, bool WORD = kPairFold<T>> struct Partial {
  typedef typename R::C C;
  typedef C P;
  static PK_DEV P init() { return R::init(); }
  static PK_DEV P of(C c) { return c; }
  static PK_DEV P combine(P a, P b) { return R::op(a, b); }
  static PK_DEV C value(P p) { return p; }
};
template <class T, class R> struct Partial<T, R, true> {
  typedef typename R::C C;
  typedef u32 P;
  static PK_DEV P init() { return Pair<T>::pack(R::init(), R::init()); }
  static PK_DEV P of(C c) { return Pair<T>::pack(c, R::init()); }
  static PK_DEV P combine(P a, P b) { return R::word(a, b); }
  static PK_DEV C value(P p) { return R::op(Pair<T>::lo(p), Pair<T>::hi(p)); }
};

// Row `row` read in 16-byte packs: contiguous, aligned and whole (the source's elements fewer than
// 2^32: red_groups).
template <class T> PK_DEV bool packed_row(bool contig, u32 start, u32 stop, u32 el, const T* src) {
  return contig && pack_aligned<16 / sizeof(T)>(src) && (el * sizeof(T)) % 16 == 0 && stop - start == el;
}

// fn(p[k]) for the packs k = g, g+G, ... < npk, in that order: N loads in flight, then the rest one
// at a time. Written once for the word fold and the element fold; so compiled, the 16-bit maxima's
// registers came out otherwise (H100, side by side, nothing else changed: f16 / bf16 4096x4096
// 46 -> 54% of copy).
template <int N, class P, class F> PK_DEV void each_pack(const P* p, u32 npk, unsigned g, unsigned G, F&& fn) {
  u32 k = g;
  for (; k + (N - 1) * G < npk; k += N * G) {
    P x[N];
#pragma unroll
    for (int j = 0; j < N; ++j) x[j] = p[k + j * G];
#pragma unroll
    for (int j = 0; j < N; ++j) fn(x[j]);
  }
  for (; k < npk; k += G) fn(p[k]);
}

// The Partial of R over the elements of row `row` that thread g of its group of G holds: packs g,
// g+G, ... (four in flight), or elements g, g+G, ... where the row does not split into packs.
// 16-bit floats on NVIDIA: a word at a time (R::word, one f16x2/bf16x2 instruction for two elements),
// into one word per word of a pack, then those four into one. sm_90, the hot loop of 4 packs: sum
// f16 / bf16 239 / 319 -> 31 instructions, max 367 / 315 -> 25; H100, side by side, % of copy at
// 4096x4096: sum f16 54.4 -> 62.9, bf16 42.6 -> 55.8, max f16 39.1 -> 46.1, bf16 42.4 -> 45.4.
template <class T, class R>
PK_DEV typename Partial<T, R>::P group_fold(u32 row, u32 el, unsigned g, unsigned G, usize nd, const usize* info,
                                           u32 numel, const T* src) {
  typedef typename R::C C;
  typedef Partial<T, R> Part;
  constexpr int V = 16 / sizeof(T);
  constexpr int N = sizeof(T) == 1 ? 2 : 4;  // packs in flight (u8 at 2: its 4 spill on gfx900/906)
  const u32 start = row * el, stop = start + el < numel ? start + el : numel;
  const bool contig = is_contiguous(nd, info, info + nd);
  C acc = R::init();
  if (packed_row(contig, start, stop, el, src)) {
    if constexpr (kPairFold<T>) {
      u32 w[4] = {Part::init(), Part::init(), Part::init(), Part::init()};
      each_pack<N>(reinterpret_cast<const Pack<u32, 4>*>(src + start), el / V, g, G, [&](const Pack<u32, 4>& x) {
#pragma unroll
        for (int e = 0; e < 4; ++e) w[e] = R::word(w[e], x.v[e]);
      });
      return R::word(R::word(w[0], w[1]), R::word(w[2], w[3]));
    } else {
      each_pack<N>(reinterpret_cast<const Pack<T, V>*>(src + start), el / V, g, G, [&](const Pack<T, V>& x) {
#pragma unroll
        for (int e = 0; e < V; ++e) acc = R::op(acc, Num<T>::to_c(x.v[e]));
      });
    }
  } else {
    for (u32 idx = start + g; idx < stop; idx += G)
      acc = R::op(acc, Num<T>::to_c(src[contig ? idx : red_offset<T>(idx, nd, info, numel)]));
  }
  return Part::of(acc);
}

// The working blocks' rows (see red_groups) folded by R: returns false where the launch keeps one
// block a row.
template <class T, class R>
PK_DEV bool reduce_rows(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef Partial<T, R> Part;
  typedef typename Part::P P;
  __shared__ GroupScratch<P, 1, kMaxBlock> part;
  const RedGroups rg = red_groups<T>(numel, el);
  if (rg.rows == 0) return false;
  if ((blockIdx.x & (rg.rows - 1)) != 0) return true;  // idle: its rows are a working block's
  const unsigned tid = threadIdx.x, G = 1u << rg.lg_g, g = tid & (G - 1);
  const u32 row = blockIdx.x + (tid >> rg.lg_g);
  const bool live = row < gridDim.x;
  P acc[1] = {live ? group_fold<T, R>(row, (u32)el, g, G, nd, info, (u32)numel, src) : Part::init()};
  group_allreduce(acc, G, part, [](P a, P b) { return Part::combine(a, b); });
  if (live && g == 0) dst[row] = Num<T>::from_c(Part::value(acc[0]));
  return true;
}

// One output element per block (Candle's launch) of a fold R that takes its elements in any order.
// Rows in groups where the block allows (reduce_rows), else each thread's fold and the block's tree.
template <class T, class R>
PK_DEV void fast_fold(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  typedef typename R::C C;
  __shared__ C shr[kMaxBlock];
  if (reduce_rows<T, R>(numel, el, nd, info, src, dst)) return;  // first: the idle warps then keep and spill nothing
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  C acc = R::init();
  fold_thread(start, stop, nd, info, numel, src, [&](usize, T v) { acc = R::op(acc, Num<T>::to_c(v)); });
  shr[tid] = acc;
  block_tree(shr, tid, ntid(), [](C a, C b) { return R::op(a, b); });
  if (tid == 0) dst[blockIdx.x] = Num<T>::from_c(shr[0]);
}

template <class T>
PK_DEV void fast_sum(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  fast_fold<T, SumFold<T>>(numel, el, nd, info, src, dst);
}

template <class T, bool IS_MAX>
PK_DEV void fast_minmax(usize numel, usize el, usize nd, const usize* info, const T* src, T* dst) {
  fast_fold<T, ExtremeFold<T, IS_MAX>>(numel, el, nd, info, src, dst);
}

// ------------------------------------------------------------ argmin / argmax
// Candle's algorithm, whose result (ties, NaN) this keeps for every row: B "virtual" threads, v
// folding elements v, v+B, ... (the first taken, then strict improvements: a NaN never improves,
// and sticks where it came first), then a tree over v: level s (B/2 ... 1) takes v+s's pick where
// it is strictly better. Candle runs it as B threads and a shared-memory tree, a barrier a level.
// Where the block allows (B a power of two >= J segments), arg_rows runs it in groups of G = B/J
// real threads a row, J rows a working block, whatever the rows' length or layout (the blocks in
// between return before any memory read): thread g holds v = g, g+G, ..., g+(J-1)G (the elements g
// + mG of the row, m = 0, 1, ... going to v = g + (m%J)G), so the levels s >= G are in its
// registers, the levels G/2 ... 32 pair lane l of segment a with lane l of segment a + s/32 (one
// barrier: the group's first segment reads them back), and the last 5 levels are shuffles down
// inside that segment (seg_down). The same picks as Candle's, ties and NaN included, for every row.
// H100, side by side, f32 4096x4096: 31 -> 56% of copy (Candle 11.5); all 16 loads of a thread in
// flight at once in place of 4 then 8 then 4: no faster (55). ncu there: the schedulers issuing on
// 70% of cycles, so the idle blocks' instructions count: returning before `info` is read (an idle
// warp of a 2-d source ran some 90 instructions and two rounds of dependent loads of `info`; now 21
// instructions, no load: bench/idle_prologue.py), H100, side by side: f32 4096x4096 55 -> 65, f16 /
// bf16 31 / 33 -> 38 / 40, f32 16384x1024 21 -> 29; then for every row length rather than where
// red_groups deals rows to groups (an idle warp 21 -> 18 instructions), H100, side by side: f32
// 4096x4096 65 -> 67, f16 / bf16 38 / 40 -> 42 / 44, 16384x1024 29 -> 34, 2048x8192 49 -> 67 and
// 1024x16384 55 -> 78 (Candle's tree there before: one block a row). Rows a group can hold in
// registers at 8 rows a block take arg_held instead (below): the same picks, found otherwise.
template <class C> struct ArgPick {
  C v;
  u32 i;  // row index, 0xffffffff where v took no element
};
template <class C, bool IS_MAX> PK_DEV ArgPick<C> arg_better(ArgPick<C> a, ArgPick<C> b) {
  return (IS_MAX ? b.v > a.v : b.v < a.v) ? b : a;
}

// Candle's picks over row elements 0 ... n-1 (at(i): the element's value) by a group of G = B/J
// threads, g this thread's place: the pick that thread g = 0 holds at the end. Every thread of the
// block calls it (a barrier where the group spans several segments).
template <class T, bool IS_MAX, int J, class C = typename Num<T>::C, class At>
PK_DEV ArgPick<C> arg_group_picks(unsigned tid, unsigned g, unsigned G, u32 n, ArgPick<C>* part, At&& at) {
  typedef ArgPick<C> P;
  const unsigned B = G * J;
  const C none = IS_MAX ? Limits<T>::lowest() : Limits<T>::highest();
  auto load = [&](u32 i) -> C { return i < n ? at(i) : none; };
  P st[J];
#pragma unroll
  for (int j = 0; j < J; ++j) {  // each v's first element, taken whatever it is
    const u32 i = g + j * G;
    st[j] = P{load(i), i < n ? i : 0xffffffffu};
  }
  // then v's next elements, 2J loads in flight, in v's order (past the row, load's `none` is never
  // strictly better: no test needed)
  u32 i0 = g + B;
  for (; i0 + B < n; i0 += 2 * B) {
    C x[2 * J];
#pragma unroll
    for (int j = 0; j < 2 * J; ++j) x[j] = load(i0 + (j / J) * B + (j % J) * G);
#pragma unroll
    for (int j = 0; j < 2 * J; ++j)
      st[j % J] = arg_better<C, IS_MAX>(st[j % J], P{x[j], i0 + (j / J) * B + (j % J) * G});
  }
  if (i0 < n) {
    C x[J];
#pragma unroll
    for (int j = 0; j < J; ++j) x[j] = load(i0 + j * G);
#pragma unroll
    for (int j = 0; j < J; ++j) st[j] = arg_better<C, IS_MAX>(st[j], P{x[j], i0 + j * G});
  }
  // levels B/2 and B/4 = G: v with v + 2G, then with v + G (written out: a loop over the levels
  // left st in scratch memory on AMD)
  P p = arg_better<C, IS_MAX>(arg_better<C, IS_MAX>(st[0], st[2]), arg_better<C, IS_MAX>(st[1], st[3]));
  const unsigned nseg = G / kSeg;
  if (nseg > 1) {  // levels G/2 ... 32: lane l's tree over the group's segments
    part[tid] = p;
    __syncthreads();
    if (g < kSeg) {  // the top level from shared memory, the others in registers
      P q[kMaxBlock / J / kSeg / 2];
      const unsigned h = nseg / 2;
#pragma unroll
      for (unsigned a = 0; a < kMaxBlock / J / kSeg / 2; ++a)
        if (a < h) q[a] = arg_better<C, IS_MAX>(part[tid + a * kSeg], part[tid + (a + h) * kSeg]);
#pragma unroll
      for (unsigned s = kMaxBlock / J / kSeg / 4; s > 0; s /= 2)
#pragma unroll
        for (unsigned a = 0; a < s; ++a)
          if (a + s < h) q[a] = arg_better<C, IS_MAX>(q[a], q[a + s]);
      p = q[0];
    }
  }
  for (unsigned s = kSeg / 2; s > 0; s /= 2) {  // levels 16 ... 1
    p = arg_better<C, IS_MAX>(p, P{seg_down(p.v, s), seg_down(p.i, s)});
  }
  return p;
}

// Element i of a strided source, for arg_rows' (rare) strided rows: out of line on NVIDIA, where the
// index's loop unrolled into each of a thread's 16 loads put a spill into the contiguous rows' loop;
// inline on AMD, where the call spilled f64/i64's picks on gfx900/906.
#if defined(PK_NVIDIA)
#define PK_STRIDED_AT __attribute__((noinline)) __device__
#else
#define PK_STRIDED_AT PK_DEV
#endif
template <class T>
PK_STRIDED_AT typename Num<T>::C strided_at(usize i, usize nd, const usize* info, usize numel, const T* src) {
  return Num<T>::to_c(src[red_offset<T>(i, nd, info, numel)]);
}

// A row a group holds in registers (at most kHeld<T> 16-byte packs a thread): the row's extreme M
// first, then its first place in Candle's order. Candle's tree (above) leaves, among the elements
// equal to M, the one whose v = i mod B comes first with v's bits reversed (a level s keeps v's pick
// over v+s's on a tie: the last level, s = 1, prefers even v, the one before v = 0 mod 4, ...), and
// of v's elements the first (a v past a short row's end is always the right one of its pairs, so it
// takes nothing). So a thread folds its elements to an extreme (f16x2/bf16x2 words on NVIDIA, a NaN
// passed over, as the tree passes over a NaN that is not some v's first), the group combines those,
// and a thread holding an element equal to M (rare: a packed compare says which) puts the smallest
// tree_key of them in the row's slot. Where a NaN leads some v (i < B: taken first, it sticks and
// blocks what is right of it) the block votes, and then every row of it takes the exact picks.
// Returns false then (the same on every thread of the block), else true with the pick's row index
// in i. tests/test_arg_picks.py checks this order against the tree's emulation, and the kernels.
template <class T> constexpr int kHeld = sizeof(T) == 1 ? 2 : 4;  // u8 at 4 spilled on gfx900/906
constexpr u32 rev32(u32 x) {  // __brev, folded where x is a constant
  u32 r = 0;
  for (int b = 0; b < 32; ++b) r |= ((x >> b) & 1u) << (31 - b);
  return r;
}
// (the key of element e of a pack at i: tree_key(i) | rev32(e), B a multiple of the pack's V)
PK_DEV u32 tree_key(u32 i, u32 lg_b) { return __brev(i & ((1u << lg_b) - 1)) | (i >> lg_b); }
PK_DEV u32 tree_index(u32 key, u32 lg_b) { return (key & (0xffffffffu >> lg_b)) << lg_b | (__brev(key) & ((1u << lg_b) - 1)); }
template <class T> PK_DEV bool held_rows(bool contig, usize numel, u32 el, unsigned G, const T* src) {
  constexpr u32 V = 16 / sizeof(T);
  return contig && pack_aligned<V>(src) && el % V == 0 && el / V <= kHeld<T> * G && numel == (usize)el * gridDim.x;
}
template <class T, bool IS_MAX>
PK_DEV bool arg_held(u32 start, u32 npk, unsigned g, unsigned G, unsigned r, u32 lg_b, const T* src, u32& i) {
  typedef typename Num<T>::C C;
  constexpr u32 V = 16 / sizeof(T);
  __shared__ GroupScratch<C, 1, kMaxBlock> sh;
  __shared__ u32 first[kMaxBlock / kSeg];
  const u32 head = (1u << lg_b) / V;  // packs k < head hold the elements i < B
  const C none = IS_MAX ? Limits<T>::lowest() : Limits<T>::highest();
  auto better = [](C a, C b) -> C {
    if constexpr (Num<T>::is_float) return IS_MAX ? fmax(a, b) : fmin(a, b);
    else return (IS_MAX ? b > a : b < a) ? b : a;
  };
  if (g == 0) first[r] = 0xffffffffu;
  Pack<T, V> x[kHeld<T>];
#pragma unroll
  for (int j = 0; j < kHeld<T>; ++j)
    if (g + j * G < npk) x[j] = reinterpret_cast<const Pack<T, V>*>(src + start)[g + j * G];
  C m[1] = {none};
  bool nan_head = false;
  if constexpr (kPairFold<T>) {
    u32 w = Pair<T>::pack(none, none), nw = 0;  // nw: the head's words under max.NaN
#pragma unroll
    for (int j = 0; j < kHeld<T>; ++j)
      if (g + j * G < npk) {
        const Pack<u32, 4> xw = reinterpret_cast<const Pack<u32, 4>&>(x[j]);
        const bool in_head = g + j * G < head;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          w = IS_MAX ? Pair<T>::max(w, xw.v[e]) : Pair<T>::min(w, xw.v[e]);
          if (in_head) nw = Pair<T>::max_nan(nw, xw.v[e]);
        }
      }
    nan_head = Pair<T>::any_nan(nw);
    m[0] = better(Pair<T>::lo(w), Pair<T>::hi(w));
  } else {
#pragma unroll
    for (int j = 0; j < kHeld<T>; ++j)
      if (g + j * G < npk)
#pragma unroll
        for (int e = 0; e < (int)V; ++e) {
          const C c = Num<T>::to_c(x[j].v[e]);
          m[0] = better(m[0], c);
          if (Num<T>::is_float && g + j * G < head) nan_head |= c != c;
        }
  }
  group_allreduce(m, G, sh, better);
  if (G == kSeg) __syncthreads();  // first[] set before any thread of the row takes its minimum
  const C M = m[0];
  bool hit = false;
  if constexpr (kPairFold<T>) {
    const u32 mw = Pair<T>::pack(M, M);
#pragma unroll
    for (int j = 0; j < kHeld<T>; ++j)
      if (g + j * G < npk) {
        const Pack<u32, 4> xw = reinterpret_cast<const Pack<u32, 4>&>(x[j]);
#pragma unroll
        for (int e = 0; e < 4; ++e) hit |= Pair<T>::any_eq(xw.v[e], mw);
      }
  } else {
#pragma unroll
    for (int j = 0; j < kHeld<T>; ++j)
      if (g + j * G < npk)
#pragma unroll
        for (int e = 0; e < (int)V; ++e) hit |= Num<T>::to_c(x[j].v[e]) == M;
  }
  if (hit) {  // the smallest key of this thread's elements equal to M
    u32 key = 0xffffffffu;
#pragma unroll
    for (int j = 0; j < kHeld<T>; ++j)
      if (g + j * G < npk)
#pragma unroll
        for (int e = 0; e < (int)V; ++e)
          if (Num<T>::to_c(x[j].v[e]) == M) key = min(key, tree_key((g + j * G) * V, lg_b) | rev32((u32)e));
    atomicMin(&first[r], key);
  }
  if (__syncthreads_or(npk > 0 && nan_head)) return false;  // npk = 0: a row past the grid
  i = tree_index(first[r], lg_b);
  return true;
}

// Candle's picks for the J rows row0 ... row0 + J - 1 of a working block, a group of G = B/J a row
// (arg_group_picks).
template <class T, bool IS_MAX>
PK_DEV void arg_rows_exact(u32 row0, usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  typedef ArgPick<typename Num<T>::C> P;
  constexpr int J = 4;
  static_assert(J == 4, "the register levels are written out for 4");
  __shared__ P part[kMaxBlock];
  const unsigned tid = threadIdx.x, G = blockDim.x / J, g = tid & (G - 1);
  const u32 row = row0 + tid / G;
  const bool live = row < gridDim.x;
  const u32 start = row * (u32)el, n = live ? (start + (u32)el < numel ? (u32)el : (u32)numel - start) : 0;
  auto at = [&](u32 i) { return Num<T>::to_c(src[start + i]); };
  auto strided = [&](u32 i) { return strided_at<T>(start + i, nd, info, numel, src); };
  const P p = is_contiguous(nd, info, info + nd) ? arg_group_picks<T, IS_MAX, J>(tid, g, G, n, part, at)
                                                 : arg_group_picks<T, IS_MAX, J>(tid, g, G, n, part, strided);
  if (live && g == 0) dst[row] = p.i == 0xffffffffu ? p.i : (u32)((usize)(start + p.i) % info[nd - 1]);
}

// The exact picks for the 8 rows of an arg_rows8 block, J at a time.
template <class T, bool IS_MAX>
PK_DEV void arg_rows8_exact(usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  arg_rows_exact<T, IS_MAX>(blockIdx.x, numel, el, nd, info, src, dst);
  __syncthreads();  // the picks' shared memory, read by the first four rows
  arg_rows_exact<T, IS_MAX>(blockIdx.x + 4, numel, el, nd, info, src, dst);
}

// 8 rows a working block where each row fits in kHeld<T> packs a thread of its group of B/8
// (16-bit rows up to 4096 at B = 1024: 64 bytes a thread where 4 rows a block left 32), by
// arg_held; the exact picks where it declines. H100, side by side: argmax 4096x4096 f16 / bf16
// 40.7 / 43.3 -> 49.7 / 47.9% of copy, f32 16384x1024 32.8 -> 36.1, the 4-row rows unchanged
// (f32 4096x4096 67.7 -> 67.5). Measured, not kept: arg_held at 4 rows a block as well (f32
// 4096x4096 68 -> 63, 16384x1024 34 -> 26; f16 +3 to +5), the 8 rows' exact picks as a loop over
// the 4-row ones shared with arg_rows (its registers moved: f32 2048x8192 67 -> 53, 1024x16384
// 78 -> 68), and out of line on NVIDIA (a spill reload in the 4-row picks' loop).
template <class T> PK_DEV bool arg_fits8(u32 b, usize el) {
  return b >= 8 * kSeg && el <= (usize)b * (16 * kHeld<T> / 8 / sizeof(T));
}
template <class T, bool IS_MAX>
PK_DEV void arg_rows8(usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  const unsigned b = blockDim.x, G = b / 8, g = threadIdx.x & (G - 1), r = threadIdx.x / G;
  const u32 row = blockIdx.x + r, start = row * (u32)el;
  const u32 n = row < gridDim.x ? (start + (u32)el < numel ? (u32)el : (u32)numel - start) : 0;
  u32 i;
  if (held_rows(is_contiguous(nd, info, info + nd), numel, (u32)el, G, src) &&
      arg_held<T, IS_MAX>(start, n / (16 / sizeof(T)), g, G, r, log2_pow2(b), src, i)) {
    if (row < gridDim.x && g == 0) dst[row] = (u32)((usize)(start + i) % info[nd - 1]);
  } else {
    arg_rows8_exact<T, IS_MAX>(numel, el, nd, info, src, dst);
  }
}

template <class T, bool IS_MAX>
PK_DEV bool arg_rows(usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  constexpr int J = 4;  // rows a working block (8 where arg_rows8 takes them)
  const unsigned b = blockDim.x;  // G = B/J whole segments; row indices in 32 bits
  if ((b & (b - 1)) != 0 || b < J * kSeg || numel > 0xffffffffull) return false;
  // idle: its rows are a working block's; it returns before any memory read, as reduce_rows' do
  // (three blocks of four at the first test, the fourth of eight at the second)
  if ((blockIdx.x & (J - 1)) != 0) return true;
  if (arg_fits8<T>(b, el)) {
    if ((blockIdx.x & J) == 0) arg_rows8<T, IS_MAX>(numel, el, nd, info, src, dst);
    return true;
  }
  arg_rows_exact<T, IS_MAX>(blockIdx.x, numel, el, nd, info, src, dst);
  return true;
}

template <class T, bool IS_MAX>
PK_DEV void fast_arg(usize numel, usize el, usize nd, const usize* info, const T* src, u32* dst) {
  typedef typename Num<T>::C C;
  __shared__ C shr[kMaxBlock];
  __shared__ u32 shr_idx[kMaxBlock];
  if (arg_rows<T, IS_MAX>(numel, el, nd, info, src, dst)) return;
  const unsigned tid = threadIdx.x;
  const usize start = (usize)blockIdx.x * el;
  const usize stop = start + el < numel ? start + el : numel;
  const usize last = info[nd - 1];
  C best = IS_MAX ? Limits<T>::lowest() : Limits<T>::highest();
  u32 best_idx = 0xffffffffu;
  bool not_set = true;
  fold_thread(start, stop, nd, info, numel, src, [&](usize idx, T x) {
    const C v = Num<T>::to_c(x);
    if (not_set || (IS_MAX ? v > best : v < best)) {  // NaN never improves, and sticks
      best = v;
      best_idx = (u32)(idx % last);
      not_set = false;
    }
  });
  shr[tid] = best;
  shr_idx[tid] = best_idx;
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    __syncthreads();
    if (tid < s && (IS_MAX ? shr[tid + s] > shr[tid] : shr[tid + s] < shr[tid])) {
      shr[tid] = shr[tid + s];
      shr_idx[tid] = shr_idx[tid + s];
    }
  }
  __syncthreads();
  if (tid == 0) dst[blockIdx.x] = shr_idx[0];
}

}  // namespace pk

// PK_BOUNDS (<= 32 registers on NVIDIA, two resident 1024-thread blocks per SM):
// one block loads while the other runs its tree (H100, f32 4096x16384 sum: 74%
// -> 94% of copy bandwidth; the 32-byte spill it costs sits outside the loop).
#define PK_REDUCE_ARGS pk::usize src_numel, pk::usize el, pk::usize num_dims, const pk::usize* info
#define PK_REDUCE_ALL(T, SFX)                                                                          \
  extern "C" __global__ PK_BOUNDS void fast_sum_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_sum<T>(src_numel, el, num_dims, info, src, dst);                                          \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_min_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_minmax<T, false>(src_numel, el, num_dims, info, src, dst);                                \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_max_##SFX(PK_REDUCE_ARGS, const T* src, T* dst) {          \
    pk::fast_minmax<T, true>(src_numel, el, num_dims, info, src, dst);                                 \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_argmin_##SFX(PK_REDUCE_ARGS, const T* src, pk::u32* dst) { \
    pk::fast_arg<T, false>(src_numel, el, num_dims, info, src, dst);                                   \
  }                                                                                                    \
  extern "C" __global__ PK_BOUNDS void fast_argmax_##SFX(PK_REDUCE_ARGS, const T* src, pk::u32* dst) { \
    pk::fast_arg<T, true>(src_numel, el, num_dims, info, src, dst);                                    \
  }

PK_REDUCE_ALL(pk::u8, u8)
PK_REDUCE_ALL(pk::u32, u32)
PK_REDUCE_ALL(pk::i64, i64)
PK_REDUCE_ALL(pk::f32, f32)
PK_REDUCE_ALL(pk::f64, f64)
PK_REDUCE_ALL(pk::f16, f16)
PK_REDUCE_ALL(pk::bf16, bf16)
