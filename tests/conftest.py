"""Shared fixtures. Random inputs are fresh each run: every test using `gen` (torch) or `rng` (numpy) draws a new
seed, prints it (pytest shows it with the failure) and adds it to the failure report; set NPU_FA_SEED=<n> to replay
one."""
import os

import numpy as np
import pytest
import torch


def _new_seed() -> int:
    env = os.environ.get("NPU_FA_SEED")
    return int(env) if env else int.from_bytes(os.urandom(4), "little")


@pytest.fixture
def fa_seed(request) -> int:
    seed = _new_seed()
    request.node.user_properties.append(("seed", seed))
    print(f"seed={seed} (replay with NPU_FA_SEED={seed})")
    return seed


@pytest.fixture
def gen(fa_seed) -> torch.Generator:
    return torch.Generator().manual_seed(fa_seed)


@pytest.fixture
def rng(fa_seed) -> np.random.Generator:
    return np.random.default_rng(fa_seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seeds = [v for k, v in item.user_properties if k == "seed"]
        if seeds:
            report.sections.append(("random seed", f"NPU_FA_SEED={seeds[-1]}"))
