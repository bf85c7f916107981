// The binary family (binary.h) for one dtype.
#include "binary.h"

PK_BINARY_ALL(pk::bf16, bf16)
