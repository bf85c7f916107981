// NVRTC has no libc: device math functions are built in; this header only has to exist.
#pragma once
