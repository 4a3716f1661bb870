"""Build the optional C extension (gradlab/autograd/_speedups.c); everything else is in pyproject.toml.

``optional=True``: on a machine without a C compiler the install still succeeds
and gradlab runs the Python versions of the loops (see gradlab/autograd/_accel.py).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("gradlab.autograd._speedups", ["gradlab/autograd/_speedups.c"], optional=True,
                             extra_compile_args=["-O2"])])
