package web

import (
	"fmt"
	"net/http"

	"github.com/kvlab/kvlab/plan/calc"
)

// Page is what every page's frame needs.
type Page struct {
	// Title is the document title; Active the navigation key of the page ("chat").
	Title  string
	Active string
	// AssetBase is the URL prefix of the static files ("/assets/").
	AssetBase string
	// Note is a short line in the header (e.g. that an API key is required).
	Note string
}

// statusText is "404 Not Found".
func statusText(status int) string { return fmt.Sprintf("%d %s", status, http.StatusText(status)) }

// Bytes writes a byte count in binary units: "512 B", "3.0 KiB", "1.25 GiB".
func Bytes(b int64) string { return calc.FormatBytes(b) }

// Fixed writes x with the given decimals.
func Fixed(x float64, decimals int) string { return calc.FormatFixed(x, decimals) }
