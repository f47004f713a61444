#!/bin/sh
# ptxas for Triton (TRITON_PTXAS_PATH) that also keeps the PTX in what it writes.
# Triton >= 3 loads a bare cubin, and Neutrino probes PTX ("PTX Not Found in CUBIN" otherwise). This
# runs the real ptxas, then wraps its cubin and the PTX it was made from into one fatbin (the form
# nvcc -gencode ...,code=[sm_XX,compute_XX] gives), which cuModuleLoadData takes as it takes a cubin.
# The PTX copy says `.target sm_90` instead of `sm_90a` when it uses no sm_90a-only instruction:
# Neutrino re-assembles it with ptxas -arch=sm_90. Any step that fails leaves the plain cubin.
real=${REAL_PTXAS:-/usr/local/cuda/bin/ptxas}
"$real" "$@" || exit $?
out= ; ptx= ; arch= ; prev=
for a in "$@"; do
  case "$prev" in -o) out=$a ;; --gpu-name|-arch) arch=$a ;; esac
  case "$a" in --gpu-name=*) arch=${a#--gpu-name=} ;; -arch=*) arch=${a#-arch=} ;; *.ptx) ptx=$a ;; esac
  prev=$a
done
[ -n "$out" ] && [ -n "$ptx" ] && [ -n "$arch" ] && [ -f "$out" ] || exit 0
sm=${arch#sm_}
copy="$out.with.ptx"
if grep -qE 'wgmma|setmaxnreg|tensormap|cp\.async\.bulk|elect\.sync|mbarrier\.try_wait\.parity' "$ptx"; then
  cp "$ptx" "$copy.ptx"
else
  sed 's/^\.target sm_90a/.target sm_90/' "$ptx" > "$copy.ptx"
fi
psm=$(sed -n 's/^\.target sm_\([0-9a-z]*\).*/\1/p' "$copy.ptx" | head -1)
fatbinary -64 --create="$copy" "--image3=kind=elf,sm=$sm,file=$out" "--image3=kind=ptx,sm=${psm:-$sm},file=$copy.ptx" \
  >/dev/null 2>&1 && mv "$copy" "$out"
rm -f "$copy" "$copy.ptx"
exit 0
