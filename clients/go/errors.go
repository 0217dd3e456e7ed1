package metaopt

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call: the gRPC code, the server's message and the RPC.
type Error struct {
	// Code is the gRPC status code, for example codes.NotFound.
	Code codes.Code
	// Message is the server's (or the gRPC runtime's) message; for INVALID_ARGUMENT it names the
	// field, the value and the rule.
	Message string
	// Method is the RPC that failed, for example "Suggest".
	Method string
}

func (e *Error) Error() string {
	return fmt.Sprintf("metaopt %s: %s: %s", e.Method, e.Code, e.Message)
}

// GRPCStatus lets status.Code and status.FromError read the code of an *Error.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Message) }

// Is matches another *Error with the same code (errors.Is(err, &metaopt.Error{Code:
// codes.NotFound})).
func (e *Error) Is(target error) bool {
	var other *Error
	return errors.As(target, &other) && other.Code == e.Code
}

// Code returns the gRPC code of err: an *Error's, a gRPC status error's, codes.OK for nil and
// codes.Unknown otherwise.
func Code(err error) codes.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return status.Code(err)
}

func rpcError(err error, method string) *Error {
	s, _ := status.FromError(err)
	return &Error{Code: s.Code(), Message: s.Message(), Method: method}
}
