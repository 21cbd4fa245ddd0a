"""Built-in environments: the paper's synthetic bias-rate environments, the IRM paper's synthetic
SEM (``irm_sem``) and tables split by an environment column (real data); oracle weighters that
know the synthetic selection mechanism."""

import oodfs

from .irm_sem import IRMChain
from .markov import MarkovBoundaryEnv
from .oracle import OracleConditional, OracleIPW
from .synthetic import Synthetic, SyntheticBinary
from .table import BinaryTable, Table


@oodfs.hookimpl
def oodfs_environments():
    return [Synthetic, SyntheticBinary, Table, BinaryTable, IRMChain, MarkovBoundaryEnv]


@oodfs.hookimpl
def oodfs_weighters():
    return [OracleIPW, OracleConditional]
