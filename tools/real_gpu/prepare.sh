#!/bin/sh
# Fill the ignored folders that `python3 -m tools.real_gpu.session` needs on a GPU machine with no network:
#   .whl/  wheels for Python 3.12 x86-64 of what the machine's image lacks (papermill, nbclient,
#          ipykernel and their needs; toml for Neutrino), minus packages the image already has
#   .gpu/  the Neutrino source tarballs (../shared does not travel) and CUDA 12.1's cuda.h, which
#          the artifact's hook driver compiles against when the machine's CUDA 13 header fails
# Run from the repository root where pip can reach a package index.
set -eu
NEUTRINO_SRC=${NEUTRINO_SRC:-../shared/neutrino-src}
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo /.gpu/ >> .git/info/exclude
mkdir -p .whl .gpu/neutrino-src .gpu/cuda12/include
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  --platform manylinux_2_5_x86_64 -d .whl \
  "papermill>=2.5,<3" "nbclient>=0.9,<1" "ipykernel>=6.25,<8" toml "nvidia-cuda-runtime-cu12==12.1.105"
# the header only: the runtime package itself would shadow the image's nvidia.* packages
python3 - <<'PY'
import glob, zipfile
whl = glob.glob(".whl/nvidia_cuda_runtime_cu12-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    open(".gpu/cuda12/include/cuda.h", "wb").write(z.read("nvidia/cuda_runtime/include/cuda.h"))
PY
# already in the GPU image (/work/.library/device/KINDS.md): keep its versions
for n in nvidia_cuda_runtime_cu12 certifi charset_normalizer click idna packaging psutil pygments \
         python_dateutil pyyaml PyYAML requests tqdm typing_extensions urllib3 attrs tzdata; do
  rm -f .whl/"$n"-*.whl
done
cp "$NEUTRINO_SRC"/neutrino-*.tar.gz .gpu/neutrino-src/
du -sh .whl .gpu
