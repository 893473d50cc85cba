"""The one compiled part: guard._spawn (see guard/_spawn.c). Everything else is in pyproject.toml.

It is optional: where it cannot be built (no C compiler), guard runs the same way through
util-linux's setpriv, one program start slower per relayed command."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("guard._spawn", ["guard/_spawn.c"], optional=True)])
