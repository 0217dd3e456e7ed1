"""Python client for metaopt, the ask/tell optimization service.

::

    import metaopt

    with metaopt.Client("localhost:50051") as client:
        study = client.create_study(
            "quadratic", metaopt.flat_space({"x": metaopt.Float(-5, 5)}),
            objective="loss", goal="minimize", algorithm="gp", seed=1)
        for _ in range(20):
            (trial,) = study.suggest()
            study.observe(trial, (trial.params["x"] - 1) ** 2)
        print(study.best_trial())

The generated messages and stubs are in ``metaopt.v1`` (``study_pb2``, ``optimizer_service_pb2``,
``optimizer_service_pb2_grpc``, ``model_pb2``).
"""

import sys as _sys

try:
    import google.protobuf as _protobuf  # noqa: F401
    import grpc as _grpc  # noqa: F401
except ImportError as _missing:
    # A readable message instead of a traceback deep in the generated stubs: the usual cause is
    # an interpreter (a pyenv or venv python3) other than the one the dependencies are in.
    raise ImportError(
        f"metaopt needs the grpcio and protobuf packages, which {_sys.executable} cannot import "
        f"({_missing}). Install the package with its dependencies into this interpreter "
        f"(`{_sys.executable} -m pip install ./clients/python`, or the metaopt wheel), or run "
        "the system interpreter /usr/bin/python3 with Debian's python3-grpcio and "
        "python3-protobuf.") from None

from metaopt.client import Client, ParetoFrontSummary, Report, Study, default_client_id
from metaopt.errors import (AbortedError, AlreadyExistsError, DeadlineExceededError,
                            FailedPreconditionError, InvalidArgumentError, MetaoptError,
                            NotFoundError, PermissionDeniedError, ResourceExhaustedError,
                            UnauthenticatedError, UnavailableError)
from metaopt.spec import (Categorical, Choice, Float, Int, asha, configuration, flat_space,
                          median_stopping, search_space, study_spec, successive_halving,
                          threshold_stopping)
from metaopt.trial import IntermediateValue, Pruned, Trial, TrialState

__version__ = "0.1.0"

__all__ = [
    "AbortedError", "AlreadyExistsError", "Categorical", "Choice", "Client",
    "DeadlineExceededError", "FailedPreconditionError", "Float", "Int", "IntermediateValue",
    "InvalidArgumentError", "MetaoptError", "NotFoundError", "ParetoFrontSummary", "PermissionDeniedError", "Pruned",
    "Report", "ResourceExhaustedError", "Study", "Trial", "TrialState", "UnauthenticatedError",
    "UnavailableError", "asha", "configuration", "default_client_id", "flat_space",
    "median_stopping", "search_space", "study_spec", "successive_halving", "threshold_stopping",
]
