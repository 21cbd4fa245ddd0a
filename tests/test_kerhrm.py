"""KerHRM (kernelized heterogeneous risk minimisation): its neural tangent features and its
predictor's input gradients against torch's autograd, its invariant learning against the authors'
objective trained by torch's Adam, its environment inference on two regimes, the invariance
penalty on known environments, and the estimator's contract."""

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score

import oodfs
from oodfs_plugins.independence.kerhrm import KerHRM, TangentNetwork, cluster_environments, invariant_train

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: a short schedule for the estimator-level tests (the default runs 20 rounds of 3000 epochs)
FAST = dict(width=256, n_components=20, outer_iters=2, epochs=1000)
#: shorter still, where only the contract is checked
TINY = dict(width=64, n_components=8, outer_iters=2, epochs=300)


def _torch_mlp(net):
    width, d = net.W1.shape
    mlp = torch.nn.Sequential(torch.nn.Linear(d, width), torch.nn.ReLU(), torch.nn.Linear(width, 1)).double()
    with torch.no_grad():
        mlp[0].weight.copy_(torch.tensor(net.W1))
        mlp[0].bias.copy_(torch.tensor(net.b1))
        mlp[2].weight.copy_(torch.tensor(net.w2[None, :]))
        mlp[2].bias.fill_(net.b2)
    return mlp


def test_the_tangent_features_are_torch_s_per_row_parameter_gradients():
    rng = np.random.default_rng(0)
    net = TangentNetwork(3, 16, rng)
    X = rng.standard_normal((7, 3))
    mlp = _torch_mlp(net)
    want = []
    for x in X:
        mlp.zero_grad()
        mlp(torch.tensor(x[None, :])).sum().backward()
        want.append(torch.cat([p.grad.reshape(-1) for p in mlp.parameters()]).numpy())
    np.testing.assert_allclose(
        net.tangent_features(X, dtype=np.float64), np.array(want), rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(net.output(X), mlp(torch.tensor(X)).detach().numpy().ravel(), rtol=1e-12)


def test_the_linearised_network_and_its_input_gradient_are_autograd_s():
    """f(x) = f0(x) + grad_w f0(x) . dw, by torch.func's forward-mode product, and d f / d x."""
    rng = np.random.default_rng(1)
    net = TangentNetwork(4, 32, rng)
    X = rng.standard_normal((9, 4))
    dw = rng.standard_normal(net.n_params)
    mlp = _torch_mlp(net)
    params = {k: v.detach() for k, v in mlp.named_parameters()}
    tangents, start = {}, 0
    for k, v in params.items():
        tangents[k] = torch.tensor(dw[start : start + v.numel()]).reshape(v.shape)
        start += v.numel()

    def linearised(x):
        out, step = torch.func.jvp(lambda p: torch.func.functional_call(mlp, p, (x,)), (params,), (tangents,))
        return (out + step).sum()

    x = torch.tensor(X, requires_grad=True)
    value = linearised(x)
    value.backward()
    assert net.linearised(X, dw).sum() == pytest.approx(value.item(), rel=1e-12)
    np.testing.assert_allclose(net.linearised_input_gradient(X, dw), x.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_the_invariant_learning_is_the_authors_objective_under_torch_s_adam():
    """theta after Adam on mean_e MSE_e + lam * mean_j (g_1j - g_2j)^2 (g_e: MSE_e's gradient in
    theta, built by autograd as the authors' code does), lam 0.6 for the first steps, then 0.1."""
    rng = np.random.default_rng(2)
    k, epochs, warm = 5, 60, 20
    U = [rng.standard_normal((40, k)) * [3, 2, 1, 0.5, 0.2], rng.standard_normal((25, k))]
    y = [rng.standard_normal(40), rng.standard_normal(25)]
    theta0 = rng.uniform(-0.1, 0.1, k)
    Ge = np.stack([u.T @ u / len(u) for u in U])
    ce = np.stack([u.T @ t / len(u) for u, t in zip(U, y)])
    ours = theta0.copy()
    invariant_train(ours, Ge, ce, epochs, 7e-3, 0.1, 0.6, warm)

    theta = torch.tensor(theta0, requires_grad=True)
    opt = torch.optim.Adam([theta], lr=7e-3)
    for epoch in range(1, epochs + 1):
        losses = [torch.mean((torch.tensor(u) @ theta - torch.tensor(t)) ** 2) for u, t in zip(U, y)]
        g1, g2 = (torch.autograd.grad(loss, theta, create_graph=True)[0] for loss in losses)
        lam = 0.1 if epoch > warm else 0.6
        total = (losses[0] + losses[1]) / 2 + lam * (g1 - g2).pow(2).mean()
        opt.zero_grad()
        total.backward()
        opt.step()
    np.testing.assert_allclose(ours, theta.detach().numpy(), rtol=1e-8, atol=1e-10)


def test_the_penalty_moves_the_predictor_off_a_feature_whose_relation_to_y_flips():
    """Two known environments, x2 = y + noise in one and -0.2 y + noise in the other: without the
    penalty the averaged risk leans on x2, with a strong one its coefficient goes to about 0."""
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.standard_normal((n, 3))
    env = (rng.random(n) > 0.5).astype(int)
    y = X[:, 0] + X[:, 1] + rng.standard_normal(n)
    X[:, 2] = np.where(env == 0, 1.0, -0.2) * y + 0.5 * rng.standard_normal(n)
    Ge = np.stack([X[env == e].T @ X[env == e] / (env == e).sum() for e in (0, 1)])
    ce = np.stack([X[env == e].T @ y[env == e] / (env == e).sum() for e in (0, 1)])
    plain, invariant = np.zeros(3), np.zeros(3)
    invariant_train(plain, Ge, ce, 3000, 7e-3, 0.0, 0.0, 500)
    invariant_train(invariant, Ge, ce, 3000, 7e-3, 10.0, 10.0, 500)
    assert plain[2] > 0.2
    assert abs(invariant[2]) < 0.1 and min(invariant[:2]) > 1.2


def test_the_environment_inference_separates_two_regimes():
    rng = np.random.default_rng(1)
    n = 600
    F = rng.standard_normal((n, 3))
    regime = np.arange(n) % 2
    y = F[:, 0] + np.where(regime == 0, 1.5, -1.5) * F[:, 1] + 0.1 * rng.standard_normal(n)
    start = np.random.default_rng(0).integers(0, 2, n)
    domain, rounds = cluster_environments(F, y, start, 2, 1e-2, 0.0, 100)
    assert adjusted_rand_score(regime, domain) > 0.8 and rounds < 100


def test_the_scores_follow_the_predictor_and_the_environments_are_stored():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 4))
    y = 2 * X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(300)
    for score in ("gradient", "permutation"):
        sel = KerHRM(**FAST, score=score, random_state=0).fit(X, y)
        assert list(np.argsort(-sel.scores_)[:2]) == [0, 1], (score, sel.scores_)
    assert sel.environments_.shape == (300,) and set(np.unique(sel.environments_)) <= {0, 1}


