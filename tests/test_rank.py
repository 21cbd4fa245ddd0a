"""Ranking a table's features is a use case of the runner (oodfs.run.rank) returning a typed
result with its own JSON form; `oodfs select` only parses and prints it, and the deprecated
oodfs.tabular.rank_features returns the same numbers in its old form."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from oodfs.run.rank import FeatureRanking, RankOptions, rank_features

from .test_own_tables import select, shifted, write

OPTIONS = RankOptions(env_column="period", train_envs=["A", "B"], evaluate=True, downstream="ridge", top_k=3)


def test_the_result_is_typed_and_its_json_is_what_select_prints(tmp_path, capsys):
    path = write(shifted(), tmp_path)
    result = rank_features(path, "y", "ols", OPTIONS)
    assert isinstance(result, FeatureRanking)
    assert list(result.ranking.columns) == ["rank", "feature", "score", "selected"]
    assert result.selected == list(result.ranking.loc[result.ranking["selected"], "feature"])
    assert result.selected[0] == "b" and result.top_k == 3 and result.train_envs == ["A", "B"]
    assert list(result.evaluation["env"]) == ["C"] and result.downstream == "ridge"
    argv = (path, "--target", "y", "--method", "ols", "--env-column", "period", "--train-envs", "A,B")
    code, out, err = select(capsys, *argv, "--evaluate", "--downstream", "ridge", "--top-k", "3", "--json")
    assert code == 0, err
    assert json.loads(out) == json.loads(json.dumps(result.to_json(), default=str))


def test_options_are_one_frozen_object_and_keywords_change_it(tmp_path):
    with pytest.raises(dataclasses.FrozenInstanceError):
        OPTIONS.top_k = 2
    path = write(shifted(), tmp_path)
    by_object = rank_features(path, "y", "ols", dataclasses.replace(OPTIONS, top_k=2, evaluate=False))
    by_keywords = rank_features(path, "y", "ols", OPTIONS, top_k=2, evaluate=False)
    pd.testing.assert_frame_equal(by_object.ranking, by_keywords.ranking)
    assert by_object.evaluation is None and by_object.ranking["selected"].sum() == 2


def test_the_deprecated_function_returns_the_same_numbers_in_its_old_form(tmp_path):
    from oodfs.tabular import rank_features as old

    path = write(shifted(), tmp_path)
    new = rank_features(path, "y", "lasso", OPTIONS, group_levels="max")
    with pytest.warns(DeprecationWarning, match="oodfs.run.rank.rank_features"):
        frame = old(
            path, "y", "lasso", 3, "period", ["A", "B"], evaluate=True, downstream="ridge", group_levels="max"
        )
    pd.testing.assert_frame_equal(frame, new.ranking)
    np.testing.assert_array_equal(frame.attrs["evaluation"]["rmse_selected"], new.evaluation["rmse_selected"])
    pd.testing.assert_frame_equal(frame.attrs["variables"], new.variables)
    assert {k: v for k, v in frame.attrs.items() if k not in ("variables", "evaluation")} == {
        k: getattr(new, k) for k in frame.attrs if k not in ("variables", "evaluation")
    }
