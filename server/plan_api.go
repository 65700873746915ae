package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/kvlab/kvlab/plan/calc"
	"github.com/kvlab/kvlab/plan/planview"
	"github.com/labstack/echo/v4"
)

// apiPlan is GET /api/plan?FIELD=… or POST /api/plan with a JSON object of the same fields (the
// /plan page's form fields, as `kvlab plan` names them: {"preset":"qwen2.5-14b-1m","ctx":"32k",
// "budget_gib":8,"formats":["f16","q8_0"]}): the planner's report as `kvlab plan --json` prints
// it, and the fit when measurements were given.
func (s *Server) apiPlan(c echo.Context) error {
	values := map[string][]string(c.QueryParams())
	if c.Request().Method == http.MethodPost {
		var body map[string]json.RawMessage
		if err := s.decodeJSON(c, &body); err != nil {
			return err
		}
		values = map[string][]string{}
		for k, raw := range body {
			vs, err := formValues(raw)
			if err != nil {
				return badRequest(k, "field %q: %v", k, err)
			}
			values[k] = vs
		}
	}
	res, err := planview.Compute(values, nil)
	if err != nil {
		return badRequest("", "%v", err)
	}
	return c.JSON(http.StatusOK, struct {
		Report calc.Report     `json:"report"`
		Fit    *calc.FitResult `json:"fit,omitempty"`
	}{res.Report, res.Fit})
}

// formValues turns a JSON value into form values: a string or number is one value, an array
// of them several.
func formValues(raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err == nil {
		var out []string
		for _, r := range list {
			v, err := scalar(r)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	v, err := scalar(raw)
	if err != nil {
		return nil, err
	}
	return []string{v}, nil
}

func scalar(raw json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64:
		return string(raw), nil
	case bool:
		return fmt.Sprint(x), nil
	}
	return "", errors.New("want a string, a number or an array of them")
}
