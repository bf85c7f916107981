// The unary family (unary.h) for one dtype.
#include "unary.h"

PK_UNARY_ALL(pk::f32, f32)
