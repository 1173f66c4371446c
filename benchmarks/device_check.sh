#!/bin/bash
# The device machine's checks in one call (a session lent a GPU machine: one H100/H200
# and 16 CPU cores, no network; docs/scaling.md and docs/benchmarks.md hold what it
# printed on 2026-11-27: the steps cudatests, fit100k and variants took 6.5 minutes with
# the ~500 device tests cut at 120 s; they need ~200 s). Run from the repository root there:
#
#     bash benchmarks/device_check.sh
#
# It needs array-api-compat and array-api-strict as wheels in .whl/ (pip download
# --no-deps --only-binary=:all: --python-version 3.12 array-api-compat
# array-api-strict -d .whl, here), builds the compiled kernels there, then runs: the
# CUDA tests (PyTorch on CUDA, CuPy), the 100,000-row CPU fit under 3 GB on the 16
# cores, the compiled kernels' variants, each device product path, and the GPU fits.
# Each step has its own time limit and writes its output under $OUT (or /tmp/out).
# STEPS="cudatests gpu" runs only those steps; EXTRA="python3 benchmarks/..." runs one
# more command at the end (a helper's device figure), e.g.
#
#     STEPS="cudatests gpu" EXTRA="python3 benchmarks/bench_robust.py --device cuda" \
#         bash benchmarks/device_check.sh
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
export PYTHONUNBUFFERED=1
T0=$(date +%s); el() { echo "[t=$(( $(date +%s) - T0 ))s] $*"; }
# STEPS picks the steps (default: the first five; threads, spans and refit only when
# named); EXTRA is one more command, run last
want() { [[ " ${STEPS:-cudatests fit100k variants product gpu} " == *" $1 "* ]]; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# --force: objects from an earlier build keep its flags (before setup.py's -O3, the
# kernels were built at the -O2 Ubuntu's Python hands extensions)
python3 setup.py build_ext --inplace -q --force > $OUT/build.txt 2>&1; tail -2 $OUT/build.txt
export PYTHONPATH=/tmp/site:$PWD/src
git log --oneline -1 2>/dev/null; python3 -c "import triton,torch;print('triton',triton.__version__,'torch',torch.__version__)"
# what kpca sees there: variants, BLAS, cores, memory, and the cache its cost model counts
python3 -c "from kpca._info import format_info, system_info; print(format_info(system_info()))"
if want cudatests; then
el cudatests
# every test file that reads the device switches (the array-API suite, the fused
# kernels, the device estimators and pre-images)
KPCA_TEST_TORCH_DEVICE=cuda KPCA_TEST_CUPY=1 timeout ${CUDA_TESTS_S:-240} python3 -m pytest -q -p no:cacheprovider $(grep -rlE "KPCA_TEST_TORCH_DEVICE|KPCA_TEST_CUPY" tests | sort) > $OUT/cudatests.txt 2>&1; echo "cudatests rc $?"; grep -E "passed|failed|FAILED|Error" $OUT/cudatests.txt | tail -15
fi
if want fit100k; then
el fit100k
timeout 60 python3 benchmarks/bench_fit.py --n --kpca-only 100000 100000 --memory-limit 3GB --warm 4 > $OUT/fit100k.txt 2>&1; echo "fit rc $?"; grep -E "^\| 100000|roofline prim|^# machine" $OUT/fit100k.txt
fi
if want variants; then
el variants
timeout ${VARIANTS_S:-170} python3 benchmarks/bench_variants.py --rounds 2 --repeats 2 --warm 1 --emulate-avx2-cpu --emulate-old-cpu > $OUT/variants.txt 2>&1; echo "variants rc $?"; grep -vE "^\s*$" $OUT/variants.txt | tail -40
fi
if want product; then
el product
timeout 110 python3 benchmarks/bench_device_product.py --device cuda --n 100000 1000000 --fit 100000 1000000 --budget 92 > $OUT/product.txt 2>&1; echo "product rc $?"; cat $OUT/product.txt | tail -40
fi
if want gpu; then
el gpu
timeout ${GPU_S:-150} python3 benchmarks/bench_gpu.py --device cuda --n 100000 1000000 --repeats 3 --ref-max 0 --check-max ${CHECK_MAX:-1000000} > $OUT/gpu.txt 2>&1; echo "gpu rc $?"; cat $OUT/gpu.txt
fi
# not run by default: the thread-scaling table against sgemm (~110 s), where a 16-thread
# fit's time goes (~20 s), the solver 'auto' picks for bench_incremental's refits (~40 s)
if want threads; then
el threads
timeout ${THREADS_S:-150} python3 benchmarks/bench_threads.py --repeats 3 > $OUT/threads.txt 2>&1; echo "threads rc $?"; tail -9 $OUT/threads.txt
fi
if want spans; then
el spans
timeout 60 python3 benchmarks/bench_spans.py --n 40000 --n-jobs 16 1 16 > $OUT/spans.txt 2>&1; echo "spans rc $?"; grep -E "###|run_blocks|kernel pass|nystrom" $OUT/spans.txt
fi
if want refit; then
el refit
timeout 60 python3 benchmarks/bench_refit_solvers.py > $OUT/refit.txt 2>&1; echo "refit rc $?"; cat $OUT/refit.txt
fi
if [ -n "$EXTRA" ]; then el extra; bash -c "$EXTRA"; fi
el done
