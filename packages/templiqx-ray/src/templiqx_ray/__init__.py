"""templiqx-ray: batch runs of templiqx contracts scaled out on Ray Data.

:func:`run_ray_batch` runs a :class:`RayBatch` as a Ray Data pipeline — ``read_text`` (JSONL),
``read_csv`` or ``read_parquet`` → ``map_batches`` over an actor pool of :class:`BatchActor`
(one verified service per actor) → the same result rows the local ``templiqx batch`` writes.
See :mod:`templiqx_ray.pipeline` and docs/batch.md.
"""

from templiqx_ray.actor import BatchActor, PackageIdentityError, RuntimeConfigurationError
from templiqx_ray.budget import BudgetKeeper, SharedRateBudget, start_budget
from templiqx_ray.claims import ClaimKeeper, SharedClaims, start_claims
from templiqx_ray.pipeline import RayBatch, RayOutcome, run_ray_batch

__version__ = "0.2.0"

__all__ = [
    "BatchActor",
    "BudgetKeeper",
    "ClaimKeeper",
    "PackageIdentityError",
    "RayBatch",
    "RayOutcome",
    "RuntimeConfigurationError",
    "SharedClaims",
    "SharedRateBudget",
    "__version__",
    "run_ray_batch",
    "start_budget",
    "start_claims",
]
