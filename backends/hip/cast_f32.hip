// The cast family (cast.h): the pairs of source type f32.
#include "cast.h"

PK_CAST(pk::f32, f32, pk::bf16, bf16)
PK_CAST(pk::f32, f32, pk::f16, f16)
PK_CAST(pk::f32, f32, pk::f32, f32)
PK_CAST(pk::f32, f32, pk::f64, f64)
PK_CAST(pk::f32, f32, pk::f8e4m3, f8_e4m3)
PK_CAST(pk::f32, f32, pk::i64, i64)
PK_CAST(pk::f32, f32, pk::u32, u32)
PK_CAST(pk::f32, f32, pk::u8, u8)
