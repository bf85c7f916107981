// ucopy_T: strided -> dense copy through the unary driver (unary.h).
#include "unary.h"

PK_UCOPY(ucopy_u8, pk::u8)
PK_UCOPY(ucopy_u32, pk::u32)
PK_UCOPY(ucopy_i64, pk::i64)
PK_UCOPY(ucopy_f16, pk::f16)
PK_UCOPY(ucopy_bf16, pk::bf16)
PK_UCOPY(ucopy_f32, pk::f32)
PK_UCOPY(ucopy_f64, pk::f64)
PK_UCOPY(ucopy_f8_e4m3, pk::f8e4m3)
