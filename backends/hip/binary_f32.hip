// The binary family (binary.h) for one dtype.
#include "binary.h"

PK_BINARY_ALL(pk::f32, f32)
