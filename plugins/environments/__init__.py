"""Built-in environments: the synthetic bias-rate environments of the paper (SPEC §1)."""
import oodfs

from .synthetic import Synthetic


@oodfs.hookimpl
def oodfs_environments():
    return [Synthetic]
