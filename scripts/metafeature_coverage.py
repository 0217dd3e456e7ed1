#!/usr/bin/env python3
"""Which dataset meta-features each bundled model reads, and how many of them
``metaopt.metafeatures.compute`` computes: the coverage table of docs/metafeatures.md.

    PYTHONPATH=build/clients/python python3 scripts/metafeature_coverage.py [--models models]
    PYTHONPATH=build/clients/python python3 scripts/metafeature_coverage.py --client-names

The second form prints the names the client computes, one per line: the file that
``metaopt-train --feature-names`` takes to train a model on those only.

Reads the newest version of every model in the registry folder (``<name>/<version>/model.pb``,
the version a server loads by default). A model reads a feature when its artifact stores the
feature's training statistics: ``normalization["feature_mean/<name>"]`` (the GROSI surrogate,
DeepPipe's task conditioning, PMF's nearest training tasks) or ``task_design.feature_names``
(the task-aware initial design). clients/python/tests/test_metafeatures.py checks that the table
in docs/metafeatures.md is the one this prints.
"""

import argparse
import pathlib
import sys
from typing import Dict, List, Set, Tuple

from metaopt import metafeatures
from metaopt.v1 import model_pb2

# What reads the features, by model kind, for a model with feature statistics.
READERS = {
    model_pb2.MODEL_KIND_GROSI: "GROSI surrogate",
    model_pb2.MODEL_KIND_DEEPPIPE: "DeepPipe task conditioning",
    model_pb2.MODEL_KIND_PMF: "PMF nearest training tasks",
}

# Every name the client can compute (landmarkers need ten stratified folds).
COMPUTED: Set[str] = set(metafeatures.SIMPLE_FEATURES + metafeatures.DISTRIBUTION_FEATURES
                         + metafeatures.LANDMARKERS)


def newest_artifacts(models: pathlib.Path) -> List[Tuple[str, model_pb2.ModelArtifact]]:
    """(name@version, artifact) of the newest version of each model, by name."""
    out = []
    for model in sorted(p for p in models.iterdir() if p.is_dir()):
        versions = [p for p in model.iterdir() if p.is_dir() and p.name.isdigit()
                    and (p / "model.pb").is_file()]
        if not versions:
            continue
        newest = max(versions, key=lambda p: int(p.name))
        artifact = model_pb2.ModelArtifact()
        artifact.ParseFromString((newest / "model.pb").read_bytes())
        out.append((f"{model.name}@{newest.name}", artifact))
    return out


def features_read(artifact: model_pb2.ModelArtifact) -> Dict[str, Set[str]]:
    """The features the artifact reads, by what reads them."""
    out = {}
    scaled = {key.split("/", 1)[1] for key in artifact.normalization
              if key.startswith("feature_mean/")}
    if scaled:
        out[READERS.get(artifact.kind, model_pb2.ModelKind.Name(artifact.kind))] = scaled
    if artifact.task_design.feature_names:
        out["task-aware design"] = set(artifact.task_design.feature_names)
    return out


def coverage_table(models: pathlib.Path) -> str:
    """The markdown table: one row per model."""
    lines = ["| model | reads them in | features read | computed by the client | not computed |",
             "|---|---|---|---|---|"]
    for name, artifact in newest_artifacts(models):
        readers = features_read(artifact)
        if not readers:
            # A Dataset2Vec extractor reads the raw sample (spec.dataset_sample) instead.
            reads = ("nothing (Dataset2Vec reads the raw sample)"
                     if artifact.int_options.get("dataset2vec") else "nothing")
            lines.append(f"| `{name}` | {reads} | 0 | 0 | none |")
            continue
        read = set().union(*readers.values())
        missing = sorted(read - COMPUTED)
        shown = ", ".join(f"`{n}`" for n in missing[:4])
        if len(missing) > 4:
            shown += f" and {len(missing) - 4} more"
        lines.append(f"| `{name}` | {'; '.join(f'{r} ({len(f)})' for r, f in readers.items())} "
                     f"| {len(read)} | {len(read & COMPUTED)} | {shown or 'none'} |")
    return "\n".join(lines) + "\n"


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[1] / "models",
                        help="the model registry folder (default: the bundled models)")
    parser.add_argument("--client-names", action="store_true",
                        help="print the names the client computes, one per line, instead")
    args = parser.parse_args(argv)
    if args.client_names:
        sys.stdout.write("".join(f"{name}\n" for name in sorted(COMPUTED)))
    else:
        sys.stdout.write(coverage_table(args.models))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