def test_determinism_under_a_seed_and_the_sklearn_api_with_feature_names():
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.standard_normal((200, 3)), columns=["a", "b", "c"])
    y = X["a"].to_numpy() + 0.2 * rng.standard_normal(200)
    first = KerHRM(**TINY, k=1, random_state=7).fit(X, y)
    again = clone(first).fit(X, y)
    np.testing.assert_array_equal(first.scores_, again.scores_)
    np.testing.assert_array_equal(first.environments_, again.environments_)
    other = KerHRM(**TINY, k=1, random_state=8).fit(X, y)
    assert not np.array_equal(first.scores_, other.scores_)
    assert list(first.feature_names_in_) == ["a", "b", "c"]
    assert list(first.get_feature_names_out()) == ["a"]
    assert first.transform(X).shape == (200, 1)
    fits = KerHRM.fit_grid(X, y, [{**TINY, "n_components": 4}, {**TINY}], random_state=7)
    assert len(fits) == 2


@pytest.mark.parametrize(
    "params, message",
    [
        ({"score": "shap"}, "kerhrm score must be one of gradient, permutation, got 'shap'"),
        ({"n_envs": 1}, "kerhrm n_envs must be an integer >= 2, got 1"),
        ({"lr": 0}, "kerhrm lr must be a positive number, got 0"),
        ({"n_components": 500}, "kerhrm n_components must be at most 100"),
    ],
)
def test_bad_input_is_one_line(params, message):
    X = np.random.default_rng(0).standard_normal((100, 3))
    with pytest.raises(oodfs.OodfsError, match=message) as err:
        KerHRM(**{**TINY, **params}).fit(X, X[:, 0])
    assert "\n" not in str(err.value)
