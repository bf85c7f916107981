// The unary family (unary.h) for one dtype.
#include "unary.h"

PK_UNARY_ALL(pk::f16, f16)
