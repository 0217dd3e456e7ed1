"""The `metaopt` package as users install it, each time into a fresh virtual environment:

- the wheel the build writes (``$METAOPT_WHEEL``), ``pip install --no-index`` into a venv with
  ``--system-site-packages`` (so that Debian's grpcio and protobuf are the dependencies that pip
  finds: no package index is reachable here);
- ``pip install ./clients/python`` from a copy of the source tree, whose build generates the stubs;
- the wheel without grpcio and protobuf: ``import metaopt`` says what to install.

The first two then run the README's quick start against a real server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from typing import Dict, List

from server_process import TempServer

WHEEL = os.environ.get("METAOPT_WHEEL", "")
SOURCE = os.environ.get("METAOPT_PYTHON_SOURCE", "")
PROTO = os.environ.get("METAOPT_PROTO_DIR", "")


def quick_start(target: str) -> str:
    """The first Python block under "## Quick start" in clients/python/README.md, for target."""
    with open(os.path.join(SOURCE, "README.md")) as f:
        readme = f.read()
    section = readme[readme.index("\n## Quick start"):]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    if match is None:
        raise AssertionError("README.md: no python block under ## Quick start")
    code = match.group(1)
    if "localhost:50051" not in code:
        raise AssertionError("README.md quick start: no localhost:50051 to replace")
    return code.replace("localhost:50051", target)


def clean_env() -> Dict[str, str]:
    """The environment without this build's PYTHONPATH and without pip configuration."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PIP_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


class PackageTest(unittest.TestCase):

    def setUp(self) -> None:
        if not WHEEL or not os.path.isfile(WHEEL):
            self.fail(f"METAOPT_WHEEL={WHEEL!r} is not a file: run through ctest after a build")
        self.temp = tempfile.mkdtemp(prefix="metaopt-pkg-")
        self.addCleanup(shutil.rmtree, self.temp, ignore_errors=True)

    def run_in(self, python: str, args: List[str], check: bool = True,
               timeout: float = 300) -> subprocess.CompletedProcess:
        result = subprocess.run([python, *args], cwd=self.temp, env=clean_env(),
                                capture_output=True, text=True, timeout=timeout)
        if check:
            self.assertEqual(result.returncode, 0,
                             f"{python} {' '.join(args)}:\n{result.stdout}\n{result.stderr}")
        return result

    def venv(self, name: str, system_site_packages: bool = True) -> str:
        path = os.path.join(self.temp, name)
        args = ["-m", "venv", path]
        if system_site_packages:
            args.insert(2, "--system-site-packages")
        self.run_in(sys.executable, args)
        return os.path.join(path, "bin", "python")

    def check_quick_start(self, python: str) -> None:
        with TempServer() as server:
            script = os.path.join(self.temp, "quick_start.py")
            with open(script, "w") as f:
                f.write(quick_start(server.target))
            result = self.run_in(python, [script], timeout=240)
            self.assertRegex(result.stdout, r"Trial\(id=\d+, state=COMPLETED, value=")
            check = self.run_in(python, ["-c", (
                "import metaopt\n"
                f"with metaopt.Client({server.target!r}) as c:\n"
                "    s = c.get_study('quadratic')\n"
                "    print(s.trial_count, [t.state.name for t in s.trials()].count('COMPLETED'))\n"
            )])
            self.assertEqual(check.stdout.split(), ["20", "20"])

    def installed_from(self, python: str) -> str:
        return self.run_in(python, ["-c", "import metaopt; print(metaopt.__file__)"]).stdout

    def test_wheel_installs_with_its_dependencies_and_runs_the_quick_start(self):
        self.assertRegex(os.path.basename(WHEEL), r"^metaopt-[0-9.]+-py3-none-any\.whl$")
        python = self.venv("wheel")
        # Without --no-deps: pip checks that the installed grpcio and protobuf satisfy the
        # wheel's ranges.
        self.run_in(python, ["-m", "pip", "install", "--no-index", WHEEL])
        self.assertIn(os.path.join(self.temp, "wheel"), self.installed_from(python))
        shown = self.run_in(python, ["-m", "pip", "show", "metaopt"]).stdout
        self.assertRegex(shown, r"Requires: grpcio, protobuf|Requires: protobuf, grpcio")
        files = self.run_in(python, ["-c", (
            "import importlib.metadata as m\n"
            "print('\\n'.join(str(f) for f in m.files('metaopt')))")]).stdout.split()
        for expected in ("metaopt/py.typed", "metaopt/v1/optimizer_service_pb2_grpc.py",
                         "metaopt/v1/study_pb2.pyi", "metaopt/integration/optuna.py"):
            self.assertIn(expected, files)
        # pip check also reports the system's unrelated packages: only metaopt's lines count.
        problems = self.run_in(python, ["-m", "pip", "check"], check=False).stdout
        self.assertEqual([line for line in problems.splitlines()
                          if line.lower().startswith("metaopt")], [])
        self.check_quick_start(python)

    def test_pip_install_of_the_source_tree_generates_the_stubs(self):
        # A copy of clients/python and proto/ in their repository layout, so that the build's
        # files stay out of the source tree.
        source = os.path.join(self.temp, "checkout", "clients", "python")
        shutil.copytree(SOURCE, source, ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__", "v1", "dist"))
        shutil.copytree(PROTO, os.path.join(self.temp, "checkout", "proto"))
        python = self.venv("source")
        # --no-build-isolation: setuptools from Debian (no index to fetch it from); the stubs
        # come from $PROTOC and $GRPC_PYTHON_PLUGIN, the build's own.
        self.run_in(python, ["-m", "pip", "install", "--no-index", "--no-build-isolation",
                             source])
        self.assertIn(os.path.join(self.temp, "source"), self.installed_from(python))
        versions = self.run_in(python, ["-c", (
            "from metaopt.v1 import _generated_by as g; print(g.PROTOC_VERSION)")]).stdout
        self.assertRegex(versions.strip(), r"^\d+\.\d+")
        self.check_quick_start(python)

    def test_without_grpc_the_import_says_what_to_install(self):
        python = self.venv("bare", system_site_packages=False)
        self.run_in(python, ["-m", "pip", "install", "--no-index", "--no-deps", WHEEL])
        result = self.run_in(python, ["-c", "import metaopt"], check=False)
        self.assertNotEqual(result.returncode, 0)
        last = result.stderr.strip().splitlines()[-1]
        self.assertTrue(last.startswith("ImportError: metaopt needs the grpcio and protobuf "
                                        "packages"), result.stderr)
        self.assertIn(python, last)
        self.assertIn("pip install", last)
        # One frame (the import), not the chain through the generated stubs.
        self.assertNotIn("During handling", result.stderr)
        self.assertLessEqual(result.stderr.count('File "'), 2, result.stderr)


if __name__ == "__main__":
    unittest.main()
