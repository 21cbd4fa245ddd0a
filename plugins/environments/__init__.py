"""Built-in environments: the paper's synthetic bias-rate environments and tables
split by an environment column (real data)."""
import oodfs

from .synthetic import Synthetic
from .table import Table


@oodfs.hookimpl
def oodfs_environments():
    return [Synthetic, Table]
