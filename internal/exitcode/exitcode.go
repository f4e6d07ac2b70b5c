// Package exitcode attaches abtest's exit codes to errors, so that the code
// is decided once, at the top, from the error that reached it.
//
//	0  ok
//	1  a regression was found (only with a gate)
//	2  bad usage or bad input; nothing was changed on disk
//	3  an infrastructure failure: a tool failed, a server would not start, …
//
// An error that carries no code is treated as an infrastructure failure.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes.
const (
	OK         = 0
	Regression = 1
	Usage      = 2
	Infra      = 3
)

// Error is an error with an exit code.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// BadInput marks err as bad usage or bad input (exit 2).
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Usage, Err: err}
}

// BadInputf is BadInput(fmt.Errorf(format, args...)).
func BadInputf(format string, args ...any) error {
	return BadInput(fmt.Errorf(format, args...))
}

// Failure marks err as an infrastructure failure (exit 3).
func Failure(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Infra, Err: err}
}

// Code returns the exit code for err: 0 for nil, the attached code when
// there is one, 3 otherwise.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Infra
}

// Regressed marks err as a regression found by a gate (exit 1).
func Regressed(err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: Regression, Err: err}
}
