// The binary family (binary.h) for one dtype.
#include "binary.h"

PK_BINARY_ALL(pk::f64, f64)
