"""PEP 517 build backend of the `metaopt` package: setuptools plus the generated gRPC stubs.

The stubs (``metaopt.v1``) are generated from ``proto/`` when the wheel is built and are never
committed. Where they come from, in order:

1. already present in ``metaopt/v1`` next to this file (the CMake build assembles the package with
   its own protoc and builds the wheel from there);
2. ``$PROTOC`` or ``protoc`` with ``$GRPC_PYTHON_PLUGIN`` or ``grpc_python_plugin`` on PATH
   (Debian: protobuf-compiler and protobuf-compiler-grpc);
3. ``grpc_tools.protoc`` (the grpcio-tools package), which this backend adds to the build
   requirements when (2) is not available, so that an isolated ``pip install ./clients/python``
   with access to a package index works without a protoc.

The .proto files are read from ``$METAOPT_PROTO_DIR``, else from ``../../proto`` (the checkout).

Generated code must never run on an older protobuf runtime than the protoc that generated it
(protobuf's cross-version guarantee), and Python's runtime supports generated code up to one major
version older. So the ``protobuf`` requirement is computed from the generator's version; so is the
``grpcio`` floor when grpcio-tools generates the service stubs (its newer stubs check it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (build_sdist, get_requires_for_build_sdist,  # noqa: F401
                                   prepare_metadata_for_build_wheel)

HERE = Path(__file__).resolve().parent
STUBS = HERE / "metaopt" / "v1"
GENERATED_BY = "_generated_by.py"
# Oldest grpcio the client is tested with (Debian 12's) and that the plugin's stubs support.
GRPCIO_FLOOR = (1, 51)


# -- where the stubs come from ------------------------------------------------------------------

def prebuilt() -> bool:
    return (STUBS / "optimizer_service_pb2_grpc.py").is_file()


def proto_dir() -> Path:
    configured = os.environ.get("METAOPT_PROTO_DIR")
    directory = Path(configured) if configured else HERE.parent.parent / "proto"
    if not (directory / "metaopt" / "v1" / "optimizer_service.proto").is_file():
        raise RuntimeError(
            f"metaopt: the generated stubs are missing and {directory} holds no "
            "metaopt/v1/*.proto; build from a checkout of the repository (pip install "
            "./clients/python), set METAOPT_PROTO_DIR, or install the wheel the CMake build writes")
    return directory


def system_generator() -> Optional[Tuple[str, str]]:
    """(protoc, grpc_python_plugin) from the environment or PATH, or None."""
    protoc = os.environ.get("PROTOC") or shutil.which("protoc")
    plugin = os.environ.get("GRPC_PYTHON_PLUGIN") or shutil.which("grpc_python_plugin")
    if protoc and plugin:
        return protoc, plugin
    return None


def has_grpc_tools() -> bool:
    try:
        import grpc_tools.protoc  # noqa: F401
    except ImportError:
        return False
    return True


def _version(text: str, what: str) -> Tuple[int, ...]:
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if not match:
        raise RuntimeError(f"metaopt: cannot read the version of {what} from {text!r}")
    return tuple(int(part) for part in match.groups(default="0"))


def _protoc_version(command: List[str]) -> Tuple[int, ...]:
    output = subprocess.run([*command, "--version"], check=True, capture_output=True,
                            text=True).stdout
    return _version(output, " ".join(command))


# -- dependencies from the generator's versions -------------------------------------------------

def protobuf_requirement(protoc: Tuple[int, ...]) -> str:
    """The protobuf range for stubs that ``protoc`` (its version) generated.

    protoc 3.x matches the Python runtime 3.x/4.x of the same minor (3.21 is Python 4.21, and
    Debian labels that runtime 3.21); protoc 22-25 is Python 4.22-4.25, 26-29 is 5.26-5.29,
    30 and later 6.x.
    """
    major, minor = protoc[0], protoc[1]
    if major == 3:
        floor = f"3.{minor}"
        python_major = 4 if minor >= 21 else 3
    else:
        python_major = 4 if major <= 25 else 5 if major <= 29 else 6
        floor = f"{python_major}.{major}.{minor}"
    return f"protobuf>={floor},<{python_major + 2}"


def requirements() -> List[str]:
    """grpcio and protobuf ranges for the stubs this build ships."""
    versions = generator_versions()
    grpcio = max(GRPCIO_FLOOR, versions.get("grpc_tools", GRPCIO_FLOOR)[:2])
    return [f"grpcio>={grpcio[0]}.{grpcio[1]},<2", protobuf_requirement(versions["protoc"])]


def generator_versions() -> Dict[str, Tuple[int, ...]]:
    """The versions of the protoc (and grpcio-tools, if used) behind the stubs."""
    if prebuilt():
        record = STUBS / GENERATED_BY
        if not record.is_file():
            raise RuntimeError(f"metaopt: {record} is missing (it records the stubs' protoc)")
        fields = dict(re.findall(r'^([A-Z_]+) = "([^"]*)"$', record.read_text(), re.M))
        versions = {"protoc": _version(fields.get("PROTOC_VERSION", ""), str(record))}
        if fields.get("GRPC_TOOLS_VERSION"):
            versions["grpc_tools"] = _version(fields["GRPC_TOOLS_VERSION"], str(record))
        return versions
    system = system_generator()
    if system:
        return {"protoc": _protoc_version([system[0]])}
    if has_grpc_tools():
        from importlib.metadata import version

        return {"protoc": _protoc_version([sys.executable, "-m", "grpc_tools.protoc"]),
                "grpc_tools": _version(version("grpcio-tools"), "grpcio-tools")}
    raise RuntimeError(
        "metaopt: no stub generator: install protoc and grpc_python_plugin (Debian/Ubuntu: "
        "apt install protobuf-compiler protobuf-compiler-grpc), or grpcio-tools in the build "
        "environment (pip adds it by itself when it builds in isolation)")


# -- generation ---------------------------------------------------------------------------------

def generate(out_dir: Path) -> None:
    """Writes metaopt/v1 (messages, .pyi type stubs, service stubs) under ``out_dir``."""
    protos_root = proto_dir()
    protos = sorted(str(p.relative_to(protos_root))
                    for p in (protos_root / "metaopt" / "v1").glob("*.proto"))
    system = system_generator()
    versions = generator_versions()
    if system:
        protoc, plugin = system
        command = [protoc, f"--plugin=protoc-gen-grpc_python={plugin}"]
    else:
        import grpc_tools

        command = [sys.executable, "-m", "grpc_tools.protoc",
                   f"-I{Path(grpc_tools.__file__).parent / '_proto'}"]
    out_dir.mkdir(parents=True, exist_ok=True)
    # Messages (with .pyi type stubs) for every file, service stubs for the service file.
    subprocess.run([*command, f"-I{protos_root}", f"--python_out={out_dir}",
                    f"--pyi_out={out_dir}", *protos], check=True, cwd=protos_root)
    subprocess.run([*command, f"-I{protos_root}", f"--grpc_python_out={out_dir}",
                    "metaopt/v1/optimizer_service.proto"], check=True, cwd=protos_root)
    package = out_dir / "metaopt" / "v1"
    (package / "__init__.py").touch()
    write_generated_by(package, versions)


def write_generated_by(package: Path, versions: Dict[str, Tuple[int, ...]]) -> None:
    text = '"""The generator versions of these stubs (written by the build)."""\n'
    text += f'PROTOC_VERSION = "{".".join(map(str, versions["protoc"]))}"\n'
    tools = versions.get("grpc_tools")
    text += f'GRPC_TOOLS_VERSION = "{".".join(map(str, tools)) if tools else ""}"\n'
    (package / GENERATED_BY).write_text(text)


# -- PEP 517 hooks ------------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):  # type: ignore[no-untyped-def]
    # What setuptools asks for (it would run setup.py to learn that, and setup.py needs a stub
    # generator to compute the dependencies: the one this hook is about to request).
    requires = ["wheel"]
    if not prebuilt() and not system_generator() and not has_grpc_tools():
        requires.append("grpcio-tools>=1.51")
    return requires


def build_wheel(wheel_directory, config_settings=None,  # type: ignore[no-untyped-def]
                metadata_directory=None):
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
