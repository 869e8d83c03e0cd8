"""One Ray for the whole test session (it costs seconds and memory to start)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def ray_cluster():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    from train.trainer import start_ray

    start_ray(num_cpus=2)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()
