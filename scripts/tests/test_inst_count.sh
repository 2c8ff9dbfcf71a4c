#!/bin/sh
# test_inst_count.sh FUSER -- scripts/inst_count.sh on a real kernel (nvcc; SASS where cuobjdump is
# installed, else PTX: a pass loop's count per element, the kernel's total, INST_COUNT_KEEP's
# files), then on made-up SASS listings from a stand-in cuobjdump: offsets of 4 and 5 hex
# digits (code past 64 KB), one loop of 4 instructions with one MUFU, its branch's target a
# label (.L_x_0) and, as CUDA 13's cuobjdump writes it, an address (each instruction's
# encoding beside it and on the next line).
set -u
fuser=${1:?usage: test_inst_count.sh FUSER}
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$1"; then :; else echo "FAIL: $2"; fail=1; fi; }

INST_COUNT_KEEP=$work/keep "$root/scripts/inst_count.sh" "$fuser" "$root/fuser/tests/data/softcap_cross_entropy.fusion" \
  --set DT=bf16 >"$work/real.txt" 2>&1
cat "$work/real.txt"
total=$(sed -n 's/.*kernel total: \([0-9]*\) instructions.*/\1/p' "$work/real.txt" | head -n 1)
check '[ "${total:-0}" -gt 100 ]' "the soft-capped cross entropy's kernel has more than 100 instructions (got '${total:-}')"
check 'grep -q "per element" "$work/real.txt"' "a pass loop's count per element is printed"
check '[ -s "$work/keep/k0.cu" ] && { [ -s "$work/keep/k0.sass" ] || [ -s "$work/keep/k0.ptx" ]; }' \
  "INST_COUNT_KEEP holds the kernel's source and listing"

mkdir -p "$work/bin"
cat >"$work/bin/cuobjdump" <<'SASS'
#!/bin/sh
cat <<'LIST'
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
        /*0010*/                   MUFU.EX2 R2, R2 ;
        /*fff0*/                   FADD R3, R3, R2 ;
        /*10000*/                  ISETP.NE.AND P0, PT, R3, RZ, PT ;
        /*10010*/              @P0 BRA `(.L_x_0) ;
        /*10020*/                  EXIT ;
LIST
SASS
chmod +x "$work/bin/cuobjdump"
PATH=$work/bin:$PATH "$root/scripts/inst_count.sh" "$fuser" "$root/fuser/tests/data/softcap_cross_entropy.fusion" \
  --set DT=bf16 >"$work/made.txt" 2>&1
cat "$work/made.txt"
check 'grep -q "kernel total: 6 instructions" "$work/made.txt"' "every instruction of the listing, 5-digit offsets too"
check 'grep -q "loop \[2, 5\]: 4 instructions, 1 MUFU" "$work/made.txt"' "the loop from .L_x_0 to its branch"

cat >"$work/bin/cuobjdump" <<'SASS'
#!/bin/sh
cat <<'LIST'
        /*0000*/                   MOV R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0010*/                   MUFU.EX2 R2, R2 ;                      /* 0x0000000200027308 */
                                                                          /* 0x000e240000000800 */
        /*fff0*/                   FADD R3, R3, R2 ;                      /* 0x0000000203037221 */
                                                                          /* 0x001fc80000000000 */
        /*10000*/                  ISETP.NE.AND P0, PT, R3, RZ, PT ;      /* 0x000000ff0300720c */
                                                                          /* 0x000fda0003f05270 */
        /*10010*/              @P0 BRA 0x10 ;                             /* 0xfffffffc00fc0947 */
                                                                          /* 0x000fea000383ffff */
        /*10020*/                  EXIT ;                                 /* 0x000000000000794d */
                                                                          /* 0x000fea0003800000 */
LIST
SASS
PATH=$work/bin:$PATH "$root/scripts/inst_count.sh" "$fuser" "$root/fuser/tests/data/softcap_cross_entropy.fusion" \
  --set DT=bf16 >"$work/addr.txt" 2>&1
cat "$work/addr.txt"
check 'grep -q "kernel total: 6 instructions" "$work/addr.txt"' "every instruction of the CUDA 13 listing"
check 'grep -q "loop \[2, 5\]: 4 instructions, 1 MUFU" "$work/addr.txt"' "the loop from address 0x10 to its branch"
[ "$fail" = 0 ] && echo "test_inst_count: ok"
exit "$fail"
