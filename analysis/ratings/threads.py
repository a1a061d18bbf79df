"""Run the small dense linear algebra of the fits on one BLAS thread.

The matrices here are models x models (about 100 x 100): too small for threads to pay,
and OpenBLAS's threads spin while they wait, so on a busy machine a 100 x 100 solve that
takes microseconds can stall for tens of milliseconds (measured: a 1M-battle fit went from
55 ms to 330 ms next to another multi-threaded library).
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager, nullcontext
from functools import lru_cache

__all__ = ["one_blas_thread"]


@lru_cache(maxsize=1)
def _blas(n_modules: int):
    """The controller of the BLAS libraries loaded while ``n_modules`` modules are imported: looked
    for again only after an import, which may load another (scipy's own OpenBLAS beside numpy's);
    kept at the first call, it left a library loaded later running its threads."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")


def one_blas_thread() -> AbstractContextManager:
    """Context manager limiting every loaded BLAS to one thread. Where every one already runs one
    (a forked worker: the report forks inside this limit) nothing is set: setting even an
    unchanged limit makes OpenBLAS start the pool of threads a fork shut, and each new thread
    spins about a tenth of a second before it sleeps, in every worker (numpy imported before the
    report, as in a notebook)."""
    blas = _blas(len(sys.modules))
    if all(lib.num_threads == 1 for lib in blas.lib_controllers):
        return nullcontext()
    return blas.limit(limits=1)
