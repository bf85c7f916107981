"""The subject's sources: scanning a kernel suite (C declarations, ELF symbols), the compile cache, the HIP API list, amd-static checks, `--since`, coverage, golden data and a port's build line."""
