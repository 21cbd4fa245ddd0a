"""Metrics against hand-computed values, ties included."""

import numpy as np
import pytest

from oodfs import OodfsError
from oodfs.contract.metrics import (
    coefficient_error,
    f1_at_k,
    feature_ranks,
    rank_average,
    rmse,
    rmse_summary,
)

S = [0, 1, 2, 3, 4]


def test_rank_average_perfect_and_worst():
    perfect = np.arange(10, 0, -1)  # feature 0 best ... feature 9 worst
    assert rank_average(perfect, S) == 3.0
    assert rank_average(perfect[::-1], S) == 8.0


def test_rank_average_hand_computed():
    # order by score: f9, f0, f1, f8, f2, f3, f4, f5, f6, f7 -> S ranks 2, 3, 5, 6, 7
    scores = [9, 8, 6, 5, 4, 3, 2, 1, 7, 10]
    assert rank_average(scores, S) == pytest.approx((2 + 3 + 5 + 6 + 7) / 5)


def test_ties_get_average_rank_and_favour_no_column():
    assert feature_ranks([1, 1, 0]).tolist() == [1.5, 1.5, 3.0]
    constant = np.zeros(10)
    assert rank_average(constant, S) == 5.5  # every feature shares ranks 1..10
    assert f1_at_k(constant, S, 5) == pytest.approx(0.5)  # E[TP] = 5 * 5/10


def test_f1_hand_computed():
    perfect = np.arange(10, 0, -1)
    assert f1_at_k(perfect, S, 5) == 1.0
    assert f1_at_k(perfect[::-1], S, 5) == 0.0
    scores = [9, 8, 6, 5, 4, 3, 2, 1, 7, 10]  # top 5 = f9, f0, f1, f8, f2 -> TP = 3
    assert f1_at_k(scores, S, 5) == pytest.approx(0.6)
    # k != |S|: top 3 = f9, f0, f1 -> TP 2, precision 2/3, recall 2/5 -> F1 = 0.5
    assert f1_at_k(scores, S, 3) == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))


def test_f1_tie_straddling_the_boundary():
    # f0..f3 clearly top; f4 (true) ties with f5, f6 (false) for the last slot -> E[TP] = 4 + 1/3
    scores = [9, 9, 9, 9, 5, 5, 5, 1, 1, 1]
    assert f1_at_k(scores, S, 5) == pytest.approx((4 + 1 / 3) / 5)


def test_rmse_is_root_of_mse_and_summary_uses_population_sd():
    assert rmse([0, 0, 0, 0], [1, -1, 1, -1]) == 1.0
    assert rmse([1, 2], [1, 4]) == pytest.approx(np.sqrt(2.0))
    mean, sd = rmse_summary([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and sd == pytest.approx(np.sqrt(1.25))


def test_coefficient_errors_are_the_l1_sum_and_the_euclidean_norm():
    assert coefficient_error([1, 0, 0], [0, 2, 0], 1) == 3.0
    assert coefficient_error([1, 0, 0], [0, 2, 0], 2) == pytest.approx(np.sqrt(5.0))
    assert coefficient_error([0.5, -1], [0.5, -1], 2) == 0.0


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rank_average([1, np.nan], [0]), "finite"),
        (lambda: rank_average([1, 2], [5]), "outside"),
        (lambda: rank_average([1, 2], []), "empty"),
        (lambda: f1_at_k([1, 2], [0], 3), "k must be"),
        (lambda: rmse([1, 2], [1]), "different shapes"),
        (lambda: coefficient_error([1, 2], [1, 2, 3], 1), "2 coefficients for 3"),
        (lambda: coefficient_error([1, np.inf], [1, 2], 2), "finite"),
    ],
)
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(OodfsError, match=message):
        call()
