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

from metaopt.client import Client, Study, default_client_id
from metaopt.errors import (AbortedError, AlreadyExistsError, DeadlineExceededError,
                            FailedPreconditionError, InvalidArgumentError, MetaoptError,
                            NotFoundError, PermissionDeniedError, ResourceExhaustedError,
                            UnauthenticatedError, UnavailableError)
from metaopt.spec import (Categorical, Choice, Float, Int, configuration, flat_space, search_space,
                          study_spec)
from metaopt.trial import Trial, TrialState

__version__ = "0.1.0"

__all__ = [
    "AbortedError", "AlreadyExistsError", "Categorical", "Choice", "Client",
    "DeadlineExceededError", "FailedPreconditionError", "Float", "Int", "InvalidArgumentError",
    "MetaoptError", "NotFoundError", "PermissionDeniedError", "ResourceExhaustedError", "Study",
    "Trial", "TrialState", "UnauthenticatedError", "UnavailableError", "configuration",
    "default_client_id", "flat_space", "search_space", "study_spec",
]
