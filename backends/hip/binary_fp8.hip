// The binary family (binary.h) for one dtype.
#include "binary.h"

PK_BINARY_ALL(pk::f8e4m3, f8_e4m3)
