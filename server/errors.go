package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kvlab/kvlab/native/runner"
)

// apiError is every JSON error the server answers, in the OpenAI shape so that its clients show
// the message: {"error": {"message": …, "type": …, "code": …, "param": …}}.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Param   string `json:"param,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

// Error types and codes.
const (
	typeInvalid  = "invalid_request_error"
	typeAuth     = "authentication_error"
	typeNotFound = "not_found_error"
	typeBusy     = "server_busy"
	typeServer   = "server_error"
)

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...), Type: typeInvalid, Param: param}
}

// errorBody is the JSON document of an apiError.
type errorBody struct {
	Error *apiError `json:"error"`
}

// asAPIError maps any error of a handler to an apiError.
func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if le := limitsError(err); le != nil {
		return le
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := fmt.Sprint(he.Message)
		typ := typeInvalid
		switch {
		case he.Code == http.StatusNotFound:
			typ = typeNotFound
			msg = "no such route"
		case he.Code == http.StatusMethodNotAllowed:
			msg = "method not allowed on this route"
		case he.Code >= 500:
			typ = typeServer
		}
		return &apiError{Status: he.Code, Message: msg, Type: typ}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{Status: http.StatusRequestEntityTooLarge, Type: typeInvalid, Code: "body_too_large",
			Message: fmt.Sprintf("the request body is larger than the limit of %d bytes", mbe.Limit)}
	}
	var be *busyError
	switch {
	case errors.As(err, &be):
		return &apiError{Status: http.StatusServiceUnavailable, Message: be.Error(), Type: typeBusy, Code: "busy"}
	case errors.Is(err, ErrDraining):
		return &apiError{Status: http.StatusServiceUnavailable, Message: err.Error(), Type: typeBusy, Code: "shutting_down"}
	case errors.Is(err, ErrContextFull):
		return &apiError{Status: http.StatusBadRequest, Message: err.Error(), Type: typeInvalid, Code: "context_length_exceeded"}
	case errors.Is(err, runner.ErrKVBudget):
		return &apiError{Status: http.StatusBadRequest, Message: err.Error(), Type: typeInvalid, Code: "kv_budget_exceeded"}
	case errors.Is(err, ErrEmptyPrompt):
		return &apiError{Status: http.StatusBadRequest, Message: err.Error(), Type: typeInvalid, Param: "prompt"}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{Status: 499, Message: "the request was cancelled", Type: typeInvalid, Code: "cancelled"}
	}
	return &apiError{Status: http.StatusInternalServerError, Message: err.Error(), Type: typeServer}
}

// maxErrorBytes bounds an error message: a cause may quote a file's or a client's bytes.
const maxErrorBytes = 1024

// boundedError is ae with its message at most maxErrorBytes.
func boundedError(ae *apiError) *apiError {
	if len(ae.Message) <= maxErrorBytes {
		return ae
	}
	out := *ae
	out.Message = clip(ae.Message, maxErrorBytes)
	return &out
}

// isAPIPath reports whether a path answers JSON (APIs, websockets, metrics) rather than pages.
func isAPIPath(p string) bool {
	for _, pre := range []string{"/v1/", "/api/", "/ws/", "/metrics", "/healthz"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// errorHandler answers a handler's error: JSON on API paths, a small page elsewhere.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	ae := boundedError(asAPIError(err))
	if ae.Status >= 500 && ae.Type == typeServer {
		s.log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if ae.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", "1")
	}
	status := ae.Status
	if status == 499 {
		status = http.StatusBadRequest
	}
	if isAPIPath(c.Request().URL.Path) || !strings.Contains(c.Request().Header.Get("Accept"), "text/html") {
		_ = c.JSON(status, errorBody{ae})
		return
	}
	_ = s.renderPage(c, status, s.errorPage(status, ae.Message))
}

// decodeJSON reads a JSON request body of at most the configured size into v, rejecting
// trailing data. Errors are apiErrors that say what is wrong.
func (s *Server) decodeJSON(c echo.Context, v any) error {
	r := c.Request()
	body := http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		bodyFailed(c, body)
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			return asAPIError(err)
		case errors.As(err, &ne) && ne.Timeout():
			return &apiError{Status: http.StatusRequestTimeout, Type: typeInvalid, Code: "body_timeout",
				Message: fmt.Sprintf("the request body did not arrive within %s", s.cfg.BodyTimeout)}
		case errors.Is(err, io.EOF):
			return badRequest("", "the request body is empty; send a JSON object")
		case errors.As(err, &se):
			return badRequest("", "the request body is not valid JSON: %v (at byte %d)", se, se.Offset)
		case errors.As(err, &te):
			return badRequest(te.Field, "field %q: %s is not a valid %s", clip(te.Field, 64), te.Value, te.Type)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return badRequest("", "the request body is not valid JSON: it ends early")
		}
		return badRequest("", "the request body is not valid JSON: %s", clip(err.Error(), 200))
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return asAPIError(err)
		}
		bodyFailed(c, body)
		return badRequest("", "the request body has data after its JSON object")
	}
	bodyRead(c)
	return nil
}
