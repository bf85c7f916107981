// The unary family (unary.h) for one dtype.
#include "unary.h"

PK_UNARY_ALL(pk::f8e4m3, fp8_e4m3)
