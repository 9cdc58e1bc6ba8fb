#!/usr/bin/env bash
# Print the C/C++ flags that ggml must be built with on this machine (often none).
#
# ggml builds with -march=native, which turns on its AMX kernels wherever the CPU lists
# AMX. Some virtual machines list AMX but trap its instructions: llama.cpp then dies
# with SIGILL on its first matrix multiply. This compiles and runs a few AMX tile
# instructions; where they trap, the build must leave AMX out (explicit -mno-* flags win
# over -march=native in GCC and Clang whatever their order).
set -euo pipefail

if ! grep -qw amx_tile /proc/cpuinfo 2>/dev/null; then
    exit 0  # no AMX listed: -march=native leaves it out by itself
fi
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
PROBE="$(mktemp -d)"
trap 'rm -rf "$PROBE"' EXIT
cat >"$PROBE/probe.c" <<'C'
#include <immintrin.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
struct tile_config {
    unsigned char palette, start_row, reserved[14];
    unsigned short colsb[16];
    unsigned char rows[16];
};
int main(void) {
    if (syscall(SYS_arch_prctl, 0x1023, 18)) return 1; /* ARCH_REQ_XCOMP_PERM, XTILEDATA */
    struct tile_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    cfg.colsb[0] = 64;
    cfg.rows[0] = 16;
    _tile_loadconfig(&cfg);
    _tile_zero(0);
    _tile_release();
    return 0;
}
C
if ! "${CC:-cc}" -O1 -mamx-tile "$PROBE/probe.c" -o "$PROBE/probe" 2>/dev/null; then
    echo "$NO_AMX"  # a compiler without AMX support cannot test it: leave it out
elif ! { "$PROBE/probe"; } 2>/dev/null; then  # braces: the trap report goes too
    echo "$NO_AMX"
fi
