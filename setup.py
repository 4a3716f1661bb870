"""Build the optional C extension gradlab.autograd._speedups (gradlab/autograd/csrc/);
everything else about the package is in pyproject.toml.

``optional=True``: on a machine without a C compiler the install still succeeds
and gradlab runs the Python versions of those loops (see gradlab/autograd/_accel.py).
"""
import sys
from glob import glob

from setuptools import Extension, setup

# hidden visibility: the parts share plain C names (record, schedule...) that must not bind to
# symbols of the same name elsewhere in the process; only PyInit__speedups is exported
flags = [] if sys.platform == "win32" else ["-O2", "-fvisibility=hidden"]
setup(ext_modules=[Extension("gradlab.autograd._speedups", sorted(glob("gradlab/autograd/csrc/*.c")),
                             depends=["gradlab/autograd/csrc/speedups.h"], optional=True, extra_compile_args=flags)])
