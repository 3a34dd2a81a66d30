package interaction

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Code is a stable, model-facing error code.
type Code string

// The error codes of the seam.
const (
	EmptyQuestions    Code = "EMPTY_QUESTIONS"
	NoProvider        Code = "NO_PROVIDER"
	DuplicateProvider Code = "DUPLICATE_PROVIDER"
	AskAborted        Code = "ASK_ABORTED"
	AskCancelled      Code = "ASK_CANCELLED"
	AskTimeout        Code = "ASK_TIMEOUT"
	InvalidQuestion   Code = "INVALID_QUESTION"
	// InvalidRequest: what is wrong is not a question but the request
	// around it (a query parameter, the body's size or syntax, a call
	// argument such as waitSeconds).
	InvalidRequest Code = "INVALID_REQUEST"
	BadIntent      Code = "BAD_INTENT"
	NotFound       Code = "NOT_FOUND"
	Unauthorized   Code = "UNAUTHORIZED"
	// Forbidden: the caller's API key may not do this (a workspace,
	// channel, DM or responder outside its scope).
	Forbidden  Code = "FORBIDDEN"
	SlackError Code = "SLACK_ERROR"
	// IdempotencyMismatch: an idempotencyKey already used came with a
	// different request (AskInput.Fingerprint differs), so returning the
	// existing ask would answer a question the caller did not ask.
	IdempotencyMismatch Code = "IDEMPOTENCY_MISMATCH"
	// MethodNotAllowed: the path exists but not for the request's method
	// (the HTTP API lists the allowed ones in its Allow header).
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	// Internal is for failures that are nobody's input: a store that
	// cannot write, a bug. It is not part of the seam's vocabulary.
	Internal Code = "INTERNAL"
)

// ErrorName is the name every Error carries.
const ErrorName = "UserInteractionError"

// Error is a coded error of the seam (UserInteractionError).
type Error struct {
	Code    Code
	Message string
}

// Errorf returns an *Error with the code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Name returns "UserInteractionError".
func (e *Error) Name() string { return ErrorName }

// Error returns "CODE: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return string(e.Code) + ": " + e.Message
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &Error{Code: AskTimeout}) matches any timeout.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
}

type errorJSON struct {
	Name    string `json:"name"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
}

// MarshalJSON writes {"name","code","message"}.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(errorJSON{Name: ErrorName, Code: e.Code, Message: e.Message})
}

// UnmarshalJSON reads {"name","code","message"}.
func (e *Error) UnmarshalJSON(b []byte) error {
	var v errorJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	e.Code, e.Message = v.Code, v.Message
	return nil
}

// ErrorCode returns the code of the first *Error in err's chain, Internal
// for any other non-nil error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrorMessage returns the message of the first *Error in err's chain, or
// err.Error() when there is none.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
