"""HRM's and RSW's compiled training loops give the numbers of the numpy loops they replaced:
gate means stored from the numpy implementation (commit c2dfd7a) at a short schedule, matched
to 1e-10 (docs/PROTOCOL.md, section 12; benchmarks/markov_boundary/MARKOV_COST.md compares full fits)."""

import numpy as np
import pytest

from oodfs_plugins.environments.markov import MarkovBoundaryEnv
from oodfs_plugins.independence.hrm import HRM
from oodfs_plugins.independence.rsw import RSW

# HRM(outer_iters=2, pretrain_epochs=200, epochs=600, random_state=0) on the data below
HRM_MEANS = [0.40531125831497083, 0.40312823221164273, 0.4360668662588243, 0.4319492203380085,
             0.3834680685362641, 0.32892737628571433, 0.350890500509985, 0.37844197443621147,
             0.3959316399239292, 0.4000724454744049, 0.38830360788961743, 0.3800260065857025,
             0.3684403624127144]  # fmt: skip
# RSW(pretrain_epochs=200, epochs=600, alpha=1e4, random_state=0)
RSW_MEANS = [0.3974948942864083, 0.40099977592348524, 0.4063291417073003, 0.4034134596838224,
             0.3954001596350718, 0.39259761864635095, 0.40458895554966096, 0.40639298855430817,
             0.42085277003517885, 0.41815132040793146, 0.3893632601343318, 0.395413831574491,
             0.39004129886951955]  # fmt: skip
# RSW(pretrain_epochs=200, epochs=600, alpha=1e8, n_envs=8, fit_intercept=False, random_state=0)
RSW8_MEANS = [0.3702685056878524, 0.37690767384904894, 0.39639283923615176, 0.3838451842292764,
              0.37374117183814737, 0.3873355360597826, 0.38040444811419044, 0.39132055394134097,
              0.4013401869503704, 0.39682235568762164, 0.36630137843811916, 0.38037225326323554,
              0.3700014546716864]  # fmt: skip


@pytest.mark.parametrize(
    "selector, expected",
    [
        (HRM(outer_iters=2, pretrain_epochs=200, epochs=600, random_state=0), HRM_MEANS),
        (RSW(pretrain_epochs=200, epochs=600, alpha=1e4, random_state=0), RSW_MEANS),
        (RSW(pretrain_epochs=200, epochs=600, alpha=1e8, n_envs=8, fit_intercept=False, random_state=0),
         RSW8_MEANS),
    ],
    ids=["hrm", "rsw", "rsw-8-envs-no-intercept"],
)  # fmt: skip
def test_gate_means_are_the_numpy_implementation_s(selector, expected):
    X, y = MarkovBoundaryEnv().sample(2.5, 300, 3)
    np.testing.assert_allclose(selector._fit_detailed(X, y).values, expected, rtol=0, atol=1e-10)
