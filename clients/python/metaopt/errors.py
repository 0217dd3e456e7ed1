"""Errors raised by the metaopt client.

Every failed call raises a :class:`MetaoptError` (or one of its subclasses, chosen by the gRPC
status code) that carries the code, the server's message and the method that failed::

    try:
        client.get_study("missing")
    except metaopt.NotFoundError as e:
        print(e.code.name, e.message)   # NOT_FOUND study "missing" ...
"""

from __future__ import annotations

from typing import Dict, Type

import grpc


class MetaoptError(Exception):
    """A call to the metaopt server failed.

    Attributes:
        code: the gRPC status code (``grpc.StatusCode``).
        message: the server's (or the gRPC runtime's) error message.
        method: the RPC that failed, for example ``"Suggest"``.
    """

    def __init__(self, code: grpc.StatusCode, message: str, method: str = "") -> None:
        self.code = code
        self.message = message
        self.method = method
        prefix = f"{method}: " if method else ""
        super().__init__(f"{prefix}{code.name}: {message}")


class InvalidArgumentError(MetaoptError):
    """INVALID_ARGUMENT: the request was malformed; the message names the field and the rule."""


class NotFoundError(MetaoptError):
    """NOT_FOUND: no such study, trial or model."""


class AlreadyExistsError(MetaoptError):
    """ALREADY_EXISTS: the study id is taken by a study with another spec."""


class FailedPreconditionError(MetaoptError):
    """FAILED_PRECONDITION: for example a trial that was already observed."""


class UnauthenticatedError(MetaoptError):
    """UNAUTHENTICATED: no token, or one the server does not accept."""


class PermissionDeniedError(MetaoptError):
    """PERMISSION_DENIED."""


class ResourceExhaustedError(MetaoptError):
    """RESOURCE_EXHAUSTED: a quota or a limit was reached."""


class UnavailableError(MetaoptError):
    """UNAVAILABLE: the server could not be reached (after the client's retries)."""


class DeadlineExceededError(MetaoptError):
    """DEADLINE_EXCEEDED: the call took longer than the client's timeout."""


class AbortedError(MetaoptError):
    """ABORTED: a concurrent change got in the way; the call may be retried."""


_BY_CODE: Dict[grpc.StatusCode, Type[MetaoptError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.ABORTED: AbortedError,
}


def error_for(code: grpc.StatusCode, message: str, method: str = "") -> MetaoptError:
    """The exception for a status: the subclass for ``code``, else :class:`MetaoptError`."""
    return _BY_CODE.get(code, MetaoptError)(code, message, method)


def from_rpc_error(error: grpc.RpcError, method: str = "") -> MetaoptError:
    """Converts a ``grpc.RpcError`` raised by a stub into a :class:`MetaoptError`."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = error.details() if hasattr(error, "details") else str(error)
    return error_for(code or grpc.StatusCode.UNKNOWN, details or "", method)
