"""The plugin's conformance tests: the oodfs kit checks every part of the contract.

Run from this package's directory (``python -m pytest tests``) or after ``pip install -e .``.
"""

from oodfs_variance import CovarianceFilter

from oodfs.testing import parametrize_plugin_checks


@parametrize_plugin_checks([CovarianceFilter])
def test_covfilter_conforms(plugin, check):
    check(plugin)
