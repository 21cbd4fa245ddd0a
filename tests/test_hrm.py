"""HRM (heterogeneous risk minimisation): its backend gradients against torch's autograd, its
environment inference on pooled data of two regimes, its selection on the paper's data."""

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import adjusted_rand_score

import oodfs
from oodfs_plugins.environments.synthetic import Synthetic
from oodfs_plugins.independence.hrm import HRM, infer_environments, mp_gradients


def test_the_written_out_gradients_are_autograd_s():
    rng = np.random.default_rng(0)
    d, E = 6, 3
    Xs = [rng.standard_normal((50 + 10 * e, d)) for e in range(E)]
    ys = [rng.standard_normal(50 + 10 * e) for e in range(E)]
    envs = [(X.T @ X / len(y), X.T @ y / len(y), y @ y / len(y)) for X, y in zip(Xs, ys)]
    beta, mu, noise = rng.standard_normal(d), rng.uniform(-0.3, 0.3, d), rng.standard_normal((2, E, d))
    alpha, lam, sigma, hard_sum = 3.0, 0.7, 0.1, 4.0
    total, g_beta, g_mu = mp_gradients(beta, mu, envs, noise, alpha, lam, sigma, hard_sum)

    b = torch.tensor(beta, requires_grad=True)
    m = torch.tensor(mu, requires_grad=True)
    loss = sum(
        torch.mean((torch.tensor(X) * torch.clamp(m + 0.5 + sigma * torch.tensor(noise[0, e]), 0, 1) @ b
                    - torch.tensor(y)) ** 2)
        for e, (X, y) in enumerate(zip(Xs, ys))
    ) / E  # fmt: skip
    grads = []
    for e, (X, y) in enumerate(zip(Xs, ys)):  # the penalty's gradients: gates held fixed
        xg = torch.tensor(X) * torch.clamp(m + 0.5 + sigma * torch.tensor(noise[1, e]), 0, 1).detach()
        grads.append(
            torch.autograd.grad(torch.mean((xg @ b - torch.tensor(y)) ** 2), b, create_graph=True)[0]
        )
    grads = torch.stack(grads)
    penalty = ((grads - grads.mean(0)) ** 2).sum(0)
    reg = (0.5 * (1 + torch.erf((m + 0.5) / sigma / math.sqrt(2)))).sum()
    objective = loss + alpha * (penalty * (m + 0.5)).sum() + lam * (reg - hard_sum) ** 2
    objective.backward()
    assert total == pytest.approx(objective.item(), rel=1e-12)
    np.testing.assert_allclose(g_beta, b.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_mu, m.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_environment_inference_separates_two_regimes():
    rng = np.random.default_rng(1)
    n = 600
    X = rng.standard_normal((n, 3))
    regime = np.arange(n) % 2
    y = X[:, 0] + np.where(regime == 0, 1.5, -1.5) * X[:, 1] + 0.1 * rng.standard_normal(n)
    domain, _ = infer_environments(X, y, np.zeros(3), 2, 1.0, 0.0, 100, np.random.default_rng(0))
    assert adjusted_rand_score(regime, domain) > 0.8


def test_hrm_closes_the_gates_of_the_spurious_features_on_the_paper_s_data():
    env = Synthetic(setting="poly")
    X, y = env.sample(2.5, 2000, 1)
    sel = HRM(outer_iters=2, pretrain_epochs=1000, epochs=3000, random_state=0).fit(X, y)
    spurious = [env.column_of("V4"), env.column_of("V5")]
    assert set(np.argsort(sel.feature_importances_)[:2]) == set(spurious)
    assert sel.environments_.shape == (2000,) and set(np.unique(sel.environments_)) <= {0, 1, 2}


def test_bad_input_is_one_line():
    X, y = Synthetic().sample(2.5, 100, 0)
    with pytest.raises(oodfs.OodfsError, match="hrm n_envs must be an integer >= 2"):
        HRM(n_envs=1).fit(X, y)
    with pytest.raises(oodfs.OodfsError, match="hrm alpha must be a positive number"):
        HRM(alpha=-1.0).fit(X, y)
