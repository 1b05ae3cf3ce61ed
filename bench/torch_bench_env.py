"""What the PyTorch benchmark scripts (bench_pytorch.py, bench_pytorch_training.py) set before importing torch,
so that torch runs on exactly the threads asked for and on a real BLAS.

Debian's python3-torch hands its matrix products to the system BLAS (libblas.so.3). With OpenBLAS
(libopenblas0-pthread) that BLAS has a thread pool of its own, sized to every core unless OPENBLAS_NUM_THREADS
says otherwise: "--threads 1" would then run products on two cores. With the reference BLAS (libblas3 alone)
torch is about 20 times slower at 256 tokens than with OpenBLAS, and a comparison with it says nothing.
"""
import os
import sys

BLAS = "/usr/lib/x86_64-linux-gnu/libblas.so.3"


def prepare(argv):
    """Sets the thread environment from argv's --threads N (default 1); warns on stderr about a reference BLAS.
    Call before `import torch`."""
    threads = "1"
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif a.startswith("--threads="):
            threads = a.split("=", 1)[1]
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", threads)
    real = os.path.realpath(BLAS)
    if os.path.exists(real) and not any(fast in real for fast in ("openblas", "blis", "mkl", "atlas")):
        print(f"warning: torch's BLAS is {real}, the reference one: its products are many times slower than "
              f"OpenBLAS's (apt-get install libopenblas0-pthread); figures from it are no fair comparison",
              file=sys.stderr)
    return real
