"""setuptools entry of the `metaopt` package (metadata in pyproject.toml): the generated stubs and
the grpcio/protobuf ranges they need come from build_backend.py."""

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_backend  # noqa: E402


class BuildPyWithStubs(build_py):
    """build_py that also writes metaopt/v1 when the source tree does not hold it."""

    def run(self) -> None:
        super().run()
        if not build_backend.prebuilt():
            build_backend.generate(Path(self.build_lib).resolve())


setup(install_requires=build_backend.requirements(), cmdclass={"build_py": BuildPyWithStubs})
